-- Decisions on Held plans handed to the replica that owns the App (`--shards auto`): a server
-- replica that does not reconcile the App records the approval or rejection here; the owner
-- claims it (claimed_by), performs it and writes the outcome (JSON) and done_at. The asking
-- replica polls the row for the outcome. Portable SQL (SQLite and PostgreSQL).

CREATE TABLE app_requests (
    id TEXT PRIMARY KEY,
    app_key TEXT NOT NULL,
    operation TEXT NOT NULL,
    plan_hash TEXT,
    requested_at TEXT NOT NULL,
    claimed_by TEXT,
    done_at TEXT,
    outcome TEXT
);
CREATE INDEX app_requests_open ON app_requests (claimed_by, app_key);
