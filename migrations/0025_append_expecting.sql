-- The intake's append in one round trip (issue 38, the low-rate cost): a
-- batch of producer requests was four round trips, `BEGIN`, the
-- instances' lock (to read each one's generation and last_seq), the
-- append statement and `COMMIT`, each a wake-up of a backend and of
-- Motor. A process that appended to an instance last knows its generation
-- and last_seq already (ledger::Appender), numbers the batch from them and
-- sends the append statement alone, outside a transaction block: the
-- statement locks the instances itself and stands only if nobody wrote to
-- them since (deliveries/sql/append.sql, its `expected`). When somebody
-- did, it raises this function's error and nothing is written; the
-- process then appends the usual way and leaves that instance to it for a
-- while.
--
-- A function because a statement cannot raise an error of its own; the
-- SQLSTATE is Motor's (class MT), not one of Postgres's.
CREATE FUNCTION motor_append_stale() RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $motor$
BEGIN
    RAISE EXCEPTION 'an instance of this append was written to since it was numbered'
        USING ERRCODE = 'MTA01';
END
$motor$;
