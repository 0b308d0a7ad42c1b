-- Apps reconciled by operator-role processes, as they report them to the server
-- (src/store/operator_apps.rs): a `--role server` process reconciles nothing and reads no
-- `--apps`, so each operator reports the Apps it reconciles (`PUT /internal/operators/{id}/apps`)
-- and the server lists them, reads their statuses from `app_status` and hands their
-- operations over through `app_requests`. One row per App key: the operator that reported it
-- last, the App as JSON, when it was last reported and when its App or operator last changed
-- (a server re-reads the table only when that changes). Rows an operator stopped reporting
-- go with its next report; those of an operator that stopped reporting at all expire.
-- An operator that takes over a cluster (or restarts) reads the statuses of its Apps back a
-- page at a time, by cluster: `app_status` gets an index for it.
-- Portable SQL (SQLite and PostgreSQL).

CREATE TABLE operator_apps (
    app_key TEXT PRIMARY KEY,
    operator TEXT NOT NULL,
    app TEXT NOT NULL,
    reported_ms BIGINT NOT NULL,
    changed_ms BIGINT NOT NULL
);
CREATE INDEX operator_apps_operator ON operator_apps (operator);
CREATE INDEX operator_apps_reported ON operator_apps (reported_ms);
CREATE INDEX app_status_cluster ON app_status (cluster, app_key);
