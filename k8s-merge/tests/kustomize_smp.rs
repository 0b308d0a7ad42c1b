//! Conformance of [`ListOrder::Kustomize`] with kustomize: every case is rendered by
//! `kubectl kustomize` (kubectl 1.32 embeds kustomize v5) from a resource and a strategic merge
//! patch, and must equal `strategic_merge_patch_with_order(.., ListOrder::Kustomize)`.
//! (kustomize leaves `$deleteFromPrimitiveList` unprocessed in its output; this crate applies
//! it, so that directive is not compared here.)

use std::path::Path;
use std::process::Command;

use k8s_merge::{ListOrder, Schema, strategic_merge_patch_with_order};
use serde_json::{Value, json};

const KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32";

/// Runs kubectl with `args`, returning stdout.
fn kubectl(args: &[&str]) -> String {
    assert!(
        Path::new(KUBECTL).exists(),
        "kubectl 1.32 is required at {KUBECTL}"
    );
    let output = Command::new(KUBECTL).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Renders `resource` patched by `patch` with `kubectl kustomize`, as JSON.
fn kustomize(dir: &Path, resource: &Value, patch: &Value) -> Value {
    std::fs::write(dir.join("resource.json"), resource.to_string()).unwrap();
    std::fs::write(dir.join("patch.json"), patch.to_string()).unwrap();
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources: [resource.json]\npatches:\n- path: patch.json\n",
    )
    .unwrap();
    let rendered = kubectl(&["kustomize", dir.to_str().unwrap()]);
    let out = dir.join("out.yaml");
    std::fs::write(&out, rendered).unwrap();
    // kubectl turns the YAML into JSON without touching it (an empty local merge patch).
    let json = kubectl(&[
        "patch",
        "--local",
        "--type",
        "merge",
        "-p",
        "{}",
        "-o",
        "json",
        "--kubeconfig",
        "/dev/null",
        "-f",
        out.to_str().unwrap(),
    ]);
    serde_json::from_str(&json).unwrap()
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a", "b", "c"]},
        "spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "app:1", "args": ["--a"],
             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
            {"name": "sidecar", "image": "proxy:1"},
            {"name": "logger", "image": "log:1"}
        ]}}}
    })
}

/// A kustomize patch file: the target's identity plus `body`.
fn patch(body: Value) -> Value {
    let target =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    let mut patch = body;
    for (key, value) in target.as_object().unwrap() {
        match (patch.get_mut(key), value) {
            (Some(Value::Object(meta)), Value::Object(name)) => meta.extend(name.clone()),
            _ => {
                patch[key] = value.clone();
            }
        }
    }
    patch
}

#[test]
fn kustomize_list_order_matches_kubectl_kustomize() {
    let dir = tempfile::tempdir().unwrap();
    let ty = Schema::builtin().kind_type("apps/v1", "Deployment");
    let original = deployment();
    let containers = |list: Value| json!({"spec": {"template": {"spec": {"containers": list}}}});
    let cases = [
        containers(
            json!([{"name": "logger", "image": "log:2"}, {"name": "new", "image": "n"},
            {"name": "app", "env": [{"name": "C", "value": "3"}, {"name": "A", "value": "9"}]}]),
        ),
        containers(json!([{"name": "redis", "image": "redis"}])),
        containers(json!([{"name": "sidecar", "image": "p"}, {"name": "app", "image": "a"}])),
        containers(json!([{"name": "app", "args": ["--b"]}])),
        containers(json!([{"name": "sidecar", "$patch": "delete"}])),
        json!({"metadata": {"finalizers": ["z", "b"]}}),
        json!({"metadata": {"labels": {"tier": "back", "extra": "x"}}}),
        json!({"metadata": {"labels": {"tier": null}}}),
        containers(json!([{"$patch": "replace"}, {"name": "only", "image": "o"}])),
    ];
    for body in cases {
        let patch = patch(body);
        let expected = kustomize(dir.path(), &original, &patch);
        let ours =
            strategic_merge_patch_with_order(&original, &patch, ty, ListOrder::Kustomize).unwrap();
        assert_eq!(
            ours, expected,
            "patch {patch}\nours:     {ours}\nexpected: {expected}"
        );
    }
}
