//! Protobuf bodies of the workload and networking kinds `kubectl create
//! deployment|job|cronjob|service|ingress|pdb`, `kubectl run` and `kubectl autoscale` send, decoded by one
//! walk over per-message field tables (field numbers as `k8s.io/api`'s `generated.proto`
//! files give them). Go's encoder writes every non-pointer field, so zero scalars of those
//! are dropped as the JSON form's `omitempty` drops them, while pointer fields (set only when
//! non-nil) keep their zeros. A field the tables do not know, when it carries data, makes the
//! body unsupported (415 naming it) rather than silently lost; Pod volumes, probes, security
//! contexts and affinity are among those.

use serde_json::{Map, Value, json};

use super::{Wire, fields, object_meta, utf8};

/// How one field is decoded.
#[derive(Clone, Copy)]
enum Ty {
    /// A string; zero ("") dropped.
    Str,
    /// A string behind a pointer; kept when present.
    StrPtr,
    /// An int32/int64; zero dropped.
    Int,
    /// An int behind a pointer, or a required int: kept when present.
    IntPtr,
    /// A bool; false dropped.
    Bool,
    /// A bool behind a pointer; kept when present.
    BoolPtr,
    /// Repeated strings.
    Strs,
    /// A `map<string, string>`.
    StrMap,
    /// A `map<string, Quantity>`.
    QuantityMap,
    /// An IntOrString (type 1, intVal 2, strVal 3).
    IntOrString,
    /// ObjectMeta.
    Meta,
    /// A message of the named table.
    Msg(&'static str),
    /// Repeated messages of the named table.
    Msgs(&'static str),
    /// A message of the named table whose fields are inlined into the parent (Go's embedded
    /// struct, e.g. an IngressRule's IngressRuleValue).
    Inline(&'static str),
}

use Ty::*;

/// (field number, JSON name, type).
type Table = &'static [(u64, &'static str, Ty)];

fn table(name: &str) -> Option<Table> {
    Some(match name {
        "LabelSelector" => &[
            (1, "matchLabels", StrMap),
            (2, "matchExpressions", Msgs("LabelSelectorRequirement")),
        ],
        "LabelSelectorRequirement" => &[(1, "key", Str), (2, "operator", Str), (3, "values", Strs)],
        "DeploymentSpec" => &[
            (1, "replicas", IntPtr),
            (2, "selector", Msg("LabelSelector")),
            (3, "template", Msg("PodTemplateSpec")),
            (4, "strategy", Msg("DeploymentStrategy")),
            (5, "minReadySeconds", Int),
            (6, "revisionHistoryLimit", IntPtr),
            (7, "paused", Bool),
            (9, "progressDeadlineSeconds", IntPtr),
        ],
        "DeploymentStrategy" => &[(1, "type", Str), (2, "rollingUpdate", Msg("RollingUpdate"))],
        "RollingUpdate" => &[
            (1, "maxUnavailable", IntOrString),
            (2, "maxSurge", IntOrString),
        ],
        "PodTemplateSpec" => &[(1, "metadata", Meta), (2, "spec", Msg("PodSpec"))],
        "PodSpec" => &[
            (2, "containers", Msgs("Container")),
            (3, "restartPolicy", Str),
            (4, "terminationGracePeriodSeconds", IntPtr),
            (5, "activeDeadlineSeconds", IntPtr),
            (6, "dnsPolicy", Str),
            (7, "nodeSelector", StrMap),
            (8, "serviceAccountName", Str),
            (9, "serviceAccount", Str),
            (10, "nodeName", Str),
            (11, "hostNetwork", Bool),
            (12, "hostPID", Bool),
            (13, "hostIPC", Bool),
            (15, "imagePullSecrets", Msgs("LocalObjectReference")),
            (16, "hostname", Str),
            (17, "subdomain", Str),
            (19, "schedulerName", Str),
            (20, "initContainers", Msgs("Container")),
            (21, "automountServiceAccountToken", BoolPtr),
            (22, "tolerations", Msgs("Toleration")),
            (24, "priorityClassName", Str),
            (25, "priority", IntPtr),
            (27, "shareProcessNamespace", BoolPtr),
            (29, "runtimeClassName", StrPtr),
            (30, "enableServiceLinks", BoolPtr),
            (31, "preemptionPolicy", StrPtr),
            (35, "setHostnameAsFQDN", BoolPtr),
            (37, "hostUsers", BoolPtr),
        ],
        "LocalObjectReference" => &[(1, "name", Str)],
        "Toleration" => &[
            (1, "key", Str),
            (2, "operator", Str),
            (3, "value", Str),
            (4, "effect", Str),
            (5, "tolerationSeconds", IntPtr),
        ],
        "Container" => &[
            (1, "name", Str),
            (2, "image", Str),
            (3, "command", Strs),
            (4, "args", Strs),
            (5, "workingDir", Str),
            (6, "ports", Msgs("ContainerPort")),
            (7, "env", Msgs("EnvVar")),
            (8, "resources", Msg("ResourceRequirements")),
            (9, "volumeMounts", Msgs("VolumeMount")),
            (13, "terminationMessagePath", Str),
            (14, "imagePullPolicy", Str),
            (16, "stdin", Bool),
            (17, "stdinOnce", Bool),
            (18, "tty", Bool),
            (20, "terminationMessagePolicy", Str),
            (24, "restartPolicy", StrPtr),
        ],
        "ContainerPort" => &[
            (1, "name", Str),
            (2, "hostPort", Int),
            (3, "containerPort", IntPtr),
            (4, "protocol", Str),
            (5, "hostIP", Str),
        ],
        "EnvVar" => &[(1, "name", Str), (2, "value", Str)],
        "ResourceRequirements" => &[(1, "limits", QuantityMap), (2, "requests", QuantityMap)],
        "VolumeMount" => &[
            (1, "name", Str),
            (2, "readOnly", Bool),
            (3, "mountPath", Str),
            (4, "subPath", Str),
            (5, "mountPropagation", StrPtr),
            (6, "subPathExpr", Str),
        ],
        "JobSpec" => &[
            (1, "parallelism", IntPtr),
            (2, "completions", IntPtr),
            (3, "activeDeadlineSeconds", IntPtr),
            (4, "selector", Msg("LabelSelector")),
            (5, "manualSelector", BoolPtr),
            (6, "template", Msg("PodTemplateSpec")),
            (7, "backoffLimit", IntPtr),
            (8, "ttlSecondsAfterFinished", IntPtr),
            (9, "completionMode", StrPtr),
            (10, "suspend", BoolPtr),
        ],
        "CronJobSpec" => &[
            (1, "schedule", Str),
            (2, "startingDeadlineSeconds", IntPtr),
            (3, "concurrencyPolicy", Str),
            (4, "suspend", BoolPtr),
            (5, "jobTemplate", Msg("JobTemplateSpec")),
            (6, "successfulJobsHistoryLimit", IntPtr),
            (7, "failedJobsHistoryLimit", IntPtr),
            (8, "timeZone", StrPtr),
        ],
        "JobTemplateSpec" => &[(1, "metadata", Meta), (2, "spec", Msg("JobSpec"))],
        "ServiceSpec" => &[
            (1, "ports", Msgs("ServicePort")),
            (2, "selector", StrMap),
            (3, "clusterIP", Str),
            (4, "type", Str),
            (5, "externalIPs", Strs),
            (7, "sessionAffinity", Str),
            (8, "loadBalancerIP", Str),
            (9, "loadBalancerSourceRanges", Strs),
            (10, "externalName", Str),
            (11, "externalTrafficPolicy", Str),
            (12, "healthCheckNodePort", Int),
            (13, "publishNotReadyAddresses", Bool),
            (17, "ipFamilyPolicy", StrPtr),
            (18, "clusterIPs", Strs),
            (19, "ipFamilies", Strs),
            (20, "allocateLoadBalancerNodePorts", BoolPtr),
            (21, "loadBalancerClass", StrPtr),
            (22, "internalTrafficPolicy", StrPtr),
        ],
        "ServicePort" => &[
            (1, "name", Str),
            (2, "protocol", Str),
            (3, "port", IntPtr),
            (4, "targetPort", IntOrString),
            (5, "nodePort", Int),
            (6, "appProtocol", StrPtr),
        ],
        "PodDisruptionBudgetSpec" => &[
            (1, "minAvailable", IntOrString),
            (2, "selector", Msg("LabelSelector")),
            (3, "maxUnavailable", IntOrString),
            (4, "unhealthyPodEvictionPolicy", StrPtr),
        ],
        "IngressSpec" => &[
            (1, "defaultBackend", Msg("IngressBackend")),
            (2, "tls", Msgs("IngressTLS")),
            (3, "rules", Msgs("IngressRule")),
            (4, "ingressClassName", StrPtr),
        ],
        "IngressTLS" => &[(1, "hosts", Strs), (2, "secretName", Str)],
        "IngressRule" => &[(1, "host", Str), (2, "", Inline("IngressRuleValue"))],
        "IngressRuleValue" => &[(1, "http", Msg("HTTPIngressRuleValue"))],
        "HTTPIngressRuleValue" => &[(1, "paths", Msgs("HTTPIngressPath"))],
        "HTTPIngressPath" => &[
            (1, "path", Str),
            (2, "backend", Msg("IngressBackend")),
            (3, "pathType", StrPtr),
        ],
        "IngressBackend" => &[
            (3, "resource", Msg("TypedLocalObjectReference")),
            (4, "service", Msg("IngressServiceBackend")),
        ],
        "TypedLocalObjectReference" => {
            &[(1, "apiGroup", StrPtr), (2, "kind", Str), (3, "name", Str)]
        }
        "IngressServiceBackend" => &[(1, "name", Str), (2, "port", Msg("ServiceBackendPort"))],
        "ServiceBackendPort" => &[(1, "name", Str), (2, "number", Int)],
        "HorizontalPodAutoscalerSpecV1" => &[
            (1, "scaleTargetRef", Msg("CrossVersionObjectReference")),
            (2, "minReplicas", IntPtr),
            (3, "maxReplicas", IntPtr),
            (4, "targetCPUUtilizationPercentage", IntPtr),
        ],
        "CrossVersionObjectReference" => {
            &[(1, "kind", Str), (2, "name", Str), (3, "apiVersion", Str)]
        }
        _ => return None,
    })
}

/// The message decoded by `table`, with `path` naming it in errors.
fn decode_message(buf: &[u8], name: &str, path: &str) -> Result<Map<String, Value>, Unknown> {
    let table = table(name).ok_or_else(|| Unknown(path.to_string()))?;
    let mut out = Map::new();
    for (number, wire) in fields(buf).map_err(Unknown::malformed)? {
        let Some(&(_, key, ty)) = table.iter().find(|(n, _, _)| *n == number) else {
            let empty = match &wire {
                Wire::Varint(v) => *v == 0,
                Wire::Bytes(b) => b.is_empty(),
            };
            if empty {
                continue;
            }
            return Err(Unknown(format!("{path} field {number}")));
        };
        let child = if key.is_empty() {
            path.to_string()
        } else {
            format!("{path}.{key}")
        };
        let value = match (ty, wire) {
            (Str, Wire::Bytes(b)) => {
                Some(json!(utf8(b).map_err(Unknown::malformed)?)).filter(|v| v != "")
            }
            (StrPtr, Wire::Bytes(b)) => Some(json!(utf8(b).map_err(Unknown::malformed)?)),
            (Int, Wire::Varint(v)) => Some(json!(v as i64)).filter(|v| v != 0),
            (IntPtr, Wire::Varint(v)) => Some(json!(v as i64)),
            (Bool, Wire::Varint(v)) => (v != 0).then(|| json!(true)),
            (BoolPtr, Wire::Varint(v)) => Some(json!(v != 0)),
            (Strs, Wire::Bytes(b)) => {
                let text = json!(utf8(b).map_err(Unknown::malformed)?);
                push(&mut out, key, text);
                None
            }
            (StrMap | QuantityMap, Wire::Bytes(entry)) => {
                let (k, v) = map_entry(entry, matches!(ty, QuantityMap))?;
                let map = out.entry(key).or_insert_with(|| json!({}));
                if let Some(map) = map.as_object_mut() {
                    map.insert(k, v);
                }
                None
            }
            (IntOrString, Wire::Bytes(b)) => Some(int_or_string(b)?),
            (Meta, Wire::Bytes(b)) => Some(object_meta(b).map_err(Unknown::malformed)?),
            (Msg(name), Wire::Bytes(b)) => Some(Value::Object(decode_message(b, name, &child)?)),
            (Msgs(name), Wire::Bytes(b)) => {
                let item = Value::Object(decode_message(b, name, &child)?);
                push(&mut out, key, item);
                None
            }
            (Inline(name), Wire::Bytes(b)) => {
                out.extend(decode_message(b, name, &child)?);
                None
            }
            _ => return Err(Unknown::malformed(format!("{child}: wrong wire type"))),
        };
        if let Some(value) = value {
            out.insert(key.to_string(), value);
        }
    }
    Ok(out)
}

fn push(out: &mut Map<String, Value>, key: &str, item: Value) {
    let list = out.entry(key).or_insert_with(|| json!([]));
    if let Some(list) = list.as_array_mut() {
        list.push(item);
    }
}

/// One map entry: key (1) and value (2: a string, or a Quantity message whose field 1 is
/// the string).
fn map_entry(entry: &[u8], quantity: bool) -> Result<(String, Value), Unknown> {
    let mut key = String::new();
    let mut value = json!("");
    for (f, w) in fields(entry).map_err(Unknown::malformed)? {
        match (f, w) {
            (1, Wire::Bytes(k)) => key = utf8(k).map_err(Unknown::malformed)?,
            (2, Wire::Bytes(v)) if quantity => {
                for (qf, qw) in fields(v).map_err(Unknown::malformed)? {
                    if let (1, Wire::Bytes(s)) = (qf, qw) {
                        value = json!(utf8(s).map_err(Unknown::malformed)?);
                    }
                }
            }
            (2, Wire::Bytes(v)) => value = json!(utf8(v).map_err(Unknown::malformed)?),
            _ => {}
        }
    }
    Ok((key, value))
}

/// An IntOrString: type 0 → intVal (2), type 1 → strVal (3).
fn int_or_string(buf: &[u8]) -> Result<Value, Unknown> {
    let (mut kind, mut int, mut text) = (0, 0i64, String::new());
    for (f, w) in fields(buf).map_err(Unknown::malformed)? {
        match (f, w) {
            (1, Wire::Varint(v)) => kind = v,
            (2, Wire::Varint(v)) => int = v as i64 as i32 as i64,
            (3, Wire::Bytes(b)) => text = utf8(b).map_err(Unknown::malformed)?,
            _ => {}
        }
    }
    Ok(if kind == 1 { json!(text) } else { json!(int) })
}

/// Why a body could not be decoded: a field the tables do not know (its path), or bytes
/// that are not protobuf (prefixed `malformed: `).
#[derive(Debug)]
pub struct Unknown(pub String);

impl Unknown {
    fn malformed(e: String) -> Unknown {
        Unknown(format!("malformed: {e}"))
    }
}

/// The spec table of a kind this module decodes.
fn spec_table(api_version: &str, kind: &str) -> Option<&'static str> {
    Some(match (api_version, kind) {
        ("v1", "Pod") => "PodSpec",
        ("apps/v1", "Deployment") => "DeploymentSpec",
        ("batch/v1", "Job") => "JobSpec",
        ("batch/v1", "CronJob") => "CronJobSpec",
        ("v1", "Service") => "ServiceSpec",
        ("policy/v1", "PodDisruptionBudget") => "PodDisruptionBudgetSpec",
        ("networking.k8s.io/v1", "Ingress") => "IngressSpec",
        ("autoscaling/v1", "HorizontalPodAutoscaler") => "HorizontalPodAutoscalerSpecV1",
        _ => return None,
    })
}

/// Decodes the spec (field 2) of `raw` into `obj` (status, field 3, is left out: a new
/// object's status is reset); Ok(false) when the kind is not one of this module's.
pub fn decode(api_version: &str, kind: &str, raw: &[u8], obj: &mut Value) -> Result<bool, Unknown> {
    let Some(spec_table) = spec_table(api_version, kind) else {
        return Ok(false);
    };
    for (number, wire) in fields(raw).map_err(Unknown::malformed)? {
        if let (2, Wire::Bytes(spec)) = (number, wire) {
            obj["spec"] = Value::Object(decode_message(spec, spec_table, "spec")?);
        }
    }
    Ok(true)
}
