//! The small part of Kubernetes' protobuf encoding kubesim reads: the `k8s\0` envelope
//! (runtime.Unknown) and the bodies kubectl's typed clients send as protobuf for the common
//! imperative commands: SelfSubjectAccessReview (`kubectl auth can-i`), SelfSubjectRulesReview
//! (`kubectl auth can-i --list`), SelfSubjectReview (`kubectl auth whoami`), TokenRequest
//! (`kubectl create token`), TokenReview, Namespace, ConfigMap,
//! Secret and ServiceAccount (`kubectl create namespace|configmap|secret|serviceaccount`);
//! `admin` decodes Roles, ClusterRoles, their bindings, PriorityClasses and ResourceQuotas
//! (`kubectl create role|clusterrole|rolebinding|clusterrolebinding|priorityclass|quota`),
//! `workloads` Pods, Deployments, Jobs, CronJobs, Services, Ingresses, PDBs and v1 HPAs
//! (`kubectl run`, `kubectl create deployment|job|cronjob|service|ingress|pdb`, `kubectl
//! autoscale`). Other kinds are refused with 415.

mod admin;
mod workloads;

use serde_json::{Map, Value, json};

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// One protobuf field value.
pub(super) enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos).ok_or("truncated varint")?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint too long".to_string())
}

/// The fields of one message, in order.
pub(super) fn fields(buf: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        let (field, wire_type) = (key >> 3, key & 7);
        let value = match wire_type {
            0 => Wire::Varint(varint(buf, &mut pos)?),
            1 | 5 => {
                pos += if wire_type == 1 { 8 } else { 4 };
                if pos > buf.len() {
                    return Err("truncated fixed-width field".to_string());
                }
                Wire::Varint(0)
            }
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).map_err(|e| e.to_string())?;
                let end = pos
                    .checked_add(len)
                    .filter(|e| *e <= buf.len())
                    .ok_or("truncated length-delimited field")?;
                let bytes = &buf[pos..end];
                pos = end;
                Wire::Bytes(bytes)
            }
            other => return Err(format!("unsupported wire type {other}")),
        };
        out.push((field, value));
    }
    Ok(out)
}

pub(super) fn message(buf: &[u8], field: u64) -> Result<Option<&[u8]>, String> {
    Ok(fields(buf)?
        .into_iter()
        .find_map(|(f, w)| match (f == field, w) {
            (true, Wire::Bytes(b)) => Some(b),
            _ => None,
        }))
}

/// The set (non-empty) string fields of a message; Go's encoder writes unset ones as "".
pub(super) fn set_strings(buf: &[u8], names: &[(u64, &str)]) -> Result<Value, String> {
    let mut out = strings(buf, names)?;
    if let Some(m) = out.as_object_mut() {
        m.retain(|_, v| v.as_str() != Some(""));
    }
    Ok(out)
}

pub(super) fn strings(buf: &[u8], names: &[(u64, &str)]) -> Result<Value, String> {
    let mut out = Map::new();
    for (field, wire) in fields(buf)? {
        if let (Some((_, name)), Wire::Bytes(b)) = (names.iter().find(|(f, _)| *f == field), wire) {
            let text = std::str::from_utf8(b).map_err(|e| e.to_string())?;
            out.insert((*name).to_string(), json!(text));
        }
    }
    Ok(Value::Object(out))
}

/// Decodes an enveloped protobuf body: (apiVersion, kind, raw message bytes).
fn envelope(body: &[u8]) -> Result<(String, String, &[u8]), String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf envelope")?;
    let type_meta = message(rest, 1)?.unwrap_or_default();
    let tm = strings(type_meta, &[(1, "apiVersion"), (2, "kind")])?;
    let raw = message(rest, 2)?.unwrap_or_default();
    let text = |k: &str| {
        tm.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Ok((text("apiVersion"), text("kind"), raw))
}

/// Why a protobuf body could not be read.
#[derive(Debug)]
pub enum DecodeError {
    /// The bytes are not valid protobuf of the expected shape.
    Malformed(String),
    /// The kind is one kubesim does not decode from protobuf.
    Unsupported(String),
}

impl From<String> for DecodeError {
    fn from(e: String) -> Self {
        DecodeError::Malformed(e)
    }
}

pub(super) fn utf8(b: &[u8]) -> Result<String, String> {
    std::str::from_utf8(b)
        .map(String::from)
        .map_err(|e| e.to_string())
}

