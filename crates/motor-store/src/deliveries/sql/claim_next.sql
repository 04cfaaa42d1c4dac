-- Claims the lowest open delivery of a lane when it can be claimed now and
-- its subscription is ordered: $1 subscription, $2 instance, $3 lane,
-- $4 lease. Returns claim.sql's columns.
UPDATE deliveries d
SET reservado_hasta = now() + $4, aparcado_en = NULL, actualizado_en = now()
FROM subscriptions s, events e
WHERE d.id = (
    SELECT id FROM deliveries
    WHERE subscription_id = $1 AND instance_id = $2 AND lane = $3 AND estado = 'pendiente'
    ORDER BY seq LIMIT 1)
  AND s.id = d.subscription_id AND e.event_id = d.event_id
  AND s.ordenado AND s.estado = 'activa'
  AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= now())
  AND d.proximo_intento <= now()
  AND NOT EXISTS (
      SELECT 1 FROM subscription_throttle t WHERE t.subscription_id = s.id AND t.hasta > now())
RETURNING d.id, d.subscription_id, d.app_id, d.instance_id, d.event_id, d.lane, d.seq,
          d.replay_of, d.creado_en AS created_at, d.reservado_hasta AS "lease_until!",
          s.url, s.ordenado AS ordered, s.max_por_segundo AS max_per_second,
          s.version AS subscription_version, e.envelope, d.intentos AS attempts_made
