-- Retention of the finished deliveries of a contract with periods of its
-- own (docs/CONTRACTS.md; Visito: 30 days after any finish), and their
-- attempts: $1 contrato; `entregada` ones delivered more than $2 ago,
-- `fallida` ones failed more than $3 ago (their last change,
-- `actualizado_en`, is the finish: nothing changes a terminal row); $4
-- limit. (`cancelada` rows follow the operator's setting, purge_cancelled.sql.) A delivery counts under its subscription's contract as it is now.
-- Answers how many deliveries it deleted.
WITH subs AS MATERIALIZED (
    SELECT s.id FROM subscriptions s WHERE s.contrato = $1
), doomed AS (
    (SELECT d.id FROM deliveries d
     WHERE d.estado = 'entregada' AND d.entregado_en < now() - $2::interval
       AND d.subscription_id IN (SELECT id FROM subs)
     ORDER BY d.entregado_en
     LIMIT $4)
    UNION ALL
    (SELECT f.id FROM subs s CROSS JOIN LATERAL (
         SELECT d.id FROM deliveries d
         WHERE d.subscription_id = s.id AND d.estado = 'fallida'
           AND d.actualizado_en < now() - $3::interval
         LIMIT $4) f
     LIMIT $4)
), gone AS (
    DELETE FROM deliveries WHERE id = ANY (ARRAY(
        SELECT d.id FROM deliveries d WHERE d.id IN (SELECT id FROM doomed)
        LIMIT $4
        FOR UPDATE SKIP LOCKED))
    RETURNING id
), attempts AS (
    DELETE FROM delivery_attempts a USING gone g WHERE a.delivery_id = g.id
)
SELECT count(*) AS "deleted!" FROM gone
