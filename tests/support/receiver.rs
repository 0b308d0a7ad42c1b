//! A local HTTP receiver of notifications: records every POST (path, signature header, body).

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use parking_lot::Mutex;
use serde_json::Value;
use wardn::notify::SIGNATURE_HEADER;

/// What the receiver got: `(path, signature header, body)`.
pub type Received = Arc<Mutex<Vec<(String, Option<String>, Value)>>>;

/// A receiver on 127.0.0.1 that records every POST and answers 500 to the first one on
/// `/flaky`.
pub async fn receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let failed_once = Arc::new(Mutex::new(false));
    let record = |path: &'static str| {
        let received = Arc::clone(&received);
        let failed_once = Arc::clone(&failed_once);
        post(move |headers: HeaderMap, body: String| async move {
            if path == "/flaky" && !std::mem::replace(&mut *failed_once.lock(), true) {
                return StatusCode::INTERNAL_SERVER_ERROR;
            }
            let signature = headers
                .get(SIGNATURE_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
            received.lock().push((path.to_string(), signature, value));
            StatusCode::OK
        })
    };
    let app = Router::new()
        .route("/flaky", record("/flaky"))
        .route("/slack", record("/slack"))
        .route("/app", record("/app"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, received)
}
