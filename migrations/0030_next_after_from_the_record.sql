-- The claim of what follows a group commit's heads without reading
-- again what the commit knows (issue 38, the fan-out). motor_next_after
-- read each head again by its primary key for its subscription, instance
-- and lane, which the record's own UPDATE had just returned; joined each
-- head to its subscription twice (ordered or not) and the claimed row a
-- third time; and probed the throttle once a claimed row. In a batch of
-- the fan-out benchmark (256 heads of 10 subscriptions) that was about 9
-- of the 29 buffers a head cost. The record now hands the heads'
-- subscriptions, instances and lanes over as arrays, and the claim reads
-- each subscription once, with its throttle (deliveries/sql/
-- next_after_many.sql, word for word here; the functions test checks it).
-- Same rows claimed, same answer; motor_record_delivered keeps its
-- arguments, so a Motor that runs the older statement text calls it as
-- before.

CREATE FUNCTION motor_next_after(uuid[], uuid[], uuid[], text[], uuid[], interval, timestamptz)
RETURNS SETOF motor_finished
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $motor$
BEGIN
RETURN QUERY
-- What follows heads that record_delivered_many.sql just recorded, in
-- its transaction: $1 their ids, $2-$4 their subscriptions, instances and
-- lanes (as the record returned them: a delivery's never change), $5
-- those of them that claim a next, $6 the next one's lease, $7 the clock.
-- The next one is, for an ordered subscription, the lowest open delivery
-- of the head's lane; for an unordered one, the subscription's oldest due
-- open delivery that nobody holds (rows locked by another transaction are
-- skipped; two heads of one subscription get two different ones). One
-- row per head: whether its lane's next one is parked, and the claimed
-- next one's columns (claim.sql's), NULL when none was claimed.
--
-- Run by motor_record_delivered (migration 0030) right after the record,
-- as a statement of its own: its snapshot is taken once every head is
-- locked. Its clock ($7) is read then too (clock_timestamp()), not the
-- transaction's start: a first attempt committed between the two
-- statements is due at its own transaction's start, later than that.
--
-- Rows are reached by their primary key (see record_delivered_many.sql):
-- `next` joins the subscription on `chosen`'s subscription id, never on
-- the row's (which let it walk the subscription's deliveries from the
-- subscription: 200 ms on 200,000 rows).
--
-- Each subscription is read once (`subs`), whatever the number of its
-- heads: a batch of the fan-out benchmark (256 heads of 10
-- subscriptions) read the subscriptions 522 times and probed the throttle
-- 256 times, and read each head again by its key, about 9 of the 29
-- buffers a head cost (migration 0030).
WITH subs AS MATERIALIZED (
    -- The heads' subscriptions (an index probe of an array skips its
    -- repeats), and whether a next delivery of theirs may be claimed now:
    -- `activa` and not held by its throttle.
    SELECT s.id, s.ordenado, s.url, s.max_por_segundo, s.version,
           s.estado = 'activa' AND NOT EXISTS (
               SELECT 1 FROM subscription_throttle t
               WHERE t.subscription_id = s.id AND t.hasta > $7::timestamptz) AS claimable
    FROM subscriptions s
    WHERE s.id = ANY ($2::uuid[])
), head AS (
    SELECT h.id, h.subscription_id, h.instance_id, h.lane,
           h.id = ANY ($5::uuid[]) AS claims_next, s.ordenado
    FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::text[])
         AS h(id, subscription_id, instance_id, lane)
    LEFT JOIN subs s ON s.id = h.subscription_id
), following AS (
    -- Ordered lanes: the lowest open delivery after the head.
    SELECT h.id AS head, h.subscription_id, h.claims_next, f.id,
           f.aparcado_en IS NOT NULL AS parked
    FROM head h,
    LATERAL (
        SELECT id, aparcado_en FROM deliveries f
        WHERE f.subscription_id = h.subscription_id AND f.instance_id = h.instance_id
          AND f.lane = h.lane AND f.estado = 'pendiente' AND f.id <> h.id
        ORDER BY f.seq LIMIT 1) f
    WHERE h.ordenado
), unordered AS (
    -- Unordered subscriptions: their heads that claim a next, numbered.
    SELECT h.id AS head, h.subscription_id,
           row_number() OVER (PARTITION BY h.subscription_id ORDER BY h.id) AS rank
    FROM head h
    WHERE NOT h.ordenado AND h.claims_next
), candidates AS MATERIALIZED (
    -- As many of each such subscription's oldest due, unheld open
    -- deliveries (one range of deliveries_open_due_by_subscription).
    -- MATERIALIZED, as `chosen`: inlined into `next`, a row that `next`
    -- finds updated by another transaction would make Postgres re-run
    -- them for the recheck, which it refuses ("ModifyTable should not be
    -- called during EvalPlanQual").
    SELECT w.subscription_id, c.id,
           row_number() OVER (PARTITION BY w.subscription_id
                              ORDER BY c.proximo_intento, c.id) AS rank
    FROM (SELECT subscription_id, count(*) AS wanted FROM unordered GROUP BY subscription_id) w,
    LATERAL (
        SELECT f.id, f.proximo_intento FROM deliveries f
        WHERE f.subscription_id = w.subscription_id
          AND f.proximo_intento <= $7::timestamptz
          AND (f.reservado_hasta IS NULL OR f.reservado_hasta <= $7::timestamptz)
          AND f.id <> ALL ($1::uuid[])
        ORDER BY f.proximo_intento, f.id
        LIMIT w.wanted
        FOR UPDATE SKIP LOCKED) c
), chosen AS MATERIALIZED (
    SELECT head, subscription_id, id FROM following WHERE claims_next
    UNION ALL
    SELECT u.head, subscription_id, c.id
    FROM unordered u JOIN candidates c USING (subscription_id, rank)
), next AS (
    UPDATE deliveries d
    SET reservado_hasta = $7::timestamptz + $6, aparcado_en = NULL,
        actualizado_en = $7::timestamptz
    FROM chosen c, subs s, events e
    WHERE d.id = c.id AND s.id = c.subscription_id AND e.event_id = d.event_id
      AND s.claimable
      AND (d.estado = 'pendiente') IS TRUE
      AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= $7::timestamptz)
      AND (d.proximo_intento <= $7::timestamptz) IS TRUE
    RETURNING d.id, d.subscription_id, d.app_id, d.instance_id, d.event_id, d.lane, d.seq,
              d.replay_of, d.creado_en, d.reservado_hasta, s.url, s.ordenado,
              s.max_por_segundo, s.version AS subscription_version, e.envelope, d.intentos,
              c.head AS after_head
)
SELECT h.id AS "head?", f.parked AS "following_parked?",
       n.id AS "id?", n.subscription_id AS "subscription_id?", n.app_id AS "app_id?",
       n.instance_id AS "instance_id?", n.event_id AS "event_id?", n.lane AS "lane?",
       n.seq AS "seq?", n.replay_of AS "replay_of?", n.creado_en AS "created_at?",
       n.reservado_hasta AS "lease_until?", n.url AS "url?", n.ordenado AS "ordered?",
       n.max_por_segundo AS "max_per_second?",
       n.subscription_version AS "subscription_version?", n.envelope AS "envelope?",
       n.intentos AS "attempts_made?"
FROM head h
LEFT JOIN following f ON f.head = h.id
LEFT JOIN next n ON n.after_head = h.id;
END
$motor$;

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
INTO recorded, recorded_subscriptions, recorded_instances, recorded_lanes;
IF recorded IS NULL THEN
    RETURN;
END IF;
RETURN QUERY SELECT * FROM motor_next_after(recorded, recorded_subscriptions, recorded_instances,
                                            recorded_lanes, $8, $9, clock_timestamp());
END
$motor$;

DROP FUNCTION motor_next_after(uuid[], uuid[], interval, timestamptz);
