//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for every built-in
//! kind kubesim serves: the `k8s\0` envelope (runtime.Unknown carrying the apiVersion, kind
//! and the message bytes) around messages walked generically from Kubernetes' own
//! `generated.proto` definitions ([`schema`]), decoded into the JSON form kube-apiserver's
//! Go types marshal ([`decode`]) and encoded back from it ([`encode`]). Custom resources
//! have no protobuf form (kube-apiserver answers 415 for them too).

mod decode;
mod encode;
mod path;
mod schema;
mod special;
pub(crate) mod wire;

use serde_json::{Map, Value};

use path::Path;
use wire::{Wire, fields, put_bytes};

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// Why a protobuf body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not valid protobuf of the expected shape (the message names the field).
    #[error("{0}")]
    Malformed(String),
    /// The kind has no protobuf form here (a custom resource, or a version not served).
    #[error("{0}")]
    Unsupported(String),
}

/// Why an object could not be written as protobuf.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The object's apiVersion and kind name no message.
    #[error("no protobuf message for {0}")]
    Unsupported(String),
    /// A field's JSON value does not fit its message type.
    #[error("{0}")]
    Invalid(String),
}

/// The envelope's parts: (apiVersion, kind, message bytes).
fn envelope(body: &[u8]) -> Result<(String, String, Vec<u8>), String> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("missing the k8s protobuf envelope (k8s\\0)")?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), Vec::new());
    for item in fields(rest) {
        match item? {
            (1, Wire::Bytes(type_meta)) => {
                for item in fields(type_meta) {
                    let text = |b: &[u8]| {
                        String::from_utf8(b.to_vec())
                            .map_err(|e| format!("typeMeta: invalid UTF-8: {e}"))
                    };
                    match item.map_err(|e| format!("typeMeta: {e}"))? {
                        (1, Wire::Bytes(b)) => api_version = text(b)?,
                        (2, Wire::Bytes(b)) => kind = text(b)?,
                        (1 | 2, w) => {
                            return Err(format!(
                                "proto: wrong wireType = {} for field typeMeta",
                                w.wire_type()
                            ));
                        }
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(b)) => raw.extend_from_slice(b),
            (1 | 2, w) => {
                return Err(format!(
                    "proto: wrong wireType = {} for field {}",
                    w.wire_type(),
                    if w.wire_type() == 0 {
                        "raw"
                    } else {
                        "typeMeta"
                    }
                ));
            }
            _ => {}
        }
    }
    Ok((api_version, kind, raw))
}

/// Whether an `Accept` header prefers protobuf: its first media range is the protobuf type
/// (without `as=`, which asks for a Table or other conversion), as kube-apiserver's
/// negotiation picks the first range it can serve.
pub fn preferred(accept: &str) -> bool {
    let first = accept.split(',').next().unwrap_or_default();
    let mut params = first.split(';').map(str::trim);
    params.next() == Some(MEDIA_TYPE) && params.all(|p| !p.starts_with("as="))
}

/// Decodes an enveloped protobuf object into its JSON form.
pub fn decode(body: &[u8]) -> Result<Value, DecodeError> {
    let (api_version, kind, raw) = envelope(body).map_err(DecodeError::Malformed)?;
    let msg = schema::schema()
        .kind(&api_version, &kind)
        .ok_or_else(|| DecodeError::Unsupported(format!("{api_version}, Kind={kind}")))?;
    let fields = decode::message(msg, &raw, &Path::ROOT, 0)
        .map_err(|e| DecodeError::Malformed(format!("{kind} {e}")))?;
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    obj.extend(fields);
    Ok(Value::Object(obj))
}

/// Encodes an object (with its apiVersion and kind) as an enveloped protobuf body.
pub fn encode(obj: &Value) -> Result<Vec<u8>, EncodeError> {
    let text = |key: &str| obj.get(key).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let msg = schema::schema()
        .kind(api_version, kind)
        .ok_or_else(|| EncodeError::Unsupported(format!("{api_version}, Kind={kind}")))?;
    let fields = obj
        .as_object()
        .ok_or_else(|| EncodeError::Invalid("the object is not a JSON object".into()))?;
    let mut raw = Vec::new();
    encode::message(msg, fields, &Path::ROOT, 0, &mut raw)
        .map_err(|e| EncodeError::Invalid(format!("{kind} {e}")))?;
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, &raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    Ok(out)
}

/// One event of a protobuf watch stream, as kube-apiserver frames it: a 4-byte big-endian
/// length, then a meta/v1 WatchEvent (type 1, object 2 as a RawExtension holding the
/// enveloped object) written without an envelope of its own.
pub fn watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, EncodeError> {
    let object = encode(object)?;
    let mut raw = Vec::new();
    put_bytes(&mut raw, 1, &object);
    let mut event = Vec::new();
    put_bytes(&mut event, 1, event_type.as_bytes());
    put_bytes(&mut event, 2, &raw);
    let len = u32::try_from(event.len())
        .map_err(|_| EncodeError::Invalid(format!("a {event_type} event over 4 GiB")))?;
    let mut frame = len.to_be_bytes().to_vec();
    frame.extend(event);
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(ra.get("group").is_none(), "omitempty drops \"\": {ra}");
        assert_eq!(
            review["status"],
            json!({"allowed": false}),
            "Go writes the non-pointer status; `allowed` has no omitempty"
        );
    }

    #[test]
    fn rich_objects_round_trip() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}, "creationTimestamp": "2024-01-02T03:04:05Z",
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}]},
            "spec": {
                "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                    "resources": {"limits": {"cpu": "1"}},
                    "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 3},
                    "readinessProbe": {"tcpSocket": {"port": 8080}},
                    "securityContext": {"runAsNonRoot": false, "capabilities": {"drop": ["ALL"]}},
                    "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": false}}}]}],
                "volumes": [{"name": "v", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["a"]}]}]}}},
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 0}],
                "terminationGracePeriodSeconds": 0
            }
        });
        let bytes = encode(&pod).unwrap();
        assert_eq!(decode(&bytes).unwrap(), pod);
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"spec": {"type": "object", "default": {"size": 1},
                        "properties": {"size": {"type": "integer", "maximum": 10, "minimum": 0.5,
                            "enum": [1, 2]}, "tags": {"type": "array", "items": {"type": "string"}}},
                        "additionalProperties": false,
                        "x-kubernetes-validations": [{"rule": "self.size < 5"}]}}}}}]}
        });
        assert_eq!(decode(&encode(&crd).unwrap()).unwrap(), crd);
    }

    #[test]
    fn zero_values_follow_go_json() {
        // replicas is *int32: a 0 on the wire is kept; minReadySeconds is omitempty int32.
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d"}, "spec": {"replicas": 0, "minReadySeconds": 0, "paused": false}});
        let back = decode(&encode(&deploy).unwrap()).unwrap();
        assert_eq!(back["spec"], json!({"replicas": 0}));
    }

    #[test]
    fn protobuf_is_preferred_only_when_listed_first() {
        assert!(preferred(
            "application/vnd.kubernetes.protobuf,application/json"
        ));
        assert!(preferred("application/vnd.kubernetes.protobuf"));
        assert!(!preferred("application/json, */*"));
        assert!(!preferred(
            "application/json,application/vnd.kubernetes.protobuf"
        ));
        assert!(!preferred(
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!preferred(""));
    }

    #[test]
    fn watch_events_are_length_prefixed_and_carry_the_enveloped_object() {
        let status = json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
            "reason": "Expired", "code": 410});
        let frame = watch_event("ERROR", &status).unwrap();
        let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        let event: Vec<_> = fields(&frame[4..]).map(Result::unwrap).collect();
        let (Wire::Bytes(kind), Wire::Bytes(raw)) = (event[0].1, event[1].1) else {
            panic!("{event:?}");
        };
        assert_eq!(kind, b"ERROR");
        let Some(Ok((1, Wire::Bytes(object)))) = fields(raw).next() else {
            panic!("{raw:?}");
        };
        assert_eq!(decode(object).unwrap(), status);
        let custom = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
        assert!(matches!(
            watch_event("ADDED", &custom),
            Err(EncodeError::Unsupported(_))
        ));
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        assert!(matches!(decode(b"nope"), Err(DecodeError::Malformed(_))));
        assert!(decode(b"k8s\0\x0a\xff\xff").is_err());
        assert!(decode(b"k8s\0\x0a\x05ab").is_err());
        let cr = b"k8s\0\x0a\x16\x0a\x0eexample.com/v1\x12\x04Thin";
        assert!(matches!(decode(cr), Err(DecodeError::Unsupported(_))));
        // spec.replicas as a length-delimited field.
        let mut spec = Vec::new();
        put_bytes(&mut spec, 1, b"x");
        let mut raw = Vec::new();
        put_bytes(&mut raw, 2, &spec);
        let mut tm = Vec::new();
        put_bytes(&mut tm, 1, b"apps/v1");
        put_bytes(&mut tm, 2, b"Deployment");
        let mut body = MAGIC.to_vec();
        put_bytes(&mut body, 1, &tm);
        put_bytes(&mut body, 2, &raw);
        let err = decode(&body).unwrap_err().to_string();
        assert_eq!(
            err,
            "Deployment proto: wrong wireType = 2 for field spec.replicas"
        );
    }
}
