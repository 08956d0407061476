import BacklotBasics
import BacklotStore

/// The schemas of a container's three databases, each the one place its tables are declared.
/// Version 1 is the tables of the releases up to 2026-12-01: a container made by them (no
/// `user_version` yet, some columns added over time) is brought to version 1 in place. Later
/// changes are new steps.
///
/// ```swift
/// let db = try ContainerSchema.state.open(layout.stateDatabase)
/// ```
public enum ContainerSchema {
    /// `state.sqlite`: the client's verified catalog and metadata, installed releases, resumable
    /// chunks, the request queue and its outcomes, URL downloads, their retries and outcomes.
    public static let state = SQLiteSchema(
        "the container's state.sqlite",
        [
            .init(1, "metadata, installed releases, chunks, requests and outcomes, URL downloads, retries and outcomes")
            { tx in
                try tx.execute(
                    """
                    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS installed (id TEXT PRIMARY KEY, version INTEGER NOT NULL, digest TEXT NOT NULL, download_size INTEGER NOT NULL,
                        metadata TEXT NOT NULL, index_bytes BLOB NOT NULL, installed INTEGER NOT NULL);
                    CREATE TABLE IF NOT EXISTS chunks_done (digest TEXT NOT NULL, chunk INTEGER NOT NULL, PRIMARY KEY (digest, chunk));
                    CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY AUTOINCREMENT, client TEXT NOT NULL, pack TEXT NOT NULL, created INTEGER NOT NULL);
                    CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, client TEXT NOT NULL, pack TEXT NOT NULL, kind TEXT NOT NULL,
                        detail TEXT NOT NULL, delivered INTEGER NOT NULL DEFAULT 0);
                    CREATE TABLE IF NOT EXISTS url_downloads (identifier TEXT PRIMARY KEY, url TEXT NOT NULL, file_size INTEGER, essential INTEGER NOT NULL,
                        priority INTEGER NOT NULL, created INTEGER NOT NULL);
                    CREATE TABLE IF NOT EXISTS url_retries (identifier TEXT PRIMARY KEY, attempts INTEGER NOT NULL, retry_after REAL NOT NULL);
                    CREATE TABLE IF NOT EXISTS url_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, identifier TEXT NOT NULL, url TEXT NOT NULL, file_size INTEGER,
                        essential INTEGER NOT NULL, priority INTEGER NOT NULL, kind TEXT NOT NULL, path TEXT, message TEXT, code INTEGER,
                        delivered INTEGER NOT NULL DEFAULT 0);
                    """)
                // Added over time: the file still to be renamed into `path`, and which role recorded the outcome.
                try tx.addColumnIfMissing("url_events", "staged", "TEXT")
                try tx.addColumnIfMissing("url_events", "owner", "TEXT NOT NULL DEFAULT 'agent'")
            }
        ])

    /// `agent.sqlite`: the agent's queue of events, the extension's runtime per day, its
    /// settings and the children it started.
    public static let agent = SQLiteSchema(
        "the agent's agent.sqlite",
        [
            .init(1, "events, extension runtime, agent settings, children") { tx in
                try tx.execute(
                    """
                    CREATE TABLE IF NOT EXISTS agent_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, request TEXT NOT NULL, bypass INTEGER NOT NULL,
                        created REAL NOT NULL, state TEXT NOT NULL DEFAULT 'queued', extension_done INTEGER NOT NULL DEFAULT 0, detail TEXT NOT NULL DEFAULT '',
                        accepted TEXT, not_before REAL);
                    CREATE TABLE IF NOT EXISTS extension_runtime (day TEXT PRIMARY KEY, seconds REAL NOT NULL);
                    CREATE TABLE IF NOT EXISTS agent_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS agent_children (pgid INTEGER PRIMARY KEY, token TEXT NOT NULL, what TEXT NOT NULL,
                        event INTEGER, started REAL NOT NULL);
                    """)
                try tx.addColumnIfMissing("agent_events", "essential_done", "INTEGER NOT NULL DEFAULT 0")
                try tx.addColumnIfMissing("agent_events", "essential_downloads", "TEXT")
                try tx.addColumnIfMissing("agent_events", "last_problem", "TEXT")
            }
        ])

    /// `tasks.sqlite`: the task scheduler's pending requests and runs, and the app's launches
    /// (``AppLaunchRecord``).
    public static let tasks = SQLiteSchema(
        "the task scheduler's tasks.sqlite",
        [
            .init(1, "task requests and runs, the app's launches") { tx in
                try tx.execute(
                    """
                    CREATE TABLE IF NOT EXISTS task_requests (identifier TEXT PRIMARY KEY, kind TEXT NOT NULL, earliest REAL,
                        requires_network INTEGER NOT NULL, requires_power INTEGER NOT NULL, submitted REAL NOT NULL);
                    CREATE TABLE IF NOT EXISTS task_runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, identifier TEXT NOT NULL, kind TEXT NOT NULL,
                        started REAL NOT NULL, ended REAL NOT NULL, outcome TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS app_launches (seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL);
                    CREATE TABLE IF NOT EXISTS app_first_launch (one INTEGER PRIMARY KEY CHECK (one = 1), at REAL NOT NULL);
                    """)
                // The run's end on the monotonic clock and the boot it was measured in, for the back-off.
                try tx.addColumnIfMissing("task_runs", "ended_uptime", "REAL")
                try tx.addColumnIfMissing("task_runs", "boot", "TEXT")
            }
        ])
}
