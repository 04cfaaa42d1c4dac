//! WebSocket framing: one text frame per envelope, a ping every heartbeat,
//! and a close frame whose reason names the cursor when the server ends
//! the stream (1001 at shutdown, 1013 for a slow reader, 1011 on error).
//! The client's close is answered and the stream ends.

use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures::SinkExt;

use super::follow::{Follower, Item, Why};

pub async fn serve(mut socket: WebSocket, mut follower: Follower) {
    loop {
        let item = tokio::select! {
            item = follower.next() => item,
            received = socket.recv() => match received {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => continue,
            },
        };
        let Some(item) = item else { break };
        if send(&mut socket, item).await.is_err() {
            return;
        }
    }
    // Answers a client's close (or sends ours) and flushes it.
    let _ = socket.close().await;
}

async fn send(socket: &mut WebSocket, item: Item) -> Result<(), axum::Error> {
    match item {
        Item::Events(events) => {
            for event in &events {
                socket
                    .feed(Message::Text(event.envelope.as_str().into()))
                    .await?;
            }
            socket.flush().await
        }
        Item::Heartbeat => socket.send(Message::Ping(Default::default())).await,
        Item::End { why, cursor } => {
            let code = match why {
                Why::Shutdown => 1001,
                Why::Slow => 1013,
                Why::Failed => 1011,
            };
            socket
                .send(Message::Close(Some(CloseFrame {
                    code,
                    reason: format!("motivo={} cursor={cursor}", why.as_str()).into(),
                })))
                .await
        }
    }
}
