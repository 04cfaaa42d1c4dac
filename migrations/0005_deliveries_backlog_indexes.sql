-- Deliveries: the sweeper and retention as bounded index scans, so their
-- cost does not grow with the backlog (issue 9). Expand only: two new
-- partial indexes; nothing existing changes, and no running code needs
-- them to be correct (only fast).
--
-- Neither adds work to a claim: a claim changes lease_until, parked_at and
-- actualizada_en, none of them indexed, so it stays a HOT update. The rows
-- that enter them were already written to other indexes by the same
-- statement (a fan-out insert; an update that changes proximo_intento or
-- estado, never HOT).

-- The sweeper's unordered subscriptions: per subscription, its open
-- deliveries oldest due first, so a pass reads the stale ones of each
-- subscription and stops at the batch size, whatever the backlog.
-- `deliveries_open_due` is one range over every subscription (a million
-- rows parked behind a suspended subscription sit in front of the ones
-- wanted), and with statistics the planner chose it anyway, filtering by
-- subscription. So this index's predicate is `proximo_intento IS NOT
-- NULL` — the same rows as `estado = 'pendiente'`, by the table's CHECK —
-- and the sweeper's query names no `estado`: only this index matches it.
CREATE INDEX deliveries_open_due_by_subscription
    ON deliveries (subscription_id, proximo_intento, id) WHERE proximo_intento IS NOT NULL;

-- Retention: delivered rows by delivery time, so a purge reads what it
-- deletes instead of scanning every pending and failed row to find none.
CREATE INDEX deliveries_delivered ON deliveries (entregada_en) WHERE estado = 'entregada';
