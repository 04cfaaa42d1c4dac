-- Environments (issue 33 item 4, docs/CONTRACTS.md): Asixto's `live` and
-- `test`. Expand only: new columns with constant defaults (no table
-- rewrite); running code that does not know them stores and matches
-- everything as `live`, which is what it did before.

-- entorno on events: the environment the producer named (default live).
--   Kept in the ledger beside the envelope; the envelope's bytes do not
--   change (Motor's envelope has no such field; Asixto's body carries it
--   as `environment`).
ALTER TABLE events ADD COLUMN entorno text NOT NULL DEFAULT 'live'
    CHECK (entorno IN ('live', 'test'));

-- entorno on subscriptions: the environment whose events it receives,
--   fixed at creation. The fan-out and replays match it with the event's,
--   so a test event never reaches a live subscription or the reverse.
ALTER TABLE subscriptions ADD COLUMN entorno text NOT NULL DEFAULT 'live'
    CHECK (entorno IN ('live', 'test'));
