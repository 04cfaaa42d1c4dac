-- Retention of the cancelled deliveries of a contract with a period of its
-- own for them (docs/CONTRACTS.md; Visito: 30 days after any finish), and
-- their attempts: $1 contrato, $2 the period after cancelada_en, $3 limit.
-- A delivery counts under its subscription's contract as it is now.
-- Answers how many deliveries it deleted.
--
-- Its own statement (not a third branch of purge_contract.sql, whose
-- generic plan made young then walked the table): each subscription of
-- the contract is probed through deliveries_cancelled_by_subscription
-- (subscription_id, cancelada_en) WHERE estado = 'cancelada' (migration
-- 0022), oldest first, so the plan reads the cancelled rows it deletes
-- and no open, delivered or failed one.
WITH subs AS MATERIALIZED (
    SELECT s.id FROM subscriptions s WHERE s.contrato = $1
), doomed AS (
    SELECT c.id FROM subs s CROSS JOIN LATERAL (
        SELECT d.id FROM deliveries d
        WHERE d.subscription_id = s.id AND d.estado = 'cancelada'
          AND d.cancelada_en < now() - $2::interval
        ORDER BY d.cancelada_en
        LIMIT $3) c
    LIMIT $3
), gone AS (
    DELETE FROM deliveries WHERE id = ANY (ARRAY(
        SELECT d.id FROM deliveries d WHERE d.id IN (SELECT id FROM doomed)
        LIMIT $3
        FOR UPDATE SKIP LOCKED))
    RETURNING id
), attempts AS (
    DELETE FROM delivery_attempts a USING gone g WHERE a.delivery_id = g.id
)
SELECT count(*) AS "deleted!" FROM gone
