-- People with roles. Every user gets a role (viewer < deployer < approver < admin); the users
-- that exist before this migration (the bootstrap admin) become admins. An approver may be
-- limited to named clusters (`approver_clusters`, a JSON list; NULL: every cluster). A user may
-- have an email address (four-eyes approval matches it against Git commit authors). API tokens
-- carry a role (NULL, for tokens created before roles: their creator's role).
-- Portable SQL (SQLite and PostgreSQL). The role column has no default: every insert names it.

ALTER TABLE users ADD COLUMN role TEXT;
UPDATE users SET role = 'admin';
ALTER TABLE users ADD COLUMN approver_clusters TEXT;
ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE api_tokens ADD COLUMN role TEXT;
