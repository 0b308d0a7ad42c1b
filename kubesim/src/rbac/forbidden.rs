//! The 403 Forbidden message and Status body, worded as kube-apiserver words them
//! (`apiserver/pkg/endpoints/handlers/responsewriters` and `apimachinery` `NewForbidden`).

use serde_json::{Value, json};

use super::request::{Request, UserInfo};

/// The message of a 403 Forbidden Status, exactly as kube-apiserver words it, e.g.
/// `deployments.apps "web" is forbidden: User "u" cannot get resource "deployments" in API
/// group "apps" in the namespace "ns"`; without a name (list, watch, create)
/// `pods is forbidden: …`; `… at the cluster scope` without a namespace;
/// `forbidden: User "u" cannot get path "/x"` for non-resource requests. A non-empty
/// `reason` (see [`Decision::Deny`](super::Decision::Deny)) is appended after `: `.
pub fn forbidden_message(user: &UserInfo, request: &Request, reason: &str) -> String {
    let detail = match request {
        Request::NonResource { verb, path } => {
            format!("User {:?} cannot {verb} path {path:?}", user.name)
        }
        Request::Resource(a) => {
            let resource = if a.subresource.is_empty() {
                a.resource.clone()
            } else {
                format!("{}/{}", a.resource, a.subresource)
            };
            let scope = if a.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {:?}", a.namespace)
            };
            format!(
                "User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
                user.name, a.verb, a.api_group
            )
        }
    };
    let detail = if reason.is_empty() {
        detail
    } else {
        format!("{detail}: {reason}")
    };
    match request {
        Request::NonResource { .. } => format!("forbidden: {detail}"),
        Request::Resource(a) => {
            let qualified = if a.api_group.is_empty() {
                a.resource.clone()
            } else {
                format!("{}.{}", a.resource, a.api_group)
            };
            if a.name.is_empty() {
                format!("{qualified} is forbidden: {detail}")
            } else {
                format!("{qualified} {:?} is forbidden: {detail}", a.name)
            }
        }
    }
}

/// The whole 403 Status body kube-apiserver sends for a denied request (`NewForbidden`):
/// reason Forbidden, code 403, details with the group, the resource as `kind` and the name.
pub fn forbidden_status(user: &UserInfo, request: &Request, reason: &str) -> Value {
    let mut details = serde_json::Map::new();
    if let Request::Resource(a) = request {
        if !a.name.is_empty() {
            details.insert("name".into(), json!(a.name));
        }
        if !a.api_group.is_empty() {
            details.insert("group".into(), json!(a.api_group));
        }
        if !a.resource.is_empty() {
            details.insert("kind".into(), json!(a.resource));
        }
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": forbidden_message(user, request, reason),
        "reason": "Forbidden",
        "details": details,
        "code": 403
    })
}
