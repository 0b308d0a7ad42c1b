//! Name-reference fix-ups: after prefixes, suffixes and generator hashes renamed objects, the
//! fields that refer to them by name (ConfigMap/Secret refs in pod specs, service accounts,
//! role bindings, Ingress backends, HPA targets, …) are rewritten to the new names.

use std::collections::HashMap;

use serde_json::Value;

use super::config::NameReference;
use super::resource::{Res, is_cluster_scoped_kind, str_at};

/// A reference field found in an object.
struct Ref {
    /// JSON pointer to the name string.
    ptr: String,
    /// Kind of the object referred to.
    kind: String,
    /// Namespace the referred object must be in (`None`: the referrer's own).
    namespace: Option<String>,
    /// JSON pointer of a `namespace` field to fill in when it is missing (subjects).
    ns_ptr: Option<String>,
}

/// Pod-spec fields that name other objects: path below the pod spec → kind.
const POD_SPEC_REFS: &[(&str, &str)] = &[
    ("serviceAccountName", "ServiceAccount"),
    ("serviceAccount", "ServiceAccount"),
    ("volumes[]/configMap/name", "ConfigMap"),
    ("volumes[]/secret/secretName", "Secret"),
    ("volumes[]/projected/sources[]/configMap/name", "ConfigMap"),
    ("volumes[]/projected/sources[]/secret/name", "Secret"),
    (
        "volumes[]/persistentVolumeClaim/claimName",
        "PersistentVolumeClaim",
    ),
    ("imagePullSecrets[]/name", "Secret"),
    ("priorityClassName", "PriorityClass"),
];

/// Container fields that name other objects.
const CONTAINER_REFS: &[(&str, &str)] = &[
    ("env[]/valueFrom/configMapKeyRef/name", "ConfigMap"),
    ("env[]/valueFrom/secretKeyRef/name", "Secret"),
    ("envFrom[]/configMapRef/name", "ConfigMap"),
    ("envFrom[]/secretRef/name", "Secret"),
];

/// Other fields that name objects: (referrer kind, path, referred kind).
const OTHER_REFS: &[(&str, &str, &str)] = &[
    ("StatefulSet", "spec/serviceName", "Service"),
    (
        "StatefulSet",
        "spec/volumeClaimTemplates[]/spec/storageClassName",
        "StorageClass",
    ),
    (
        "Ingress",
        "spec/rules[]/http/paths[]/backend/service/name",
        "Service",
    ),
    (
        "Ingress",
        "spec/rules[]/http/paths[]/backend/serviceName",
        "Service",
    ),
    ("Ingress", "spec/defaultBackend/service/name", "Service"),
    ("Ingress", "spec/backend/serviceName", "Service"),
    ("Ingress", "spec/tls[]/secretName", "Secret"),
    (
        "PersistentVolumeClaim",
        "spec/volumeName",
        "PersistentVolume",
    ),
    (
        "PersistentVolumeClaim",
        "spec/storageClassName",
        "StorageClass",
    ),
    ("PersistentVolume", "spec/storageClassName", "StorageClass"),
    ("ServiceAccount", "secrets[]/name", "Secret"),
    ("ServiceAccount", "imagePullSecrets[]/name", "Secret"),
    ("APIService", "spec/service/name", "Service"),
];

/// Where the pod spec of each workload kind lives.
fn pod_spec_path(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "Pod" => "spec",
        "PodTemplate" => "template/spec",
        "Deployment"
        | "ReplicaSet"
        | "DaemonSet"
        | "StatefulSet"
        | "Job"
        | "ReplicationController" => "spec/template/spec",
        "CronJob" => "spec/jobTemplate/spec/template/spec",
        _ => return None,
    })
}

/// A planned rewrite: object index, pointer, new name, and an optional (pointer, namespace)
/// to fill in.
type Edit = (usize, String, String, Option<(String, String)>);

/// Rewrites every reference to a renamed object: the built-in reference fields, and those
/// `configured` (a `configurations:` file's `nameReference`).
pub fn fix(acc: &mut [Res], configured: &[NameReference]) {
    let mut edits: Vec<Edit> = Vec::new();
    let mut by_name: HashMap<(&str, &str), Vec<&Res>> = HashMap::new();
    for t in acc.iter() {
        by_name
            .entry((t.kind(), t.orig_name.as_str()))
            .or_default()
            .push(t);
    }
    for (i, res) in acc.iter().enumerate() {
        for r in refs(res, configured) {
            let Some(Value::String(old)) = res.obj.pointer(&r.ptr) else {
                continue;
            };
            let own_ns = res.namespace();
            let wanted_ns = r.namespace.as_deref();
            let candidates = by_name
                .get(&(r.kind.as_str(), old.as_str()))
                .map(Vec::as_slice)
                .unwrap_or_default();
            let target = candidates.iter().find(|t| {
                is_cluster_scoped_kind(&r.kind)
                    || match wanted_ns {
                        Some(ns) => {
                            t.namespace() == ns
                                || t.orig_ns == ns
                                || (ns == "default" && t.orig_ns.is_empty())
                        }
                        None if r.ns_ptr.is_some() || res.is_cluster_scoped() => true,
                        None => t.namespace() == own_ns,
                    }
            });
            if let Some(t) = target {
                // A namespace is written only for an object some transformer recorded a
                // previous id for (a subject naming an untouched ServiceAccount stays as
                // written), as kustomize does.
                let ns_edit = match &r.ns_ptr {
                    Some(p)
                        if t.has_previous_id
                            && !t.namespace().is_empty()
                            && wanted_ns != Some(t.namespace()) =>
                    {
                        Some((p.clone(), t.namespace().to_string()))
                    }
                    _ => None,
                };
                if t.name() != old || ns_edit.is_some() {
                    edits.push((i, r.ptr.clone(), t.name().to_string(), ns_edit));
                }
            }
        }
    }
    for (i, ptr, name, ns_edit) in edits {
        if let Some(slot) = acc[i].obj.pointer_mut(&ptr) {
            *slot = Value::String(name);
        }
        if let Some((ns_ptr, ns)) = ns_edit
            && let Some((parent, key)) = ns_ptr.rsplit_once('/')
            && let Some(Value::Object(m)) = acc[i].obj.pointer_mut(parent)
        {
            m.insert(key.to_string(), Value::String(ns));
        }
    }
}

