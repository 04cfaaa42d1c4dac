-- Delivered, and the next delivery of the lane claimed, in one statement:
-- $1 delivery, $2 attempt, $3 status, $4 iniciado_en, $5 duracion_ms,
-- $6 key ids, $7 lease of the next claim. No row: the delivery was no
-- longer at this attempt. The next one's columns are NULL when none was
-- claimed; they are claim.sql's.
WITH head AS (
    UPDATE deliveries
    SET estado = 'entregada', intentos = $2, ultimo_status = $3, ultimo_error = NULL,
        proximo_intento = NULL, reservado_hasta = NULL, aparcado_en = NULL,
        entregado_en = now(), actualizado_en = now()
    WHERE id = $1 AND (estado = 'pendiente') IS TRUE AND intentos = $2 - 1 -- IS TRUE: see claim.sql
    RETURNING id, subscription_id, instance_id, lane
), attempt AS (
    INSERT INTO delivery_attempts (delivery_id, numero, iniciado_en, duracion_ms, status, error, key_ids)
    SELECT id, $2, $4, $5, $3, NULL, $6 FROM head
), healed AS (
    DELETE FROM subscription_health
    WHERE subscription_id = (SELECT subscription_id FROM head)
), following AS (
    SELECT f.id, f.aparcado_en IS NOT NULL AS parked
    FROM head h, LATERAL (
        SELECT id, aparcado_en FROM deliveries f
        WHERE f.subscription_id = h.subscription_id AND f.instance_id = h.instance_id
          AND f.lane = h.lane AND f.estado = 'pendiente' AND f.id <> h.id
        ORDER BY f.seq LIMIT 1) f
), next AS (
    UPDATE deliveries d
    SET reservado_hasta = now() + $7, aparcado_en = NULL, actualizado_en = now()
    FROM following f, subscriptions s, events e
    WHERE d.id = f.id AND s.id = d.subscription_id AND e.event_id = d.event_id
      AND s.ordenado AND s.estado = 'activa'
      AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= now())
      AND (d.proximo_intento <= now()) IS TRUE
      AND NOT EXISTS (
          SELECT 1 FROM subscription_throttle t WHERE t.subscription_id = s.id AND t.hasta > now())
    RETURNING d.id, d.subscription_id, d.app_id, d.instance_id, d.event_id, d.lane, d.seq,
              d.replay_of, d.creado_en, d.reservado_hasta, s.url, s.ordenado,
              s.max_por_segundo, s.version AS subscription_version, e.envelope, d.intentos
)
SELECT h.id AS "input_id?", h.id AS "head?", f.parked AS "following_parked?",
       n.id AS "id?", n.subscription_id AS "subscription_id?", n.app_id AS "app_id?",
       n.instance_id AS "instance_id?", n.event_id AS "event_id?", n.lane AS "lane?",
       n.seq AS "seq?", n.replay_of AS "replay_of?", n.creado_en AS "created_at?",
       n.reservado_hasta AS "lease_until?", n.url AS "url?", n.ordenado AS "ordered?",
       n.max_por_segundo AS "max_per_second?",
       n.subscription_version AS "subscription_version?", n.envelope AS "envelope?",
       n.intentos AS "attempts_made?"
FROM head h LEFT JOIN following f ON true LEFT JOIN next n ON true
