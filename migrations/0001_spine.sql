-- The spine: operators' apps, instances and API keys; the ledger; the
-- transactional outbox; idempotency keys of producer requests.

CREATE TABLE apps (
    id                  uuid PRIMARY KEY,
    nombre              text NOT NULL,
    destinos_permitidos text[] NOT NULL DEFAULT '{}',
    creada_en           timestamptz NOT NULL DEFAULT now()
);

-- last_seq is the ledger's sequence: read and bumped under this row's lock,
-- in the transaction that inserts the events, so seq is gapless.
CREATE TABLE instances (
    id         uuid PRIMARY KEY,
    app_id     uuid NOT NULL REFERENCES apps (id),
    nombre     text NOT NULL,
    generation bigint NOT NULL DEFAULT 1,
    last_seq   bigint NOT NULL DEFAULT 0,
    creada_en  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instances_app_id ON instances (app_id);

-- Only the SHA-256 of a token is stored.
CREATE TABLE api_keys (
    key_id      text PRIMARY KEY,
    app_id      uuid NOT NULL REFERENCES apps (id),
    nombre      text NOT NULL,
    token_hash  bytea NOT NULL,
    scopes      text[] NOT NULL,
    instancias  uuid[] NOT NULL DEFAULT '{}',
    creada_en   timestamptz NOT NULL DEFAULT now(),
    revocada_en timestamptz,
    CONSTRAINT api_keys_token_hash_key UNIQUE (token_hash)
);
CREATE INDEX api_keys_app_id ON api_keys (app_id);

-- The ledger. envelope is the canonical JSON, serialised once at insert:
-- every consumer (API, Kafka, webhooks) gets these exact bytes.
CREATE TABLE events (
    instance_id uuid NOT NULL REFERENCES instances (id),
    seq         bigint NOT NULL,
    event_id    uuid NOT NULL,
    type        text NOT NULL,
    source_id   text,
    received_at timestamptz NOT NULL,
    envelope    text NOT NULL,
    PRIMARY KEY (instance_id, seq),
    CONSTRAINT events_event_id_key UNIQUE (event_id)
);
CREATE UNIQUE INDEX events_source_id ON events (instance_id, source_id) WHERE source_id IS NOT NULL;
CREATE INDEX events_type ON events (instance_id, type, seq);

-- The transactional outbox: every record bound for Kafka is written here in
-- the transaction that decides it, and the relay publishes then deletes it.
-- shard = hash of the record's key; a relay owns whole shards under advisory
-- locks, so records of one key leave in id order.
CREATE TABLE outbox (
    id         bigserial PRIMARY KEY,
    shard      integer NOT NULL,
    topic      text NOT NULL,
    key        text NOT NULL,
    payload    bytea NOT NULL,
    headers    jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_shard_id ON outbox (shard, id);

-- Idempotency-Key of producer requests, per app and instance.
CREATE TABLE idempotency_keys (
    app_id       uuid NOT NULL,
    instance_id  uuid NOT NULL REFERENCES instances (id),
    key          text NOT NULL,
    request_hash bytea NOT NULL,
    status       smallint NOT NULL,
    response     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, instance_id, key)
);
