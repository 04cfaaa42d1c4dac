-- Group commit of delivered attempts: $1 delivery ids, $2 attempt
-- numbers, $3 statuses, $4 start times, $5 durations (ms), $6 key ids
-- (comma-joined), $7 the leases their claims hold. The ids of the
-- deliveries still at their attempt and not claimed by anyone else since
-- (the others are stale; see record_attempt.sql), as one array (NULL
-- when none), and their subscriptions, instances and lanes, as three
-- more in the same order. motor_record_delivered (migration 0030) runs
-- it, then claims what follows each head with next_after_many.sql, a
-- statement of its own so that its snapshot is taken after every head
-- here is locked: a first attempt committed parked behind one of them
-- before that snapshot is seen there, and one committed after it finds
-- the head locked (deliveries::claim_freed waits for this transaction).
-- In one statement, a head locked late (after a wait) was finished with
-- a snapshot older than such a commit, which then stayed parked until
-- the sweeper's pass.
--
-- Every `deliveries` row is reached by its primary key, whatever the
-- planner believes of the table: a connection keeps the generic plan it
-- made after five runs, maybe while the table was young (ten pages), and
-- runs it on the table grown since. So `head` finds its rows by
-- `d.id = ANY ($1)` (a probe of the primary key, never a scan joined to
-- the input; the plans test's "planned young" state checks it), and
-- reads each row's attempt at its place in the arrays (array_position).
-- Joined to the input instead, the rows were matched
-- by a nested loop over both: a batch of 256 compared 65,536 pairs,
-- three quarters of the statement's time in the fan-out.
WITH head AS (
    UPDATE deliveries d
    SET estado = 'entregada', intentos = d.intentos + 1,
        ultimo_status = ($3::int[])[array_position($1::uuid[], d.id)],
        ultimo_error = NULL, proximo_intento = NULL, reservado_hasta = NULL,
        aparcado_en = NULL, entregado_en = now(), actualizado_en = now()
    WHERE d.id = ANY ($1::uuid[]) AND (d.estado = 'pendiente') IS TRUE
      -- see claim.sql
      AND d.intentos = ($2::int[])[array_position($1::uuid[], d.id)] - 1
      -- see record_attempt.sql
      AND (d.reservado_hasta IS NULL
           OR d.reservado_hasta = ($7::timestamptz[])[array_position($1::uuid[], d.id)])
    RETURNING d.id, d.subscription_id, d.instance_id, d.lane,
              array_position($1::uuid[], d.id) AS n
), attempt AS (
    INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status,
                                   error, key_ids)
    SELECT h.id, ($2::int[])[h.n], ($4::timestamptz[])[h.n], ($5::int[])[h.n],
           ($3::int[])[h.n], NULL, string_to_array(($6::text[])[h.n], ',')
    FROM head h
), healed AS (
    -- A success forgets its subscription's failures (a probe of
    -- the key when it had none).
    DELETE FROM subscription_health
    WHERE subscription_id IN (SELECT subscription_id FROM head)
)
SELECT array_agg(id), array_agg(subscription_id), array_agg(instance_id), array_agg(lane)
FROM head
