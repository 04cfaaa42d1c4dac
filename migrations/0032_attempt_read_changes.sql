-- Every change to what a delivery attempt reads without a version is
-- announced on the channel `motor_attempt_reads` (at its commit, as
-- NOTIFY is): an app's allowed destinations, policy or contract (`apps`),
-- the operator's settings (the global allowed destinations, the timeout),
-- whether a subscription is ordered (`subscriptions.ordenado`). Each
-- dispatcher listens there and forgets what it read of them when a change
-- is announced (motor_engine's attempt cache), so it can trust what it
-- read for longer than a second without asking Postgres at every attempt:
-- with many tenants each subscription is attempted less often than once
-- a second, and every attempt read its app and its order again.
--
-- Per statement, not per row, as 0026: a listener forgets all of it
-- whatever changed. A new app or subscription needs no announcement (a
-- missing one is never remembered); settings do, since a missing key
-- reads as its default.
CREATE FUNCTION motor_attempt_reads_changed() RETURNS trigger
LANGUAGE plpgsql
AS $motor$
BEGIN
    PERFORM pg_notify('motor_attempt_reads', '');
    RETURN NULL;
END
$motor$;

CREATE TRIGGER apps_changed
    AFTER UPDATE OR DELETE OR TRUNCATE ON apps
    FOR EACH STATEMENT EXECUTE FUNCTION motor_attempt_reads_changed();

CREATE TRIGGER settings_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON settings
    FOR EACH STATEMENT EXECUTE FUNCTION motor_attempt_reads_changed();

CREATE TRIGGER subscriptions_ordering_changed
    AFTER UPDATE OF ordenado ON subscriptions
    FOR EACH STATEMENT EXECUTE FUNCTION motor_attempt_reads_changed();
