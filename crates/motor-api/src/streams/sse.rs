//! Server-Sent Events framing: one message per event (`id: <seq>`,
//! `event: <type>`, `data: <envelope>`), `: ping` comments as heartbeat,
//! and a last comment naming the cursor when the server ends the stream.

use std::convert::Infallible;

use axum::{
    body::{Body, Bytes},
    http::{header, StatusCode},
    response::{IntoResponse, Response},
};

use futures::StreamExt;

use super::follow::{Follower, Item};

/// Bytes of one chunk at most (a few events, or one large one): the HTTP
/// server queues a bounded number of chunks for a client that does not
/// read, so this bounds what a stalled client costs.
const CHUNK_BYTES: usize = 64 * 1024;

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
        Some((futures::stream::iter(frames(&item)), follower))
    })
    .flatten()
    .map(Ok::<_, Infallible>);
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(first.chain(rest)),
    )
        .into_response()
}

/// The bytes of one item, in chunks of about [`CHUNK_BYTES`] at most.
/// Envelopes are compact JSON (one line) and types hold no control
/// characters, so each field is one line.
pub fn frames(item: &Item) -> Vec<Bytes> {
    match item {
        Item::Events(events) => {
            let mut chunks = Vec::new();
            let mut out = String::new();
            for e in events {
                if !out.is_empty() && out.len() + e.envelope.len() > CHUNK_BYTES {
                    chunks.push(Bytes::from(std::mem::take(&mut out)));
                }
                out.push_str("id: ");
                out.push_str(&e.seq.to_string());
                out.push_str("\nevent: ");
                out.push_str(&e.event_type);
                out.push_str("\ndata: ");
                out.push_str(&e.envelope);
                out.push_str("\n\n");
            }
            if !out.is_empty() {
                chunks.push(Bytes::from(out));
            }
            chunks
        }
        Item::Heartbeat => vec![Bytes::from_static(b": ping\n\n")],
        Item::End { why, cursor } => vec![Bytes::from(format!(
            ": fin motivo={} cursor={cursor}\n\n",
            why.as_str()
        ))],
    }
}
