-- The group commit of delivered attempts without walking its arrays for
-- each row (issue 38, the fan-out). The record found its rows by
-- `d.id = ANY ($1)` and read each row's attempt at its place in the
-- arrays with `array_position`, four times a row: each look walked the
-- array, 131,072 uuid comparisons a batch of 256 heads, 6 to 12 % of
-- Postgres's samples in the fan-out benchmark (`perf`: array_iterate,
-- uuid_eq and their calls; docs/BENCHMARKS.md, 2026-12-07 12:30). The
-- record now probes the key of each given id, which comes with its place
-- in the arrays (deliveries/sql/record_delivered_many.sql, word for word
-- here: the functions test checks it). Same rows recorded, same answer,
-- same arguments: a Motor that runs the older statement text calls the
-- function as before.

CREATE OR REPLACE FUNCTION motor_record_delivered(uuid[], integer[], integer[], timestamptz[],
                                                  integer[], text[], timestamptz[], uuid[], interval)
RETURNS SETOF motor_finished
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $motor$
DECLARE
    recorded uuid[];
    recorded_subscriptions uuid[];
    recorded_instances uuid[];
    recorded_lanes text[];
BEGIN
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
-- runs it on the table grown since. So `head` probes the key of each
-- given id (`d.id = ANY (ARRAY[x.id])`, the same test as `d.id = x.id`,
-- is no hash or merge join clause: the one join is a nested loop whose
-- inner side probes the primary key; the plans test's "planned young"
-- state checks it), and reads each row's attempt at its place in the
-- arrays, the id's ordinality (`x.n`). Joined by `d.id = x.id` with the
-- rows read by `d.id = ANY ($1)`, the rows were matched by a nested loop
-- over both (a batch of 256 compared 65,536 pairs, three quarters of the
-- statement's time in the fan-out); read by `d.id = ANY ($1)` with each
-- row's place found by `array_position`, four times a row, each look
-- walked the array (131,072 comparisons a batch of 256: a call of 256
-- cost a tenth more, the same at 5 to 64; docs/BENCHMARKS.md, 2026-12-07
-- 12:30). The ids are sorted first, so the rows are locked in id order,
-- as the index probe of an array locked them: two calls that share rows
-- wait for each other rather than deadlock.
WITH head AS (
    UPDATE deliveries d
    SET estado = 'entregada', intentos = d.intentos + 1, ultimo_status = ($3::int[])[x.n],
        ultimo_error = NULL, proximo_intento = NULL, reservado_hasta = NULL,
        aparcado_en = NULL, entregado_en = now(), actualizado_en = now()
    FROM (SELECT * FROM UNNEST($1::uuid[]) WITH ORDINALITY AS x(id, n) ORDER BY x.id) x
    WHERE d.id = ANY (ARRAY[x.id]) AND (d.estado = 'pendiente') IS TRUE
      -- see claim.sql
      AND d.intentos = ($2::int[])[x.n] - 1
      -- see record_attempt.sql
      AND (d.reservado_hasta IS NULL OR d.reservado_hasta = ($7::timestamptz[])[x.n])
    RETURNING d.id, d.subscription_id, d.instance_id, d.lane, x.n
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
INTO recorded, recorded_subscriptions, recorded_instances, recorded_lanes;
IF recorded IS NULL THEN
    RETURN;
END IF;
RETURN QUERY SELECT * FROM motor_next_after(recorded, recorded_subscriptions, recorded_instances,
                                            recorded_lanes, $8, $9, clock_timestamp());
END
$motor$;
