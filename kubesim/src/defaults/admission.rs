//! The Pod admission plugins a v1.32 cluster runs by default: ServiceAccount (with its projected
//! token volume), DefaultTolerationSeconds and Priority.

use serde_json::{Map, Value, json};

use super::fields::{array_objects, default, default_str};

/// The Pod admission plugins' changes to a new Pod, as a v1.32 cluster with the default
/// plugins makes them:
/// * ServiceAccount: `serviceAccountName`/`serviceAccount` default to `default`; unless
///   `automountServiceAccountToken` is false, a projected `kube-api-access-SUFFIX` volume
///   (token, `kube-root-ca.crt`, namespace) mounted read-only at
///   `/var/run/secrets/kubernetes.io/serviceaccount` in every container. The real suffix is
///   random: the server passes one (e.g. derived from the pod name).
/// * DefaultTolerationSeconds: NoExecute tolerations of `node.kubernetes.io/not-ready` and
///   `node.kubernetes.io/unreachable` for 300 s.
/// * Priority: `priority` 0 and `preemptionPolicy` PreemptLowerPriority when no class is named.
pub fn admit_pod(pod: &mut Value, token_volume_suffix: &str) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default_str(spec, "serviceAccountName", "default");
    let account = spec
        .get("serviceAccountName")
        .cloned()
        .unwrap_or_else(|| json!("default"));
    spec.insert("serviceAccount".into(), account);
    if spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        != Some(false)
    {
        mount_service_account_token(spec, token_volume_suffix);
    }
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    if let Some(tolerations) = tolerations.as_array_mut() {
        for taint in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let present = tolerations.iter().any(|t| {
                t.get("key").and_then(Value::as_str) == Some(taint)
                    && t.get("effect")
                        .and_then(Value::as_str)
                        .is_none_or(|e| e == "NoExecute")
            });
            if !present {
                tolerations.push(json!({
                    "effect": "NoExecute",
                    "key": taint,
                    "operator": "Exists",
                    "tolerationSeconds": 300
                }));
            }
        }
    }
    if spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        default(spec, "priority", json!(0));
    }
    default_str(spec, "preemptionPolicy", "PreemptLowerPriority");
}

/// The ServiceAccount admission plugin's projected token volume and its mounts.
fn mount_service_account_token(spec: &mut Map<String, Value>, suffix: &str) {
    const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let volume_name = format!("kube-api-access-{suffix}");
    let mut already_mounted = false;
    for list in ["containers", "initContainers"] {
        for container in array_objects(spec, list) {
            let mounts = container.get("volumeMounts").and_then(Value::as_array);
            if mounts.is_some_and(|mounts| {
                mounts
                    .iter()
                    .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH))
            }) {
                already_mounted = true;
            }
        }
    }
    if already_mounted {
        return;
    }
    for list in ["containers", "initContainers"] {
        for container in array_objects(spec, list) {
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            if let Some(mounts) = mounts.as_array_mut() {
                mounts.push(json!({
                    "mountPath": MOUNT_PATH,
                    "name": volume_name,
                    "readOnly": true
                }));
            }
        }
    }
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Some(volumes) = volumes.as_array_mut() {
        volumes.push(json!({
            "name": volume_name,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                    {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}
                ]
            }
        }));
    }
}
