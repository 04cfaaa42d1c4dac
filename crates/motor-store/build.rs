// `sqlx::migrate!` embeds `migrations/` at compile time, and cargo cannot
// see that: without this, a new migration is missing from an incremental
// build (and from the tests' databases) until motor-store is rebuilt for
// another reason.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
