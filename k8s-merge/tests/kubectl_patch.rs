//! Conformance with the real implementations: every case is patched by `kubectl patch --local`
//! (kubectl 1.32, which runs apimachinery's `strategicpatch` with the built-in types' merge
//! keys, and evanphx/json-patch for JSON and merge patches) and by this crate, and the results
//! (or the refusals) must agree. Strategic merge patch is compared with [`ListOrder::Server`].

use std::path::Path;
use std::process::Command;

use k8s_merge::{
    ListOrder, Schema, json_merge_patch, json_patch, strategic_merge_patch_with_order,
};
use serde_json::{Value, json};

const KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32";

/// Runs `kubectl patch --local --type strategic` on `original`; `Err` carries kubectl's stderr.
fn kubectl_patch(dir: &Path, original: &Value, patch: &Value) -> Result<Value, String> {
    kubectl_patch_type(dir, original, patch, "strategic")
}

/// Runs `kubectl patch --local --type <kind>` on `original` with `patch`.
fn kubectl_patch_type(
    dir: &Path,
    original: &Value,
    patch: &Value,
    kind: &str,
) -> Result<Value, String> {
    assert!(
        Path::new(KUBECTL).exists(),
        "kubectl 1.32 is required at {KUBECTL}"
    );
    let file = dir.join("object.json");
    std::fs::write(&file, serde_json::to_vec(original).unwrap()).unwrap();
    let output = Command::new(KUBECTL)
        .args([
            "patch",
            "--local",
            "--type",
            kind,
            "-o",
            "json",
            "--kubeconfig",
            "/dev/null",
        ])
        .arg("-f")
        .arg(&file)
        .arg("-p")
        .arg(patch.to_string())
        .output()
        .unwrap();
    if output.status.success() {
        Ok(serde_json::from_slice(&output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a", "b"]},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "app:1", "args": ["--a"],
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "ports": [{"containerPort": 80, "protocol": "TCP"}],
                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                        {"name": "sidecar", "image": "proxy:1"},
                        {"name": "logger", "image": "log:1"}
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}],
                    "tolerations": [{"key": "k", "operator": "Exists"}]
                }
            }
        }
    })
}

fn pod_spec(spec: Value) -> Value {
    json!({"spec": {"template": {"spec": spec}}})
}

