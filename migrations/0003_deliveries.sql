-- Deliveries: one row per (event, subscription, lane), created in the
-- transaction that appends the event (or the replay that asks for it), and
-- every attempt made for it. Additive only: nothing existing changes.

-- A time-ordered uuid (version 7) made in SQL, so set-based inserts give
-- deliveries ids that sort roughly by creation like the ones Rust makes.
CREATE FUNCTION motor_uuid_v7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(
        set_bit(set_bit(
            overlay(uuid_send(gen_random_uuid())
                    PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                    FROM 1 FOR 6),
            52, 1), 53, 1),
        'hex')::uuid
$$;

-- lane: 'live' or the replay's uuid (motor_domain::delivery::Lane as text).
-- proximo_intento: when the next attempt is due; NULL once terminal.
-- lease_until: set by a claim while an attempt is in flight; a claim never
--   takes a delivery whose lease has not passed (never two concurrent
--   attempts), and the sweeper re-enqueues one whose lease expired.
-- parked_at: set when a claim found a lower-seq delivery of its ordered lane
--   still pendiente; the head's finish releases it (writes its job).
-- ultimo_status / ultimo_error: of the last attempt (sanitised code).
CREATE TABLE deliveries (
    id              uuid PRIMARY KEY,
    subscription_id uuid NOT NULL REFERENCES subscriptions (id),
    app_id          uuid NOT NULL REFERENCES apps (id),
    instance_id     uuid NOT NULL REFERENCES instances (id),
    event_id        uuid NOT NULL REFERENCES events (event_id),
    seq             bigint NOT NULL,
    lane            text NOT NULL DEFAULT 'live',
    estado          text NOT NULL DEFAULT 'pendiente'
                    CHECK (estado IN ('pendiente', 'entregada', 'fallida')),
    intentos        integer NOT NULL DEFAULT 0 CHECK (intentos >= 0),
    ultimo_status   integer,
    ultimo_error    text,
    proximo_intento timestamptz DEFAULT now(),
    lease_until     timestamptz,
    parked_at       timestamptz,
    creada_en       timestamptz NOT NULL DEFAULT now(),
    actualizada_en  timestamptz NOT NULL DEFAULT now(),
    entregada_en    timestamptz,
    CONSTRAINT deliveries_lane_event_key UNIQUE (subscription_id, lane, event_id),
    CHECK ((estado = 'pendiente') = (proximo_intento IS NOT NULL)),
    CHECK ((estado = 'entregada') = (entregada_en IS NOT NULL))
);

-- The lane check of a claim and the lane heads of the sweeper and releases.
CREATE INDEX deliveries_open_lane ON deliveries (subscription_id, instance_id, lane, seq)
    WHERE estado = 'pendiente';
-- The sweeper: open deliveries by due time.
CREATE INDEX deliveries_open_due ON deliveries (proximo_intento) WHERE estado = 'pendiente';
-- GET /v1/deliveries: an app's deliveries, newest first.
CREATE INDEX deliveries_app_newest ON deliveries (app_id, creada_en DESC, seq DESC, id DESC);
-- Subscriptions' `fallidas` count (the DLQ is never purged).
CREATE INDEX deliveries_failed ON deliveries (subscription_id) WHERE estado = 'fallida';

-- One row per attempt. key_ids: the signing keys of that attempt, newest
-- first (as in X-MW-Key-Id). Deleted with its delivery (retention).
CREATE TABLE delivery_attempts (
    delivery_id uuid NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    numero      integer NOT NULL CHECK (numero >= 1),
    iniciado_en timestamptz NOT NULL,
    duracion_ms integer NOT NULL CHECK (duracion_ms >= 0),
    status      integer,
    error       text,
    key_ids     text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (delivery_id, numero)
);
