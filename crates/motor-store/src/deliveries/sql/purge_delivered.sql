-- Retention of delivered rows and their attempts: $1 days, $2 limit.
-- Answers how many deliveries it deleted.
WITH gone AS (
    DELETE FROM deliveries WHERE id = ANY (ARRAY(
        SELECT id FROM deliveries
        WHERE estado = 'entregada' AND entregado_en < now() - make_interval(days => $1::int)
        ORDER BY entregado_en
        LIMIT $2
        FOR UPDATE SKIP LOCKED))
    RETURNING id
), attempts AS (
    DELETE FROM delivery_attempts a USING gone g WHERE a.delivery_id = g.id
)
SELECT count(*) AS "deleted!" FROM gone
