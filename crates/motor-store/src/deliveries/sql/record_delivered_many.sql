-- Group commit of delivered attempts: $1 delivery ids, $2 attempt
-- numbers, $3 statuses, $4 start times, $5 durations (ms), $6 key ids
-- (comma-joined), $7 the leases their claims hold. The ids of the
-- deliveries still at their attempt and not claimed by anyone else since
-- (the others are stale; see record_attempt.sql), as one array (NULL
-- when none). motor_record_delivered (migration 0024) runs it, then
-- claims what follows each head with next_after_many.sql, a statement of
-- its own so that its snapshot is taken after every head here is locked:
-- a first attempt committed parked behind one of them before that
-- snapshot is seen there, and one committed after it finds the head
-- locked (deliveries::claim_freed waits for this transaction). In one
-- statement, a head locked late (after a wait) was finished with a
-- snapshot older than such a commit, which then stayed parked until the
-- sweeper's pass.
--
-- Every `deliveries` row is reached by its primary key, whatever the
-- planner believes of the table: a connection keeps the generic plan it
-- made after five runs, maybe while the table was young (ten pages), and
-- runs it on the table grown since. So `head` also says `d.id = ANY ($1)`
-- (a probe of the primary key, never a scan joined to the input). The
-- plans test's "planned young" state checks it.
WITH input AS (
    SELECT * FROM UNNEST($1::uuid[], $2::int[], $3::int[], $4::timestamptz[], $5::int[],
                         $6::text[], $7::timestamptz[])
        AS t(id, numero, status, iniciado_en, duracion_ms, key_ids, reserva)
), head AS (
    UPDATE deliveries d
    SET estado = 'entregada', intentos = i.numero, ultimo_status = i.status,
        ultimo_error = NULL, proximo_intento = NULL, reservado_hasta = NULL,
        aparcado_en = NULL, entregado_en = now(), actualizado_en = now()
    FROM input i
    WHERE d.id = ANY ($1::uuid[]) AND d.id = i.id
      AND (d.estado = 'pendiente') IS TRUE AND d.intentos = i.numero - 1 -- see claim.sql
      AND (d.reservado_hasta IS NULL OR d.reservado_hasta = i.reserva) -- see record_attempt.sql
    RETURNING d.id, d.subscription_id
), attempt AS (
    INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status,
                                   error, key_ids)
    SELECT h.id, i.numero, i.iniciado_en, i.duracion_ms, i.status, NULL,
           string_to_array(i.key_ids, ',')
    FROM head h JOIN input i ON i.id = h.id
), healed AS (
    -- A success forgets its subscription's failures (a probe of
    -- the key when it had none).
    DELETE FROM subscription_health
    WHERE subscription_id IN (SELECT subscription_id FROM head)
)
SELECT array_agg(id) FROM head
