//! API errors and their `kind: Status` bodies, worded as kube-apiserver words them.

use serde_json::{Value, json};

/// An API error: the HTTP status, the Status `reason`, the message and optional details.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status code (also the Status `code`).
    pub code: u16,
    /// The Status `reason` (NotFound, Conflict, ...).
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// The Status `details` (name, group, kind, causes), if any.
    pub details: Option<Box<Value>>,
    /// Seconds for a `Retry-After` header (429/503 faults).
    pub retry_after: Option<u64>,
}

/// Names a resource in messages: `deployments.apps` or `configmaps` for the core group.
pub fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

fn details(group: &str, plural: &str, name: &str) -> Value {
    let mut d = json!({ "name": name, "kind": plural });
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

impl ApiError {
    /// A Failure Status with the given code, reason and message.
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// 404 for a named object: `deployments.apps "web" not found`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> ApiError {
        let mut e = Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        );
        e.details = Some(Box::new(details(group, plural, name)));
        e
    }

    /// 404 for a path that names no resource.
    pub fn path_not_found() -> ApiError {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 409 for a create of an existing name: `configmaps "x" already exists`.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> ApiError {
        let mut e = Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        );
        e.details = Some(Box::new(details(group, plural, name)));
        e
    }

    /// 409 for a write with a stale resourceVersion.
    pub fn conflict(group: &str, plural: &str, name: &str) -> ApiError {
        let mut e = Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified(group, plural)
            ),
        );
        e.details = Some(Box::new(details(group, plural, name)));
        e
    }

    /// 409 for server-side apply conflicts: the message and one FieldManagerConflict cause
    /// (message, field) per conflicting field, as k8s-merge words them.
    pub fn apply_conflict(
        group: &str,
        plural: &str,
        name: &str,
        message: String,
        causes: Vec<(String, String)>,
    ) -> ApiError {
        let mut e = Self::new(409, "Conflict", message);
        let mut d = details(group, plural, name);
        d["causes"] = Value::Array(
            causes
                .into_iter()
                .map(|(message, field)| {
                    json!({"reason": "FieldManagerConflict", "message": message, "field": field})
                })
                .collect(),
        );
        e.details = Some(Box::new(d));
        e
    }

    /// 422 Invalid with one FieldValueInvalid cause:
    /// `Deployment.apps "web" is invalid: spec.replicas: Invalid value: ...`.
    pub fn invalid(group: &str, kind: &str, name: &str, field: &str, reason: &str) -> ApiError {
        Self::invalid_with_causes(
            group,
            kind,
            name,
            &format!("{field}: {reason}"),
            vec![json!({ "reason": "FieldValueInvalid", "message": reason, "field": field })],
        )
    }

    /// 422 Invalid as `errors.NewInvalid` builds it: `Kind.group "name" is invalid: ERRORS`
    /// with the given Status causes.
    pub fn invalid_with_causes(
        group: &str,
        kind: &str,
        name: &str,
        errors: &str,
        causes: Vec<Value>,
    ) -> ApiError {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{qualified_kind} \"{name}\" is invalid: {errors}"),
        );
        let mut d = json!({ "name": name, "kind": kind, "causes": causes });
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        e.details = Some(Box::new(d));
        e
    }

    /// 400 BadRequest with the given message.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        Self::new(400, "BadRequest", message)
    }

    /// 401 for a missing, unknown or expired token.
    pub fn unauthorized() -> ApiError {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 with a message already worded by the caller.
    pub fn forbidden(
        message: impl Into<String>,
        group: &str,
        plural: &str,
        name: &str,
    ) -> ApiError {
        let mut e = Self::new(403, "Forbidden", message);
        e.details = Some(Box::new(details(group, plural, name)));
        e
    }

    /// The error a ready-made Status body describes (e.g. the RBAC authorizer's 403).
    pub fn from_status(status: &Value) -> ApiError {
        let code = status
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(500);
        let reason = match code {
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            _ => "InternalError",
        };
        let mut e = Self::new(
            code,
            reason,
            status
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        e.details = status.get("details").cloned().map(Box::new);
        e
    }

    /// 405 for a verb the resource does not serve.
    pub fn method_not_allowed() -> ApiError {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// 415 for a body or patch content type the endpoint does not accept.
    pub fn unsupported_media_type(content_type: &str, accepted: &[&str]) -> ApiError {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {} (got {content_type:?})",
                accepted.join(", ")
            ),
        )
    }

    /// 406 when no `Accept` clause names a form the endpoint serves.
    pub fn not_acceptable(accept: &str, served: &[&str]) -> ApiError {
        Self::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {} (got {accept:?})",
                served.join(", ")
            ),
        )
    }

    /// 413 for a body over the 3 MiB limit.
    pub fn too_large(limit: usize) -> ApiError {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 410 Expired for a watch or list from a compacted resourceVersion.
    pub fn gone(requested: u64, oldest: u64) -> ApiError {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 410 Expired for a list at an exact resourceVersion the history no longer reaches.
    pub fn list_too_old() -> ApiError {
        Self::new(
            410,
            "Expired",
            "The resourceVersion for the provided list is too old.",
        )
    }

    /// 504 Timeout for a read at a resourceVersion newer than the store's, as the watch cache
    /// answers once its wait for it runs out.
    pub fn too_large_resource_version(requested: u64, current: u64) -> ApiError {
        let mut e = Self::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        );
        e.details = Some(Box::new(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        })));
        e
    }

    /// An injected fault (500, 503 or 429), with Retry-After for 429 and 503.
    pub fn fault(code: u16) -> ApiError {
        let (reason, message) = match code {
            429 => (
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            ),
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            _ => (
                "InternalError",
                "an error on the server (\"injected fault\") has prevented the request from succeeding",
            ),
        };
        let mut e = Self::new(code, reason, message);
        if code == 429 || code == 503 {
            e.retry_after = Some(1);
        }
        e
    }

    /// 500 InternalError for a server-side failure that is not the client's fault.
    pub fn internal(message: impl Into<String>) -> ApiError {
        Self::new(500, "InternalError", message)
    }

    /// The `kind: Status` body for this error.
    pub fn to_status(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        });
        if let Some(d) = &self.details {
            v["details"] = (**d).clone();
        }
        v["code"] = json!(self.code);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_is_worded_like_the_apiserver() {
        let e = ApiError::not_found("apps", "deployments", "web").to_status();
        assert_eq!(e["message"], "deployments.apps \"web\" not found");
        assert_eq!(e["reason"], "NotFound");
        assert_eq!(e["code"], 404);
        let e = ApiError::not_found("", "configmaps", "x").to_status();
        assert_eq!(e["message"], "configmaps \"x\" not found");
    }

    #[test]
    fn apply_conflict_carries_causes() {
        let e = ApiError::apply_conflict(
            "",
            "configmaps",
            "c",
            "Apply failed with 1 conflict".into(),
            vec![("conflict with \"kubectl\"".into(), ".data.a".into())],
        )
        .to_status();
        assert_eq!(e["details"]["causes"][0]["reason"], "FieldManagerConflict");
        assert_eq!(e["details"]["causes"][0]["field"], ".data.a");
    }
}
