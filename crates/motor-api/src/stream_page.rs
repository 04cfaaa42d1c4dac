//! `GET /console/stream`: an example page that follows one instance live
//! in a browser — plain HTML and `EventSource`, no framework — through a
//! stream token (`streams::tokens`). It holds no data of its own and needs
//! no console session: what it shows comes from the API with the key the
//! visitor types, which never leaves the page but to this Motor. Static
//! (no value is interpolated into it), so there is nothing to escape.

use axum::{response::Html, routing::get, Router};

use crate::AppState;

const PAGE: &str = include_str!("stream_page.html");

async fn stream_page() -> Html<&'static str> {
    Html(PAGE)
}

pub fn router() -> Router<AppState> {
    Router::new().route("/console/stream", get(stream_page))
}
