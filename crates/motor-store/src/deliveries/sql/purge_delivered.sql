-- Retention of delivered rows: $1 days, $2 limit.
DELETE FROM deliveries WHERE id = ANY (ARRAY(
    SELECT id FROM deliveries
    WHERE estado = 'entregada' AND entregado_en < now() - make_interval(days => $1::int)
    ORDER BY entregado_en
    LIMIT $2
    FOR UPDATE SKIP LOCKED))
