//! SelfSubjectAccessReviews: the request a review's `spec` asks about, and the `status` the
//! authorizer's decision answers it with.

use serde_json::{Value, json};
use thiserror::Error;

use super::request::{Decision, Request, ResourceAttributes};

/// Why a SelfSubjectAccessReview could not be turned into a [`Request`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReviewError {
    /// Neither or both of resourceAttributes and nonResourceAttributes are given.
    #[error(
        "spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified"
    )]
    Attributes,
    /// A field has the wrong JSON type.
    #[error("spec.{0}: must be a string")]
    NotAString(String),
}

/// The `status` of a SelfSubjectAccessReview (or SubjectAccessReview) answered by the
/// authorizer: `{"allowed": true, "reason": "RBAC: allowed by …"}`, or `{"allowed": false}`
/// with the reason only when there is one, as kube-apiserver serializes it.
pub fn access_review_status(decision: &Decision) -> Value {
    let mut status = serde_json::Map::new();
    status.insert("allowed".into(), json!(decision.allowed()));
    if !decision.reason().is_empty() {
        status.insert("reason".into(), json!(decision.reason()));
    }
    Value::Object(status)
}

/// Reads the request a SelfSubjectAccessReview asks about from its `spec`
/// (`resourceAttributes` {namespace, verb, group, version, resource, subresource, name} or
/// `nonResourceAttributes` {path, verb}).
pub fn review_request(spec: &Value) -> Result<Request, ReviewError> {
    let field = |object: &Value, prefix: &str, key: &str| -> Result<String, ReviewError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(_) => Err(ReviewError::NotAString(format!("{prefix}.{key}"))),
        }
    };
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(r), None) => {
            let p = "resourceAttributes";
            Ok(Request::Resource(ResourceAttributes {
                verb: field(r, p, "verb")?,
                api_group: field(r, p, "group")?,
                api_version: field(r, p, "version")?,
                resource: field(r, p, "resource")?,
                subresource: field(r, p, "subresource")?,
                namespace: field(r, p, "namespace")?,
                name: field(r, p, "name")?,
            }))
        }
        (None, Some(n)) => {
            let p = "nonResourceAttributes";
            Ok(Request::NonResource {
                verb: field(n, p, "verb")?,
                path: field(n, p, "path")?,
            })
        }
        _ => Err(ReviewError::Attributes),
    }
}