fn refs(res: &Res, configured: &[NameReference]) -> Vec<Ref> {
    let mut out = Vec::new();
    let obj = &res.obj;
    let simple = |out: &mut Vec<Ref>, path: &str, kind: &str| {
        for ptr in pointers(obj, path) {
            out.push(Ref {
                ptr,
                kind: kind.to_string(),
                namespace: None,
                ns_ptr: None,
            });
        }
    };
    if let Some(base) = pod_spec_path(res.kind()) {
        for (path, kind) in POD_SPEC_REFS {
            simple(&mut out, &format!("{base}/{path}"), kind);
        }
        for containers in ["containers", "initContainers", "ephemeralContainers"] {
            for (path, kind) in CONTAINER_REFS {
                simple(&mut out, &format!("{base}/{containers}[]/{path}"), kind);
            }
        }
    }
    for (referrer, path, kind) in OTHER_REFS {
        if res.kind() == *referrer {
            simple(&mut out, path, kind);
        }
    }
    for reference in configured {
        for spec in reference.field_specs.iter().filter(|s| s.applies(res)) {
            simple(&mut out, &spec.path, &reference.kind);
        }
    }
    match res.kind() {
        "RoleBinding" | "ClusterRoleBinding" => {
            let kind = str_at(obj, &["roleRef", "kind"]);
            if !kind.is_empty() {
                simple(&mut out, "roleRef/name", kind);
            }
            if let Some(Value::Array(subjects)) = obj.get("subjects") {
                for (i, s) in subjects.iter().enumerate() {
                    if s.get("kind").and_then(Value::as_str) == Some("ServiceAccount") {
                        out.push(Ref {
                            ptr: format!("/subjects/{i}/name"),
                            kind: "ServiceAccount".into(),
                            namespace: s
                                .get("namespace")
                                .and_then(Value::as_str)
                                .map(str::to_string),
                            ns_ptr: Some(format!("/subjects/{i}/namespace")),
                        });
                    }
                }
            }
        }
        "HorizontalPodAutoscaler" => {
            let kind = str_at(obj, &["spec", "scaleTargetRef", "kind"]);
            if !kind.is_empty() {
                simple(&mut out, "spec/scaleTargetRef/name", kind);
            }
        }
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
            if let Some(Value::Array(hooks)) = obj.get("webhooks") {
                for (i, h) in hooks.iter().enumerate() {
                    if let Some(svc) = h.pointer("/clientConfig/service") {
                        out.push(Ref {
                            ptr: format!("/webhooks/{i}/clientConfig/service/name"),
                            kind: "Service".into(),
                            namespace: Some(str_at(svc, &["namespace"]).to_string()),
                            // The service's namespace follows the Service when it moved.
                            ns_ptr: Some(format!("/webhooks/{i}/clientConfig/service/namespace")),
                        });
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// JSON pointers of every string at `path` (`/`-separated) below `obj`; a list met on the way
/// (or at the end) is descended into, whether or not the segment marks it with `[]`.
fn pointers(obj: &Value, path: &str) -> Vec<String> {
    let mut current = vec![(String::new(), obj)];
    for segment in path.split('/') {
        let key = segment.strip_suffix("[]").unwrap_or(segment);
        let mut next = Vec::new();
        for (ptr, node) in current {
            let Some(child) = node.get(key) else {
                continue;
            };
            let child_ptr = format!("{ptr}/{}", key.replace('~', "~0").replace('/', "~1"));
            push_descending(&mut next, child_ptr, child);
        }
        current = next;
    }
    current
        .into_iter()
        .filter(|(_, v)| v.is_string())
        .map(|(p, _)| p)
        .collect()
}

/// Pushes `node`, or each element of it when it is a list.
fn push_descending<'a>(out: &mut Vec<(String, &'a Value)>, ptr: String, node: &'a Value) {
    match node {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                out.push((format!("{ptr}/{i}"), item));
            }
        }
        other => out.push((ptr, other)),
    }
}
