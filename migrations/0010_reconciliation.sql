-- Reconciliation (issue 15): a periodic job reports work that should be
-- moving and is not, and opens alerts of motivo 'reconciliacion' (closed
-- when healed). Expand only: nothing running needs these to be correct.

-- An alert about the whole installation (the outbox is behind) belongs to
-- no app and no subscription; at most one open per motivo.
ALTER TABLE alerts ALTER COLUMN app_id DROP NOT NULL;
CREATE UNIQUE INDEX alerts_one_open_global ON alerts (motivo)
    WHERE cerrada_en IS NULL AND subscription_id IS NULL;

-- The head each ordered lane of an activa subscription had at the last
-- reconciliation pass, and since when (desde): a lane whose head is the
-- same delivery for longer than the threshold has not moved. Rewritten by
-- every pass; a lane with no open delivery has no row.
CREATE TABLE lane_heads_seen (
    subscription_id uuid NOT NULL REFERENCES subscriptions (id),
    instance_id     uuid NOT NULL REFERENCES instances (id),
    lane            text NOT NULL,
    delivery_id     uuid NOT NULL,
    desde           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subscription_id, instance_id, lane)
);
