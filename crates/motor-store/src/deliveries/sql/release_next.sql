-- Clears the park of the lowest open delivery of a lane if it was parked,
-- and returns it for its job: $1 subscription, $2 instance, $3 lane.
UPDATE deliveries SET aparcado_en = NULL, actualizado_en = now()
WHERE id = (
    SELECT id FROM deliveries
    WHERE subscription_id = $1 AND instance_id = $2 AND lane = $3 AND estado = 'pendiente'
    ORDER BY seq LIMIT 1)
  AND aparcado_en IS NOT NULL
RETURNING id, subscription_id, instance_id, lane, seq, intentos AS attempts_made,
          proximo_intento AS due
