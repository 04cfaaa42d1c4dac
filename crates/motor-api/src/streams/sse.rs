//! Server-Sent Events framing: one message per event (`id: <seq>`,
//! `event: <type>`, `data: <envelope>`), `: ping` comments as heartbeat,
//! and a last comment naming the cursor when the server ends the stream.

use std::convert::Infallible;

use axum::{
    body::{Body, Bytes},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
};

use super::follow::{Follower, Item};

/// The response that streams `follower`.
pub fn response(follower: Follower) -> Response {
    // Opens with the start position as an `id:` with no data: a browser's
    // `EventSource` keeps it as its last event id (nothing is dispatched),
    // so even a stream that ends before its first event resumes in place.
    let opening = Bytes::from(format!(
        ": motor stream cursor={0}\nid: {0}\n\n",
        follower.position()
    ));
    let first = futures::stream::once(async move { Ok::<_, Infallible>(opening) });
    let rest = futures::stream::unfold(follower, |mut follower| async move {
        let item = follower.next().await?;
        Some((Ok::<_, Infallible>(frame(&item)), follower))
    });
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(futures::StreamExt::chain(first, rest)),
    )
        .into_response()
}

/// The bytes of one item. Envelopes are compact JSON (one line) and types
/// hold no control characters, so each field is one line.
pub fn frame(item: &Item) -> Bytes {
    match item {
        Item::Events(events) => {
            let size: usize = events
                .iter()
                .map(|e| e.envelope.len() + e.event_type.len() + 40)
                .sum();
            let mut out = String::with_capacity(size);
            for e in events {
                out.push_str("id: ");
                out.push_str(&e.seq.to_string());
                out.push_str("\nevent: ");
                out.push_str(&e.event_type);
                out.push_str("\ndata: ");
                out.push_str(&e.envelope);
                out.push_str("\n\n");
            }
            Bytes::from(out)
        }
        Item::Heartbeat => Bytes::from_static(b": ping\n\n"),
        Item::End { why, cursor } => {
            Bytes::from(format!(": fin motivo={} cursor={cursor}\n\n", why.as_str()))
        }
    }
}
