//! SelfSubjectAccessReview, SubjectAccessReview and SelfSubjectRulesReview: answered by the
//! same authorizer as requests; SelfSubjectReview (`kubectl auth whoami`) and TokenReview by
//! the authenticator. Never stored.

use serde_json::{Value, json};

use crate::auth::authorize;
use crate::rbac::{access_review_status, review_request};
use crate::status::ApiError;

use super::Req;

/// POST of an access review: fills in `status` from the authorizer's decision (a rules
/// review: every rule the caller has in `spec.namespace`).
pub fn create(req: &Req<'_>, mut review: Value) -> Result<(u16, Value), ApiError> {
    let info = &req.target.info;
    match info.kind.as_str() {
        "SelfSubjectReview" => {
            review["status"] = json!({"userInfo": user_info(&req.identity.user())});
            return Ok((201, review));
        }
        "TokenReview" => {
            let token = review
                .pointer("/spec/token")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let header = format!("Bearer {token}");
            review["status"] = match crate::auth::authenticate(req.state, Some(&header)) {
                Ok(identity) => json!({"authenticated": true,
                    "user": user_info(&identity.user()),
                    "audiences": [crate::sa_tokens::ISSUER]}),
                Err(_) => json!({"user": {}, "error": "invalid bearer token"}),
            };
            return Ok((201, review));
        }
        _ => {}
    }
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

/// A user as `status.userInfo` of a SelfSubjectReview or `status.user` of a TokenReview
/// shows it.
fn user_info(user: &crate::rbac::UserInfo) -> Value {
    json!({"username": user.name, "groups": user.groups})
}
