//! The OpenAPI schemas of the domain types deliveries answer with (the
//! domain crate knows no OpenAPI).

use serde::Serialize;
use utoipa::ToSchema;

/// The state of one (event, subscription) delivery.
#[derive(Serialize, ToSchema)]
#[schema(as = DeliveryState)]
pub enum DeliveryStateSchema {
    #[serde(rename = "pendiente")]
    Pending,
    #[serde(rename = "entregada")]
    Delivered,
    #[serde(rename = "fallida")]
    Failed,
}
