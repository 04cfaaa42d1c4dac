//! Broker destinations end to end.
mod clients;
