-- Cluster registry, authentication and audit tables.
-- Portable SQL: this one file runs unchanged on SQLite and PostgreSQL.
-- Times are RFC 3339 text; counters and expiries are BIGINT unix seconds.

CREATE TABLE clusters (
    name TEXT PRIMARY KEY,
    server_url TEXT NOT NULL,
    kubeconfig_sealed TEXT NOT NULL,
    namespaces TEXT NOT NULL,
    credential_expires_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE users (
    username TEXT PRIMARY KEY,
    password_hash TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    username TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE TABLE api_tokens (
    token_hash TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    username TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE audit_log (
    seq BIGINT PRIMARY KEY,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    outcome TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);

CREATE TABLE audit_head (
    id BIGINT PRIMARY KEY,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);
