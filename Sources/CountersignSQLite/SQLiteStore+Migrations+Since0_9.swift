import GRDB

extension SQLiteStore {
    /// The migrations made after 0.9.0, whose files the upgrade fixture
    /// (Tests/Fixtures/upgrade-0.9.0) holds: passkeys, the user-verification
    /// policy, the console's operators, audit log and sessions. Appended to
    /// in order, never edited once shipped.
    static func registerMigrationsSince0_9(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v19-passkeys") { db in
            // A device's passkey lives in its row: the decision that checks
            // an assertion reads the device already, and reads nothing more.
            for column in [
                "passkey_credential_id TEXT", "passkey_public_key TEXT", "passkey_sign_count INTEGER",
                "passkey_aaguid TEXT", "passkey_transports TEXT", "passkey_backup_eligible INTEGER",
                "passkey_created_at REAL",
            ] {
                try db.execute(sql: "ALTER TABLE devices ADD COLUMN \(column)")
            }
            try db.execute(
                sql: """
                    CREATE UNIQUE INDEX devices_passkey ON devices (passkey_credential_id)
                    WHERE passkey_credential_id IS NOT NULL
                    """)
            try db.execute(sql: "ALTER TABLE events ADD COLUMN user_verification INTEGER NOT NULL DEFAULT 0")
            try db.execute(sql: "ALTER TABLE events ADD COLUMN decision_assertion TEXT")
        }
        migrator.registerMigration("v20-api-key-user-verification") { db in
            // An app's policy for all its events: 'required' makes every
            // event under the key require user verification.
            try db.execute(
                sql: """
                    ALTER TABLE api_keys ADD COLUMN user_verification TEXT NOT NULL DEFAULT 'discouraged'
                        CHECK (user_verification IN ('required', 'discouraged'))
                    """)
            // Setting it is audited: SQLite changes a CHECK only by
            // rebuilding the table, which is small (a few rows per key).
            try db.execute(
                sql: """
                    CREATE TABLE api_key_changes_v20 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        api_key_id TEXT NOT NULL,
                        action TEXT NOT NULL CHECK (action IN (
                            'created', 'rotated', 'revoked', 'user_verification_required',
                            'user_verification_discouraged')),
                        via TEXT NOT NULL,
                        ip TEXT,
                        at REAL NOT NULL
                    );
                    INSERT INTO api_key_changes_v20 (id, api_key_id, action, via, ip, at)
                        SELECT id, api_key_id, action, via, ip, at FROM api_key_changes;
                    DROP TABLE api_key_changes;
                    ALTER TABLE api_key_changes_v20 RENAME TO api_key_changes;
                    CREATE INDEX api_key_changes_by_key ON api_key_changes(api_key_id, id);
                    """)
        }
        migrator.registerMigration("v21-operators-and-audit") { db in
            // Who may sign in to the console, and what operators did: an
            // operator removed is gone from the first, never from the log.
            try db.execute(
                sql: """
                    CREATE TABLE operators (name TEXT PRIMARY KEY, added_at REAL NOT NULL);
                    CREATE TABLE audit_log (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        at REAL NOT NULL,
                        actor TEXT NOT NULL,
                        action TEXT NOT NULL,
                        target TEXT,
                        ip TEXT
                    );
                    """)
        }
        migrator.registerMigration("v22-console-sessions") { db in
            // An operator's sign-ins to the console, by the digest of the
            // cookie's secret: one per approved login, ended at sign-out or
            // when the operator is removed, collected long after expiry.
            try db.execute(
                sql: """
                    CREATE TABLE console_sessions (
                        digest BLOB PRIMARY KEY NOT NULL,
                        operator TEXT NOT NULL,
                        event_id TEXT NOT NULL UNIQUE,
                        ip TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        expires_at REAL NOT NULL,
                        ended_at REAL
                    );
                    CREATE INDEX console_sessions_by_operator ON console_sessions(operator);
                    """)
        }
        migrator.registerMigration("v23-openid-sign-ins") { db in
            // A relying party's sign-in by approval: its authorization
            // request, kept with the pending login it opened, then the code
            // the approval earned; kept while its refresh tokens may live.
            // And the scopes an app registered for sign-in.
            try db.execute(
                sql: """
                    CREATE TABLE openid_sign_ins (
                        event_id TEXT PRIMARY KEY NOT NULL,
                        api_key_id TEXT NOT NULL,
                        redirect_uri TEXT NOT NULL,
                        code_challenge TEXT NOT NULL,
                        state TEXT,
                        nonce TEXT,
                        scope TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        code_digest BLOB,
                        code_expires_at REAL,
                        redeemed_at REAL,
                        ended_at REAL,
                        confidential INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX openid_sign_ins_created ON openid_sign_ins(created_at);
                    CREATE TABLE openid_clients (
                        api_key_id TEXT PRIMARY KEY NOT NULL,
                        scopes TEXT NOT NULL,
                        updated_at REAL NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("v24-passkey-changes") { db in
            // A device's passkey added or removed is in its user's device
            // log. SQLite changes a CHECK only by rebuilding the table.
            try db.execute(
                sql: """
                    CREATE TABLE device_changes_v24 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        device_name TEXT NOT NULL,
                        action TEXT NOT NULL CHECK (action IN (
                            'enrolled', 'revoked', 'passkey_added', 'passkey_removed')),
                        actor TEXT NOT NULL,
                        ip TEXT NOT NULL,
                        at REAL NOT NULL
                    );
                    INSERT INTO device_changes_v24 (id, issuer, client_user_id, device_id, device_name, action, actor,
                            ip, at)
                        SELECT id, issuer, client_user_id, device_id, device_name, action, actor, ip, at
                        FROM device_changes;
                    DROP TABLE device_changes;
                    ALTER TABLE device_changes_v24 RENAME TO device_changes;
                    CREATE INDEX device_changes_by_user ON device_changes(issuer, client_user_id, id);
                    """)
        }
        migrator.registerMigration("v25-openid-public-clients") { db in
            // An app that keeps no secret is registered as a public client;
            // every other one must prove its secret to redeem a code.
            try db.execute(
                sql: "ALTER TABLE openid_clients ADD COLUMN public_client INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v26-radius-clients") { db in
            // The NAS the RADIUS listener answers, known to every instance.
            try db.execute(
                sql: """
                    CREATE TABLE radius_clients (
                        name TEXT PRIMARY KEY,
                        network TEXT NOT NULL,
                        api_key_id TEXT NOT NULL REFERENCES api_keys(id),
                        secret TEXT NOT NULL,
                        mode TEXT NOT NULL CHECK (mode IN ('challenge', 'push')),
                        require_message_authenticator INTEGER NOT NULL,
                        upstream_address TEXT,
                        upstream_secret TEXT,
                        upstream_requires_message_authenticator INTEGER NOT NULL DEFAULT 1,
                        created_at REAL NOT NULL
                    )
                    """)
        }
        migrator.registerMigration("v27-event-channel") { db in
            // The door each request came through; the requests made before
            // are told apart by what they left behind.
            try db.execute(sql: "ALTER TABLE events ADD COLUMN channel TEXT NOT NULL DEFAULT 'api'")
            try db.execute(sql: "UPDATE events SET channel = 'ciba' WHERE id IN (SELECT event_id FROM ciba_requests)")
            try db.execute(
                sql: "UPDATE events SET channel = 'openid' WHERE id IN (SELECT event_id FROM openid_sign_ins)")
            try db.execute(
                sql: "UPDATE events SET channel = 'console' WHERE id IN (SELECT event_id FROM console_sessions)")
        }
        migrator.registerMigration("v28-console-search") { db in
            // The console's user list reads users by id across apps; its
            // event search and dashboard read events by time.
            try db.execute(sql: "CREATE INDEX devices_by_user_id ON devices (client_user_id)")
            try db.execute(sql: "CREATE INDEX events_by_time ON events (created_at)")
        }
        migrator.registerMigration("v29-failed-messages") { db in
            // The console counts and pages failed messages, a few among
            // every message ever sent: written to only when one fails.
            try db.execute(sql: "CREATE INDEX outbox_failed ON outbox (target, created_at) WHERE state = 'failed'")
        }
        migrator.registerMigration("v30-directory") { db in
            // The people the directory sync reads, kept after they leave
            // it; a device is suspended while its user is not enabled there.
            // The device log says when (SQLite changes a CHECK only by
            // rebuilding the table).
            try db.execute(
                sql: """
                    CREATE TABLE directory_people (
                        client_user_id TEXT PRIMARY KEY,
                        dn TEXT NOT NULL,
                        name TEXT,
                        email TEXT,
                        groups TEXT NOT NULL,
                        state TEXT NOT NULL CHECK (state IN ('active', 'disabled', 'gone')),
                        changed_at REAL NOT NULL
                    );
                    ALTER TABLE devices ADD COLUMN suspended_at REAL;
                    CREATE TABLE device_changes_v30 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        device_name TEXT NOT NULL,
                        action TEXT NOT NULL CHECK (action IN (
                            'enrolled', 'revoked', 'passkey_added', 'passkey_removed', 'suspended', 'reinstated')),
                        actor TEXT NOT NULL,
                        ip TEXT NOT NULL,
                        at REAL NOT NULL
                    );
                    INSERT INTO device_changes_v30 (id, issuer, client_user_id, device_id, device_name, action, actor,
                            ip, at)
                        SELECT id, issuer, client_user_id, device_id, device_name, action, actor, ip, at
                        FROM device_changes;
                    DROP TABLE device_changes;
                    ALTER TABLE device_changes_v30 RENAME TO device_changes;
                    CREATE INDEX device_changes_by_user ON device_changes(issuer, client_user_id, id);
                    """)
        }
        migrator.registerMigration("v31-invitations") { db in
            // The enrollment links sent by email, kept after they are used,
            // withdrawn or expired for the console's list: its updater reads
            // one user's at one app, the list reads them newest first.
            try db.execute(
                sql: """
                    CREATE TABLE invitations (
                        id TEXT PRIMARY KEY,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        email TEXT NOT NULL,
                        token_digest BLOB NOT NULL,
                        message_id TEXT NOT NULL,
                        invited_by TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        expires_at REAL NOT NULL,
                        withdrawn_at REAL
                    );
                    CREATE INDEX invitations_by_user ON invitations (issuer, client_user_id);
                    CREATE INDEX invitations_newest ON invitations (created_at DESC, id DESC);
                    """)
        }
        migrator.registerMigration("v32-quorum") { db in
            // Events approved by several people: who must approve and the
            // approvals so far, kept with the event; its approvers' inboxes
            // find it by them (until its first window ends, then the
            // event's own status and expiry say it is gone).
            try db.execute(
                sql: """
                    ALTER TABLE events ADD COLUMN quorum TEXT;
                    ALTER TABLE events ADD COLUMN approvals TEXT;
                    CREATE TABLE event_approvers (
                        event_id TEXT NOT NULL,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        expires_at REAL NOT NULL,
                        PRIMARY KEY (issuer, client_user_id, event_id)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v33-approver-groups") { db in
            // The groups of people an app asks to approve its events, by name.
            try db.execute(
                sql: """
                    CREATE TABLE approver_groups (
                        issuer TEXT NOT NULL,
                        name TEXT NOT NULL,
                        users TEXT NOT NULL,
                        updated_at REAL NOT NULL,
                        updated_via TEXT NOT NULL,
                        PRIMARY KEY (issuer, name)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v34-quorum-policies") { db in
            // An app's rule that every event of a type needs several approvers.
            try db.execute(
                sql: """
                    CREATE TABLE quorum_policies (
                        issuer TEXT NOT NULL,
                        event TEXT NOT NULL,
                        users TEXT,
                        approver_group TEXT,
                        required_approvals INTEGER NOT NULL,
                        allow_requester BOOLEAN NOT NULL,
                        updated_at REAL NOT NULL,
                        updated_via TEXT NOT NULL,
                        PRIMARY KEY (issuer, event)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v35-outbox-receiver") { db in
            // Who answers a message's attempts (a push service's or an app
            // server's origin), kept when it is queued: the outbox shares its
            // delivery slots by it. Rows queued before have none and share
            // by their kind and target, as they did.
            try db.execute(sql: "ALTER TABLE outbox ADD COLUMN receiver TEXT")
        }
    }
}
