-- Lane heads that should be moving: $1 stale_after, $2 limit.
WITH RECURSIVE heads AS (
    (SELECT d.subscription_id, d.instance_id, d.lane, d.id, d.reservado_hasta, d.proximo_intento
     FROM deliveries d
     WHERE d.estado = 'pendiente'
     ORDER BY d.subscription_id, d.instance_id, d.lane, d.seq
     LIMIT 1)
    UNION ALL
    SELECT n.* FROM heads h CROSS JOIN LATERAL (
        SELECT d.subscription_id, d.instance_id, d.lane, d.id, d.reservado_hasta,
               d.proximo_intento
        FROM deliveries d
        WHERE d.estado = 'pendiente'
          AND (d.subscription_id, d.instance_id, d.lane)
              > (h.subscription_id, h.instance_id, h.lane)
        ORDER BY d.subscription_id, d.instance_id, d.lane, d.seq
        LIMIT 1) n
)
SELECT id AS "id!" FROM (
    SELECT h.id, h.proximo_intento
    FROM heads h JOIN subscriptions s ON s.id = h.subscription_id
    WHERE s.estado = 'activa' AND s.ordenado
      AND ((h.reservado_hasta IS NULL AND h.proximo_intento <= now() - $1::interval)
           OR h.reservado_hasta <= now())
    UNION ALL
    -- An unordered subscription's oldest stale deliveries, unless 8 or
    -- more of them are leased: its chains are moving (each claims the
    -- oldest due delivery nobody holds as it records), and one
    -- process's 8 slots are busy with them.
    SELECT u.id, u.proximo_intento
    FROM subscriptions s CROSS JOIN LATERAL (
        SELECT w.id, w.proximo_intento, w.reservado_hasta,
               count(*) FILTER (WHERE w.reservado_hasta > now()) OVER () AS leased
        FROM (SELECT d.id, d.proximo_intento, d.reservado_hasta FROM deliveries d
              WHERE d.subscription_id = s.id
                AND d.proximo_intento <= now() - $1::interval
              ORDER BY d.proximo_intento, d.id
              LIMIT $2) w) u
    WHERE s.estado = 'activa' AND NOT s.ordenado
      AND u.leased < 8
      AND (u.reservado_hasta IS NULL OR u.reservado_hasta <= now())
) due
ORDER BY proximo_intento, id
LIMIT $2
