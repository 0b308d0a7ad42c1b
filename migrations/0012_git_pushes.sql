-- Push webhooks recorded for operator-role processes (src/store/pushes.rs): a `--role server`
-- process reconciles nothing, so it records each authenticated push and the operators read
-- the recent ones through `GET /internal/pushes` and poll the repositories they use. One row
-- per repository: the latest push's id (random, so a reader tells two pushes apart whatever
-- the clocks of the server replicas) and when it was received. Rows older than ten minutes
-- are deleted at every push, and the table holds at most a fixed number.
-- Portable SQL (SQLite and PostgreSQL).

CREATE TABLE git_pushes (
    repository TEXT PRIMARY KEY,
    push_id TEXT NOT NULL,
    pushed_ms BIGINT NOT NULL
);
CREATE INDEX git_pushes_pushed ON git_pushes (pushed_ms);
