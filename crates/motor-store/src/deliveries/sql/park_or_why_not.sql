-- Parks the delivery behind an open lower-seq delivery of its ordered
-- lane, or reads why it cannot be claimed: $1 delivery, $2 attempt.
WITH parked AS (
    UPDATE deliveries d SET aparcado_en = now()
    FROM subscriptions s
    WHERE d.id = $1 AND s.id = d.subscription_id AND s.ordenado AND s.estado = 'activa'
      AND (d.estado = 'pendiente') IS TRUE AND d.intentos = $2::bigint - 1
      AND EXISTS (
          SELECT 1 FROM deliveries b
          WHERE b.subscription_id = d.subscription_id AND b.instance_id = d.instance_id
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
