-- API tokens get an id (listing and revocation name a token by it, never by its secret or
-- hash), an expiry and the time they were last used. Times are BIGINT unix seconds.
-- Portable SQL (SQLite and PostgreSQL). Tokens created before this migration get their id and
-- an expiry from the store when it opens (`Store::backfill_api_tokens`): neither engine offers
-- a common SQL function for a random id.

ALTER TABLE api_tokens ADD COLUMN id TEXT;
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE api_tokens ADD COLUMN last_used_at BIGINT;
CREATE UNIQUE INDEX api_tokens_id ON api_tokens (id);
