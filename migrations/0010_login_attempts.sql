-- Login attempts counted in the store, so that server replicas sharing one PostgreSQL together
-- allow only the documented attempts (src/store/login_attempts.rs). One row per attempt and
-- subject (a source address; an address and user name); rows older than the window are
-- deleted at every attempt, a subject has at most its limit of rows, and the table at most
-- a fixed number. Portable SQL (SQLite and PostgreSQL).

CREATE TABLE login_attempts (
    id TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX login_attempts_subject ON login_attempts (subject, at_ms);
CREATE INDEX login_attempts_at ON login_attempts (at_ms);
