//! SelfSubjectAccessReview, SubjectAccessReview and SelfSubjectRulesReview: answered by the
//! same authorizer as requests, never stored.

use serde_json::Value;

use crate::auth::authorize;
use crate::rbac::{access_review_status, review_request};
use crate::status::ApiError;

use super::Req;

/// POST of an access review: fills in `status` from the authorizer's decision (a rules
/// review: every rule the caller has in `spec.namespace`).
pub fn create(req: &Req<'_>, mut review: Value) -> Result<(u16, Value), ApiError> {
    let info = &req.target.info;
    if info.kind == "SelfSubjectRulesReview" {
        let namespace = review
            .pointer("/spec/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        review["status"] = crate::auth::rules_review(req.state, &req.identity, &namespace);
        return Ok((201, review));
    }
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let request = review_request(&spec)
        .map_err(|e| ApiError::invalid(&info.group, &info.kind, "", "spec", &e.to_string()))?;
    let decision = authorize(req.state, &req.identity, &request);
    review["status"] = access_review_status(&decision);
    Ok((201, review))
}
