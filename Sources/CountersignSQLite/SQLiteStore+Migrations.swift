import GRDB

extension SQLiteStore {
    /// The schema's history. A shipped migration is never edited: a change
    /// is a new migration appended here (since 0.9.0, in
    /// ``registerMigrationsSince0_9(in:)``). Migrations use no app types.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE api_keys (
                        id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        secret_digest BLOB NOT NULL,
                        created_at REAL NOT NULL
                    );
                    CREATE TABLE signing_keys (
                        id TEXT PRIMARY KEY NOT NULL,
                        private_key_pem TEXT NOT NULL,
                        created_at REAL NOT NULL
                    );
                    CREATE TABLE enrollment_tokens (
                        digest BLOB PRIMARY KEY NOT NULL,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        expires_at REAL NOT NULL,
                        used_at REAL
                    );
                    CREATE TABLE devices (
                        id TEXT PRIMARY KEY NOT NULL,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        public_key TEXT NOT NULL,
                        name TEXT NOT NULL,
                        type TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        last_seen_at REAL,
                        revoked_at REAL
                    );
                    CREATE INDEX devices_by_user ON devices(issuer, client_user_id);
                    CREATE TABLE proof_ids (
                        device_id TEXT NOT NULL,
                        jti TEXT NOT NULL,
                        expires_at REAL NOT NULL,
                        PRIMARY KEY (device_id, jti)
                    ) WITHOUT ROWID;
                    CREATE INDEX proof_ids_by_expiry ON proof_ids(expires_at);
                    CREATE TABLE events (
                        id TEXT PRIMARY KEY NOT NULL,
                        created_at REAL NOT NULL,
                        updated_at REAL NOT NULL,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        name TEXT NOT NULL,
                        ip TEXT NOT NULL,
                        location TEXT NOT NULL,
                        method TEXT NOT NULL,
                        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
                        expires_at REAL NOT NULL,
                        details TEXT,
                        requester_name TEXT,
                        nonce TEXT NOT NULL,
                        match_number TEXT,
                        wrong_matches INTEGER NOT NULL DEFAULT 0,
                        requester_token_digest BLOB,
                        decided_by TEXT,
                        decided_at REAL,
                        decision TEXT
                    );
                    CREATE INDEX events_by_user ON events(issuer, client_user_id, created_at);
                    CREATE INDEX events_pending ON events(issuer, client_user_id, expires_at) WHERE status = 'pending';
                    CREATE INDEX events_by_expiry ON events(expires_at);
                    """)
        }
        migrator.registerMigration("v2-redirect-urls") { db in
            try db.execute(
                sql: """
                    CREATE TABLE api_key_redirect_urls (
                        api_key_id TEXT NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL,
                        url TEXT NOT NULL,
                        PRIMARY KEY (api_key_id, position),
                        UNIQUE (api_key_id, url)
                    );
                    """)
        }
        migrator.registerMigration("v3-verification") { db in
            try db.execute(
                sql: """
                    CREATE TABLE verification_challenges (
                        id INTEGER PRIMARY KEY NOT NULL,
                        api_key_id TEXT NOT NULL,
                        identifier_type TEXT NOT NULL,
                        identifier TEXT NOT NULL,
                        code_digest BLOB NOT NULL,
                        code_expires_at REAL NOT NULL,
                        code_challenge TEXT NOT NULL,
                        redirect_url TEXT NOT NULL,
                        state TEXT,
                        created_at REAL NOT NULL,
                        failed_attempts INTEGER NOT NULL DEFAULT 0,
                        sends INTEGER NOT NULL DEFAULT 1,
                        verified_at REAL,
                        authorization_code_digest BLOB,
                        authorization_code_expires_at REAL,
                        redeemed_at REAL,
                        user_agent TEXT NOT NULL,
                        ip TEXT NOT NULL
                    );
                    CREATE INDEX challenges_by_identifier ON verification_challenges(identifier, created_at);
                    CREATE INDEX challenges_by_ip ON verification_challenges(ip, created_at);
                    CREATE TABLE verified_identities (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL,
                        api_key_id TEXT NOT NULL,
                        identifier_type TEXT NOT NULL,
                        identifier TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        updated_at REAL NOT NULL,
                        UNIQUE (api_key_id, identifier_type, identifier)
                    );
                    CREATE TABLE refresh_tokens (
                        digest BLOB PRIMARY KEY NOT NULL,
                        family_id TEXT NOT NULL,
                        api_key_id TEXT NOT NULL,
                        identity_id TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        expires_at REAL NOT NULL,
                        rotated_at REAL,
                        revoked_at REAL
                    );
                    CREATE INDEX refresh_tokens_by_family ON refresh_tokens(family_id);
                    """)
        }
        migrator.registerMigration("v4-challenge-nonce") { db in
            try db.execute(sql: "ALTER TABLE verification_challenges ADD COLUMN nonce TEXT")
        }
        migrator.registerMigration("v5-refresh-auth-time") { db in
            try db.execute(sql: "ALTER TABLE refresh_tokens ADD COLUMN auth_time REAL")
        }
        migrator.registerMigration("v6-device-lifecycle") { db in
            try db.execute(
                sql: """
                    CREATE TABLE device_changes (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        device_name TEXT NOT NULL,
                        action TEXT NOT NULL CHECK (action IN ('enrolled', 'revoked')),
                        actor TEXT NOT NULL,
                        ip TEXT NOT NULL,
                        at REAL NOT NULL
                    );
                    CREATE INDEX device_changes_by_user ON device_changes(issuer, client_user_id, id);
                    ALTER TABLE events ADD COLUMN new_device TEXT;
                    """)
        }
        migrator.registerMigration("v7-codes") { db in
            try db.execute(
                sql: """
                    ALTER TABLE devices ADD COLUMN totp_secret BLOB;
                    ALTER TABLE devices ADD COLUMN totp_last_step INTEGER;
                    ALTER TABLE events ADD COLUMN code_attempts INTEGER NOT NULL DEFAULT 0;
                    CREATE TABLE code_failures (
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        consecutive INTEGER NOT NULL,
                        locked_until REAL,
                        PRIMARY KEY (issuer, client_user_id)
                    );
                    CREATE TABLE recovery_codes (
                        digest BLOB PRIMARY KEY NOT NULL,
                        issuer TEXT NOT NULL,
                        client_user_id TEXT NOT NULL,
                        created_at REAL NOT NULL,
                        used_at REAL
                    );
                    CREATE INDEX recovery_codes_by_user ON recovery_codes(issuer, client_user_id);
                    """)
        }
        migrator.registerMigration("v8-pending-by-requester") { db in
            // Who asked for an event: its app's backend, or a requester from
            // the address in ip. Earlier events count as the backend's.
            try db.execute(
                sql: """
                    ALTER TABLE events ADD COLUMN requested_by TEXT NOT NULL DEFAULT 'backend'
                        CHECK (requested_by IN ('backend', 'requester'));
                    CREATE INDEX events_pending_by_address ON events(ip, expires_at)
                        WHERE status = 'pending' AND requested_by = 'requester';
                    """)
        }
        migrator.registerMigration("v9-api-key-rotation") { db in
            try db.execute(
                sql: """
                    ALTER TABLE api_keys ADD COLUMN previous_secret_digest BLOB;
                    ALTER TABLE api_keys ADD COLUMN previous_secret_expires_at REAL;
                    ALTER TABLE api_keys ADD COLUMN revoked_at REAL;
                    CREATE TABLE api_key_changes (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        api_key_id TEXT NOT NULL,
                        action TEXT NOT NULL CHECK (action IN ('created', 'rotated', 'revoked')),
                        via TEXT NOT NULL,
                        ip TEXT,
                        at REAL NOT NULL
                    );
                    CREATE INDEX api_key_changes_by_key ON api_key_changes(api_key_id, id);
                    """)
        }
        migrator.registerMigration("v10-code-failures-kept") { db in
            // When a user last tried a code: a count untouched for a day is
            // collected. Earlier rows have none, and go at the next collection.
            try db.execute(sql: "ALTER TABLE code_failures ADD COLUMN last_attempt_at REAL")
        }
        migrator.registerMigration("v11-event-withdrawal") { db in
            try db.execute(sql: "ALTER TABLE events ADD COLUMN withdrawn_at REAL")
        }
        migrator.registerMigration("v12-push-outbox") { db in
            for column in [
                "push_endpoint TEXT", "push_p256dh BLOB", "push_auth BLOB", "push_vapid_key TEXT",
                "push_updated_at REAL",
            ] {
                try db.execute(sql: "ALTER TABLE devices ADD COLUMN \(column)")
            }
            try db.execute(
                sql:
                    "CREATE TABLE vapid_keys (id TEXT PRIMARY KEY, private_key_pem TEXT NOT NULL, created_at REAL NOT NULL)"
            )
            try db.execute(
                sql: """
                    CREATE TABLE outbox (
                        id TEXT PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL, event_id TEXT,
                        payload BLOB NOT NULL, created_at REAL NOT NULL, deliver_until REAL NOT NULL,
                        next_attempt_at REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                        state TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'failed', 'cancelled')),
                        last_error TEXT, finished_at REAL, claim TEXT, lease_until REAL)
                    """)
            try db.execute(sql: "CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'queued'")
            try db.execute(sql: "CREATE INDEX outbox_finished ON outbox (finished_at) WHERE state <> 'queued'")
        }
        migrator.registerMigration("v13-webhooks") { db in
            try db.execute(
                sql: """
                    CREATE TABLE webhook_endpoints (
                        id TEXT PRIMARY KEY, api_key_id TEXT NOT NULL REFERENCES api_keys (id), url TEXT NOT NULL,
                        types TEXT NOT NULL, secret TEXT NOT NULL, previous_secret TEXT, previous_until REAL,
                        created_at REAL NOT NULL, failing_since REAL, disabled_at REAL, disabled_reason TEXT)
                    """)
            try db.execute(sql: "CREATE INDEX webhook_endpoints_key ON webhook_endpoints (api_key_id)")
            try db.execute(sql: "CREATE INDEX outbox_target ON outbox (target, created_at)")
            // Whether the event's expiry was announced: pending events that
            // expire are found by this index until they are.
            try db.execute(sql: "ALTER TABLE events ADD COLUMN expiry_announced INTEGER NOT NULL DEFAULT 0")
            try db.execute(
                sql: """
                    CREATE INDEX events_unannounced_expiry ON events (expires_at)
                    WHERE status = 'pending' AND expiry_announced = 0 AND withdrawn_at IS NULL
                    """)
        }
        migrator.registerMigration("v14-fraud-reports") { db in
            // Why an event ended, when that is written rather than derived.
            try db.execute(sql: "ALTER TABLE events ADD COLUMN status_reason TEXT")
            try db.execute(
                sql: """
                    CREATE TABLE user_protections (
                        issuer TEXT NOT NULL, client_user_id TEXT NOT NULL, until REAL NOT NULL,
                        PRIMARY KEY (issuer, client_user_id))
                    """)
            // Decisions outlive their events (never garbage-collected).
            try db.execute(
                sql: """
                    CREATE TABLE decision_records (
                        event_id TEXT PRIMARY KEY, issuer TEXT NOT NULL, client_user_id TEXT NOT NULL,
                        decided_at REAL NOT NULL, document BLOB NOT NULL)
                    """)
            try db.execute(
                sql: "CREATE INDEX decision_records_user ON decision_records (issuer, client_user_id, decided_at)")
            // Requesters' recent events by address, for the rate limit.
            try db.execute(
                sql:
                    "CREATE INDEX events_requested_by_address ON events (ip, created_at) WHERE requested_by = 'requester'"
            )
        }
        migrator.registerMigration("v15-ciba") { db in
            // OpenID CIBA requests, one per event a client asked for.
            try db.execute(
                sql: """
                    CREATE TABLE ciba_requests (
                        event_id TEXT PRIMARY KEY NOT NULL, api_key_id TEXT NOT NULL, scope TEXT NOT NULL,
                        poll_interval INTEGER NOT NULL, next_poll_at REAL NOT NULL, notification_token TEXT,
                        auth_req_id TEXT, redeemed_at REAL, created_at REAL NOT NULL)
                    """)
            try db.execute(sql: "CREATE INDEX ciba_requests_created ON ciba_requests (created_at)")
            // A CIBA grant's refresh tokens name the user, not a verified identity.
            try db.execute(sql: "ALTER TABLE refresh_tokens ADD COLUMN client_user_id TEXT")
            try db.execute(sql: "ALTER TABLE refresh_tokens ADD COLUMN acr TEXT")
        }
        migrator.registerMigration("v16-ciba-ping") { db in
            // Clients registered for the ping mode, and where each request's ping goes.
            try db.execute(
                sql: """
                    CREATE TABLE ciba_clients (
                        api_key_id TEXT PRIMARY KEY NOT NULL, notification_endpoint TEXT NOT NULL,
                        updated_at REAL NOT NULL)
                    """)
            try db.execute(sql: "ALTER TABLE ciba_requests ADD COLUMN notification_endpoint TEXT")
        }
        migrator.registerMigration("v17-request-counts") { db in
            // Requesters' events per user and per address, by minute: the
            // rate limits read at most a window's minutes, whatever the rate.
            try db.execute(
                sql: """
                    CREATE TABLE request_counts (
                        scope TEXT NOT NULL, key TEXT NOT NULL, minute INTEGER NOT NULL, count INTEGER NOT NULL,
                        PRIMARY KEY (scope, key, minute)) WITHOUT ROWID
                    """)
            // The last day's events, counted as the broker counts them from now on.
            try db.execute(
                sql: """
                    INSERT INTO request_counts (scope, key, minute, count)
                    SELECT 'user', issuer || char(10) || client_user_id, CAST(created_at / 60 AS INTEGER), count(*)
                    FROM events WHERE requested_by = 'requester' AND created_at > unixepoch() - 86400
                    GROUP BY 2, 3
                    """)
            try db.execute(
                sql: """
                    INSERT INTO request_counts (scope, key, minute, count)
                    SELECT 'address', ip, CAST(created_at / 60 AS INTEGER), count(*)
                    FROM events WHERE requested_by = 'requester' AND created_at > unixepoch() - 86400
                    GROUP BY 2, 3
                    """)
        }
        migrator.registerMigration("v18-rejected-events") { db in
            // How many of a user's events were rejected lately (the match
            // number's length) is read for every new event: without this it
            // walked every event of the user, a cost that grew with use.
            try db.execute(
                sql: """
                    CREATE INDEX events_rejected ON events (issuer, client_user_id, decided_at)
                    WHERE status = 'rejected'
                    """)
        }
        registerMigrationsSince0_9(in: &migrator)
        return migrator
    }
}
