-- The claim's compare-and-set: $1 delivery, $2 attempt, $3 lease.
-- "Claimable now" (the subscription `activa` and not held, no live lease,
-- due) is spelled the same in claim_next,
-- record_delivered_many and requeue; "the lane is free" as in requeue.
-- The target row's state is tested with `(...) IS TRUE`, here and in the
-- other statements that take a delivery by key: a plain `estado =
-- 'pendiente'` (or `proximo_intento <= now()`) lets the planner answer by
-- walking a partial index of open deliveries and filtering by id, which it
-- does when its statistics predate a backlog (few open deliveries when the
-- table was last analysed): 0.4-0.5 s per claim on 450,000 open ones. Same
-- truth value (the columns are NOT NULL or compared where they are not).
UPDATE deliveries d
SET reservado_hasta = now() + $3, aparcado_en = NULL, actualizado_en = now()
FROM subscriptions s, events e
WHERE d.id = $1 AND s.id = d.subscription_id AND e.event_id = d.event_id
  AND (d.estado = 'pendiente') IS TRUE AND d.intentos = $2::bigint - 1
  AND s.estado = 'activa'
  AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= now())
  AND (d.proximo_intento <= now()) IS TRUE
  AND NOT EXISTS (
      SELECT 1 FROM subscription_throttle t WHERE t.subscription_id = s.id AND t.hasta > now())
  AND (NOT s.ordenado OR NOT EXISTS (
      SELECT 1 FROM deliveries b
      WHERE b.subscription_id = d.subscription_id AND b.instance_id = d.instance_id
        AND b.lane = d.lane AND b.estado = 'pendiente' AND b.seq < d.seq))
RETURNING d.id, d.subscription_id, d.app_id, d.instance_id, d.event_id, d.lane, d.seq,
          d.replay_of, d.creado_en AS created_at, d.reservado_hasta AS "lease_until!",
          s.url, s.ordenado AS ordered, s.max_por_segundo AS max_per_second,
          s.version AS subscription_version, e.envelope, d.intentos AS attempts_made
