//! Where Motor delivers. Each destination takes a signed request and answers
//! what happened in the domain's terms (a status, or a
//! [`TransportFailure`](motor_domain::delivery::TransportFailure)); the
//! delivery engine turns that into a decision.

pub mod webhook;
