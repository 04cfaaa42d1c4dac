-- Parks the delivery behind an open lower-seq delivery of its ordered
-- lane, or reads why it cannot be claimed: $1 delivery, $2 attempt.
-- Locks are taken in the order a group commit takes them (the lane's head,
-- then the delivery after it) and every state is checked on a locked,
-- latest version found by key (see claim.sql).
WITH ahead AS MATERIALIZED (
    -- The lane's open lower-seq delivery, if the subscription is ordered
    -- and active (read, not yet locked).
    SELECT b.id
    FROM deliveries x
    JOIN subscriptions s ON s.id = x.subscription_id AND s.ordenado AND s.estado = 'activa'
    CROSS JOIN LATERAL (
        SELECT b.id FROM deliveries b
        WHERE b.subscription_id = x.subscription_id AND b.instance_id = x.instance_id
          AND b.lane = x.lane AND b.estado = 'pendiente' AND b.seq < x.seq
        ORDER BY b.seq LIMIT 1) b
    WHERE x.id = $1
), held AS MATERIALIZED (
    -- Share-locked so that it cannot finish (and miss this park) before
    -- the statement commits. One that finished in the meantime parks
    -- nothing: the caller tries the claim again.
    SELECT b.estado FROM deliveries b WHERE b.id = ANY (ARRAY(SELECT id FROM ahead))
    FOR SHARE
), current AS MATERIALIZED (
    -- Locked only once the head is held (the EXISTS is a one-time filter).
    SELECT id, estado, intentos FROM deliveries
    WHERE id = $1 AND EXISTS (SELECT 1 FROM held WHERE held.estado = 'pendiente')
    FOR NO KEY UPDATE
), parked AS (
    UPDATE deliveries d SET aparcado_en = now()
    FROM current c
    WHERE d.id = $1 AND c.id = d.id AND c.estado = 'pendiente' AND c.intentos = $2::bigint - 1
    RETURNING d.id
)
SELECT EXISTS (SELECT 1 FROM parked) AS "parked!", d.estado, d.intentos, d.reservado_hasta,
       d.proximo_intento, s.estado AS subscription_state, now() AS "now!",
       (SELECT t.hasta FROM subscription_throttle t
        WHERE t.subscription_id = d.subscription_id AND t.hasta > now()) AS held_until
FROM deliveries d JOIN subscriptions s ON s.id = d.subscription_id
WHERE d.id = $1
