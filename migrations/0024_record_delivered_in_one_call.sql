-- The group commit of delivered attempts in one round trip: a step of a
-- hot ordered lane was four (`BEGIN` with the by-key setup, the record
-- statement, the next-claim statement, `COMMIT`), each a wake-up of the
-- backend and of Motor, where the lane's step is bound by Postgres's CPU
-- once the WAL flush is fast (docs/SCALING.md, "One hot lane").
-- motor_record_delivered runs both statements in one call, which Motor
-- sends outside a transaction block (its own transaction, committed when
-- it returns). PL/pgSQL, not SQL: it keeps its statements' plans for the
-- session, as the prepared statements did; and as a VOLATILE function it
-- takes a new snapshot for each statement, so the next claim still sees
-- what committed while the heads were being locked.
--
-- The statements are deliveries/sql/record_delivered_many.sql and
-- next_after_many.sql word for word (the plans test reads those files;
-- the functions test checks that these bodies still hold them: a change
-- to either file needs a migration that replaces the function). The
-- settings are the by-key setup's (deliveries::BY_KEY_SETUP) and the
-- generic plans the transaction used to force.
--
-- Both answer rows of motor_finished, one per recorded head: a row type
-- rather than `RETURNS TABLE`, whose columns PL/pgSQL would also make
-- variables that shadow the statements' own (`id`, `head`, …).

CREATE TYPE motor_finished AS (
    head uuid, following_parked boolean, id uuid, subscription_id uuid, app_id uuid,
    instance_id uuid, event_id uuid, lane text, seq bigint, replay_of uuid,
    created_at timestamptz, lease_until timestamptz, url text, ordered boolean,
    max_per_second integer, subscription_version bigint, envelope text,
    attempts_made integer);

CREATE FUNCTION motor_next_after(uuid[], uuid[], interval, timestamptz)
RETURNS SETOF motor_finished
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $motor$
BEGIN
RETURN QUERY
-- What follows heads that record_delivered_many.sql just recorded, in
-- its transaction: $1 their ids, $2 those of them that claim a next, $3
-- the next one's lease, $4 the clock. The next one is, for an ordered
-- subscription, the lowest open delivery of the head's lane; for an
-- unordered one, the subscription's oldest due open delivery that nobody
-- holds (rows locked by another transaction are skipped; two heads of one
-- subscription get two different ones). One row per head: whether its
-- lane's next one is parked, and the claimed next one's columns
-- (claim.sql's), NULL when none was claimed.
--
-- Run by motor_record_delivered (migration 0024) right after the record,
-- as a statement of its own: its snapshot is taken once every head is
-- locked. Its clock ($4) is read then too (clock_timestamp()), not the
-- transaction's start: a first attempt committed between the two
-- statements is due at its own transaction's start, later than that.
--
-- Rows are reached by their primary key (see record_delivered_many.sql):
-- `next` joins the subscription on `chosen`'s subscription id, never on
-- the row's (which let it walk the subscription's deliveries from the
-- subscription: 200 ms on 200,000 rows).
WITH head AS (
    SELECT d.id, d.subscription_id, d.instance_id, d.lane, d.id = ANY ($2::uuid[]) AS claims_next
    FROM deliveries d
    WHERE d.id = ANY ($1::uuid[])
), following AS (
    -- Ordered lanes: the lowest open delivery after the head.
    SELECT h.id AS head, h.subscription_id, h.claims_next, f.id,
           f.aparcado_en IS NOT NULL AS parked
    FROM head h JOIN subscriptions s ON s.id = h.subscription_id AND s.ordenado,
    LATERAL (
        SELECT id, aparcado_en FROM deliveries f
        WHERE f.subscription_id = h.subscription_id AND f.instance_id = h.instance_id
          AND f.lane = h.lane AND f.estado = 'pendiente' AND f.id <> h.id
        ORDER BY f.seq LIMIT 1) f
), unordered AS (
    -- Unordered subscriptions: their heads that claim a next, numbered.
    SELECT h.id AS head, h.subscription_id,
           row_number() OVER (PARTITION BY h.subscription_id ORDER BY h.id) AS rank
    FROM head h JOIN subscriptions s ON s.id = h.subscription_id AND NOT s.ordenado
    WHERE h.claims_next
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
          AND f.proximo_intento <= $4::timestamptz
          AND (f.reservado_hasta IS NULL OR f.reservado_hasta <= $4::timestamptz)
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
    SET reservado_hasta = $4::timestamptz + $3, aparcado_en = NULL,
        actualizado_en = $4::timestamptz
    FROM chosen c, subscriptions s, events e
    WHERE d.id = c.id AND s.id = c.subscription_id AND e.event_id = d.event_id
      AND s.estado = 'activa'
      AND (d.estado = 'pendiente') IS TRUE
      AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= $4::timestamptz)
      AND (d.proximo_intento <= $4::timestamptz) IS TRUE
      AND NOT EXISTS (
          SELECT 1 FROM subscription_throttle t
          WHERE t.subscription_id = s.id AND t.hasta > $4::timestamptz)
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

CREATE FUNCTION motor_record_delivered(uuid[], integer[], integer[], timestamptz[], integer[],
                                       text[], timestamptz[], uuid[], interval)
RETURNS SETOF motor_finished
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $motor$
DECLARE
    recorded uuid[];
BEGIN
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
INTO recorded;
IF recorded IS NULL THEN
    RETURN;
END IF;
RETURN QUERY SELECT * FROM motor_next_after(recorded, $8, $9, clock_timestamp());
END
$motor$;
