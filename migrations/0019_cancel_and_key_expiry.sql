-- Cancel on deactivation, API key expiry and the key a subscription is
-- bound to (issue 33, item 2; docs/CONTRACTS.md). Expand only: new nullable
-- columns and more allowed values; running code that does not know them
-- keeps working (it never writes `cancelada`, never sets an expiry).

-- estado `cancelada`: terminal, like `entregada` and `fallida`; written only
--   for a subscription whose contract cancels on deactivation (Visito).
--   motivo: why (`suscripcion_pausada`, `suscripcion_suspendida`,
--   `suscripcion_eliminada`, `clave_revocada`, `clave_vencida`); NULL
--   unless cancelada. cancelada_en: when.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_estado_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_estado_check
    CHECK (estado IN ('pendiente', 'entregada', 'fallida', 'cancelada'));
ALTER TABLE deliveries ADD COLUMN motivo text;
ALTER TABLE deliveries ADD COLUMN cancelada_en timestamptz;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_cancelada_motivo
    CHECK ((estado = 'cancelada') = (motivo IS NOT NULL AND cancelada_en IS NOT NULL));

-- vence_en on api_keys: when the key stops working (401, like a revoked
--   one); NULL = never.
ALTER TABLE api_keys ADD COLUMN vence_en timestamptz;

-- clave_api on subscriptions: the API key that created or last changed it
--   (NULL when the operator did). Under a contract that cancels on
--   deactivation, that key's revocation or expiry suspends the subscription
--   (motivo `clave_revocada` / `clave_vencida`), which cancels its pending
--   deliveries. No foreign key: the hot path never joins it.
ALTER TABLE subscriptions ADD COLUMN clave_api text;
CREATE INDEX subscriptions_clave_api ON subscriptions (clave_api) WHERE clave_api IS NOT NULL;

ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_motivo_check;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_motivo_check
    CHECK (motivo IN ('rechazo_401', 'rechazo_403', 'destino_no_permitido',
                      'destino_bloqueado', 'sin_secreto', 'rechazo_credenciales',
                      'fallos_sostenidos', 'clave_revocada', 'clave_vencida'));

-- The sampler's count of cancelled deliveries (`motor_deliveries_cancelled`)
-- and retention's walk of them, oldest first.
CREATE INDEX deliveries_cancelled ON deliveries (cancelada_en) WHERE estado = 'cancelada';

-- Read scopes (issue 33, item 3; seed 001's permission model).
-- permisos_lectura on app_event_types: {"<type>": "<read scope>", …}, the
--   read scope an API key needs to subscribe to each type; NULL = none.
-- permisos_lectura on api_keys: the read scopes the key holds (the app's
--   own words, e.g. `conversations:read`), beside Motor's `scopes`.
ALTER TABLE app_event_types ADD COLUMN permisos_lectura jsonb;
ALTER TABLE api_keys ADD COLUMN permisos_lectura text[] NOT NULL DEFAULT '{}';
