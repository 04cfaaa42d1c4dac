-- Signing profiles (issue 13): each subscription signs its deliveries under
-- one profile, its `firma`. Existing subscriptions keep what they have
-- always sent (mw-v1). Additive only: nothing existing changes.
--
-- mw-v1:             X-MW-Timestamp, X-MW-Key-Id, X-MW-Signature: v1=<hex>
-- t-v1:              X-MW-Signature: t=<unix>,v1=<hex>[,v1=<hex>]
-- standard-webhooks: webhook-id, webhook-timestamp, webhook-signature
ALTER TABLE subscriptions
    ADD COLUMN firma text NOT NULL DEFAULT 'mw-v1'
    CONSTRAINT subscriptions_firma_check CHECK (firma IN ('mw-v1', 't-v1', 'standard-webhooks'));
