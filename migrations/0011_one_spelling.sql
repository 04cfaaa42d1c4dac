-- One spelling per concept in SQL (issue 11): a moment is a masculine
-- participle ending in `_en` (`creado_en`, as STYLE.md spells it), a bound
-- in time ends in `_hasta`, and columns are Spanish. Before this, "created"
-- was spelled three ways (`creada_en`, `creado_en`, `created_at`). Renames
-- only: RENAME COLUMN keeps every row's data, the CHECK constraints and
-- indexes that use a column follow it, and no constraint that the code
-- matches by name changes. The JSON field names (the contract) do not
-- change: the code maps columns to them.
--
-- apps.creada_en                      -> creado_en
-- instances.creada_en                 -> creado_en
-- api_keys.creada_en                  -> creado_en
-- api_keys.revocada_en                -> revocado_en
-- events.received_at                  -> recibido_en
-- outbox.created_at                   -> creado_en
-- idempotency_keys.created_at         -> creado_en
-- subscriptions.creada_en             -> creado_en
-- subscriptions.actualizada_en        -> actualizado_en
-- subscriptions.suspendida_en         -> suspendido_en
-- settings.actualizada_en             -> actualizado_en
-- app_event_types.actualizada_en      -> actualizado_en
-- alerts.abierta_en                   -> abierto_en
-- alerts.cerrada_en                   -> cerrado_en
-- deliveries.creada_en                -> creado_en
-- deliveries.actualizada_en           -> actualizado_en
-- deliveries.entregada_en             -> entregado_en
-- deliveries.parked_at                -> aparcado_en
-- deliveries.lease_until              -> reservado_hasta
-- subscription_rate.actualizado       -> actualizado_en
-- index alerts_abierta_en             -> alerts_abierto_en
--
-- Not expand-only: code of the previous version cannot read these tables
-- once this has run, so the release that applies it replaces every Motor
-- process (stop, migrate, start) rather than rolling.
--
-- Already in the one spelling: subscription_keys.creado_en, vence_en;
-- master_key_canary.creado_en; replays.creado_en;
-- delivery_attempts.iniciado_en. Identifiers and keys (`id`, `*_id`,
-- `key`, `seq`, `lane`…) keep the English table names they refer to.

ALTER TABLE apps RENAME COLUMN creada_en TO creado_en;

ALTER TABLE instances RENAME COLUMN creada_en TO creado_en;

ALTER TABLE api_keys RENAME COLUMN creada_en TO creado_en;
ALTER TABLE api_keys RENAME COLUMN revocada_en TO revocado_en;

ALTER TABLE events RENAME COLUMN received_at TO recibido_en;

ALTER TABLE outbox RENAME COLUMN created_at TO creado_en;

ALTER TABLE idempotency_keys RENAME COLUMN created_at TO creado_en;

ALTER TABLE subscriptions RENAME COLUMN creada_en TO creado_en;
ALTER TABLE subscriptions RENAME COLUMN actualizada_en TO actualizado_en;
ALTER TABLE subscriptions RENAME COLUMN suspendida_en TO suspendido_en;

ALTER TABLE settings RENAME COLUMN actualizada_en TO actualizado_en;

ALTER TABLE app_event_types RENAME COLUMN actualizada_en TO actualizado_en;

ALTER TABLE alerts RENAME COLUMN abierta_en TO abierto_en;
ALTER TABLE alerts RENAME COLUMN cerrada_en TO cerrado_en;
ALTER INDEX alerts_abierta_en RENAME TO alerts_abierto_en;

ALTER TABLE deliveries RENAME COLUMN creada_en TO creado_en;
ALTER TABLE deliveries RENAME COLUMN actualizada_en TO actualizado_en;
ALTER TABLE deliveries RENAME COLUMN entregada_en TO entregado_en;
ALTER TABLE deliveries RENAME COLUMN parked_at TO aparcado_en;
ALTER TABLE deliveries RENAME COLUMN lease_until TO reservado_hasta;

ALTER TABLE subscription_rate RENAME COLUMN actualizado TO actualizado_en;
