-- A relay round's read (outbox::fetch_after): the oldest $2 records of
-- the shards $1, in id order, once the records $3 (published earlier)
-- are deleted, leaving out the records $4 (in flight). The read's
-- snapshot predates the delete, so it leaves those ids out itself.
--
-- An event's record carries no envelope (migration 0028): its
-- `event_seq` names the event of its instance (the key), read here from
-- the ledger by its primary key, one probe a record of the batch (a
-- LATERAL of its own with a LIMIT, which no plan turns into a join:
-- without the LIMIT, Postgres pulled the LATERAL up into a hash join
-- over the whole ledger once the outbox's statistics counted thousands
-- of records, after a burst or during a backlog; 91,664 events read, 27
-- ms, at every round of the HTTP bench's 200/s after its closed loop;
-- docs/BENCHMARKS.md, 2026-12-07 13:30). Its
-- envelope, event_id and type come back beside the record. A record
-- whose event is not there (the ledger never deletes one) is left
-- unread, for the reconciliation's report of an outbox behind; the key
-- is cast only for a record that names an event.
--
-- The ids to leave out are looked up in a hash of each list (`NOT IN` a
-- subquery, planned as a hashed subplan): `id <> ALL ($3)` walked the
-- list for every record read, and a round of 2,000 after one of 2,000
-- compared some 8 million pairs, 73 ms a round against 3.8 (the same
-- 1.0 ms with lists of 8; docs/BENCHMARKS.md, 2026-12-07 13:20). Ids are
-- never NULL, so `NOT IN` means `<> ALL`.
WITH published AS (DELETE FROM outbox WHERE id = ANY($3))
SELECT o.id, o.topic, o.key, o.payload, o.event_seq,
       o.headers AS "headers: Json<serde_json::Map<String, serde_json::Value>>",
       e.event_id AS "event_id?", e.type AS "event_type?", e.envelope AS "envelope?"
FROM (SELECT id, topic, key, payload, headers, event_seq
      FROM outbox
      WHERE shard = ANY($1) AND id NOT IN (SELECT unnest($3::bigint[]))
        AND id NOT IN (SELECT unnest($4::bigint[]))
      ORDER BY id LIMIT $2) o
LEFT JOIN LATERAL (
    SELECT l.event_id, l.type, l.envelope
    FROM events l
    WHERE l.instance_id = CASE WHEN o.event_seq IS NOT NULL THEN o.key::uuid END
      AND l.seq = o.event_seq
    LIMIT 1) e ON true
WHERE o.payload IS NOT NULL OR e.envelope IS NOT NULL
ORDER BY o.id
