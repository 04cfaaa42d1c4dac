-- Deliveries: less work per row written (issue 9). Contract only: nothing
-- reads what this drops.
--
-- app_id and instance_id copy the subscription's app and the event's
-- instance, written from those rows by the statements that create
-- deliveries (fan-out, replays); the foreign keys to subscriptions and
-- events already say both exist (and apps and instances are never
-- deleted). Their own foreign keys checked it again for every row
-- inserted: two more lookups, each locking the referenced row.
ALTER TABLE deliveries
    DROP CONSTRAINT deliveries_app_id_fkey,
    DROP CONSTRAINT deliveries_instance_id_fkey;

-- Open deliveries by due time across every subscription: no statement
-- reads it since the sweeper probes deliveries_open_lane and
-- deliveries_open_due_by_subscription (0005), yet every new delivery and
-- every retry wrote an entry.
DROP INDEX deliveries_open_due;
