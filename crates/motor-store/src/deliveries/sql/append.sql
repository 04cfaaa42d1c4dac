-- The append of new events and their fan-out, in one statement: one
-- round trip of the ingest transaction, which holds the instances' row
-- locks (ledger::write). $1 the outbox shard of each event's instance
-- (its record's, published in this order), $2 recibido_en, $3-$8 the
-- events (instance, seq, event_id, type, source_id, envelope), $9-$10
-- each instance's new last_seq, $11 the lease of a claim at insert (NULL:
-- none), $12 the events' entorno, $13 their orden_clave, $14-$18 what an
-- optimistic append expects (below; empty arrays when the transaction
-- holds the instances already), $19-$20 unordered subscriptions with
-- chains running in the committing process and how many of their new
-- deliveries it may claim at insert (their room), $21 the room of any
-- other unordered subscription.
--
-- An optimistic append (ledger::Appender) runs this statement alone,
-- outside a transaction block: its process numbered the batch from the
-- generation and last_seq it last wrote to each instance ($14-$16) and
-- stored no event with the batch's source_ids it knows of ($17-$18).
-- `expected` locks those instances, in id order as every append does,
-- and reads them as they are once locked; unless each is as expected and
-- none of the sources is stored, motor_append_stale() (migration 0025)
-- raises, and the statement writes nothing. Every write below waits for
-- that check (its `WHERE (SELECT ok FROM guard)`). Nothing else can have
-- moved that this statement's older snapshot would miss: an append to
-- one of these instances moves its last_seq, and the rest (records,
-- sweeps, subscription changes) may commit between a held lock and the
-- snapshot of the usual path's statement as well.
--
-- A delivery's lane is `live`, or `live/<orden_clave>` when its
-- subscription orders by key (orden_por_clave) and the event has a key
-- (motor_domain::delivery::Lane): everything below works per lane, so a
-- key's lane is claimed, parked and chained as an instance's is.
--
-- The fan-out: a new `pendiente` delivery is due at once (proximo_intento's
-- default). With $11 (a dispatcher in the committing process), an
-- `activa` subscription not held by its throttle has its new deliveries
-- taken by that dispatcher, with no job: for an ordered one the lowest of
-- each lane is claimed when the lane has no open delivery, and every other
-- one is created parked (the finish of the delivery before it takes it);
-- an unordered one's are claimed up to the subscription's room in that
-- process ($19-$21), and the rest handed over after the commit, to be
-- claimed there. A process that dies first leaves them due, for the
-- sweeper (once their lease ends, for those claimed).
WITH expected AS (
    SELECT count(*) = cardinality($14::uuid[])
           AND coalesce(bool_and(i.last_seq = x.last_seq AND i.generation = x.generation), true)
           AND NOT EXISTS (
               -- One probe of the sources' index per source (a join was
               -- planned as a scan of `events` while the table was small).
               SELECT 1
               FROM UNNEST($17::uuid[], $18::text[]) AS k(instance_id, source_id)
               CROSS JOIN LATERAL (
                   SELECT 1 FROM events e
                   WHERE e.instance_id = k.instance_id AND e.source_id = k.source_id
                   LIMIT 1) stored)
           AS fresh
    -- Each instance locked through a probe of its key, in id order (the
    -- lock in a LATERAL of each id, sorted): as `WHERE id = ANY (…) ORDER
    -- BY id`, a generic plan, which takes the array for 10 ids, read a
    -- table of a few hundred instances whole and sorted it
    -- (docs/BENCHMARKS.md, 2026-12-06 19:22).
    FROM (SELECT DISTINCT o.id FROM UNNEST($14::uuid[]) AS o(id) ORDER BY o.id) o
    CROSS JOIN LATERAL (
        SELECT id, generation, last_seq FROM instances WHERE id = o.id FOR NO KEY UPDATE) i
    JOIN UNNEST($14::uuid[], $15::bigint[], $16::bigint[]) AS x(id, last_seq, generation)
         ON x.id = i.id
), guard AS (
    SELECT CASE WHEN fresh THEN true ELSE motor_append_stale() END AS ok FROM expected
), stored AS (
    INSERT INTO events (instance_id, seq, event_id, type, source_id, recibido_en, envelope,
                        entorno, orden_clave)
    SELECT instance_id, seq, event_id, type, source_id, $2, envelope, entorno, orden_clave
    FROM UNNEST($3::uuid[], $4::bigint[], $5::uuid[], $6::text[], $7::text[], $8::text[],
                $12::text[], $13::text[])
         AS t(instance_id, seq, event_id, type, source_id, envelope, entorno, orden_clave)
    WHERE (SELECT ok FROM guard)
    RETURNING instance_id, seq, event_id, type, entorno, orden_clave
), published AS (
    -- Each event's `{prefix}.events` record, by reference: its key is the
    -- instance and `event_seq` its seq, and the relay reads its envelope
    -- from `events` (outbox/fetch_after.sql), which this statement stored
    -- once (migration 0028).
    INSERT INTO outbox (shard, topic, key, event_seq)
    SELECT shard, 'events', instance_id::text, seq
    FROM UNNEST($1::int[], $3::uuid[], $4::bigint[])
         WITH ORDINALITY AS t(shard, instance_id, seq, n)
    WHERE (SELECT ok FROM guard)
    ORDER BY n
), numbered AS (
    -- `= ANY (ARRAY[r.id])`, the same test as `= r.id`, is no hash or
    -- merge join clause: the plan probes the key of each instance, where
    -- a hash join read a table of a few hundred whole.
    UPDATE instances i SET last_seq = r.last_seq
    FROM UNNEST($9::uuid[], $10::bigint[]) AS r(id, last_seq)
    WHERE i.id = ANY (ARRAY[r.id]) AND (SELECT ok FROM guard)
), candidates AS (
    -- The new events as the insert returns them (this statement cannot
    -- read them back from `events`); a delivery's key to its event is
    -- checked at the statement's end, when they are there.
    SELECT motor_uuid_v7() AS id, s.id AS subscription_id, s.app_id, e.instance_id,
           e.event_id, e.seq, s.estado, s.ordenado, l.lane, s.url, s.max_por_segundo,
           s.version,
           row_number() OVER (PARTITION BY s.id, e.instance_id, l.lane ORDER BY e.seq) AS nth,
           -- taken (see `placed`), here: the window keeps this subquery
           -- whole, so its throttle is probed once a candidate. As a
           -- lateral of `placed`, which Postgres pulled up into each of its
           -- four uses, it was probed four times, 8 of the 29 buffers a
           -- delivery cost the fan-out benchmark's appends.
           $11::interval IS NOT NULL AND s.estado = 'activa' AND NOT EXISTS (
               SELECT 1 FROM subscription_throttle t
               WHERE t.subscription_id = s.id AND t.hasta > now()) AS taken
    FROM stored e
    -- Each event's instance by its key, and its app's subscriptions by
    -- that app. The app is compared through an expression
    -- (coalesce(i.app_id, i.app_id), the same value), so no plan can reach
    -- the instances from the subscriptions through `instances_app_id`: a
    -- generic plan made before `instances` was analysed (a new app's
    -- first seconds, until the sweeper's pass) did, reading every one of
    -- the app's instances for each (event, subscription) pair (18,300
    -- rows for 60 events to 10 subscriptions of an app of 100). The app
    -- read through a subquery instead made the generic plan dearer than a
    -- custom one, and Postgres planned the append again at every call
    -- (the plans test's generic-plan test fails it); the subscriptions in
    -- a LATERAL of their own cost more still with many tenants. The
    -- instance is a probe of its key, in a LATERAL with a LIMIT (which no
    -- plan turns into a join): joined, a generic plan, which takes the
    -- batch for 10 events, read a table of a few hundred instances whole
    -- into a hash at every append (docs/BENCHMARKS.md, 2026-12-06 19:22).
    CROSS JOIN LATERAL (
        SELECT i.app_id, i.sistema FROM instances i WHERE i.id = e.instance_id LIMIT 1) i
    JOIN subscriptions s ON s.app_id = coalesce(i.app_id, i.app_id)
    CROSS JOIN LATERAL (
        SELECT CASE WHEN s.ordenado AND s.orden_por_clave AND e.orden_clave IS NOT NULL
                    THEN 'live/' || e.orden_clave ELSE 'live' END AS lane) l
    WHERE s.estado <> 'eliminada' AND NOT i.sistema AND s.entorno = e.entorno
      AND (cardinality(s.instancias) = 0 OR e.instance_id = ANY (s.instancias))
      AND (cardinality(s.tipos) = 0 OR e.type = ANY (s.tipos))
), placed AS MATERIALIZED (
    -- taken: this process's dispatcher takes the delivery (ordered:
    -- claimed now, or parked behind the one before it; unordered: claimed
    -- now, or handed over past the subscription's room); claimed: the
    -- lowest new one of an ordered lane with no open delivery, and an
    -- unordered one within its subscription's room (counted per instance
    -- of the batch: a second window over the subscription alone cost the
    -- ordered closed loops a sort in every append).
    SELECT c.*,
           c.taken AND CASE WHEN c.ordenado
               THEN c.nth = 1 AND open.lane IS NULL
               ELSE c.nth <= coalesce(
                   (SELECT r.room FROM UNNEST($19::uuid[], $20::int[]) AS r(id, room)
                    WHERE r.id = c.subscription_id), $21::int) END AS claimed
    FROM candidates c
    LEFT JOIN LATERAL (
        -- The lane's open delivery, for the lowest new one of an ordered
        -- lane this process takes: one probe of the open-lane index (the
        -- ORDER BY keeps it one). A list of such lanes made beforehand was
        -- searched again for every candidate, twice (quadratic in the
        -- batch: 610 deliveries of 61 events spent 65 ms of 90 there).
        SELECT b.lane FROM deliveries b
        WHERE c.taken AND c.ordenado AND c.nth = 1
          AND b.subscription_id = c.subscription_id AND b.instance_id = c.instance_id
          AND b.lane = c.lane AND b.estado = 'pendiente'
        ORDER BY b.seq
        LIMIT 1) open ON true
), marked AS (
    -- Each new row's parked and lease columns, once: for the insert and
    -- for the answer. (MATERIALIZED, `placed` is not pulled up into this,
    -- which would compute `claimed` again in each of its uses.)
    SELECT c.*,
           CASE WHEN c.estado <> 'activa' OR (c.taken AND c.ordenado AND NOT c.claimed)
                THEN now() END AS aparcado_en,
           CASE WHEN c.claimed THEN now() + $11 END AS reservado_hasta
    FROM placed c
), created AS (
    INSERT INTO deliveries (id, subscription_id, app_id, instance_id, event_id, seq, lane,
                            aparcado_en, reservado_hasta)
    SELECT c.id, c.subscription_id, c.app_id, c.instance_id, c.event_id, c.seq, c.lane,
           c.aparcado_en, c.reservado_hasta
    FROM marked c
    ORDER BY c.instance_id, c.seq, c.subscription_id
)
-- The answer, one row a delivery inserted, from what the insert was
-- given: the insert has no ON CONFLICT (a conflict fails the whole
-- statement), so its rows are `marked`'s, and `proximo_intento` and
-- `creado_en` are the defaults the insert left them, `now()`, the
-- transaction's start. Read from the insert's RETURNING instead, each row
-- was joined to its subscription again and its throttle probed again (4
-- of the 27 buffers a delivery cost the fan-out benchmark's appends); a
-- join of that RETURNING with `placed` was planned as a nested loop over
-- both (quadratic in the batch: arrays of 100 lost a fifth).
SELECT c.id AS "id!", c.subscription_id AS "subscription_id!", c.app_id AS "app_id!",
       c.instance_id AS "instance_id!", c.event_id AS "event_id!", c.seq AS "seq!",
       c.lane AS "lane!",
       now() AS "due!", c.reservado_hasta AS "lease_until?",
       c.aparcado_en IS NOT NULL AS "parked!",
       now() AS "created_at!", c.estado = 'activa' AS "active!", c.ordenado AS "ordered!",
       c.url AS "url!", c.max_por_segundo AS "max_per_second?",
       c.version AS "subscription_version!", c.taken AS "taken!"
FROM marked c
ORDER BY c.instance_id, c.seq, c.subscription_id