/// A `map<string, string|bytes>` field: every entry message with key 1 and value 2.
pub(super) fn map_field(
    buf: &[u8],
    field: u64,
    bytes_values: bool,
) -> Result<Option<Value>, String> {
    let mut out = Map::new();
    let mut seen = false;
    for (f, wire) in fields(buf)? {
        if let (true, Wire::Bytes(entry)) = (f == field, wire) {
            seen = true;
            let mut key = String::new();
            let mut value = Value::String(String::new());
            for (ef, ew) in fields(entry)? {
                match (ef, ew) {
                    (1, Wire::Bytes(k)) => key = utf8(k)?,
                    (2, Wire::Bytes(v)) if bytes_values => {
                        use base64::Engine;
                        value = json!(base64::engine::general_purpose::STANDARD.encode(v));
                    }
                    (2, Wire::Bytes(v)) => value = json!(utf8(v)?),
                    _ => {}
                }
            }
            out.insert(key, value);
        }
    }
    Ok(seen.then_some(Value::Object(out)))
}

pub(super) fn repeated_strings(buf: &[u8], field: u64) -> Result<Option<Value>, String> {
    let mut out = Vec::new();
    for (f, wire) in fields(buf)? {
        if let (true, Wire::Bytes(b)) = (f == field, wire) {
            out.push(json!(utf8(b)?));
        }
    }
    Ok((!out.is_empty()).then_some(Value::Array(out)))
}

pub(super) fn object_meta(buf: &[u8]) -> Result<Value, String> {
    let mut meta = strings(
        buf,
        &[
            (1, "name"),
            (2, "generateName"),
            (3, "namespace"),
            (6, "resourceVersion"),
        ],
    )?;
    for (field, name) in [(11, "labels"), (12, "annotations")] {
        if let Some(map) = map_field(buf, field, false)? {
            meta[name] = map;
        }
    }
    if let Some(finalizers) = repeated_strings(buf, 14)? {
        meta["finalizers"] = finalizers;
    }
    if let Some(m) = meta.as_object_mut() {
        m.retain(|_, v| v.as_str() != Some(""));
    }
    Ok(meta)
}

pub(super) fn bool_field(buf: &[u8], field: u64) -> Result<Option<bool>, String> {
    Ok(fields(buf)?
        .into_iter()
        .find_map(|(f, w)| match (f == field, w) {
            (true, Wire::Varint(v)) => Some(v != 0),
            _ => None,
        }))
}

/// Decodes an enveloped protobuf object of a supported kind into its JSON form.
pub fn decode(body: &[u8]) -> Result<Value, DecodeError> {
    let (api_version, kind, raw) = envelope(body)?;
    let mut obj = json!({"apiVersion": api_version, "kind": kind});
    let meta = message(raw, 1)?
        .map(object_meta)
        .transpose()?
        .unwrap_or(json!({}));
    obj["metadata"] = meta;
    match (api_version.as_str(), kind.as_str()) {
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
            obj["spec"] = access_review_spec(raw)?;
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => {
            obj["spec"] = match message(raw, 2)? {
                Some(spec) => strings(spec, &[(1, "namespace")])?,
                None => json!({}),
            };
        }
        ("authentication.k8s.io/v1", "SelfSubjectReview") => {}
        ("authentication.k8s.io/v1", "TokenRequest") => {
            obj["spec"] = match message(raw, 2)? {
                Some(spec) => token_request_spec(spec)?,
                None => json!({}),
            };
        }
        ("authentication.k8s.io/v1", "TokenReview") => {
            if let Some(spec) = message(raw, 2)? {
                let mut out = strings(spec, &[(1, "token")])?;
                if let Some(audiences) = repeated_strings(spec, 2)? {
                    out["audiences"] = audiences;
                }
                obj["spec"] = out;
            }
        }
        ("v1", "ServiceAccount") => {
            let mut secrets = Vec::new();
            let mut pull = Vec::new();
            for (field, wire) in fields(raw)? {
                match (field, wire) {
                    (2, Wire::Bytes(r)) => secrets.push(set_strings(
                        r,
                        &[
                            (1, "kind"),
                            (2, "namespace"),
                            (3, "name"),
                            (4, "uid"),
                            (5, "apiVersion"),
                            (6, "resourceVersion"),
                            (7, "fieldPath"),
                        ],
                    )?),
                    (3, Wire::Bytes(r)) => pull.push(set_strings(r, &[(1, "name")])?),
                    _ => {}
                }
            }
            if !secrets.is_empty() {
                obj["secrets"] = Value::Array(secrets);
            }
            if !pull.is_empty() {
                obj["imagePullSecrets"] = Value::Array(pull);
            }
            if let Some(automount) = bool_field(raw, 4)? {
                obj["automountServiceAccountToken"] = json!(automount);
            }
        }
        ("v1", "Namespace") => {
            if let Some(spec) = message(raw, 2)? {
                obj["spec"] = json!({});
                if let Some(finalizers) = repeated_strings(spec, 1)? {
                    obj["spec"]["finalizers"] = finalizers;
                }
            }
        }
        ("v1", "ConfigMap") => {
            if let Some(data) = map_field(raw, 2, false)? {
                obj["data"] = data;
            }
            if let Some(binary) = map_field(raw, 3, true)? {
                obj["binaryData"] = binary;
            }
            if let Some(immutable) = bool_field(raw, 4)? {
                obj["immutable"] = json!(immutable);
            }
        }
        ("v1", "Secret") => {
            if let Some(data) = map_field(raw, 2, true)? {
                obj["data"] = data;
            }
            if let Some(t) = strings(raw, &[(3, "type")])?.get("type") {
                obj["type"] = t.clone();
            }
            if let Some(string_data) = map_field(raw, 4, false)? {
                obj["stringData"] = string_data;
            }
            if let Some(immutable) = bool_field(raw, 5)? {
                obj["immutable"] = json!(immutable);
            }
        }
        _ => {
            let known = admin::decode(&api_version, &kind, raw, &mut obj)?
                || match workloads::decode(&api_version, &kind, raw, &mut obj) {
                    Ok(known) => known,
                    Err(workloads::Unknown(why)) => {
                        return Err(match why.strip_prefix("malformed: ") {
                            Some(e) => DecodeError::Malformed(e.to_string()),
                            None => DecodeError::Unsupported(format!(
                                "{api_version}, Kind={kind} ({why})"
                            )),
                        });
                    }
                };
            if !known {
                return Err(DecodeError::Unsupported(format!(
                    "{api_version}, Kind={kind}"
                )));
            }
        }
    }
    Ok(obj)
}

