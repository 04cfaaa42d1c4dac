-- Every change to `api_keys` but a new key is announced on the channel
-- `motor_api_keys` (at its commit, as NOTIFY is): a revocation through
-- the API, `motor admin key revoke` writing the row itself, an expiry
-- moved, a key deleted. Each API process listens there and forgets the
-- keys it trusts when a change is announced (motor_api::auth::ApiKeys),
-- so it can trust a key it found for longer than a second without
-- asking Postgres at every request: with many tenants, each key was used
-- less often than once a second and every request cost a lookup.
-- A new key needs no announcement: refusals are never remembered.
--
-- Per statement, not per row: a listener forgets every key whatever
-- changed, so one announcement a statement is enough (and one that
-- changed no row costs a lookup per key, nothing more).
CREATE FUNCTION motor_api_keys_changed() RETURNS trigger
LANGUAGE plpgsql
AS $motor$
BEGIN
    PERFORM pg_notify('motor_api_keys', '');
    RETURN NULL;
END
$motor$;

CREATE TRIGGER api_keys_changed
    AFTER UPDATE OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION motor_api_keys_changed();
