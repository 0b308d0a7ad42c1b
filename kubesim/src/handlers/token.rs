//! TokenRequest: `POST /api/v1/namespaces/NS/serviceaccounts/NAME/token` (`kubectl create
//! token`) issues a bound ServiceAccount token (see [`crate::sa_tokens`]), validated as
//! kube-apiserver's TokenRequest REST storage validates the request.

use serde_json::{Value, json};

use super::Req;
use super::body::parse_object;
use crate::sa_tokens;
use crate::status::ApiError;

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
/// The default and bounds of `spec.expirationSeconds`.
const DEFAULT_SECONDS: i64 = 3600;
const MIN_SECONDS: i64 = 600;
const MAX_SECONDS: i64 = 1 << 32;

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The bound object's (kind, name, uid), checked against the store: Pods and Secrets only,
/// existing, with the uid the reference names.
fn bound_object(req: &Req<'_>, spec: &Value) -> Result<Option<(String, String, String)>, ApiError> {
    let Some(reference) = spec.get("boundObjectRef").filter(|r| !r.is_null()) else {
        return Ok(None);
    };
    let text = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or_default();
    let (kind, name) = (text("kind"), text("name"));
    let plural = match kind {
        "Pod" => "pods",
        "Secret" => "secrets",
        other => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token for object of kind {other:?}"
            )));
        }
    };
    let store = req.state.store();
    let object = store
        .get(&format!("/{plural}"), req.ns(), name)
        .ok_or_else(|| ApiError::not_found("", plural, name))?;
    let uid = object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let wanted = text("uid");
    if !wanted.is_empty() && wanted != uid {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(Some((kind.to_string(), name.to_string(), uid)))
}

/// POST of a TokenRequest: 201 with `status.token` and `status.expirationTimestamp`.
pub fn create(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let body = parse_object(req)?;
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && kind != KIND
    {
        return Err(ApiError::bad_request(format!(
            "the body of the request was of kind {kind:?}, expected {KIND:?}"
        )));
    }
    let name = req.name();
    let account = req
        .state
        .store()
        .get("/serviceaccounts", req.ns(), name)
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let seconds = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "TokenRequest.spec.expirationSeconds: {v} is not an integer"
            ))
        })?,
    };
    let limit = if seconds < MIN_SECONDS {
        Some("may not specify a duration less than 10 minutes")
    } else if seconds > MAX_SECONDS {
        Some("may not specify a duration larger than 2^32 seconds")
    } else {
        None
    };
    if let Some(reason) = limit {
        return Err(ApiError::invalid(
            GROUP,
            KIND,
            name,
            "spec.expirationSeconds",
            &format!("Invalid value: {seconds}: {reason}"),
        ));
    }
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let bound = bound_object(req, &spec)?;
    let uid = account
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let now = now_secs();
    let (token, exp) = sa_tokens::issue(
        &req.state.sa_key,
        &sa_tokens::Request {
            namespace: req.ns(),
            name,
            uid,
            audiences: &audiences,
            now,
            expiration_seconds: u64::try_from(seconds).unwrap_or(0),
            bound: bound
                .as_ref()
                .map(|(k, n, u)| (k.as_str(), n.as_str(), u.as_str())),
        },
    );
    let shown_audiences = if audiences.is_empty() {
        vec![sa_tokens::ISSUER.to_string()]
    } else {
        audiences
    };
    let mut out_spec = json!({"audiences": shown_audiences, "expirationSeconds": seconds});
    if let Some(reference) = spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        out_spec["boundObjectRef"] = reference.clone();
    }
    Ok((
        201,
        json!({
            "kind": KIND,
            "apiVersion": format!("{GROUP}/v1"),
            "metadata": {"name": name, "namespace": req.ns(),
                "creationTimestamp": crate::util::format_rfc3339(now)},
            "spec": out_spec,
            "status": {"token": token, "expirationTimestamp": crate::util::format_rfc3339(exp)},
        }),
    ))
}