/// A TokenRequestSpec: audiences (1), boundObjectRef (3), expirationSeconds (4).
fn token_request_spec(spec: &[u8]) -> Result<Value, String> {
    let mut out = json!({});
    if let Some(audiences) = repeated_strings(spec, 1)? {
        out["audiences"] = audiences;
    }
    if let Some(reference) = message(spec, 3)? {
        out["boundObjectRef"] = set_strings(
            reference,
            &[(1, "kind"), (2, "apiVersion"), (3, "name"), (4, "uid")],
        )?;
    }
    for (field, wire) in fields(spec)? {
        if let (4, Wire::Varint(v)) = (field, wire) {
            out["expirationSeconds"] = json!(v as i64);
        }
    }
    Ok(out)
}

fn access_review_spec(raw: &[u8]) -> Result<Value, String> {
    let mut spec = Map::new();
    if let Some(spec_bytes) = message(raw, 2)? {
        if let Some(ra) = message(spec_bytes, 1)? {
            let names = [
                (1, "namespace"),
                (2, "verb"),
                (3, "group"),
                (4, "version"),
                (5, "resource"),
                (6, "subresource"),
                (7, "name"),
            ];
            spec.insert("resourceAttributes".into(), strings(ra, &names)?);
        }
        if let Some(nra) = message(spec_bytes, 2)? {
            spec.insert(
                "nonResourceAttributes".into(),
                strings(nra, &[(1, "path"), (2, "verb")])?,
            );
        }
    }
    Ok(Value::Object(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes kubectl 1.32 sends for `auth can-i list configmaps -n team-a`.
    const CAN_I: &[u8] = b"k8s\0\x0a\x32\x0a\x17authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview\x12\x42\x0a\x10\x0a\x00\x12\x00\x1a\x00\x22\x00\x2a\x002\x008\x00B\x00\x12\x24\x0a\x22\x0a\x06team-a\x12\x04list\x1a\x00\x22\x00\x2a\x0aconfigmaps2\x00:\x00\x1a\x08\x08\x00\x12\x00\x1a\x00\x20\x00\x1a\x00\x22\x00";

    #[test]
    fn decodes_kubectl_can_i() {
        let review = decode(CAN_I).unwrap();
        assert_eq!(review["kind"], "SelfSubjectAccessReview");
        let ra = &review["spec"]["resourceAttributes"];
        assert_eq!(ra["namespace"], "team-a");
        assert_eq!(ra["verb"], "list");
        assert_eq!(ra["resource"], "configmaps");
        assert_eq!(ra["group"], "");
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        assert!(decode(b"nope").is_err());
        assert!(decode(b"k8s\0\x0a\xff\xff").is_err());
        assert!(decode(b"k8s\0\x0a\x05ab").is_err());
        let sts = b"k8s\0\x0a\x16\x0a\x07apps/v1\x12\x0bStatefulSet";
        assert!(matches!(decode(sts), Err(DecodeError::Unsupported(_))));
    }
}
