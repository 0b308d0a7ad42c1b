-- Cluster probe results shared by the processes of one store (src/store/probes.rs), so that
-- replicas sharing one PostgreSQL probe each cluster once per interval between them, not once
-- each, and every replica's API shows the latest result whoever took it. One row per
-- registered cluster: when its next probe is due (a process claims the probe by moving this
-- forward, conditionally, so two never both claim it) and the latest result with its time.
-- Portable SQL (SQLite and PostgreSQL).

CREATE TABLE cluster_probes (
    name TEXT PRIMARY KEY,
    due_ms BIGINT NOT NULL,
    status TEXT,
    probed_ms BIGINT NOT NULL
);
