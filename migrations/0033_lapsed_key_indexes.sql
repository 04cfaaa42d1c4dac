-- The sweeper looks for subscriptions bound to a lapsed API key every
-- second (`motor_store::subscriptions::suspend_for_lapsed_keys`). It read
-- every subscription bound to any key and probed each one's key: with
-- 10,000 subscriptions, 1–2 ms a pass (14 ms under a contract that
-- cancels while `api_keys` had no statistics), growing with the tenants. It now starts from the keys
-- that lapsed lately (a range of each index below, nearly always empty)
-- and reads their live subscriptions only; a pass over every lapsed key
-- runs once a minute.

-- Keys by the instant they were revoked, or by the instant they expire.
CREATE INDEX api_keys_revocado_en ON api_keys (revocado_en) WHERE revocado_en IS NOT NULL;
CREATE INDEX api_keys_vence_en ON api_keys (vence_en) WHERE vence_en IS NOT NULL;

-- The live (activa, pausada) subscriptions bound to a key: what a lapse
-- suspends. A suspended or deleted one is never read again for it. It
-- replaces 0019's index of every bound subscription, which nothing else
-- reads (a binding is written by the subscription's id).
CREATE INDEX subscriptions_bound_live ON subscriptions (clave_api)
    WHERE clave_api IS NOT NULL AND estado IN ('activa', 'pausada');
DROP INDEX subscriptions_clave_api;
