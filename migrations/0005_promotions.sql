-- One row per promotion (and per rollback): which App's digests were pinned on which App, at
-- which source revision, by whom, when, the plan it produced and its outcome. Ids are small
-- integers, allocated in order (`wardn apps rollback --to ID` names them).
-- Portable SQL: this one file runs unchanged on SQLite and PostgreSQL.

CREATE TABLE promotions (
    id BIGINT PRIMARY KEY,
    target_key TEXT NOT NULL,
    target TEXT NOT NULL,
    source TEXT NOT NULL,
    revision TEXT NOT NULL,
    images TEXT NOT NULL,
    actor TEXT NOT NULL,
    created_at TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    outcome TEXT NOT NULL
);
CREATE INDEX promotions_target ON promotions (target_key, id);
