import CountersignStore
import Logging
import PostgresNIO

/// The PostgreSQL schema's history. A shipped migration is never edited: a
/// change is a new one appended to ``all``. Times are seconds since 1970
/// (`double precision`), as in the SQLite store.
enum PostgresMigrations {
    static let all = until0_9 + since0_9

    /// The migrations of 0.9.0 and before.
    private static let until0_9: [(id: String, sql: [String])] = [
        (
            "v1",
            [
                """
                CREATE TABLE api_keys (
                    id text PRIMARY KEY, name text NOT NULL, secret_digest bytea NOT NULL,
                    created_at double precision NOT NULL)
                """,
                """
                CREATE TABLE api_key_redirect_urls (
                    api_key_id text NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
                    position integer NOT NULL, url text NOT NULL,
                    PRIMARY KEY (api_key_id, position), UNIQUE (api_key_id, url))
                """,
                """
                CREATE TABLE signing_keys (
                    id text PRIMARY KEY, private_key_pem text NOT NULL, created_at double precision NOT NULL)
                """,
                """
                CREATE TABLE enrollment_tokens (
                    digest bytea PRIMARY KEY, issuer text NOT NULL, client_user_id text NOT NULL,
                    created_at double precision NOT NULL, expires_at double precision NOT NULL,
                    used_at double precision)
                """,
                """
                CREATE TABLE devices (
                    id text PRIMARY KEY, issuer text NOT NULL, client_user_id text NOT NULL,
                    public_key text NOT NULL, name text NOT NULL, type text NOT NULL,
                    created_at double precision NOT NULL, last_seen_at double precision,
                    revoked_at double precision, totp_secret bytea, totp_last_step bigint)
                """,
                "CREATE INDEX devices_by_user ON devices (issuer, client_user_id)",
                """
                CREATE TABLE proof_ids (
                    device_id text NOT NULL, jti text NOT NULL, expires_at double precision NOT NULL,
                    PRIMARY KEY (device_id, jti))
                """,
                "CREATE INDEX proof_ids_by_expiry ON proof_ids (expires_at)",
                """
                CREATE TABLE events (
                    id text PRIMARY KEY, created_at double precision NOT NULL,
                    updated_at double precision NOT NULL, issuer text NOT NULL, client_user_id text NOT NULL,
                    name text NOT NULL, ip text NOT NULL, location text NOT NULL, method text NOT NULL,
                    status text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
                    expires_at double precision NOT NULL, details text, requester_name text, nonce text NOT NULL,
                    match_number text, wrong_matches integer NOT NULL DEFAULT 0, requester_token_digest bytea,
                    decided_by text, decided_at double precision, decision text, new_device text,
                    code_attempts integer NOT NULL DEFAULT 0)
                """,
                "CREATE INDEX events_by_user ON events (issuer, client_user_id, created_at)",
                """
                CREATE INDEX events_pending ON events (issuer, client_user_id, expires_at)
                WHERE status = 'pending'
                """,
                "CREATE INDEX events_by_expiry ON events (expires_at)",
                """
                CREATE TABLE device_changes (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, issuer text NOT NULL,
                    client_user_id text NOT NULL, device_id text NOT NULL, device_name text NOT NULL,
                    action text NOT NULL CHECK (action IN ('enrolled', 'revoked')), actor text NOT NULL,
                    ip text NOT NULL, at double precision NOT NULL)
                """,
                "CREATE INDEX device_changes_by_user ON device_changes (issuer, client_user_id, id)",
                """
                CREATE TABLE verification_challenges (
                    id bigint PRIMARY KEY, api_key_id text NOT NULL, identifier_type text NOT NULL,
                    identifier text NOT NULL, code_digest bytea NOT NULL,
                    code_expires_at double precision NOT NULL, code_challenge text NOT NULL,
                    redirect_url text NOT NULL, state text, created_at double precision NOT NULL,
                    failed_attempts integer NOT NULL DEFAULT 0, sends integer NOT NULL DEFAULT 1,
                    verified_at double precision, authorization_code_digest bytea,
                    authorization_code_expires_at double precision, redeemed_at double precision,
                    user_agent text NOT NULL, ip text NOT NULL, nonce text)
                """,
                "CREATE INDEX challenges_by_identifier ON verification_challenges (identifier, created_at)",
                "CREATE INDEX challenges_by_ip ON verification_challenges (ip, created_at)",
                """
                CREATE TABLE verified_identities (
                    id text PRIMARY KEY, user_id text NOT NULL, api_key_id text NOT NULL,
                    identifier_type text NOT NULL, identifier text NOT NULL,
                    created_at double precision NOT NULL, updated_at double precision NOT NULL,
                    UNIQUE (api_key_id, identifier_type, identifier))
                """,
                """
                CREATE TABLE refresh_tokens (
                    digest bytea PRIMARY KEY, family_id text NOT NULL, api_key_id text NOT NULL,
                    identity_id text NOT NULL, created_at double precision NOT NULL,
                    expires_at double precision NOT NULL, rotated_at double precision,
                    revoked_at double precision, auth_time double precision)
                """,
                "CREATE INDEX refresh_tokens_by_family ON refresh_tokens (family_id)",
                """
                CREATE TABLE code_failures (
                    issuer text NOT NULL, client_user_id text NOT NULL, consecutive integer NOT NULL,
                    locked_until double precision, PRIMARY KEY (issuer, client_user_id))
                """,
                """
                CREATE TABLE recovery_codes (
                    digest bytea PRIMARY KEY, issuer text NOT NULL, client_user_id text NOT NULL,
                    created_at double precision NOT NULL, used_at double precision)
                """,
                "CREATE INDEX recovery_codes_by_user ON recovery_codes (issuer, client_user_id)",
            ]
        ),
        // Who asked for an event: its app's backend, or a requester from the
        // address in ip. Earlier events count as the backend's.
        (
            "v8-pending-by-requester",
            [
                """
                ALTER TABLE events ADD COLUMN requested_by text NOT NULL DEFAULT 'backend'
                    CHECK (requested_by IN ('backend', 'requester'))
                """,
                """
                CREATE INDEX events_pending_by_address ON events (ip, expires_at)
                    WHERE status = 'pending' AND requested_by = 'requester'
                """,
            ]
        ),
        (
            "v9-api-key-rotation",
            [
                "ALTER TABLE api_keys ADD COLUMN previous_secret_digest bytea",
                "ALTER TABLE api_keys ADD COLUMN previous_secret_expires_at double precision",
                "ALTER TABLE api_keys ADD COLUMN revoked_at double precision",
                """
                CREATE TABLE api_key_changes (
                    id bigserial PRIMARY KEY, api_key_id text NOT NULL,
                    action text NOT NULL CHECK (action IN ('created', 'rotated', 'revoked')),
                    via text NOT NULL, ip text, at double precision NOT NULL)
                """,
                "CREATE INDEX api_key_changes_by_key ON api_key_changes (api_key_id, id)",
            ]
        ),
        // When a user last tried a code: a count untouched for a day is
        // collected. Earlier rows have none, and go at the next collection.
        ("v10-code-failures-kept", ["ALTER TABLE code_failures ADD COLUMN last_attempt_at double precision"]),
        ("v11-event-withdrawal", ["ALTER TABLE events ADD COLUMN withdrawn_at double precision"]),
        (
            "v12-push-outbox",
            [
                "ALTER TABLE devices ADD COLUMN push_endpoint text",
                "ALTER TABLE devices ADD COLUMN push_p256dh bytea",
                "ALTER TABLE devices ADD COLUMN push_auth bytea",
                "ALTER TABLE devices ADD COLUMN push_vapid_key text",
                "ALTER TABLE devices ADD COLUMN push_updated_at double precision",
                """
                CREATE TABLE vapid_keys (
                    id text PRIMARY KEY, private_key_pem text NOT NULL, created_at double precision NOT NULL)
                """,
                """
                CREATE TABLE outbox (
                    id text PRIMARY KEY, kind text NOT NULL, target text NOT NULL, event_id text,
                    payload bytea NOT NULL, created_at double precision NOT NULL,
                    deliver_until double precision NOT NULL, next_attempt_at double precision NOT NULL,
                    attempts integer NOT NULL DEFAULT 0,
                    state text NOT NULL CHECK (state IN ('queued', 'delivered', 'failed', 'cancelled')),
                    last_error text, finished_at double precision, claim text, lease_until double precision)
                """,
                "CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'queued'",
                "CREATE INDEX outbox_finished ON outbox (finished_at) WHERE state <> 'queued'",
            ]
        ),
        (
            "v13-webhooks",
            [
                """
                CREATE TABLE webhook_endpoints (
                    id text PRIMARY KEY, api_key_id text NOT NULL REFERENCES api_keys (id), url text NOT NULL,
                    types text NOT NULL, secret text NOT NULL, previous_secret text,
                    previous_until double precision, created_at double precision NOT NULL,
                    failing_since double precision, disabled_at double precision, disabled_reason text)
                """,
                "CREATE INDEX webhook_endpoints_key ON webhook_endpoints (api_key_id)",
                "CREATE INDEX outbox_target ON outbox (target, created_at)",
                "ALTER TABLE events ADD COLUMN expiry_announced boolean NOT NULL DEFAULT false",
                """
                CREATE INDEX events_unannounced_expiry ON events (expires_at)
                WHERE status = 'pending' AND NOT expiry_announced AND withdrawn_at IS NULL
                """,
            ]
        ),
        (
            "v14-fraud-reports",
            [
                "ALTER TABLE events ADD COLUMN status_reason text",
                """
                CREATE TABLE user_protections (
                    issuer text NOT NULL, client_user_id text NOT NULL, until double precision NOT NULL,
                    PRIMARY KEY (issuer, client_user_id))
                """,
                """
                CREATE TABLE decision_records (
                    event_id text PRIMARY KEY, issuer text NOT NULL, client_user_id text NOT NULL,
                    decided_at double precision NOT NULL, document bytea NOT NULL)
                """,
                "CREATE INDEX decision_records_user ON decision_records (issuer, client_user_id, decided_at)",
                "CREATE INDEX events_requested_by_address ON events (ip, created_at) WHERE requested_by = 'requester'",
            ]
        ),
        (
            "v15-ciba",
            [
                """
                CREATE TABLE ciba_requests (
                    event_id text PRIMARY KEY, api_key_id text NOT NULL, scope text NOT NULL,
                    poll_interval integer NOT NULL, next_poll_at double precision NOT NULL, notification_token text,
                    auth_req_id text, redeemed_at double precision, created_at double precision NOT NULL)
                """,
                "CREATE INDEX ciba_requests_created ON ciba_requests (created_at)",
                "ALTER TABLE refresh_tokens ADD COLUMN client_user_id text",
                "ALTER TABLE refresh_tokens ADD COLUMN acr text",
            ]
        ),
        (
            "v16-ciba-ping",
            [
                """
                CREATE TABLE ciba_clients (
                    api_key_id text PRIMARY KEY, notification_endpoint text NOT NULL,
                    updated_at double precision NOT NULL)
                """,
                "ALTER TABLE ciba_requests ADD COLUMN notification_endpoint text",
            ]
        ),
        (
            // Requesters' events per user and per address, by minute: the
            // rate limits read at most a window's minutes, whatever the rate.
            "v17-request-counts",
            [
                """
                CREATE TABLE request_counts (
                    scope text NOT NULL, key text NOT NULL, minute bigint NOT NULL, count bigint NOT NULL,
                    PRIMARY KEY (scope, key, minute))
                """,
                """
                INSERT INTO request_counts (scope, key, minute, count)
                SELECT 'user', issuer || chr(10) || client_user_id, floor(created_at / 60)::bigint, count(*)
                FROM events WHERE requested_by = 'requester' AND created_at > extract(epoch FROM now()) - 86400
                GROUP BY 2, 3
                """,
                """
                INSERT INTO request_counts (scope, key, minute, count)
                SELECT 'address', ip, floor(created_at / 60)::bigint, count(*)
                FROM events WHERE requested_by = 'requester' AND created_at > extract(epoch FROM now()) - 86400
                GROUP BY 2, 3
                """,
            ]
        ),
        (
            // How many of a user's events were rejected lately (the match
            // number's length) is read for every new event: without this it
            // walked every event of the user, a cost that grew with use.
            "v18-rejected-events",
            [
                """
                CREATE INDEX events_rejected ON events (issuer, client_user_id, decided_at)
                WHERE status = 'rejected'
                """
            ]
        ),
    ]

