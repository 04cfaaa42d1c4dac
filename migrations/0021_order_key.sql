-- Ordering by a key finer than the instance (issue 33, item 5;
-- docs/CONTRACTS.md). Expand only: new columns with defaults; running code
-- that does not know them keeps working and sends what it sent before.

-- orden_clave on events: the producer's ordering key (a conversation),
--   1–200 characters; NULL when the event names none. Kept with the event
--   so a replay places it in its key's lane as the live fan-out did.
ALTER TABLE events ADD COLUMN orden_clave text;

-- orden_por_clave on subscriptions: an ordered subscription (`ordenado`)
--   whose lanes are split by the event's orden_clave — `orden: clave`.
--   The wire's `orden` reads both columns: NOT ordenado = `ninguno`,
--   ordenado AND orden_por_clave = `clave`, else `instancia`. (A boolean
--   beside `ordenado`, not a text that repeats it: code that only knows
--   `ordenado` keeps meaning what it meant.)
--   A delivery of an event with a key, for such a subscription, is in the
--   lane `<live or replay id>/<key>` (deliveries.lane, Lane in the
--   domain): every lane check compares the lane whole, as before.
ALTER TABLE subscriptions ADD COLUMN orden_por_clave boolean NOT NULL DEFAULT false;
