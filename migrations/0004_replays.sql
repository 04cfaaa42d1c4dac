-- Replays: one row per accepted `POST …/subscriptions/{id}/replays`, written
-- in the transaction that creates its deliveries (lane = the replay's id).
-- The audit of who asked for what and why, and the Idempotency-Key's memory.
-- Additive only: nothing existing changes.

-- idempotency_key: per app, like an API key's requests; the same key with
--   another request (request_hash: SHA-256 of the canonical request, the
--   subscription included) is a 409, with the same one the stored answer.
-- solicitado_por: the API key's key_id, or 'operador' for the operator API.
-- pedido: the accepted request (range or event ids), as the audit shows it.
-- entregas: how many deliveries the replay created.
CREATE TABLE replays (
    id              uuid PRIMARY KEY,
    subscription_id uuid NOT NULL REFERENCES subscriptions (id),
    app_id          uuid NOT NULL REFERENCES apps (id),
    idempotency_key text NOT NULL,
    request_hash    bytea NOT NULL,
    solicitado_por  text NOT NULL,
    pedido          jsonb NOT NULL,
    motivo          text NOT NULL,
    entregas        integer NOT NULL CHECK (entregas >= 0),
    creado_en       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT replays_idempotency_key UNIQUE (app_id, idempotency_key)
);
CREATE INDEX replays_subscription ON replays (subscription_id, creado_en DESC);
