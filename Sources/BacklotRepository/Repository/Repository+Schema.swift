import BacklotStore

extension Repository {
    /// The metadata schema, step by step (``SchemaMigration``): each step runs once per database,
    /// in a transaction, recorded in `schema_version`. Never edit a step that shipped; add one.
    ///
    /// Step 1 is the schema of the first releases, written `CREATE TABLE IF NOT EXISTS` so that a
    /// SQLite database made before `schema_version` existed upgrades in place. PostgreSQL has the
    /// same tables with its own types: `BIGINT` for every number, identity columns for
    /// `AUTOINCREMENT`, and the C collation on names so that `ORDER BY` sorts as SQLite does.
    static let schemaSteps: [SchemaMigration] = [
        SchemaMigration(
            1, "apps, packs, versions, channels, release requests, catalogs, tokens",
            sqlite: """
                CREATE TABLE IF NOT EXISTS tokens (hash TEXT PRIMARY KEY, role TEXT NOT NULL, label TEXT NOT NULL, created INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS apps (id TEXT PRIMARY KEY, created INTEGER NOT NULL);
                CREATE TABLE IF NOT EXISTS packs (app TEXT NOT NULL REFERENCES apps(id), id TEXT NOT NULL, created INTEGER NOT NULL, PRIMARY KEY (app, id));
                CREATE TABLE IF NOT EXISTS versions (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, pack TEXT NOT NULL, number INTEGER NOT NULL,
                    state TEXT NOT NULL, reason TEXT, declared_size INTEGER NOT NULL, archive_sha256 TEXT, index_offset INTEGER,
                    index_length INTEGER, index_sha256 TEXT, install_size INTEGER, metadata TEXT, created INTEGER NOT NULL, deleted INTEGER NOT NULL DEFAULT 0,
                    format TEXT NOT NULL DEFAULT 'pack', manifest TEXT,
                    UNIQUE (app, pack, number), FOREIGN KEY (app, pack) REFERENCES packs(app, id));
                CREATE TABLE IF NOT EXISTS channel_packs (
                    app TEXT NOT NULL, channel TEXT NOT NULL, pack TEXT NOT NULL, live INTEGER, candidate INTEGER, rollout_bp INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (app, channel, pack));
                CREATE TABLE IF NOT EXISTS release_requests (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, channel TEXT NOT NULL, pack TEXT NOT NULL, version INTEGER NOT NULL,
                    rollout_bp INTEGER, status TEXT NOT NULL, requested INTEGER NOT NULL, decided INTEGER, reason TEXT);
                CREATE TABLE IF NOT EXISTS catalogs (app TEXT NOT NULL, channel TEXT NOT NULL, version INTEGER NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY (app, channel));
                """,
            postgresql: """
                CREATE TABLE IF NOT EXISTS tokens (hash TEXT PRIMARY KEY, role TEXT NOT NULL, label TEXT NOT NULL, created BIGINT NOT NULL);
                CREATE TABLE IF NOT EXISTS apps (id TEXT COLLATE "C" PRIMARY KEY, created BIGINT NOT NULL);
                CREATE TABLE IF NOT EXISTS packs (app TEXT COLLATE "C" NOT NULL REFERENCES apps(id), id TEXT COLLATE "C" NOT NULL, created BIGINT NOT NULL,
                    PRIMARY KEY (app, id));
                CREATE TABLE IF NOT EXISTS versions (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, app TEXT COLLATE "C" NOT NULL, pack TEXT COLLATE "C" NOT NULL, number BIGINT NOT NULL,
                    state TEXT NOT NULL, reason TEXT, declared_size BIGINT NOT NULL, archive_sha256 TEXT, index_offset BIGINT,
                    index_length BIGINT, index_sha256 TEXT, install_size BIGINT, metadata TEXT, created BIGINT NOT NULL, deleted BIGINT NOT NULL DEFAULT 0,
                    format TEXT NOT NULL DEFAULT 'pack', manifest TEXT,
                    UNIQUE (app, pack, number), FOREIGN KEY (app, pack) REFERENCES packs(app, id));
                CREATE TABLE IF NOT EXISTS channel_packs (
                    app TEXT COLLATE "C" NOT NULL, channel TEXT COLLATE "C" NOT NULL, pack TEXT COLLATE "C" NOT NULL, live BIGINT, candidate BIGINT,
                    rollout_bp BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (app, channel, pack));
                CREATE TABLE IF NOT EXISTS release_requests (
                    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, app TEXT COLLATE "C" NOT NULL, channel TEXT COLLATE "C" NOT NULL,
                    pack TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL, rollout_bp BIGINT, status TEXT NOT NULL, requested BIGINT NOT NULL,
                    decided BIGINT, reason TEXT);
                CREATE TABLE IF NOT EXISTS catalogs (app TEXT COLLATE "C" NOT NULL, channel TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL,
                    expires BIGINT NOT NULL, PRIMARY KEY (app, channel));
                """),
        SchemaMigration(
            2, "indexes for the processing restart and for release requests", sqlite: indexes, postgresql: indexes),
        SchemaMigration(
            3, "uploads into shared storage; leases of uploads, processing and re-signing",
            sqlite: """
                ALTER TABLE versions ADD COLUMN upload_id TEXT;
                ALTER TABLE versions ADD COLUMN received INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE versions ADD COLUMN lease_owner TEXT;
                ALTER TABLE versions ADD COLUMN lease_until INTEGER;
                CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, until INTEGER NOT NULL);
                """,
            postgresql: """
                ALTER TABLE versions ADD COLUMN upload_id TEXT;
                ALTER TABLE versions ADD COLUMN received BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE versions ADD COLUMN lease_owner TEXT;
                ALTER TABLE versions ADD COLUMN lease_until BIGINT;
                CREATE TABLE leases (name TEXT COLLATE "C" PRIMARY KEY, owner TEXT NOT NULL, until BIGINT NOT NULL);
                """),
        // SQLite cannot add a key column: the tokens table is rebuilt, ids given in the order the tokens were made.
        SchemaMigration(
            4,
            "token ids, expiry, last use and revocation; four-eyes apps; who asked and decided; live history; declared digests; upload activity",
            sqlite: """
                CREATE TABLE tokens_new (id INTEGER PRIMARY KEY AUTOINCREMENT, hash TEXT NOT NULL UNIQUE, role TEXT NOT NULL, label TEXT NOT NULL,
                    created INTEGER NOT NULL, expires INTEGER, last_used INTEGER, revoked INTEGER);
                INSERT INTO tokens_new(hash, role, label, created) SELECT hash, role, label, created FROM tokens ORDER BY created, rowid;
                DROP TABLE tokens;
                ALTER TABLE tokens_new RENAME TO tokens;
                ALTER TABLE apps ADD COLUMN four_eyes INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE release_requests ADD COLUMN requested_by INTEGER;
                ALTER TABLE release_requests ADD COLUMN requested_by_label TEXT;
                ALTER TABLE release_requests ADD COLUMN decided_by INTEGER;
                ALTER TABLE release_requests ADD COLUMN decided_by_label TEXT;
                CREATE TABLE live_history (id INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, channel TEXT NOT NULL, pack TEXT NOT NULL,
                    version INTEGER NOT NULL, replaced INTEGER NOT NULL);
                CREATE INDEX live_history_by_pack ON live_history(app, channel, pack, id);
                ALTER TABLE versions ADD COLUMN declared_sha256 TEXT;
                ALTER TABLE versions ADD COLUMN upload_activity INTEGER;
                """,
            postgresql: """
                ALTER TABLE tokens ADD COLUMN id BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE;
                ALTER TABLE tokens ADD COLUMN expires BIGINT;
                ALTER TABLE tokens ADD COLUMN last_used BIGINT;
                ALTER TABLE tokens ADD COLUMN revoked BIGINT;
                ALTER TABLE apps ADD COLUMN four_eyes BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE release_requests ADD COLUMN requested_by BIGINT;
                ALTER TABLE release_requests ADD COLUMN requested_by_label TEXT;
                ALTER TABLE release_requests ADD COLUMN decided_by BIGINT;
                ALTER TABLE release_requests ADD COLUMN decided_by_label TEXT;
                CREATE TABLE live_history (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, app TEXT COLLATE "C" NOT NULL,
                    channel TEXT COLLATE "C" NOT NULL, pack TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL, replaced BIGINT NOT NULL);
                CREATE INDEX live_history_by_pack ON live_history(app, channel, pack, id);
                ALTER TABLE versions ADD COLUMN declared_sha256 TEXT;
                ALTER TABLE versions ADD COLUMN upload_activity BIGINT;
                """),
        // Pack and version are '' and 0 in downloads when a row counts an app's catalog or key list (a key column is never NULL).
        SchemaMigration(
            5, "the audit trail; download counts per app, pack, version, kind and day",
            sqlite: """
                CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, token_id INTEGER, actor_label TEXT NOT NULL,
                    actor_role TEXT NOT NULL, app TEXT, pack TEXT, version INTEGER, action TEXT NOT NULL, details TEXT NOT NULL);
                CREATE INDEX audit_by_app ON audit(app, id);
                CREATE INDEX audit_by_action ON audit(action, id);
                CREATE TABLE downloads (app TEXT NOT NULL, day TEXT NOT NULL, kind TEXT NOT NULL, pack TEXT NOT NULL, version INTEGER NOT NULL,
                    requests INTEGER NOT NULL, bytes INTEGER NOT NULL, PRIMARY KEY (app, day, kind, pack, version));
                """,
            postgresql: """
                CREATE TABLE audit (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, time BIGINT NOT NULL, token_id BIGINT,
                    actor_label TEXT NOT NULL, actor_role TEXT NOT NULL, app TEXT COLLATE "C", pack TEXT COLLATE "C", version BIGINT,
                    action TEXT NOT NULL, details TEXT NOT NULL);
                CREATE INDEX audit_by_app ON audit(app, id);
                CREATE INDEX audit_by_action ON audit(action, id);
                CREATE TABLE downloads (app TEXT COLLATE "C" NOT NULL, day TEXT COLLATE "C" NOT NULL, kind TEXT COLLATE "C" NOT NULL,
                    pack TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL, requests BIGINT NOT NULL, bytes BIGINT NOT NULL,
                    PRIMARY KEY (app, day, kind, pack, version));
                """),
        // NULL for versions made before this step, and for those a command on the data folder made (no token).
        SchemaMigration(
            6, "the token that created each version (who may continue its upload)",
            sqlite: "ALTER TABLE versions ADD COLUMN created_by INTEGER;",
            postgresql: "ALTER TABLE versions ADD COLUMN created_by BIGINT;"),
        // One row (id 1): the storage the first server recorded (Repository+StorageRecord.swift).
        SchemaMigration(
            7, "the storage the repository's archives and tree are in (servers sharing a database share it)",
            sqlite: """
                CREATE TABLE storage_record (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT NOT NULL, description TEXT NOT NULL,
                    recorded INTEGER NOT NULL, recorded_by TEXT NOT NULL);
                """,
            postgresql: """
                CREATE TABLE storage_record (id BIGINT PRIMARY KEY CHECK (id = 1), identity TEXT NOT NULL, description TEXT NOT NULL,
                    recorded BIGINT NOT NULL, recorded_by TEXT NOT NULL);
                """),
        // NULL for tokens made before people: each such token counts as a person of its own ("token #ID").
        SchemaMigration(
            8, "the person (or service account) each token belongs to, named in release requests and the audit trail",
            sqlite: """
                ALTER TABLE tokens ADD COLUMN person TEXT;
                ALTER TABLE release_requests ADD COLUMN requested_by_person TEXT;
                ALTER TABLE release_requests ADD COLUMN decided_by_person TEXT;
                ALTER TABLE audit ADD COLUMN actor_person TEXT;
                """,
            postgresql: """
                ALTER TABLE tokens ADD COLUMN person TEXT;
                ALTER TABLE release_requests ADD COLUMN requested_by_person TEXT;
                ALTER TABLE release_requests ADD COLUMN decided_by_person TEXT;
                ALTER TABLE audit ADD COLUMN actor_person TEXT;
                """),
        // NULL for versions uploaded without notes.
        SchemaMigration(
            9, "release notes on a version (shown with it and with its release requests)",
            sqlite: "ALTER TABLE versions ADD COLUMN notes TEXT;",
            postgresql: "ALTER TABLE versions ADD COLUMN notes TEXT;"),
        // NULL: no rule (one reviewer may take a rollout to every device).
        SchemaMigration(
            10, "an app's second-reviewer rule: the share of devices above which a rollout step needs another person",
            sqlite: "ALTER TABLE apps ADD COLUMN second_reviewer_above_bp INTEGER;",
            postgresql: "ALTER TABLE apps ADD COLUMN second_reviewer_above_bp BIGINT;"),
        // One row a delta file written into the tree: the version it leads to (for the download counts).
        SchemaMigration(
            11, "which version each published delta leads to",
            sqlite:
                "CREATE TABLE published_deltas (sha256 TEXT PRIMARY KEY, app TEXT NOT NULL, pack TEXT NOT NULL, version INTEGER NOT NULL);",
            postgresql: """
                CREATE TABLE published_deltas (sha256 TEXT COLLATE "C" PRIMARY KEY, app TEXT COLLATE "C" NOT NULL,
                    pack TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL);
                """),
        // Devices' reports, added up per app, channel, UTC day, pack and version (pack '' and version 0:
        // the devices that reported that day); no row names a device. And each production pack's
        // phased rollout: its steps (basis points, comma-separated), how long each lasts, where it is.
        SchemaMigration(
            12, "device reports (adoption and install outcomes, in aggregate) and phased rollouts",
            sqlite: """
                CREATE TABLE device_reports (app TEXT NOT NULL, channel TEXT NOT NULL, day TEXT NOT NULL, pack TEXT NOT NULL,
                    version INTEGER NOT NULL, devices INTEGER NOT NULL DEFAULT 0, started INTEGER NOT NULL DEFAULT 0,
                    finished INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (app, channel, day, pack, version));
                CREATE TABLE rollout_phases (app TEXT NOT NULL, pack TEXT NOT NULL, version INTEGER NOT NULL, steps TEXT NOT NULL,
                    step_seconds INTEGER NOT NULL, step INTEGER NOT NULL, step_since INTEGER NOT NULL, started INTEGER NOT NULL,
                    state TEXT NOT NULL, reason TEXT, set_by_person TEXT, PRIMARY KEY (app, pack));
                """,
            postgresql: """
                CREATE TABLE device_reports (app TEXT COLLATE "C" NOT NULL, channel TEXT COLLATE "C" NOT NULL, day TEXT COLLATE "C" NOT NULL,
                    pack TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL, devices BIGINT NOT NULL DEFAULT 0, started BIGINT NOT NULL DEFAULT 0,
                    finished BIGINT NOT NULL DEFAULT 0, failed BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (app, channel, day, pack, version));
                CREATE TABLE rollout_phases (app TEXT COLLATE "C" NOT NULL, pack TEXT COLLATE "C" NOT NULL, version BIGINT NOT NULL,
                    steps TEXT NOT NULL, step_seconds BIGINT NOT NULL, step BIGINT NOT NULL, step_since BIGINT NOT NULL, started BIGINT NOT NULL,
                    state TEXT NOT NULL, reason TEXT, set_by_person TEXT, PRIMARY KEY (app, pack));
                """),
        // The pack digest each published delta leads to (its file's header says the same), so that
        // the deltas into versions no longer kept are collected with them (Publication+DeltaCollection.swift);
        // rows written before this step take it from the version they name. And the pack digest a
        // version being processed claims once its index is read (index_sha256 is set when it is
        // COMPLETE), so that the deltas into its bytes are kept for it meanwhile.
        SchemaMigration(
            13, "the pack digest each published delta leads to, for collecting the deltas of versions deleted",
            sqlite: """
                ALTER TABLE versions ADD COLUMN claimed_digest TEXT;
                ALTER TABLE published_deltas ADD COLUMN target TEXT;
                UPDATE published_deltas SET target = (SELECT index_sha256 FROM versions v
                    WHERE v.app = published_deltas.app AND v.pack = published_deltas.pack AND v.number = published_deltas.version);
                """,
            postgresql: """
                ALTER TABLE versions ADD COLUMN claimed_digest TEXT COLLATE "C";
                ALTER TABLE published_deltas ADD COLUMN target TEXT COLLATE "C";
                UPDATE published_deltas SET target = (SELECT index_sha256 FROM versions v
                    WHERE v.app = published_deltas.app AND v.pack = published_deltas.pack AND v.number = published_deltas.version);
                """),
    ]

    private static let indexes = """
        CREATE INDEX IF NOT EXISTS versions_by_state ON versions(state);
        CREATE INDEX IF NOT EXISTS release_requests_by_pack ON release_requests(app, channel, pack, status);
        """

    /// The schema version this build knows (the last step).
    public static var schemaVersion: Int64 { schemaSteps.last?.number ?? 0 }
}
