-- Those of $1 (parked first attempts that claim_freed.sql did not claim;
-- motor_claim_freed, migration 0031, runs it right after that statement)
-- whose lane may have freed since that statement: the lowest open
-- delivery before them is locked right now (its finish, or its claim, in
-- flight, which may have missed them), or there is none any more (a
-- finish committed between the two statements). The probe skips locked
-- rows, so it never waits: a locked delivery answers another row or
-- none, unlike the plain read of the same lane. A delivery whose finish
-- committed since this statement's snapshot counts too (the probe sees
-- its new state). The order keeps each read one probe of the open-lane
-- index.
SELECT g.id FROM deliveries g
CROSS JOIN LATERAL (
    SELECT (SELECT b.id FROM deliveries b
            WHERE b.subscription_id = g.subscription_id AND b.instance_id = g.instance_id
              AND b.lane = g.lane AND b.estado = 'pendiente' AND b.seq < g.seq
            ORDER BY b.seq LIMIT 1) AS before,
           (SELECT b.id FROM deliveries b
            WHERE b.subscription_id = g.subscription_id AND b.instance_id = g.instance_id
              AND b.lane = g.lane AND b.estado = 'pendiente' AND b.seq < g.seq
            ORDER BY b.seq LIMIT 1
            FOR SHARE SKIP LOCKED) AS unheld) l
WHERE g.id = ANY ($1) AND (g.estado = 'pendiente') IS TRUE AND g.intentos = 0
  AND g.aparcado_en IS NOT NULL
  AND (l.before IS NULL OR l.before IS DISTINCT FROM l.unheld)
