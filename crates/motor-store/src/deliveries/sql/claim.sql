-- The claim's compare-and-set: $1 delivery, $2 attempt, $3 lease.
-- "Claimable now" (the subscription `activa` and not held, no live lease,
-- due) is spelled the same in claim_next, delivered_claiming_next,
-- record_delivered_many and requeue; "the lane is free" as in requeue.
-- The delivery is found by its key alone and locked (`current`), and its
-- state is checked on that locked, latest version: with the state in the
-- UPDATE's own WHERE, a planner whose statistics predate a backlog (few
-- open deliveries when last analysed) reads the open ones through a
-- partial index and filters them by id (record_delivered_many.sql too).
WITH current AS MATERIALIZED (
    SELECT id, subscription_id, instance_id, lane, seq, estado, intentos, reservado_hasta,
           proximo_intento
    FROM deliveries WHERE id = $1
    FOR NO KEY UPDATE
)
UPDATE deliveries d
SET reservado_hasta = now() + $3, aparcado_en = NULL, actualizado_en = now()
FROM current c, subscriptions s, events e
WHERE d.id = $1 AND c.id = d.id AND s.id = d.subscription_id AND e.event_id = d.event_id
  AND c.estado = 'pendiente' AND c.intentos = $2::bigint - 1
  AND s.estado = 'activa'
  AND (c.reservado_hasta IS NULL OR c.reservado_hasta <= now())
  AND c.proximo_intento <= now()
  AND NOT EXISTS (
      SELECT 1 FROM subscription_throttle t WHERE t.subscription_id = s.id AND t.hasta > now())
  AND (NOT s.ordenado OR NOT EXISTS (
      SELECT 1 FROM deliveries b
      WHERE b.subscription_id = c.subscription_id AND b.instance_id = c.instance_id
        AND b.lane = c.lane AND b.estado = 'pendiente' AND b.seq < c.seq))
RETURNING d.id, d.subscription_id, d.app_id, d.instance_id, d.event_id, d.lane, d.seq,
          d.replay_of, d.creado_en AS created_at, d.reservado_hasta AS "lease_until!",
          s.url, s.ordenado AS ordered, s.max_por_segundo AS max_per_second,
          s.version AS subscription_version, e.envelope, d.intentos AS attempts_made
