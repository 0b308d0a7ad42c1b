//! API errors: a status code and a message, answered as `{"error": MESSAGE}`. Every mapping of
//! a domain error to an HTTP status is here, in one place.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::clusters::registry::RegistryError;
use crate::clusters::resolve::ResolveError;
use crate::daemon::runner::{OperationError, StatusError};
use crate::reconcile::error::ErrorClass;
use crate::reconcile::promotion::PromoteError;
use crate::sources::repositories::RepositoryError;
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

/// The message of an [`ApiError`] answer, kept in the response's extensions so a route can
/// answer its errors in another shape (the cluster shell's proxy answers Kubernetes `Status`).
#[derive(Debug, Clone)]
pub struct ErrorMessage(pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message });
        let mut response = (self.status, Json(body)).into_response();
        response.extensions_mut().insert(ErrorMessage(self.message));
        response
    }
}

impl From<RegistryError> for ApiError {
    fn from(err: RegistryError) -> ApiError {
        match &err {
            RegistryError::Invalid(_) => ApiError::new(StatusCode::BAD_REQUEST, err.to_string()),
            RegistryError::Duplicate(_)
            | RegistryError::Declared { .. }
            | RegistryError::Clash { .. } => ApiError::new(StatusCode::CONFLICT, err.to_string()),
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
        match &err {
            StoreError::AuditChain(_) | StoreError::LastAdmin(_) | StoreError::Duplicate(_) => {
                ApiError::new(StatusCode::CONFLICT, err.to_string())
            }
            _ => ApiError::internal(&err),
        }
    }
}

impl From<StatusError> for ApiError {
    fn from(err: StatusError) -> ApiError {
        match err {
            StatusError::Store(e) => ApiError::from(e),
            server => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, server.to_string()),
        }
    }
}

impl From<OperationError> for ApiError {
    fn from(err: OperationError) -> ApiError {
        let status = match &err {
            OperationError::NotFound(_) | OperationError::Removed(_) => StatusCode::NOT_FOUND,
            OperationError::Task(_) | OperationError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
            OperationError::Stopped
            | OperationError::Elsewhere { .. }
            | OperationError::Status(_)
            | OperationError::Unrecorded { .. } => StatusCode::SERVICE_UNAVAILABLE,
            OperationError::NotRendered(_) | OperationError::Remote { .. } => StatusCode::CONFLICT,
            // The App names a cluster that is not (or no longer) registered: the App and the
            // registry disagree, and the message names the cluster.
            OperationError::Destination(
                ResolveError::UnknownCluster(_) | ResolveError::NoManagementCluster,
            ) => StatusCode::CONFLICT,
            OperationError::Destination(ResolveError::NamespaceNotAllowed { .. }) => {
                StatusCode::FORBIDDEN
            }
            OperationError::Destination(_) | OperationError::Unreachable { .. } => {
                StatusCode::BAD_GATEWAY
            }
            OperationError::Reconcile(e) => match e.class() {
                ErrorClass::Invalid => StatusCode::BAD_REQUEST,
                ErrorClass::Forbidden => StatusCode::FORBIDDEN,
                ErrorClass::Conflict => StatusCode::CONFLICT,
                ErrorClass::Cluster => StatusCode::BAD_GATEWAY,
            },
            OperationError::Promote(e) => match e {
                PromoteError::SourceNotReady { .. }
                | PromoteError::Soaking { .. }
                | PromoteError::NotUpstream { .. } => StatusCode::CONFLICT,
                PromoteError::Cluster { .. } => StatusCode::BAD_GATEWAY,
                PromoteError::Mixed { .. }
                | PromoteError::MixedRepository { .. }
                | PromoteError::Unresolved { .. }
                | PromoteError::NothingRunning(_)
                | PromoteError::Policy(_)
                | PromoteError::NotRendered { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            },
        };
        ApiError::new(status, err.to_string())
    }
}

impl From<RepositoryError> for ApiError {
    fn from(err: RepositoryError) -> ApiError {
        match &err {
            RepositoryError::Invalid { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, err.to_string())
            }
            RepositoryError::Duplicate(_) => ApiError::new(StatusCode::CONFLICT, err.to_string()),
            RepositoryError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, err.to_string()),
            RepositoryError::Seal(_) => {
                tracing::error!(error = %err, "sealing failed");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, err.to_string())
            }
            RepositoryError::Store(_) => ApiError::internal(&err),
            RepositoryError::Unreadable(_) => {
                tracing::error!(error = %err, "unsealing failed");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, err.to_string())
            }
        }
    }
}
