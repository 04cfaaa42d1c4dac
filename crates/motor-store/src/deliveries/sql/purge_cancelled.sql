-- Retention of cancelled rows and their attempts, as delivered ones: $1
-- days after cancelada_en, $2 limit; $3 the contracts whose own period
-- applies instead (purge_contract_cancelled.sql): their subscriptions'
-- rows are left to it. Answers how many it deleted.
WITH gone AS (
    DELETE FROM deliveries WHERE id = ANY (ARRAY(
        SELECT d.id FROM deliveries d
        WHERE d.estado = 'cancelada' AND d.cancelada_en < now() - make_interval(days => $1::int)
          AND (cardinality($3::text[]) = 0 OR NOT EXISTS (
              SELECT 1 FROM subscriptions s
              WHERE s.id = d.subscription_id AND s.contrato = ANY ($3::text[])))
        ORDER BY d.cancelada_en
        LIMIT $2
        FOR UPDATE OF d SKIP LOCKED))
    RETURNING id
), attempts AS (
    DELETE FROM delivery_attempts a USING gone g WHERE a.delivery_id = g.id
)
SELECT count(*) AS "deleted!" FROM gone
