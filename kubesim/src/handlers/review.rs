//! SelfSubjectAccessReview (and SubjectAccessReview): answered by the same authorizer as
//! requests, never stored.

use serde_json::Value;

use crate::auth::authorize;
use crate::rbac::{access_review_status, review_request};
use crate::status::ApiError;

use super::Req;

/// POST of an access review: fills in `status` from the authorizer's decision.
pub fn create(req: &Req<'_>, mut review: Value) -> Result<(u16, Value), ApiError> {
    let info = &req.target.info;
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let request = review_request(&spec)
        .map_err(|e| ApiError::invalid(&info.group, &info.kind, "", "spec", &e.to_string()))?;
    let decision = authorize(req.state, &req.identity, &request);
    review["status"] = access_review_status(&decision);
    Ok((201, review))
}
