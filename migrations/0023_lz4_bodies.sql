-- Issue 38 (large bodies): an event's envelope and an outbox record's
-- payload are compressed with lz4 instead of pglz when TOASTed (over
-- ~2 KB). A 64 KB event is compressed twice on its way in (the ledger, the
-- outbox record) and decompressed at every read (the relay's round, each
-- delivery's claim, the ledger API); lz4 does both several times faster
-- than pglz for a somewhat larger result. Metadata only: values already
-- stored keep their pglz form and stay readable; new values use lz4.
-- Needs a server built with lz4 (Debian's and the official images are).
ALTER TABLE events ALTER COLUMN envelope SET COMPRESSION lz4;
ALTER TABLE outbox ALTER COLUMN payload SET COMPRESSION lz4;
