/// The PostgreSQL migrations made since 0.9.0, in the order they apply.
extension PostgresMigrations {
    static let since0_9: [(id: String, sql: [String])] = [
        (
            // A device's passkey lives in its row: the decision that checks
            // an assertion reads the device already, and reads nothing more.
            "v19-passkeys",
            [
                """
                ALTER TABLE devices ADD COLUMN passkey_credential_id text, ADD COLUMN passkey_public_key text,
                    ADD COLUMN passkey_sign_count bigint, ADD COLUMN passkey_aaguid text,
                    ADD COLUMN passkey_transports text, ADD COLUMN passkey_backup_eligible boolean,
                    ADD COLUMN passkey_created_at double precision
                """,
                """
                CREATE UNIQUE INDEX devices_passkey ON devices (passkey_credential_id)
                WHERE passkey_credential_id IS NOT NULL
                """,
                """
                ALTER TABLE events ADD COLUMN user_verification boolean NOT NULL DEFAULT false,
                    ADD COLUMN decision_assertion text
                """,
            ]
        ),
        (
            // An app's policy for all its events: 'required' makes every
            // event under the key require user verification. Setting it
            // is audited.
            "v20-api-key-user-verification",
            [
                """
                ALTER TABLE api_keys ADD COLUMN user_verification text NOT NULL DEFAULT 'discouraged'
                    CHECK (user_verification IN ('required', 'discouraged'))
                """,
                """
                ALTER TABLE api_key_changes DROP CONSTRAINT api_key_changes_action_check,
                    ADD CONSTRAINT api_key_changes_action_check CHECK (action IN (
                        'created', 'rotated', 'revoked', 'user_verification_required',
                        'user_verification_discouraged'))
                """,
            ]
        ),
        // Who may sign in to the console, and what operators did: an
        // operator removed is gone from the first, never from the log.
        (
            "v21-operators-and-audit",
            [
                "CREATE TABLE operators (name text PRIMARY KEY, added_at double precision NOT NULL)",
                """
                CREATE TABLE audit_log (
                    id bigserial PRIMARY KEY, at double precision NOT NULL, actor text NOT NULL,
                    action text NOT NULL, target text, ip text)
                """,
            ]
        ),
        // An operator's sign-ins to the console, by the digest of the
        // cookie's secret: one per approved login, ended at sign-out or when
        // the operator is removed, collected long after expiry.
        (
            "v22-console-sessions",
            [
                """
                CREATE TABLE console_sessions (
                    digest bytea PRIMARY KEY, operator text NOT NULL, event_id text NOT NULL UNIQUE,
                    ip text NOT NULL, created_at double precision NOT NULL, expires_at double precision NOT NULL,
                    ended_at double precision)
                """,
                "CREATE INDEX console_sessions_by_operator ON console_sessions (operator)",
            ]
        ),
        // A relying party's sign-in by approval: its authorization request,
        // kept with the pending login it opened, then the code the approval
        // earned; kept while its refresh tokens may live. And the scopes an
        // app registered for sign-in.
        (
            "v23-openid-sign-ins",
            [
                """
                CREATE TABLE openid_sign_ins (
                    event_id text PRIMARY KEY, api_key_id text NOT NULL, redirect_uri text NOT NULL,
                    code_challenge text NOT NULL, state text, nonce text, scope text NOT NULL,
                    created_at double precision NOT NULL, code_digest bytea, code_expires_at double precision,
                    redeemed_at double precision, ended_at double precision,
                    confidential boolean NOT NULL DEFAULT false)
                """,
                "CREATE INDEX openid_sign_ins_created ON openid_sign_ins (created_at)",
                """
                CREATE TABLE openid_clients (
                    api_key_id text PRIMARY KEY, scopes text NOT NULL, updated_at double precision NOT NULL)
                """,
            ]
        ),
        // A device's passkey added or removed is in its user's device log.
        (
            "v24-passkey-changes",
            [
                """
                ALTER TABLE device_changes DROP CONSTRAINT device_changes_action_check,
                    ADD CONSTRAINT device_changes_action_check CHECK (action IN (
                        'enrolled', 'revoked', 'passkey_added', 'passkey_removed'))
                """
            ]
        ),
        // An app that keeps no secret is registered as a public client;
        // every other one must prove its secret to redeem a code.
        (
            "v25-openid-public-clients",
            ["ALTER TABLE openid_clients ADD COLUMN public_client boolean NOT NULL DEFAULT false"]
        ),
        // The NAS the RADIUS listener answers, known to every instance.
        (
            "v26-radius-clients",
            [
                """
                CREATE TABLE radius_clients (
                    name text PRIMARY KEY, network text NOT NULL, api_key_id text NOT NULL REFERENCES api_keys (id),
                    secret text NOT NULL, mode text NOT NULL CHECK (mode IN ('challenge', 'push')),
                    require_message_authenticator boolean NOT NULL, upstream_address text, upstream_secret text,
                    upstream_requires_message_authenticator boolean NOT NULL DEFAULT true,
                    created_at double precision NOT NULL)
                """
            ]
        ),
        // The door each request came through; the requests made before are
        // told apart by what they left behind.
        (
            "v27-event-channel",
            [
                "ALTER TABLE events ADD COLUMN channel text NOT NULL DEFAULT 'api'",
                "UPDATE events SET channel = 'ciba' WHERE id IN (SELECT event_id FROM ciba_requests)",
                "UPDATE events SET channel = 'openid' WHERE id IN (SELECT event_id FROM openid_sign_ins)",
                "UPDATE events SET channel = 'console' WHERE id IN (SELECT event_id FROM console_sessions)",
            ]
        ),
        // The console's user list reads users by id across apps, in byte
        // order whatever the database's collation; its event search and
        // dashboard read events by time.
        (
            "v28-console-search",
            [
                "CREATE INDEX devices_by_user_id ON devices (client_user_id COLLATE \"C\")",
                "CREATE INDEX events_by_time ON events (created_at)",
            ]
        ),
        // The console counts and pages failed messages, a few among every
        // message ever sent: written to only when one fails.
        (
            "v29-failed-messages",
            ["CREATE INDEX outbox_failed ON outbox (target, created_at) WHERE state = 'failed'"]
        ),
        // The people the directory sync reads, kept after they leave it; a
        // device is suspended while its user is not enabled there, and the
        // device log says when.
        (
            "v30-directory",
            [
                """
                CREATE TABLE directory_people (
                    client_user_id text PRIMARY KEY, dn text NOT NULL, name text, email text,
                    groups text[] NOT NULL, state text NOT NULL CHECK (state IN ('active', 'disabled', 'gone')),
                    changed_at double precision NOT NULL)
                """,
                "CREATE INDEX directory_people_by_id ON directory_people (client_user_id COLLATE \"C\")",
                "ALTER TABLE devices ADD COLUMN suspended_at double precision",
                """
                ALTER TABLE device_changes DROP CONSTRAINT device_changes_action_check,
                    ADD CONSTRAINT device_changes_action_check CHECK (action IN (
                        'enrolled', 'revoked', 'passkey_added', 'passkey_removed', 'suspended', 'reinstated'))
                """,
            ]
        ),
        // The enrollment links sent by email, kept after they are used,
        // withdrawn or expired for the console's list: its updater reads one
        // user's at one app, the list reads them newest first (ties by id in
        // byte order, as SQLite breaks them).
        (
            "v31-invitations",
            [
                """
                CREATE TABLE invitations (
                    id text PRIMARY KEY, issuer text NOT NULL, client_user_id text NOT NULL, email text NOT NULL,
                    token_digest bytea NOT NULL, message_id text NOT NULL, invited_by text NOT NULL,
                    created_at double precision NOT NULL, expires_at double precision NOT NULL,
                    withdrawn_at double precision)
                """,
                "CREATE INDEX invitations_by_user ON invitations (issuer, client_user_id)",
                "CREATE INDEX invitations_newest ON invitations (created_at DESC, id COLLATE \"C\" DESC)",
            ]
        ),
        // Events approved by several people: who must approve and the
        // approvals so far, kept with the event; its approvers' inboxes find
        // it by them (until its first window ends).
        (
            "v32-quorum",
            [
                "ALTER TABLE events ADD COLUMN quorum text, ADD COLUMN approvals text",
                """
                CREATE TABLE event_approvers (
                    event_id text NOT NULL, issuer text NOT NULL, client_user_id text NOT NULL,
                    expires_at double precision NOT NULL, PRIMARY KEY (issuer, client_user_id, event_id))
                """,
            ]
        ),
        // The groups of people an app asks to approve its events, by name.
        (
            "v33-approver-groups",
            [
                """
                CREATE TABLE approver_groups (
                    issuer text NOT NULL, name text NOT NULL, users text[] NOT NULL,
                    updated_at double precision NOT NULL, updated_via text NOT NULL, PRIMARY KEY (issuer, name))
                """
            ]
        ),
        // An app's rule that every event of a type needs several approvers.
        (
            "v34-quorum-policies",
            [
                """
                CREATE TABLE quorum_policies (
                    issuer text NOT NULL, event text NOT NULL, users text[], approver_group text,
                    required_approvals integer NOT NULL, allow_requester boolean NOT NULL,
                    updated_at double precision NOT NULL, updated_via text NOT NULL, PRIMARY KEY (issuer, event))
                """
            ]
        ),
        // Who answers a message's attempts (a push service's or an app
        // server's origin), kept when it is queued: the outbox shares its
        // delivery slots by it. Rows queued before have none and share by
        // their kind and target, as they did.
        ("v35-outbox-receiver", ["ALTER TABLE outbox ADD COLUMN receiver text"]),
    ]
}
