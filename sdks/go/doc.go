// Package motor is the Go client of Motor, the event-delivery engine:
// producers append events (one or a batch, with an Idempotency-Key),
// readers page an instance's ledger or follow its stream with automatic
// resume, and subscribers manage their subscriptions, deliveries and
// replays. Errors from the API are *APIError values carrying Motor's
// `code`, `message` and `campo`.
//
// Receivers of Motor's webhooks use the receiver subpackage: signature
// verification for every signing profile and a database/sql inbox.
//
// Commands (send, control, get, cancel) are not covered yet: Motor's
// commands API does not exist yet.
//
// The package depends on the standard library only.
package motor
