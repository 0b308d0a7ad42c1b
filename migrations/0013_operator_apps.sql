-- Apps reconciled by operator-role processes, as they report them to the server
-- (src/store/operator_apps.rs): a `--role server` process reconciles nothing and reads no
-- `--apps`, so each operator reports the Apps it reconciles (`PUT /internal/operators/{id}/apps`)
-- and the server lists them, reads their statuses from `app_status` and hands their
-- operations over through `app_requests`.
-- `operators`: one row per operator, the digest of its last full report and when it was last
-- heard from (a full report or a heartbeat naming that digest: a sign of life costs one row,
-- not one per App). An operator not heard from for two minutes is no longer listed.
-- `operator_apps`: one row per App key, the operator that reported it last, the App as JSON
-- and when its App or operator last changed (a server re-reads the table only when that
-- changes). Rows an operator stopped reporting go with its next report; those of an operator
-- that expired go with any operator's next report.
-- An operator that takes over a cluster (or restarts) reads the statuses of its Apps back a
-- page at a time, by cluster: `app_status` gets an index for it.
-- Portable SQL (SQLite and PostgreSQL).

CREATE TABLE operators (
    operator TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    reported_ms BIGINT NOT NULL
);
CREATE INDEX operators_reported ON operators (reported_ms);
CREATE TABLE operator_apps (
    app_key TEXT PRIMARY KEY,
    operator TEXT NOT NULL,
    app TEXT NOT NULL,
    changed_ms BIGINT NOT NULL
);
CREATE INDEX operator_apps_operator ON operator_apps (operator);
CREATE INDEX app_status_cluster ON app_status (cluster, app_key);
