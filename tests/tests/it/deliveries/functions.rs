//! The group commit of delivered attempts runs as one call of
//! `motor_record_delivered` (migration 0024), whose body holds the two
//! statements the plans test reads from their files
//! (`motor_store::deliveries::hot_statements`). A change to either file
//! that no migration brings into the function would leave the plans test
//! checking statements Motor no longer runs: this test fails first.

use motor_store::deliveries::hot_statements;

use crate::util::TestDb;

/// The body of function `name` as the database holds it.
async fn body(db: &TestDb, name: &str) -> String {
    sqlx::query_scalar("SELECT prosrc FROM pg_proc WHERE proname = $1")
        .bind(name)
        .fetch_one(&db.pool)
        .await
        .unwrap_or_else(|e| panic!("function {name}: {e}"))
}

#[tokio::test]
async fn the_record_functions_run_the_statements_the_plans_test_checks() {
    let db = TestDb::new().await;
    let statements = hot_statements();
    let text = |name: &str| {
        statements
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no hot statement {name}"))
            .sql
            .trim_end()
            .to_owned()
    };
    for (function, statement) in [
        ("motor_record_delivered", "record_delivered_many"),
        ("motor_next_after", "next_after_many"),
    ] {
        let body = body(&db, function).await;
        assert!(
            body.contains(&text(statement)),
            "{function} no longer runs {statement}.sql as the file has it: \
             a migration must replace the function with the file's text"
        );
    }
}
