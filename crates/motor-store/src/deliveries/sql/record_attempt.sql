-- An attempt's state change: $1 delivery, $2 attempt, $3 estado, $4 status,
-- $5 error, $6 proximo_intento.
UPDATE deliveries
SET estado = $3, intentos = $2, ultimo_status = $4, ultimo_error = $5,
    proximo_intento = $6, reservado_hasta = NULL, aparcado_en = NULL,
    entregado_en = CASE WHEN $3 = 'entregada' THEN now() END,
    actualizado_en = now()
WHERE id = $1 AND (estado = 'pendiente') IS TRUE AND intentos = $2 - 1 -- IS TRUE: see claim.sql
