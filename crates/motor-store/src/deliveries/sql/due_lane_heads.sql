-- Lane heads that should be moving, in the subscriptions from $7
-- (included) to $8 (excluded; the max uuid for "to the end"): $1
-- stale_after, $2 limit; $3–$6 the lanes of those subscriptions an
-- earlier pass found (subscription, instance, lane) and the seq each
-- one's head is at or after (`LaneHints`). One row per lane with its head
-- and the seq to start from next time (`seq`), plus for each `activa`
-- unordered subscription its stale deliveries, or one row with no `id`
-- when it has none (`lane` NULL); `due` marks the candidates.
WITH RECURSIVE known AS (
    SELECT k.subscription_id, k.instance_id, k.lane, k.seq
    FROM UNNEST($3::uuid[], $4::uuid[], $5::text[], $6::bigint[])
         AS k(subscription_id, instance_id, lane, seq)
), pairs AS (
    -- The known (subscription, instance) pairs, each with its last known
    -- lane and the known instances before and after it in its
    -- subscription.
    SELECT p.subscription_id, p.instance_id, p.last_lane,
           lag(p.instance_id) OVER w AS before, lead(p.instance_id) OVER w AS after
    FROM (SELECT k.subscription_id, k.instance_id, max(k.lane) AS last_lane
          FROM known k
          GROUP BY k.subscription_id, k.instance_id) p
    WINDOW w AS (PARTITION BY p.subscription_id ORDER BY p.instance_id)
), segments AS (
    -- The key ranges no hint names, bounds excluded, each with an upper
    -- bound on one index column under equal leading columns, so that it
    -- ends the scan (a row comparison ends a scan only on its first
    -- column): a known instance's lanes before each of its known lanes
    -- (level 3); from a known instance's last known lane to the next known
    -- instance of its subscription, and before the first (2); from a
    -- known subscription's last known lane to the next known subscription,
    -- and from $7 to the first (1), the last one ending at $8. A range
    -- starts after its (s, i, l); the nil uuid and '' stand for "from the
    -- start" of a subscription or an instance (ids are UUIDv7, lanes never
    -- empty). With no hints, one range: the slice's part of the index.
    SELECT 3 AS level, k.subscription_id AS s, k.instance_id AS i,
           coalesce(lag(k.lane) OVER w, '') AS l, NULL::uuid AS to_s, NULL::uuid AS to_i,
           k.lane AS to_l
    FROM known k
    WINDOW w AS (PARTITION BY k.subscription_id, k.instance_id ORDER BY k.lane)
    UNION ALL
    SELECT 2, p.subscription_id, p.instance_id, p.last_lane, NULL, p.after, NULL
    FROM pairs p
    WHERE p.after IS NOT NULL
    UNION ALL
    SELECT 2, p.subscription_id, '00000000-0000-0000-0000-000000000000', '', NULL,
           p.instance_id, NULL
    FROM pairs p
    WHERE p.before IS NULL
    UNION ALL
    SELECT 1, p.subscription_id, p.instance_id, p.last_lane,
           coalesce(lead(p.subscription_id) OVER (ORDER BY p.subscription_id), $8::uuid),
           NULL, NULL
    FROM pairs p
    WHERE p.after IS NULL
    UNION ALL
    SELECT 1, $7::uuid, '00000000-0000-0000-0000-000000000000', '',
           coalesce((SELECT k.subscription_id FROM known k
                     ORDER BY k.subscription_id LIMIT 1),
                    $8::uuid),
           NULL, NULL
), walk AS (
    -- Each range's lanes, one probe per lane found (from the lane
    -- before). (s, i, l): the lower bound, then the lane found; level 3
    -- keeps s and i, level 2 keeps s.
    SELECT g.level, g.s, g.i, g.l, g.to_s, g.to_i, g.to_l, NULL::bigint AS seq,
           NULL::uuid AS id, NULL::timestamptz AS reservado_hasta,
           NULL::timestamptz AS proximo_intento
    FROM segments g
    UNION ALL
    SELECT w.level, n.subscription_id, n.instance_id, n.lane, w.to_s, w.to_i, w.to_l, n.seq,
           n.id, n.reservado_hasta, n.proximo_intento
    FROM walk w CROSS JOIN LATERAL (
        (SELECT d.subscription_id, d.instance_id, d.lane, d.seq, d.id, d.reservado_hasta,
                d.proximo_intento
         FROM deliveries d
         WHERE d.estado = 'pendiente' AND w.level = 3
           AND d.subscription_id = w.s AND d.instance_id = w.i
           AND d.lane > w.l AND d.lane < w.to_l
         ORDER BY d.lane, d.seq
         LIMIT 1)
        UNION ALL
        (SELECT d.subscription_id, d.instance_id, d.lane, d.seq, d.id, d.reservado_hasta,
                d.proximo_intento
         FROM deliveries d
         WHERE d.estado = 'pendiente' AND w.level = 2
           AND d.subscription_id = w.s AND (d.instance_id, d.lane) > (w.i, w.l)
           AND d.instance_id < w.to_i
         ORDER BY d.instance_id, d.lane, d.seq
         LIMIT 1)
        UNION ALL
        (SELECT d.subscription_id, d.instance_id, d.lane, d.seq, d.id, d.reservado_hasta,
                d.proximo_intento
         FROM deliveries d
         WHERE d.estado = 'pendiente' AND w.level = 1
           AND (d.subscription_id, d.instance_id, d.lane) > (w.s, w.i, w.l)
           AND d.subscription_id < w.to_s
         ORDER BY d.subscription_id, d.instance_id, d.lane, d.seq
         LIMIT 1)) n
), heads AS (
    SELECT w.s, w.i, w.l, w.seq, w.id, w.reservado_hasta, w.proximo_intento
    FROM walk w
    WHERE w.id IS NOT NULL
    UNION ALL
    -- A known lane's head: one probe from its hint. A lane with no open
    -- delivery left starts after its instance's last seq next time: a
    -- lane's deliveries are created in seq order, each by a transaction
    -- that moved `last_seq` past it (a replay's all at once), so none at
    -- or below it can open later.
    SELECT k.subscription_id, k.instance_id, k.lane,
           coalesce(n.seq, (SELECT i.last_seq + 1 FROM instances i WHERE i.id = k.instance_id)),
           n.id, n.reservado_hasta, n.proximo_intento
    FROM known k LEFT JOIN LATERAL (
        SELECT d.seq, d.id, d.reservado_hasta, d.proximo_intento
        FROM deliveries d
        WHERE d.estado = 'pendiente' AND d.subscription_id = k.subscription_id
          AND d.instance_id = k.instance_id AND d.lane = k.lane AND d.seq >= k.seq
        ORDER BY d.seq
        LIMIT 1) n ON true
)
SELECT h.s AS "subscription_id!", h.i AS instance_id, h.l AS lane, h.seq, h.id,
       h.proximo_intento,
       (h.id IS NOT NULL AND s.estado = 'activa' AND s.ordenado
        AND ((h.reservado_hasta IS NULL AND h.proximo_intento <= now() - $1::interval)
             OR h.reservado_hasta <= now())) IS TRUE AS "due!"
FROM heads h JOIN subscriptions s ON s.id = h.s
UNION ALL
-- An unordered subscription's oldest stale deliveries, unless 8 or
-- more of them are leased: its chains are moving (each claims the
-- oldest due delivery nobody holds as it records), and one
-- process's 8 slots are busy with them. One with none still gives a
-- row, so that the sweeper knows it is there (it counts toward a
-- pass's share).
SELECT s.id, NULL, NULL, NULL, u.id, u.proximo_intento,
       (u.leased < 8 AND (u.reservado_hasta IS NULL OR u.reservado_hasta <= now())) IS TRUE
FROM subscriptions s LEFT JOIN LATERAL (
    SELECT w.id, w.proximo_intento, w.reservado_hasta,
           count(*) FILTER (WHERE w.reservado_hasta > now()) OVER () AS leased
    FROM (SELECT d.id, d.proximo_intento, d.reservado_hasta FROM deliveries d
          WHERE d.subscription_id = s.id
            AND d.proximo_intento <= now() - $1::interval
          ORDER BY d.proximo_intento, d.id
          LIMIT $2) w) u ON true
WHERE s.estado = 'activa' AND NOT s.ordenado
  AND s.id >= $7::uuid AND s.id < $8::uuid
