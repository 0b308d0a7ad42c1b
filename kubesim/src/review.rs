//! SelfSubjectAccessReview (and SubjectAccessReview): answered from the same authorizer as
//! requests, never stored.

use serde_json::{Value, json};

use crate::auth::{Attributes, allowed};
use crate::handlers::Req;
use crate::status::ApiError;

/// POST of an access review: fills in `status.allowed`.
pub fn create(req: &Req<'_>, mut review: Value) -> Result<(u16, Value), ApiError> {
    let ra = review
        .pointer("/spec/resourceAttributes")
        .cloned()
        .unwrap_or(Value::Null);
    let s = |k: &str| {
        ra.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (verb, group, resource, sub, ns, name) = (
        s("verb"),
        s("group"),
        s("resource"),
        s("subresource"),
        s("namespace"),
        s("name"),
    );
    let attrs = Attributes {
        verb: &verb,
        group: &group,
        resource: &resource,
        subresource: (!sub.is_empty()).then_some(sub.as_str()),
        namespace: (!ns.is_empty()).then_some(ns.as_str()),
        name: (!name.is_empty()).then_some(name.as_str()),
    };
    let ok = ra.is_object() && allowed(&req.identity, &attrs);
    review["status"] = if ok {
        json!({"allowed": true, "reason": "kubesim: allowed"})
    } else {
        json!({"allowed": false})
    };
    Ok((201, review))
}
