-- Git repository credentials and webhook secrets, registered through the API.
-- Portable SQL (SQLite and PostgreSQL). Secrets are only ever stored sealed (enc:v1:).

CREATE TABLE repositories (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    auth_kind TEXT NOT NULL,
    username TEXT,
    secret_sealed TEXT,
    webhook_secret_sealed TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
