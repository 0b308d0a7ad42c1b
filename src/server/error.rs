//! API errors: a status code and a message, answered as `{"error": MESSAGE}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::clusters::registry::RegistryError;
use crate::store::StoreError;

/// An error answered to an API client.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Message for the client (never secret material).
    pub message: String,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// 401 with `message`.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, message)
    }

    /// 500, logging the cause and answering a generic message.
    pub fn internal(cause: &dyn std::fmt::Display) -> ApiError {
        tracing::error!(error = %cause, "internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error; see the server log",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message });
        (self.status, Json(body)).into_response()
    }
}

impl From<RegistryError> for ApiError {
    fn from(err: RegistryError) -> ApiError {
        match &err {
            RegistryError::Invalid(_) => ApiError::new(StatusCode::BAD_REQUEST, err.to_string()),
            RegistryError::Duplicate(_) => ApiError::new(StatusCode::CONFLICT, err.to_string()),
            RegistryError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, err.to_string()),
            RegistryError::Seal(_) => {
                // Key trouble is an operator's to fix; the message names the keys, no secrets.
                tracing::error!(error = %err, "sealing failed");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, err.to_string())
            }
            RegistryError::Store(_) => ApiError::internal(&err),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> ApiError {
        ApiError::internal(&err)
    }
}
