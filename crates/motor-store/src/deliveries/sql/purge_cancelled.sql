-- Retention of cancelled rows and their attempts, as delivered ones: $1
-- days after cancelada_en, $2 limit. Answers how many it deleted.
WITH gone AS (
    DELETE FROM deliveries WHERE id = ANY (ARRAY(
        SELECT id FROM deliveries
        WHERE estado = 'cancelada' AND cancelada_en < now() - make_interval(days => $1::int)
        ORDER BY cancelada_en
        LIMIT $2
        FOR UPDATE SKIP LOCKED))
    RETURNING id
), attempts AS (
    DELETE FROM delivery_attempts a USING gone g WHERE a.delivery_id = g.id
)
SELECT count(*) AS "deleted!" FROM gone
