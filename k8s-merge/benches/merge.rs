//! Throughput of the merge functions on a typical Deployment, printed as operations per second
//! (`cargo bench -p k8s-merge`). kubesim's targets (≥ 1,000 applies/s) depend on these.

use std::hint::black_box;
use std::time::{Duration, Instant};

use k8s_merge::{
    ListOrder, Schema, json_merge_patch, json_patch, ssa, strategic_merge_patch_with_order,
};
use serde_json::{Value, json};

/// Runs `f` repeatedly for about `budget` and returns operations per second.
fn rate(budget: Duration, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut count = 0u64;
    while start.elapsed() < budget {
        for _ in 0..16 {
            f();
        }
        count += 16;
    }
    count as f64 / start.elapsed().as_secs_f64()
}

fn deployment(image: &str, replicas: u32) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "team": "a"},
                     "annotations": {"note": "x"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "app", "image": image, "args": ["--port=8080"],
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}],
                     "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                     "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                    {"name": "sidecar", "image": "envoy:1", "ports": [{"containerPort": 9901}]}
                ],
                "volumes": [{"name": "data", "emptyDir": {}}]}
            }
        }
    })
}

fn main() {
    let budget = Duration::from_millis(700);
    let start = Instant::now();
    let ty = Schema::builtin().kind_type("apps/v1", "Deployment");
    println!(
        "schema load (first use): {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );

    let original = deployment("app:1", 2);
    let patch = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
        {"name": "app", "image": "app:2", "env": [{"name": "D", "value": "4"}]}]}}}});
    for order in [ListOrder::Appended, ListOrder::Server] {
        let r = rate(budget, || {
            black_box(strategic_merge_patch_with_order(&original, &patch, ty, order).ok());
        });
        println!("strategic merge patch ({order:?}): {r:.0} ops/s");
    }
    let r = rate(budget, || {
        black_box(json_merge_patch(&original, &patch));
    });
    println!("JSON merge patch: {r:.0} ops/s");
    let ops = json!([{"op": "replace", "path": "/spec/replicas", "value": 5},
                     {"op": "add", "path": "/metadata/labels/x", "value": "y"}]);
    let r = rate(budget, || {
        black_box(json_patch(&original, &ops).ok());
    });
    println!("JSON patch: {r:.0} ops/s");

    let r = rate(budget, || {
        black_box(
            ssa::apply(
                None,
                &original,
                "kubectl",
                false,
                ty,
                "2026-01-01T00:00:00Z",
            )
            .ok(),
        );
    });
    println!("server-side apply, create: {r:.0} ops/s");
    let live = ssa::apply(
        None,
        &original,
        "kubectl",
        false,
        ty,
        "2026-01-01T00:00:00Z",
    )
    .unwrap_or(Value::Null);
    let changed = deployment("app:2", 3);
    let r = rate(budget, || {
        black_box(
            ssa::apply(
                Some(&live),
                &changed,
                "kubectl",
                false,
                ty,
                "2026-01-01T00:01:00Z",
            )
            .ok(),
        );
    });
    println!("server-side apply, update by the same manager: {r:.0} ops/s");
    let r = rate(budget, || {
        black_box(
            ssa::apply(
                Some(&live),
                &changed,
                "other",
                true,
                ty,
                "2026-01-01T00:01:00Z",
            )
            .ok(),
        );
    });
    println!("server-side apply, forced by another manager: {r:.0} ops/s");
    let cm_ty = Schema::builtin().kind_type("v1", "ConfigMap");
    let cm = |value: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default",
               "labels": {"app": "web"}}, "data": {"a": value, "b": "2", "c": "3"}})
    };
    let cm_live = ssa::apply(
        None,
        &cm("1"),
        "kubectl",
        false,
        cm_ty,
        "2026-01-01T00:00:00Z",
    )
    .unwrap_or(Value::Null);
    let cm_changed = cm("x");
    let r = rate(budget, || {
        black_box(
            ssa::apply(
                Some(&cm_live),
                &cm_changed,
                "kubectl",
                false,
                cm_ty,
                "2026-01-01T00:01:00Z",
            )
            .ok(),
        );
    });
    println!("server-side apply of a ConfigMap, update: {r:.0} ops/s");
    let r = rate(budget, || {
        black_box(ssa::record_update(
            Some(&live),
            &changed,
            "controller",
            ty,
            "2026-01-01T00:02:00Z",
        ));
    });
    println!("managed fields for an update: {r:.0} ops/s");
}
