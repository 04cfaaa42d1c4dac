-- An attempt's state change: $1 delivery, $2 attempt, $3 estado, $4 status,
-- $5 error, $6 proximo_intento, $7 the lease the attempt's claim holds.
--
-- A record is the claim's own: when the lease ran out before the record
-- (a stalled process) and another claim took the delivery (its lease is
-- another), this record is stale: the other claim's attempt is on its way
-- and records the outcome. Otherwise the first record would mark the
-- delivery done (and claim its lane's next) while the other claim still
-- sends it: a send after `entregada`, two of one lane in flight. A lease
-- cleared by the sweeper's requeue (nobody claimed since) still takes the
-- record: the requeued job then finds the delivery done.
UPDATE deliveries
SET estado = $3, intentos = $2, ultimo_status = $4, ultimo_error = $5,
    proximo_intento = $6, reservado_hasta = NULL, aparcado_en = NULL,
    entregado_en = CASE WHEN $3 = 'entregada' THEN now() END,
    actualizado_en = now()
WHERE id = $1 AND (estado = 'pendiente') IS TRUE AND intentos = $2 - 1 -- IS TRUE: see claim.sql
  AND (reservado_hasta IS NULL OR reservado_hasta = $7)
