-- The claim of first attempts whose lane freed while their commit was in
-- flight, in one call (issue 38, ordered closed loops). claim_freed took
-- a transaction of three or four round trips: BEGIN with the by-key
-- setup, deliveries/sql/claim_freed.sql, deliveries/sql/finishing_lanes.sql
-- when the claim took fewer than it was given, and COMMIT. About one
-- event in five of the TLS benchmark (one ordered subscription, a closed
-- loop) made one. motor_claim_freed runs the same two statements, word
-- for word (the functions test checks it), each with its own snapshot as
-- before, in the call's own transaction, with the same settings. Only a
-- Motor of this version calls it; an older one runs its transaction as
-- before, so the migration needs no order of upgrade.
--
-- One row of motor_finished a given delivery that was claimed (its
-- claim's columns, `head` its id) or whose lane is still finishing
-- (`head` its id, the rest NULL). The others are left parked for their
-- lane's finish.

CREATE FUNCTION motor_claim_freed(uuid[], interval)
RETURNS SETOF motor_finished
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off SET plan_cache_mode = force_generic_plan
AS $motor$
DECLARE
    claimed_count bigint;
    finishing motor_finished;
BEGIN
RETURN QUERY
-- Claims those of $1 (first attempts a commit created parked behind an
-- open delivery of their ordered lane) whose lane has freed since, for
-- $2: the delivery they waited for finished while that commit was in
-- flight, and its finish could not see them. "Claimable now" as in
-- claim.sql. One row of motor_finished a claimed delivery (`head` its
-- id, `following_parked` unused), as motor_claim_freed (migration 0031),
-- which runs it, answers. It takes no lock but the rows it claims, so it never waits
-- while holding one (a lane check locking the delivery before, as
-- park_or_why_not.sql does, deadlocked with group commits finishing the
-- same lanes in another order). A finish of that delivery still in flight
-- is found by finishing_lanes.sql and waited for one lane at a time.
-- The lane check is a scalar subquery with ORDER BY and LIMIT, one probe
-- of the open-lane index per row: Postgres drops both from a NOT EXISTS
-- and makes it an anti join, which read every open delivery of the
-- subscription (the plans test saw 900,000 rows).
--
-- The given rows are read by key first and the subscription joined on
-- their subscription id, so no plan reaches them through their
-- subscription (walking its deliveries), as in record_delivered_many.sql.
WITH given AS MATERIALIZED (
    SELECT id, subscription_id FROM deliveries WHERE id = ANY ($1)
)
UPDATE deliveries d
SET reservado_hasta = now() + $2, aparcado_en = NULL, actualizado_en = now()
FROM given g, subscriptions s, events e
WHERE d.id = g.id AND s.id = g.subscription_id AND e.event_id = d.event_id
  AND (d.estado = 'pendiente') IS TRUE AND d.intentos = 0
  AND s.estado = 'activa' AND s.ordenado
  AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= now())
  AND (d.proximo_intento <= now()) IS TRUE
  AND NOT EXISTS (
      SELECT 1 FROM subscription_throttle t WHERE t.subscription_id = s.id AND t.hasta > now())
  AND (SELECT b.id FROM deliveries b
       WHERE b.subscription_id = d.subscription_id AND b.instance_id = d.instance_id
         AND b.lane = d.lane AND b.estado = 'pendiente' AND b.seq < d.seq
       ORDER BY b.seq LIMIT 1) IS NULL
RETURNING d.id AS head, NULL::boolean AS following_parked,
          d.id, d.subscription_id, d.app_id, d.instance_id, d.event_id, d.lane, d.seq,
          d.replay_of, d.creado_en AS created_at, d.reservado_hasta AS "lease_until!",
          s.url, s.ordenado AS ordered, s.max_por_segundo AS max_per_second,
          s.version AS subscription_version, e.envelope, d.intentos AS attempts_made;
GET DIAGNOSTICS claimed_count = ROW_COUNT;
IF claimed_count < cardinality($1) THEN
    FOR finishing.head IN
-- Those of $1 (parked first attempts that claim_freed.sql did not claim;
-- motor_claim_freed, migration 0031, runs it right after that statement)
-- whose lane may have freed since that statement: the lowest open
-- delivery before them is locked right now (its finish, or its claim, in
-- flight, which may have missed them), or there is none any more (a
-- finish committed between the two statements). The probe skips locked
-- rows, so it never waits: a locked delivery answers another row or
-- none, unlike the plain read of the same lane. A delivery whose finish
-- committed since this statement's snapshot counts too (the probe sees
-- its new state). The order keeps each read one probe of the open-lane
-- index.
SELECT g.id FROM deliveries g
CROSS JOIN LATERAL (
    SELECT (SELECT b.id FROM deliveries b
            WHERE b.subscription_id = g.subscription_id AND b.instance_id = g.instance_id
              AND b.lane = g.lane AND b.estado = 'pendiente' AND b.seq < g.seq
            ORDER BY b.seq LIMIT 1) AS before,
           (SELECT b.id FROM deliveries b
            WHERE b.subscription_id = g.subscription_id AND b.instance_id = g.instance_id
              AND b.lane = g.lane AND b.estado = 'pendiente' AND b.seq < g.seq
            ORDER BY b.seq LIMIT 1
            FOR SHARE SKIP LOCKED) AS unheld) l
WHERE g.id = ANY ($1) AND (g.estado = 'pendiente') IS TRUE AND g.intentos = 0
  AND g.aparcado_en IS NOT NULL
  AND (l.before IS NULL OR l.before IS DISTINCT FROM l.unheld)
    LOOP
        RETURN NEXT finishing;
    END LOOP;
END IF;
END
$motor$;