fn cases() -> Vec<(&'static str, Value)> {
    vec![
        (
            "scalar and map merge with null delete",
            json!({"metadata": {"labels": {"tier": null, "new": "x"}}, "spec": {"replicas": 5}}),
        ),
        (
            "new container goes first",
            pod_spec(json!({"containers": [{"name": "redis", "image": "redis"}]})),
        ),
        (
            "update one container",
            pod_spec(json!({"containers": [{"name": "sidecar", "image": "proxy:2"}]})),
        ),
        (
            "reorder named containers",
            pod_spec(
                json!({"containers": [{"name": "logger", "image": "log:2"}, {"name": "app", "image": "app:2"}]}),
            ),
        ),
        (
            "mixed new and existing",
            pod_spec(
                json!({"containers": [{"name": "sidecar", "image": "p"}, {"name": "new", "image": "n"}]}),
            ),
        ),
        (
            "nested env merge",
            pod_spec(
                json!({"containers": [{"name": "app", "env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}]}]}),
            ),
        ),
        (
            "ports merge by containerPort",
            pod_spec(json!({"containers": [{"name": "app", "ports": [{"containerPort": 443}]}]})),
        ),
        (
            "atomic args replaced",
            pod_spec(json!({"containers": [{"name": "app", "args": ["--b"]}]})),
        ),
        (
            "atomic tolerations replaced",
            pod_spec(json!({"tolerations": [{"key": "z", "operator": "Exists"}]})),
        ),
        (
            "delete directive",
            pod_spec(json!({"containers": [{"name": "sidecar", "$patch": "delete"}]})),
        ),
        (
            "replace directive on list",
            pod_spec(
                json!({"containers": [{"$patch": "replace"}, {"name": "only", "image": "o"}]}),
            ),
        ),
        (
            "replace directive on map",
            json!({"metadata": {"labels": {"$patch": "replace", "fresh": "1"}}}),
        ),
        (
            "delete directive on map",
            json!({"spec": {"strategy": {"$patch": "delete"}}}),
        ),
        (
            "finalizers union",
            json!({"metadata": {"finalizers": ["c", "a"]}}),
        ),
        (
            "delete from primitive list",
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        ),
        (
            "set element order",
            pod_spec(json!({
                "$setElementOrder/containers": [{"name": "logger"}, {"name": "x"}, {"name": "app"}],
                "containers": [{"name": "x", "image": "x"}]
            })),
        ),
        (
            "set element order of finalizers",
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
        ),
        (
            "retain keys",
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        ),
        (
            "volumes retain keys in items",
            pod_spec(
                json!({"volumes": [{"name": "data", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}),
            ),
        ),
        (
            "volume mounts by mountPath",
            pod_spec(
                json!({"containers": [{"name": "app", "volumeMounts": [{"name": "extra", "mountPath": "/extra"}]}]}),
            ),
        ),
        (
            "selector map merge",
            json!({"spec": {"selector": {"matchLabels": {"extra": "1"}}}}),
        ),
        (
            "new nested structure",
            pod_spec(
                json!({"initContainers": [{"name": "init", "image": "i"}], "nodeSelector": {"disk": "ssd"}}),
            ),
        ),
    ]
}

#[test]
fn strategic_merge_patch_matches_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let ty = Schema::builtin().kind_type("apps/v1", "Deployment");
    let original = deployment();
    for (name, patch) in cases() {
        let expected = kubectl_patch(dir.path(), &original, &patch)
            .unwrap_or_else(|e| panic!("{name}: kubectl: {e}"));
        let ours = strategic_merge_patch_with_order(&original, &patch, ty, ListOrder::Server)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            ours, expected,
            "{name}\nours:     {ours}\nexpected: {expected}"
        );
    }
}

#[test]
fn rejected_patches_match_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let ty = Schema::builtin().kind_type("apps/v1", "Deployment");
    let original = deployment();
    let bad = [
        (
            "item without merge key",
            pod_spec(json!({"containers": [{"image": "x"}]})),
        ),
        (
            "delete without merge key",
            pod_spec(json!({"containers": [{"$patch": "delete"}]})),
        ),
        (
            "merge directive on a list item",
            pod_spec(json!({"containers": [{"name": "app", "$patch": "merge"}]})),
        ),
        (
            "merge directive on a map",
            json!({"metadata": {"labels": {"$patch": "merge", "x": "y"}}}),
        ),
        (
            "unknown directive",
            json!({"metadata": {"labels": {"$patch": "explode"}}}),
        ),
        (
            "retain keys missing a set key",
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 3}}}}),
        ),
        (
            "order contradicts patch",
            pod_spec(json!({
                "$setElementOrder/containers": [{"name": "app"}],
                "containers": [{"name": "zzz", "image": "z"}]
            })),
        ),
    ];
    for (name, patch) in bad {
        assert!(
            kubectl_patch(dir.path(), &original, &patch).is_err(),
            "{name}: kubectl accepted it"
        );
        assert!(
            strategic_merge_patch_with_order(&original, &patch, ty, ListOrder::Server).is_err(),
            "{name}: accepted"
        );
    }
}

#[test]
fn json_patch_matches_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let original = deployment();
    let accepted = [
        json!([{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
               {"op": "move", "from": "/metadata/finalizers/0", "path": "/metadata/finalizers/-"},
               {"op": "copy", "from": "/metadata/name", "path": "/metadata/labels/n"},
               {"op": "test", "path": "/metadata/name", "value": "web"},
               {"op": "replace", "path": "/spec/template/spec/containers/1/image", "value": "x"},
               {"op": "remove", "path": "/spec/template/spec/containers/2"},
               {"op": "add", "path": "/spec/template/spec/containers/0/args/0", "value": "--first"}]),
        json!([{"op": "add", "path": "/metadata/labels/a~1b", "value": "slash"},
               {"op": "replace", "path": "/spec/replicas", "value": 7}]),
    ];
    for ops in accepted {
        let expected = kubectl_patch_type(dir.path(), &original, &ops, "json")
            .unwrap_or_else(|e| panic!("{ops}: {e}"));
        assert_eq!(json_patch(&original, &ops).unwrap(), expected, "{ops}");
    }
    let refused = [
        json!([{"op": "remove", "path": "/metadata/nothere"}]),
        json!([{"op": "test", "path": "/metadata/name", "value": "x"}]),
        json!([{"op": "add", "path": "/metadata/a/b", "value": 1}]),
        json!([{"op": "replace", "path": "/spec/template/spec/containers/9/image", "value": 1}]),
    ];
    for ops in refused {
        assert!(
            kubectl_patch_type(dir.path(), &original, &ops, "json").is_err(),
            "kubectl accepted {ops}"
        );
        assert!(json_patch(&original, &ops).is_err(), "accepted {ops}");
    }
}

#[test]
fn json_merge_patch_matches_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let original = deployment();
    let patches = [
        json!({"metadata": {"labels": {"tier": null, "x": "y"}}, "spec": {"replicas": 1}}),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "o"}]}}}}),
        json!({"spec": {"strategy": null}}),
    ];
    for patch in patches {
        let expected = kubectl_patch_type(dir.path(), &original, &patch, "merge").unwrap();
        assert_eq!(json_merge_patch(&original, &patch), expected, "{patch}");
    }
}
