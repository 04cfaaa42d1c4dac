-- An attempt's state change: $1 delivery, $2 attempt, $3 estado, $4 status,
-- $5 error, $6 proximo_intento. Found by key, locked, then checked (see
-- claim.sql).
WITH current AS MATERIALIZED (
    SELECT id, estado, intentos FROM deliveries WHERE id = $1 FOR NO KEY UPDATE
)
UPDATE deliveries d
SET estado = $3, intentos = $2, ultimo_status = $4, ultimo_error = $5,
    proximo_intento = $6, reservado_hasta = NULL, aparcado_en = NULL,
    entregado_en = CASE WHEN $3 = 'entregada' THEN now() END,
    actualizado_en = now()
FROM current c
WHERE d.id = $1 AND c.id = d.id AND c.estado = 'pendiente' AND c.intentos = $2 - 1
