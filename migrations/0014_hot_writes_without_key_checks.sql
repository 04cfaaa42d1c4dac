-- The hot writes without foreign-key checks (issue 9). Contract only:
-- nothing reads what this drops, and every row these keys guarded is
-- written from the row it references, in the statement that writes it.
--
-- A foreign key runs a query per row inserted (`SELECT 1 FROM … FOR KEY
-- SHARE`), after the statement: three per event in the append, one per
-- attempt in the group commit. Without them, in the ordered closed loop
-- (docs/BENCHMARKS.md, 2026-12-02 10:40), the append took 26 % less
-- statement time and the group commit 22 % less; Postgres 15 % less CPU
-- an event. 0012 dropped two such keys of deliveries for the same reason.
--
-- - events.instance_id: the append locks the instance's row first and
--   sets its last_seq in the same statement (ledger::write); instances
--   are never deleted.
-- - deliveries.subscription_id and deliveries.event_id: every statement
--   that creates deliveries (the fan-out, replays, a manual retry, the
--   system instance's notices) takes both from the rows it reads or has
--   just inserted; subscriptions are never deleted (`eliminada` is a
--   state) and events are never deleted (retention redacts them).
-- - delivery_attempts.delivery_id: an attempt is written by the
--   transaction that records it on its delivery, which it has just
--   updated (and so holds locked) while still `pendiente`; only
--   retention deletes deliveries, `entregada` ones, and it now deletes
--   their attempts itself (deliveries/sql/purge_delivered.sql) where
--   this key's ON DELETE CASCADE did.
ALTER TABLE events DROP CONSTRAINT events_instance_id_fkey;
ALTER TABLE deliveries
    DROP CONSTRAINT deliveries_subscription_id_fkey,
    DROP CONSTRAINT deliveries_event_id_fkey;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_delivery_id_fkey;
