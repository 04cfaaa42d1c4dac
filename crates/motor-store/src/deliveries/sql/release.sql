-- The heads to release: every lane's head of an ordered `activa`
-- subscription; of an unordered one, every open delivery of lane $2, or
-- with $2 NULL the 1,000 oldest due (the chains of their attempts claim
-- the rest, record_delivered_many.sql); $1 subscription, $2 lane or NULL
-- (every lane; a lane also names its keys' lanes under `clave`).
WITH RECURSIVE lanes AS (
    (SELECT d.instance_id, d.lane, d.id FROM deliveries d
     WHERE d.subscription_id = $1 AND d.estado = 'pendiente'
     ORDER BY d.instance_id, d.lane, d.seq
     LIMIT 1)
    UNION ALL
    SELECT n.* FROM lanes h CROSS JOIN LATERAL (
        SELECT d.instance_id, d.lane, d.id FROM deliveries d
        WHERE d.subscription_id = $1 AND d.estado = 'pendiente'
          AND (d.instance_id, d.lane) > (h.instance_id, h.lane)
        ORDER BY d.instance_id, d.lane, d.seq
        LIMIT 1) n
), heads AS (
    SELECT h.id FROM lanes h JOIN subscriptions s ON s.id = $1
    WHERE s.ordenado AND s.estado = 'activa'
      -- A replay's lane and its keys' lanes (`<replay>/<key>`, `clave`).
      AND ($2::text IS NULL OR split_part(h.lane, '/', 1) = $2)
    UNION ALL
    SELECT d.id FROM subscriptions s CROSS JOIN LATERAL (
        SELECT d.id FROM deliveries d
        WHERE d.subscription_id = s.id AND d.estado = 'pendiente' AND d.lane = $2
        OFFSET 0) d
    WHERE s.id = $1 AND NOT s.ordenado AND s.estado = 'activa' AND $2::text IS NOT NULL
    UNION ALL
    SELECT d.id FROM subscriptions s CROSS JOIN LATERAL (
        SELECT d.id FROM deliveries d
        WHERE d.subscription_id = s.id AND d.proximo_intento IS NOT NULL
        ORDER BY d.proximo_intento, d.id
        LIMIT 1000) d
    WHERE s.id = $1 AND NOT s.ordenado AND s.estado = 'activa' AND $2::text IS NULL
)
UPDATE deliveries d SET aparcado_en = NULL, actualizado_en = now()
WHERE d.id = ANY (ARRAY(SELECT id FROM heads))
  AND (d.estado = 'pendiente') IS TRUE -- see claim.sql
  AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= now())
RETURNING d.id, d.subscription_id, d.instance_id, d.lane, d.seq, d.intentos AS attempts_made,
          d.proximo_intento AS due
