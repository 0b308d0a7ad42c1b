//! get and list.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::Req;
use crate::resources::ResourceInfo;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::ApiError;

/// The object as served at the requested version (see [`crate::versions`]).
pub fn present(info: &ResourceInfo, obj: &Value) -> Value {
    crate::versions::view(info, obj)
}

/// Parses `labelSelector` and `fieldSelector` (400 naming the bad part).
pub fn selectors(req: &Req<'_>) -> Result<(LabelSelector, Option<FieldSelector>), ApiError> {
    let info = &req.target.info;
    let labels = match req.query.get("labelSelector") {
        Some(s) => LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?,
        None => LabelSelector::default(),
    };
    let fields = req
        .query
        .get("fieldSelector")
        .filter(|s| !s.is_empty())
        .map(|s| FieldSelector::parse(s, &info.api_version(), &info.kind))
        .transpose()
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((labels, fields))
}

/// Whether an object passes both selectors.
pub fn matches(labels: &LabelSelector, fields: Option<&FieldSelector>, obj: &Value) -> bool {
    labels.matches_object(obj) && fields.is_none_or(|f| f.matches(obj))
}

/// The autoscaling/v1 Scale of a scalable object.
pub fn scale_of(info: &ResourceInfo, obj: &Value) -> Value {
    let paths = info
        .scale
        .clone()
        .unwrap_or_else(|| crate::resources::ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
        });
    let at = |path: &str| obj.pointer(&path.replace('.', "/")).cloned();
    let selector = paths.label_selector.as_deref().and_then(at).or_else(|| {
        obj.pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
            .map(|m| {
                Value::String(
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(","),
                )
            })
    });
    let meta = &obj["metadata"];
    let mut scale = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"],
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": at(&paths.spec_replicas).unwrap_or(json!(0))},
        "status": {"replicas": at(&paths.status_replicas).unwrap_or(json!(0))},
    });
    if info.namespaced {
        scale["metadata"]["namespace"] = meta["namespace"].clone();
    }
    if let Some(s) = selector {
        scale["status"]["selector"] = s;
    }
    scale
}

/// GET of one object (or its status or scale).
pub fn get(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let info = &req.target.info;
    let obj = req
        .state
        .store()
        .get(&info.store_key(), req.ns(), req.name())
        .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, req.name()))?;
    match req.target.subresource.as_deref() {
        Some("scale") => Ok((200, scale_of(info, &obj))),
        _ => Ok((200, present(info, &obj))),
    }
}

fn continue_token(namespace: &str, name: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{namespace}\u{0}{name}"))
}

fn parse_continue(token: &str) -> Result<(String, String), ApiError> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| bad())?;
    let text = String::from_utf8(raw).map_err(|_| bad())?;
    let (ns, name) = text.split_once('\u{0}').ok_or_else(bad)?;
    Ok((ns.to_string(), name.to_string()))
}

/// Which version of a collection a list asks for (`resourceVersion`, `resourceVersionMatch`).
enum ListVersion {
    /// The most recent (no resourceVersion, or "0": any, served from the latest).
    Latest,
    /// At least this resourceVersion (a resourceVersion without a match, or NotOlderThan).
    NotOlderThan(u64),
    /// Exactly this resourceVersion.
    Exact(u64),
}

/// Reads `resourceVersion` and `resourceVersionMatch` as kube-apiserver's ListOptions
/// validation does (422 naming the bad combination).
fn list_version(req: &Req<'_>, continued: bool) -> Result<ListVersion, ApiError> {
    let rv = req.query.get("resourceVersion").unwrap_or_default();
    let matching = req.query.get("resourceVersionMatch").unwrap_or_default();
    let invalid = |detail: &str| {
        ApiError::invalid_with_causes(
            "meta.k8s.io",
            "ListOptions",
            "",
            &format!("resourceVersionMatch: {detail}"),
            vec![
                json!({"reason": "FieldValueForbidden", "message": detail, "field": "resourceVersionMatch"}),
            ],
        )
    };
    if !matching.is_empty() {
        if !matches!(matching, "Exact" | "NotOlderThan") {
            return Err(ApiError::invalid_with_causes(
                "meta.k8s.io",
                "ListOptions",
                "",
                &format!(
                    "resourceVersionMatch: Unsupported value: \"{matching}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
                ),
                vec![
                    json!({"reason": "FieldValueNotSupported", "message": format!("Unsupported value: \"{matching}\": supported values: \"Exact\", \"NotOlderThan\", \"\""), "field": "resourceVersionMatch"}),
                ],
            ));
        }
        if rv.is_empty() {
            return Err(invalid(
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if continued {
            return Err(invalid(
                "Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if matching == "Exact" && rv == "0" {
            return Err(invalid(
                "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if rv.is_empty() || rv == "0" {
        return Ok(ListVersion::Latest);
    }
    let n = rv
        .parse::<u64>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
    Ok(if matching == "Exact" {
        ListVersion::Exact(n)
    } else {
        ListVersion::NotOlderThan(n)
    })
}

/// LIST with selectors, limit and continue.
pub fn list(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let info = &req.target.info;
    let (labels, fields) = selectors(req)?;
    let limit = match req.query.get("limit") {
        Some(l) => l.parse::<usize>().map_err(|_| {
            ApiError::bad_request(format!(
                "limit: Invalid value: {l:?}: must be a non-negative integer"
            ))
        })?,
        None => 0,
    };
    let after = req
        .query
        .get("continue")
        .filter(|c| !c.is_empty())
        .map(parse_continue)
        .transpose()?;
    let version = list_version(req, after.is_some())?;
    let store = req.state.store();
    let current = store.current_rv();
    let ns = req.target.namespace.as_deref();
    let (rv, objects): (u64, Vec<Arc<Value>>) = match version {
        ListVersion::Latest => (
            current,
            store.list(&info.store_key(), ns).cloned().collect(),
        ),
        ListVersion::NotOlderThan(n) | ListVersion::Exact(n) if n > current => {
            return Err(ApiError::too_large_resource_version(n, current));
        }
        ListVersion::NotOlderThan(_) => (
            current,
            store.list(&info.store_key(), ns).cloned().collect(),
        ),
        ListVersion::Exact(n) => (
            n,
            store
                .list_at(&info.store_key(), ns, n)
                .map_err(|_| ApiError::list_too_old())?,
        ),
    };
    let mut items = Vec::new();
    let mut more = 0usize;
    let mut last = None;
    for obj in &objects {
        let key = crate::store::ns_name(obj);
        if after.as_ref().is_some_and(|a| &key <= a) || !matches(&labels, fields.as_ref(), obj) {
            continue;
        }
        if limit > 0 && items.len() >= limit {
            more += 1;
            continue;
        }
        last = Some(key);
        items.push(present(info, obj));
    }
    drop(store);
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if more > 0
        && let Some((ns, name)) = last
    {
        metadata["continue"] = json!(continue_token(&ns, &name));
        metadata["remainingItemCount"] = json!(more);
    }
    Ok((
        200,
        json!({
            "kind": format!("{}List", info.kind),
            "apiVersion": info.api_version(),
            "metadata": metadata,
            "items": items,
        }),
    ))
}
