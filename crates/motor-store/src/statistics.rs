//! Fresh planner statistics for the small tables every hot statement joins
//! by key: `apps`, `instances` and `subscriptions`.
//!
//! A connection keeps the generic plan it made of a prepared statement
//! until a table the plan reads changes shape (DDL) or is analysed. Planned
//! while `subscriptions` held a handful of rows (never analysed: the
//! planner takes its size from its file, ten pages at the least), the
//! append's fan-out hashed every subscription against each new event, and
//! the claim read every subscription to find one; kept after 2,000 tenants
//! subscribed, that read 10,013 rows for each event of a batch (550,605 a
//! call of 55) and halved the rate Motor held (shapes bench, `tenants`
//! after the other phases). Autovacuum analyses a table once a tenth of it
//! changed, about a minute later; where it is off, or before it comes
//! round, nothing would. So the sweeper analyses these tables once their
//! number of rows moved by that much (its pass calls [`analyze_grown`]),
//! and the `ANALYZE` makes every connection plan those statements again
//! with the table's real size.
//!
//! Rows, not changes: every event updates its instance's `last_seq`, so
//! counted by changes (autovacuum's own measure) `instances` was analysed
//! at every pass under load (every 2 s at 1,000 events a second over
//! 10,000 instances, every second at 200/s over 100), and each `ANALYZE`
//! made every connection plan its hot statements again. An update changes
//! no plan these statements can have; a table that grew or shrank does.
//! The large tables (`deliveries`, `events`) are autovacuum's: their hot
//! statements keep bounded plans without statistics (see
//! `deliveries::BY_KEY_SETUP`).

use sqlx::PgConnection;

use crate::Result;

/// The tables [`analyze_grown`] keeps analysed.
pub const TABLES: [&str; 3] = ["apps", "instances", "subscriptions"];

/// Analyses each of [`TABLES`] in the connection's schema whose number of
/// rows moved away from what its last `ANALYZE` (or `VACUUM`, its own or
/// autovacuum's) found by more than autovacuum's default threshold: 50 rows
/// and a tenth of the rows it had then. Updates count for nothing. Returns
/// the tables it analysed, by name. The live rows come from the statistics
/// collector (a crash resets them; the next `ANALYZE` sets them again). A
/// table the connection's user may not analyse (it neither owns it nor is
/// a superuser) is left to autovacuum: `ANALYZE` would skip it with a
/// warning at every pass.
pub async fn analyze_grown(conn: &mut PgConnection) -> Result<Vec<String>> {
    let grown: Vec<String> = sqlx::query_scalar(
        "SELECT t.relname::text
         FROM pg_stat_user_tables t JOIN pg_class c ON c.oid = t.relid
         WHERE t.schemaname = current_schema() AND t.relname = ANY($1)
           AND abs(t.n_live_tup - greatest(c.reltuples, 0))
               > 50 + 0.1 * greatest(c.reltuples, 0)
           AND pg_has_role(c.relowner, 'USAGE')
         ORDER BY t.relname",
    )
    .bind(&TABLES[..])
    .fetch_all(&mut *conn)
    .await?;
    for table in &grown {
        // A name of TABLES, as the query above returned it.
        sqlx::query(&format!("ANALYZE {table}"))
            .execute(&mut *conn)
            .await?;
    }
    Ok(grown)
}
