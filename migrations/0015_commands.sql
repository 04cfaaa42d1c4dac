-- Commands (issue 32): what an app asks for, beside the events that tell
-- what happened. One row per command, whatever its kind; every change of
-- status is a compare-and-set on this row (motor_store::commands, driven
-- by motor_domain::command::state::step) in the transaction that appends
-- its event to the instance's ledger. Additive only: no existing table
-- changes.
--
-- Columns carry the contract's spelling of each field (seed 002): tipo,
-- chat, contenido, parametros, status, next_try, error_code, stage,
-- server_code, provider_message_id, aceptado_en, expires_at,
-- correlation_id, generacion_esperada. Motor's own:
-- - generation: the instance's generation when the command was accepted;
-- - idempotency_key / request_hash: the Idempotency-Key (per app and
--   instance) and SHA-256 of what was asked (kind, chat, content,
--   expires_at, correlation_id); the same key with another hash is a 409;
-- - reserva / reservado_hasta: the lease of the executor that claimed it
--   (its token and its end), set only while `ejecutando`;
-- - reclamos: how many times it was claimed (a deferral sends it back).
--
-- No foreign keys, for the reason of 0014: a command is written by a
-- transaction that holds its instance's row locked and has just read its
-- app from it, and instances are never deleted.
CREATE TABLE commands (
    id                  uuid PRIMARY KEY,
    app_id              uuid NOT NULL,
    instance_id         uuid NOT NULL,
    tipo                text NOT NULL,
    chat                text,
    contenido           jsonb,
    parametros          jsonb,
    status              text NOT NULL,
    next_try            timestamptz,
    error_code          text,
    stage               text,
    server_code         text,
    provider_message_id text,
    aceptado_en         timestamptz,
    expires_at          timestamptz,
    correlation_id      text,
    generacion_esperada bigint CHECK (generacion_esperada >= 1),
    generation          bigint NOT NULL,
    idempotency_key     text,
    request_hash        bytea NOT NULL,
    reserva             uuid,
    reservado_hasta     timestamptz,
    reclamos            integer NOT NULL DEFAULT 0 CHECK (reclamos >= 0),
    creado_en           timestamptz NOT NULL DEFAULT now(),
    actualizado_en      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT commands_idempotency_key UNIQUE (app_id, instance_id, idempotency_key),
    CONSTRAINT commands_status CHECK (status IN ('aceptado', 'en_cola', 'ejecutando',
        'enviado', 'completado', 'fallido', 'ambiguo', 'cancelado')),
    CONSTRAINT commands_stage CHECK (stage IN ('previa', 'servidor', 'frontera')),
    -- A send has a destination and a content, anything else parameters.
    CONSTRAINT commands_payload CHECK (CASE WHEN tipo = 'mensaje'
        THEN chat IS NOT NULL AND contenido IS NOT NULL AND parametros IS NULL
        ELSE chat IS NULL AND contenido IS NULL AND parametros IS NOT NULL END),
    -- en_cola waits for next_try; only ejecutando holds a lease.
    CONSTRAINT commands_queued CHECK (status <> 'en_cola' OR next_try IS NOT NULL),
    CONSTRAINT commands_lease CHECK ((status = 'ejecutando')
        = (reserva IS NOT NULL AND reservado_hasta IS NOT NULL)),
    -- fallido says why and where (before the boundary); ambiguo is at it.
    CONSTRAINT commands_failed CHECK (status <> 'fallido'
        OR (error_code IS NOT NULL AND stage IN ('previa', 'servidor'))),
    CONSTRAINT commands_ambiguous CHECK (status <> 'ambiguo' OR stage = 'frontera'),
    CONSTRAINT commands_sent CHECK (status <> 'enviado'
        OR (provider_message_id IS NOT NULL AND aceptado_en IS NOT NULL))
);

-- GET /v1/instances/{id}/commands: an instance's commands newest first,
-- with or without a status filter (the filter reads the same index).
CREATE INDEX commands_instance_newest ON commands (instance_id, creado_en DESC, id DESC);
-- The sweeper's expiry: commands not yet claimed, by expires_at.
CREATE INDEX commands_expiring ON commands (expires_at)
    WHERE status IN ('aceptado', 'en_cola') AND expires_at IS NOT NULL;
-- The sweeper's leases: commands being executed, by the lease's end.
CREATE INDEX commands_leased ON commands (reservado_hasta) WHERE status = 'ejecutando';