    /// Applies what is missing in one READ COMMITTED transaction, under an
    /// advisory lock, so that instances starting together take turns and
    /// each sees what the one before it committed.
    static func apply(using store: PostgresStore) async throws {
        let logger = store.logger
        try await store.transaction(hold: .unbounded) { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(7243001)", logger: logger)
            try await connection.run(
                """
                CREATE TABLE IF NOT EXISTS countersign_migrations (
                    id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            let applied = try await connection.rows("SELECT id FROM countersign_migrations", logger: logger).map {
                try $0.value("id", as: String.self)
            }
            let known = Set(all.map(\.id))
            let unknown = applied.filter { !known.contains($0) }
            guard unknown.isEmpty else {
                throw StoreError(
                    .backend,
                    "the database has migrations this broker does not know (\(unknown.sorted().joined(separator: ", "))): it was upgraded by a newer broker"
                )
            }
            for migration in all where !applied.contains(migration.id) {
                for statement in migration.sql {
                    try await connection.run(PostgresStatement(unsafeSQL: statement), logger: logger)
                }
                try await connection.run(
                    "INSERT INTO countersign_migrations (id) VALUES (\(migration.id))", logger: logger)
                logger.info("applied migration", metadata: ["migration": "\(migration.id)"])
            }
        }
    }
}
