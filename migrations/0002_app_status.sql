-- The last status of every App, written by the runner on each change and read at start, so a
-- restarted daemon answers with it and a Held plan survives a restart.
-- Portable SQL: this one file runs unchanged on SQLite and PostgreSQL.

CREATE TABLE app_status (
    app_key TEXT PRIMARY KEY,
    cluster TEXT NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
