-- Fresh jobs for those of $1 (delivery ids) that are still due, unleased
-- (or lease-expired) lane heads of an `activa` subscription; rows another
-- transaction holds are skipped. "Claimable now" and "the lane is free"
-- as in claim.sql.
WITH locked AS MATERIALIZED (
    SELECT id, subscription_id, instance_id, lane, seq, estado, reservado_hasta, proximo_intento
    FROM deliveries WHERE id = ANY ($1)
    FOR UPDATE SKIP LOCKED
)
UPDATE deliveries d
SET proximo_intento = now(), reservado_hasta = NULL, aparcado_en = NULL, actualizado_en = now()
WHERE d.id = ANY (ARRAY(
    SELECT d.id FROM locked d JOIN subscriptions s ON s.id = d.subscription_id
    WHERE d.estado = 'pendiente' AND s.estado = 'activa'
      AND (d.reservado_hasta IS NULL OR d.reservado_hasta <= now())
      AND d.proximo_intento <= now()
      AND NOT EXISTS (
          SELECT 1 FROM subscription_throttle t WHERE t.subscription_id = s.id AND t.hasta > now())
      AND (NOT s.ordenado OR NOT EXISTS (
          SELECT 1 FROM deliveries b
          WHERE b.subscription_id = d.subscription_id AND b.instance_id = d.instance_id
            AND b.lane = d.lane AND b.estado = 'pendiente' AND b.seq < d.seq))))
RETURNING d.id, d.subscription_id, d.instance_id, d.lane, d.seq, d.intentos AS attempts_made,
          d.proximo_intento AS due
