-- Parks the delivery behind an open lower-seq delivery of its ordered
-- lane, or reads why it cannot be claimed: $1 delivery, $2 attempt.
--
-- The blockers' subquery names the subscription's row (`s.id`), not the
-- delivery's column: a condition on the delivery alone is checked while
-- the delivery is read, before the join drops unordered subscriptions,
-- and for an unordered one it share-locked the subscription's oldest open
-- delivery — waiting for whichever group commit was claiming it (10–25 ms
-- each, on a third of an unordered backlog's claims) and making chains'
-- claims skip it.
WITH parked AS (
    UPDATE deliveries d SET aparcado_en = now()
    FROM subscriptions s
    WHERE d.id = $1 AND s.id = d.subscription_id AND s.ordenado AND s.estado = 'activa'
      AND (d.estado = 'pendiente') IS TRUE AND d.intentos = $2::bigint - 1
      AND EXISTS (
          SELECT 1 FROM deliveries b
          WHERE b.subscription_id = s.id AND b.instance_id = d.instance_id
            AND b.lane = d.lane AND b.estado = 'pendiente' AND b.seq < d.seq
          FOR SHARE)
    RETURNING d.id
)
SELECT EXISTS (SELECT 1 FROM parked) AS "parked!", d.estado, d.intentos, d.reservado_hasta,
       d.proximo_intento, s.estado AS subscription_state, now() AS "now!",
       (SELECT t.hasta FROM subscription_throttle t
        WHERE t.subscription_id = d.subscription_id AND t.hasta > now()) AS held_until
FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.id = $1
