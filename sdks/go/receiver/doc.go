// Package receiver is the receiving side of Motor's webhooks: it verifies
// each request's signature from the raw body and headers, hands back the
// parsed envelope, and applies each event once through a database/sql
// inbox.
//
// Verification mirrors Motor's own receiver crate (crates/motor-receiver):
// every signing profile Motor sends (mw-v1, t-v1, standard-webhooks), and
// the Visito and Asixto contracts' `t=…,v1=…` headers; HMAC-SHA256
// compared in constant time; every signature of a rotation tried, any
// match accepts; a symmetric ±300 s window whose failure is a distinct
// stale error to answer 408 (Motor retries) where every other failure
// answers 401 (Motor suspends the subscription); a repeated signature
// header refused, never joined.
package receiver
