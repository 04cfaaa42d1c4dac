-- An event's outbox record without a copy of its envelope (issue 38, the
-- large bodies): the append wrote each envelope twice, as the event's
-- `envelope` and as its `{prefix}.events` record's `payload`, so Postgres
-- received, compressed and logged every event twice (for 64 KiB events,
-- encoding the second copy's argument was a tenth of Motor's CPU). The
-- record now names its event by `event_seq` (its key is the instance),
-- and the relay reads the envelope from the ledger by its primary key
-- (outbox/fetch_after.sql) and names its headers itself. Every other
-- record (delivery jobs, the DLQ, commands) keeps its payload.
--
-- A process of an older version reads `payload` as never NULL: its relay
-- fails on the new records (and publishes none of them) until it is
-- replaced, so upgrade the processes that relay together.
ALTER TABLE outbox
    ALTER COLUMN payload DROP NOT NULL,
    ADD COLUMN event_seq bigint,
    ADD CONSTRAINT outbox_payload_or_event CHECK (payload IS NOT NULL OR event_seq IS NOT NULL);
