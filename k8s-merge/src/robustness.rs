//! Robustness: every entry point is fed pseudo-random documents, patches and managed fields,
//! shaped like Kubernetes objects so that the schema-guided paths are exercised. Errors are
//! fine; panics are not.

use serde_json::{Value, json};

use crate::testgen::{Rng, document};
use crate::{
    ListOrder, Schema, json_merge_patch, json_patch, ssa, strategic_merge_patch_with_order,
};

/// A Deployment-shaped object whose fields hold random values (sometimes of the wrong type).
fn deployment_like(rng: &mut Rng) -> Value {
    let pick = |rng: &mut Rng, typical: Value| {
        if rng.below(3) == 0 {
            document(rng, 3, true)
        } else {
            typical
        }
    };
    let containers = json!([
        {"name": "app", "image": "a", "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80}]},
        {"name": "b", "args": ["x"]}
    ]);
    let containers = pick(rng, containers);
    let labels = pick(rng, json!({"app": "web"}));
    let finalizers = pick(rng, json!(["a", "b"]));
    let strategy = pick(
        rng,
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}),
    );
    let directive = pick(rng, json!({"$patch": "replace"}));
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": labels, "finalizers": finalizers, "extra": directive},
        "spec": {"strategy": strategy, "template": {"spec": {"containers": containers}}}
    })
}

/// Random JSON patch operations over paths that exist in [`deployment_like`] objects.
fn operations(rng: &mut Rng) -> Value {
    let paths = [
        "",
        "/metadata",
        "/metadata/labels/app",
        "/metadata/finalizers/0",
        "/metadata/finalizers/-",
        "/spec/template/spec/containers/1",
        "/spec/template/spec/containers/9",
        "/x~1y",
        "/a~",
        "nope",
    ];
    let ops = ["add", "remove", "replace", "move", "copy", "test", "bogus"];
    let count = rng.below(4);
    let list = (0..count)
        .map(|_| {
            json!({
                "op": ops[rng.below(ops.len() as u64) as usize],
                "path": paths[rng.below(paths.len() as u64) as usize],
                "from": paths[rng.below(paths.len() as u64) as usize],
                "value": document(rng, 2, true),
            })
        })
        .collect();
    Value::Array(list)
}

#[test]
fn no_entry_point_panics_on_random_input() {
    let ty = Schema::builtin().kind_type("apps/v1", "Deployment");
    let mut rng = Rng::new(42);
    for _ in 0..300 {
        let original = deployment_like(&mut rng);
        let patch = deployment_like(&mut rng);
        let random = document(&mut rng, 4, true);
        for order in [ListOrder::Appended, ListOrder::Server, ListOrder::Kustomize] {
            for t in [ty, None] {
                let _ = strategic_merge_patch_with_order(&original, &patch, t, order);
                let _ = strategic_merge_patch_with_order(&original, &random, t, order);
                let _ = strategic_merge_patch_with_order(&random, &patch, t, order);
            }
        }
        let _ = json_merge_patch(&original, &random);
        let _ = json_patch(&original, &operations(&mut rng));
        let _ = json_patch(&random, &random);
        for t in [ty, None] {
            let applied = ssa::apply(Some(&original), &patch, "a", false, t, "t1");
            let live = applied.unwrap_or_else(|_| original.clone());
            let _ = ssa::apply(Some(&live), &random, "b", rng.below(2) == 0, t, "t2");
            let _ = ssa::apply(Some(&random), &patch, "c", true, t, "t2");
            let updated = ssa::record_update(Some(&live), &patch, "u", t, "t3");
            let _ = ssa::record_update(Some(&updated), &random, "v", t, "t4");
            let mut garbage = live.clone();
            garbage["metadata"]["managedFields"] = json!([{"manager": "g", "operation": "Apply",
                "fieldsType": "FieldsV1", "fieldsV1": random.clone()}]);
            let _ = ssa::apply(Some(&garbage), &patch, "a", false, t, "t5");
        }
    }
}
