-- Endpoint health and recovery (issue 14). Expand only: new nullable
-- columns; nothing existing changes and running code that does not know
-- them keeps working.

-- replay_of: the delivery a replay or a manual retry sends again — the
--   retried delivery, or for a replay the live delivery of the same event to
--   the same subscription when there was one. NULL for live deliveries. No
--   foreign key: the original may be purged by retention (`entregada`
--   after `retencion.dias_entregados`) while its replay stays.
ALTER TABLE deliveries ADD COLUMN replay_of uuid;

-- politica_destinos: the app's destination policy. 'estandar' = the allowed
--   lists alone; 'publica_https' = also HTTPS on port 443 to public IPv4
--   addresses only (checked at create and at every connection).
ALTER TABLE apps ADD COLUMN politica_destinos text NOT NULL DEFAULT 'estandar'
    CHECK (politica_destinos IN ('estandar', 'publica_https'));

-- Content retention (`retencion.dias_contenido`): how far each instance's
-- ledger has been redacted. The job walks the ledger by its primary key
-- from hasta_seq, so nothing is added to the events table or the ingest
-- path.
CREATE TABLE redaction_marks (
    instance_id uuid PRIMARY KEY REFERENCES instances (id),
    hasta_seq   bigint NOT NULL DEFAULT 0
);

-- Disabling on sustained failure. subscription_health: a subscription whose
--   last attempts failed — since when, and how many in a row. No row =
--   its last attempt succeeded (or none failed yet); a success deletes the
--   row, so the hot path of a healthy subscription only probes the key.
CREATE TABLE subscription_health (
    subscription_id     uuid PRIMARY KEY REFERENCES subscriptions (id),
    fallando_desde      timestamptz NOT NULL,
    fallos_consecutivos bigint NOT NULL DEFAULT 0 CHECK (fallos_consecutivos >= 0)
);

ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_motivo_check;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_motivo_check
    CHECK (motivo IN ('rechazo_401', 'rechazo_403', 'destino_no_permitido',
                      'destino_bloqueado', 'sin_secreto', 'rechazo_credenciales',
                      'fallos_sostenidos'));

-- The system instance of each app: the ledger of the events Motor itself
--   publishes to the app's subscriptions (`webhook_endpoint.disabled`).
--   Created with the app, never deleted; producers cannot write to it and
--   the normal fan-out skips it (its events go to every other `activa`
--   subscription of the app, whatever their instancias and tipos).
ALTER TABLE instances ADD COLUMN sistema boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX instances_one_system ON instances (app_id) WHERE sistema;
INSERT INTO instances (id, app_id, nombre, sistema)
SELECT motor_uuid_v7(), id, 'sistema', true FROM apps;

-- Adaptive throttling: a receiver that answered 429 or 503 with
--   Retry-After holds its whole subscription (every lane, every process)
--   until hasta. Claims probe the key; the table is almost always empty.
--   delivery_attempts.throttled marks the attempt whose answer asked for it.
CREATE TABLE subscription_throttle (
    subscription_id uuid PRIMARY KEY REFERENCES subscriptions (id),
    hasta           timestamptz NOT NULL
);
ALTER TABLE delivery_attempts ADD COLUMN throttled boolean NOT NULL DEFAULT false;

-- max_por_segundo: an optional bound on a subscription's attempts a second,
--   across every lane and process, kept as a token bucket in
--   subscription_rate (capacity = the rate: a burst of at most one second's
--   worth after an idle spell). NULL = no limit; the bucket is only read for
--   subscriptions that set one.
ALTER TABLE subscriptions ADD COLUMN max_por_segundo integer
    CHECK (max_por_segundo BETWEEN 1 AND 10000);
CREATE TABLE subscription_rate (
    subscription_id uuid PRIMARY KEY REFERENCES subscriptions (id),
    tokens          double precision NOT NULL,
    actualizado     timestamptz NOT NULL
);
