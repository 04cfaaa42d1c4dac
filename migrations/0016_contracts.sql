-- Contracts (issue 33, docs/CONTRACTS.md). Expand only: new columns with
-- defaults; running code that does not know them keeps working and sends
-- what it sent before (every existing row is `motor`).

-- contrato on apps: the contract its new subscriptions take when they name
--   none. 'motor' = the WhatsApp product's contract, what Motor did before.
ALTER TABLE apps ADD COLUMN contrato text NOT NULL DEFAULT 'motor'
    CHECK (contrato IN ('motor', 'visito', 'asixto', 'standard-webhooks'));

-- contrato on subscriptions: the contract its deliveries follow (envelope,
--   headers, signature, attempt timeout, retry ladder, replay identity).
--   Resolved when the subscription is created (its own, or its app's), so
--   changing an app's contract later changes no existing subscription.
ALTER TABLE subscriptions ADD COLUMN contrato text NOT NULL DEFAULT 'motor'
    CHECK (contrato IN ('motor', 'visito', 'asixto', 'standard-webhooks'));

-- escalera on deliveries: the retry ladder (`motor@1`, `visito@1`,
--   `asixto@1`) the delivery started with, written with its first failed
--   attempt (the first time a ladder applies) and never changed after: a
--   delivery keeps its ladder when its subscription changes contract. NULL
--   until then. No CHECK: a later build adds `name@2` beside `name@1`.
ALTER TABLE deliveries ADD COLUMN escalera text;
