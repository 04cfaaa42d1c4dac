-- Subscriptions and their sealed signing secrets; operator settings, the
-- master-key canary, alerts and apps' closed catalogues of event types.

-- A subscription row is never deleted: DELETE sets estado = 'eliminada'.
-- version is bumped by every change (optimistic concurrency for PATCH).
CREATE TABLE subscriptions (
    id             uuid PRIMARY KEY,
    app_id         uuid NOT NULL REFERENCES apps (id),
    nombre         text NOT NULL,
    url            text NOT NULL,
    instancias     uuid[] NOT NULL DEFAULT '{}',
    tipos          text[] NOT NULL DEFAULT '{}',
    ordenado       boolean NOT NULL DEFAULT true,
    estado         text NOT NULL DEFAULT 'activa'
                   CHECK (estado IN ('activa', 'pausada', 'suspendida', 'eliminada')),
    motivo         text CHECK (motivo IN ('rechazo_401', 'rechazo_403', 'destino_no_permitido',
                                          'destino_bloqueado', 'sin_secreto')),
    suspendida_en  timestamptz,
    version        bigint NOT NULL DEFAULT 1,
    creada_en      timestamptz NOT NULL DEFAULT now(),
    actualizada_en timestamptz NOT NULL DEFAULT now(),
    CHECK ((estado = 'suspendida') = (motivo IS NOT NULL)),
    CHECK ((estado = 'suspendida') = (suspendida_en IS NOT NULL))
);
CREATE INDEX subscriptions_app_id ON subscriptions (app_id, creada_en, id);

-- Signing secrets, sealed (AEAD under MOTOR_MASTER_KEY, bound to
-- subscription and key id). vence_en is NULL for the current key and set
-- when a rotation retires it; a retired key signs until then.
CREATE TABLE subscription_keys (
    key_id          text PRIMARY KEY,
    subscription_id uuid NOT NULL REFERENCES subscriptions (id),
    sealed          bytea NOT NULL,
    creado_en       timestamptz NOT NULL DEFAULT clock_timestamp(),
    vence_en        timestamptz
);
CREATE INDEX subscription_keys_subscription ON subscription_keys (subscription_id, creado_en);

-- Operator settings, one row per key; a missing key reads as its default.
CREATE TABLE settings (
    key            text PRIMARY KEY,
    value          jsonb NOT NULL,
    actualizada_en timestamptz NOT NULL DEFAULT now()
);

-- One sealed known value: start-up opens it to prove MOTOR_MASTER_KEY is
-- the key that sealed this database's secrets.
CREATE TABLE master_key_canary (
    id        smallint PRIMARY KEY CHECK (id = 1),
    sealed    bytea NOT NULL,
    creado_en timestamptz NOT NULL DEFAULT now()
);

-- Operator alerts. The delivery engine opens them (a suspension); the
-- operator, or a reactivation, closes them. At most one open alert per
-- subscription and motivo.
CREATE TABLE alerts (
    id              uuid PRIMARY KEY,
    app_id          uuid NOT NULL REFERENCES apps (id),
    subscription_id uuid REFERENCES subscriptions (id),
    motivo          text NOT NULL,
    detalle         text NOT NULL DEFAULT '',
    abierta_en      timestamptz NOT NULL DEFAULT now(),
    cerrada_en      timestamptz
);
CREATE UNIQUE INDEX alerts_one_open ON alerts (subscription_id, motivo) WHERE cerrada_en IS NULL;
CREATE INDEX alerts_abierta_en ON alerts (abierta_en DESC, id);

-- An app's closed catalogue of event types. No row: any type is accepted.
CREATE TABLE app_event_types (
    app_id         uuid PRIMARY KEY REFERENCES apps (id),
    tipos          text[] NOT NULL,
    actualizada_en timestamptz NOT NULL DEFAULT now()
);
