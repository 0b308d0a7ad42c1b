//! The JSON body extractor: malformed or mistyped bodies are a 400 naming the problem
//! (axum's own `Json` answers 415/422 with plain text).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A request body decoded from JSON.
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|err| {
            ApiError::new(err.status(), format!("request body: {}", err.body_text()))
        })?;
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|err| ApiError::new(StatusCode::BAD_REQUEST, format!("request body: {err}")))
    }
}
