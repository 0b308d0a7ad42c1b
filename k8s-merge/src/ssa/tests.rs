//! Server-side apply scenarios, following structured-merge-diff's semantics.

use serde_json::{Value, json};

use super::*;
use crate::schema::Schema;

const T1: &str = "2026-01-01T00:00:00Z";
const T2: &str = "2026-01-01T00:01:00Z";

fn ty() -> Option<TypeRef<'static>> {
    Schema::builtin().kind_type("apps/v1", "Deployment")
}

fn config(replicas: Option<u32>, labels: Value, containers: Value) -> Value {
    let mut spec = json!({
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}
    });
    if let Some(replicas) = replicas {
        spec["replicas"] = json!(replicas);
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": labels},
        "spec": spec
    })
}

fn app(image: &str) -> Value {
    json!([{"name": "app", "image": image, "ports": [{"containerPort": 80}]}])
}

fn managed(object: &Value) -> &Vec<Value> {
    object["metadata"]["managedFields"].as_array().unwrap()
}

fn entry<'a>(object: &'a Value, manager: &str) -> &'a Value {
    managed(object)
        .iter()
        .find(|e| e["manager"] == manager)
        .unwrap()
}

fn conflicts(result: Result<Value, ApplyError>) -> Vec<(String, String)> {
    match result {
        Err(ApplyError::Conflicts(list)) => {
            list.into_iter().map(|c| (c.manager, c.field)).collect()
        }
        other => panic!("expected conflicts, got {other:?}"),
    }
}

#[test]
fn create_on_apply_records_the_applied_field_set() {
    let applied = config(Some(2), json!({"app": "web"}), app("nginx:1"));
    let out = apply(None, &applied, "kubectl", false, ty(), T1).unwrap();
    let mut expected = applied.clone();
    expected["metadata"]["managedFields"] = json!([{
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": T1,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                    }}}
                }
            }
        }
    }]);
    assert_eq!(out, expected);
}

#[test]
fn conflicting_values_are_refused_unless_forced() {
    let live = apply(
        None,
        &config(Some(2), json!({}), app("nginx:1")),
        "alice",
        false,
        ty(),
        T1,
    )
    .unwrap();
    let bob = config(Some(5), json!({}), app("nginx:2"));
    let result = apply(Some(&live), &bob, "bob", false, ty(), T2);
    let err = result.clone().unwrap_err();
    assert_eq!(
        conflicts(result),
        [
            ("alice".to_owned(), ".spec.replicas".to_owned()),
            (
                "alice".to_owned(),
                ".spec.template.spec.containers[name=\"app\"].image".to_owned()
            )
        ]
    );
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"app\"].image"
    );

    let forced = apply(Some(&live), &bob, "bob", true, ty(), T2).unwrap();
    assert_eq!(forced["spec"]["replicas"], 5);
    let alice = &entry(&forced, "alice")["fieldsV1"];
    assert!(alice["f:spec"].get("f:replicas").is_none(), "{alice}");
    assert!(
        alice["f:spec"]["f:selector"].is_object(),
        "shared fields stay shared"
    );
    assert!(entry(&forced, "bob")["fieldsV1"]["f:spec"]["f:replicas"].is_object());
}

#[test]
fn equal_values_are_shared_without_conflict() {
    let applied = config(Some(2), json!({}), app("nginx:1"));
    let live = apply(None, &applied, "alice", false, ty(), T1).unwrap();
    let out = apply(Some(&live), &applied, "bob", false, ty(), T2).unwrap();
    assert_eq!(managed(&out).len(), 2);
    assert_eq!(
        entry(&out, "alice")["fieldsV1"],
        entry(&out, "bob")["fieldsV1"]
    );
}

#[test]
fn single_conflict_message_names_update_managers_like_the_api_server() {
    let created = record_update(
        None,
        &config(Some(1), json!({}), app("a")),
        "kubectl-create",
        ty(),
        T1,
    );
    let err = apply(
        Some(&created),
        &config(Some(3), json!({}), app("a")),
        "kubectl",
        false,
        ty(),
        T2,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1: .spec.replicas"
    );
    let ApplyError::Conflicts(list) = err else {
        unreachable!()
    };
    assert_eq!(
        list[0].cause_message(),
        "conflict with \"kubectl-create\" using apps/v1".to_string()
    );
}

#[test]
fn fields_no_longer_applied_are_removed_unless_owned_elsewhere() {
    let live = apply(
        None,
        &config(Some(2), json!({"app": "web", "tier": "x"}), app("a")),
        "alice",
        false,
        ty(),
        T1,
    )
    .unwrap();
    let out = apply(
        Some(&live),
        &config(None, json!({"app": "web"}), app("a")),
        "alice",
        false,
        ty(),
        T2,
    )
    .unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"app": "web"}));
    assert!(out["spec"].get("replicas").is_none());
    assert!(
        entry(&out, "alice")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );

    // Bob shares the tier label and takes replicas with an update: both survive Alice dropping them.
    let shared = apply(
        Some(&live),
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"tier": "x"}}}),
        "bob",
        false,
        ty(),
        T2,
    )
    .unwrap();
    let mut updated = shared.clone();
    updated["spec"]["replicas"] = json!(4);
    let updated = record_update(Some(&shared), &updated, "bob-controller", ty(), T2);
    assert!(
        entry(&updated, "alice")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    let out = apply(
        Some(&updated),
        &config(None, json!({"app": "web"}), app("a")),
        "alice",
        false,
        ty(),
        T2,
    )
    .unwrap();
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "tier": "x"})
    );
    assert_eq!(out["spec"]["replicas"], 4);
}

#[test]
fn map_lists_merge_by_key_and_dropped_items_are_removed() {
    let live = apply(
        None,
        &config(None, json!({}), app("a")),
        "alice",
        false,
        ty(),
        T1,
    )
    .unwrap();
    let sidecar = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "envoy"}]}}}});
    let out = apply(Some(&live), &sidecar, "mesh", false, ty(), T2).unwrap();
    let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "proxy"]);
    // Alice now applies a different container: hers goes, the mesh's stays.
    let out = apply(
        Some(&out),
        &config(None, json!({}), json!([{"name": "web", "image": "w"}])),
        "alice",
        false,
        ty(),
        T2,
    )
    .unwrap();
    let containers = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers,
        &json!([{"name": "proxy", "image": "envoy"}, {"name": "web", "image": "w"}])
    );
}

#[test]
fn set_lists_are_unions_tracked_by_value() {
    let a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["x"]}});
    let b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["y"]}});
    let cm = Schema::builtin().kind_type("v1", "ConfigMap");
    let live = apply(None, &a, "a", false, cm, T1).unwrap();
    let out = apply(Some(&live), &b, "b", false, cm, T2).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["x", "y"]));
    assert_eq!(
        entry(&out, "b")["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"y\"": {}}}})
    );
}

#[test]
fn atomic_lists_and_maps_are_replaced_and_owned_whole() {
    let live = apply(
        None,
        &config(
            None,
            json!({}),
            json!([{"name": "app", "args": ["a", "b"]}]),
        ),
        "m",
        false,
        ty(),
        T1,
    )
    .unwrap();
    let out = apply(
        Some(&live),
        &config(None, json!({}), json!([{"name": "app", "args": ["c"]}])),
        "m",
        false,
        ty(),
        T2,
    )
    .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["c"])
    );
    let fields = &entry(&out, "m")["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"];
    assert_eq!(fields["f:args"], json!({}));
    assert_eq!(
        entry(&out, "m")["fieldsV1"]["f:spec"]["f:selector"],
        json!({})
    );
}

#[test]
fn untyped_objects_merge_maps_and_replace_lists() {
    let cr = |items: Value, extra: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"items": items, "extra": extra}})
    };
    let live = apply(
        None,
        &cr(json!([1, 2]), json!({"a": 1})),
        "one",
        false,
        None,
        T1,
    )
    .unwrap();
    let out = apply(
        Some(&live),
        &cr(json!([3]), json!({"b": 2})),
        "two",
        true,
        None,
        T2,
    )
    .unwrap();
    assert_eq!(out["spec"]["items"], json!([3]));
    assert_eq!(out["spec"]["extra"], json!({"a": 1, "b": 2}));
    assert_eq!(
        entry(&out, "two")["fieldsV1"],
        json!({"f:spec": {".": {}, "f:extra": {".": {}, "f:b": {}}, "f:items": {}}})
    );
    assert_eq!(
        entry(&out, "one")["fieldsV1"],
        json!({"f:spec": {".": {}, "f:extra": {".": {}, "f:a": {}}}})
    );
    // Dropping the map removes this manager's keys; the other manager's key stays.
    let mut without_extra = cr(json!([3]), json!(null));
    without_extra["spec"]
        .as_object_mut()
        .unwrap()
        .remove("extra");
    let out = apply(Some(&out), &without_extra, "two", false, None, T2).unwrap();
    assert_eq!(out["spec"]["extra"], json!({"a": 1}));
    assert_eq!(
        entry(&out, "two")["fieldsV1"],
        json!({"f:spec": {".": {}, "f:items": {}}})
    );
}

#[test]
fn server_owned_metadata_is_never_tracked() {
    let mut live = config(Some(1), json!({}), app("a"));
    live["metadata"]["uid"] = json!("1234");
    live["metadata"]["resourceVersion"] = json!("7");
    live["metadata"]["generation"] = json!(1);
    live["metadata"]["creationTimestamp"] = json!(T1);
    let created = record_update(None, &live, "creator", ty(), T1);
    let fields = &entry(&created, "creator")["fieldsV1"];
    let metadata = fields["f:metadata"].as_object().unwrap();
    assert!(metadata.keys().all(|k| k == "f:labels"), "{fields}");
    assert!(fields.get("f:apiVersion").is_none() && fields.get("f:kind").is_none());
}

#[test]
fn record_update_tracks_changed_fields_and_takes_them_from_others() {
    let created = record_update(
        None,
        &config(Some(1), json!({"app": "web"}), app("a")),
        "creator",
        ty(),
        T1,
    );
    let fields = &entry(&created, "creator")["fieldsV1"];
    assert_eq!(
        fields["f:metadata"],
        json!({"f:labels": {".": {}, "f:app": {}}})
    );
    assert_eq!(entry(&created, "creator")["operation"], "Update");

    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(3);
    let out = record_update(Some(&created), &scaled, "autoscaler", ty(), T2);
    assert_eq!(
        entry(&out, "autoscaler")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert_eq!(entry(&out, "autoscaler")["time"], T2);
    assert!(
        entry(&out, "creator")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert_eq!(entry(&out, "creator")["time"], T1);
    // Apply entries sort before Update entries, then by time.
    let ops: Vec<&str> = managed(&out)
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["creator", "autoscaler"]);

    // An update that changes nothing adds no entry.
    let same = record_update(Some(&out), &out, "noop", ty(), T2);
    assert_eq!(managed(&same).len(), 2);
    // Removing a field removes it from its owner.
    let mut dropped = out.clone();
    dropped["metadata"]["labels"] = json!({});
    let after = record_update(Some(&out), &dropped, "editor", ty(), T2);
    assert_eq!(
        entry(&after, "creator")["fieldsV1"]["f:metadata"],
        json!({"f:labels": {}})
    );
    dropped["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("labels");
    let after = record_update(Some(&out), &dropped, "editor", ty(), T2);
    assert!(
        entry(&after, "creator")["fieldsV1"]
            .get("f:metadata")
            .is_none()
    );
}

#[test]
fn subresource_entries_are_separate() {
    let created = record_update(None, &config(Some(1), json!({}), app("a")), "m", ty(), T1);
    let mut with_status = created.clone();
    with_status["status"] = json!({"replicas": 1});
    let out =
        record_update_subresource(Some(&created), &with_status, "m", Some("status"), ty(), T2);
    assert_eq!(managed(&out).len(), 2);
    let status = managed(&out)
        .iter()
        .find(|e| e.get("subresource").is_some())
        .unwrap();
    assert_eq!(status["subresource"], "status");
    assert_eq!(status["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
}

#[test]
fn invalid_input_and_malformed_managed_fields() {
    let mut with_fields = config(Some(1), json!({}), app("a"));
    with_fields["metadata"]["managedFields"] = json!([]);
    let err = apply(None, &with_fields, "m", false, ty(), T1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid apply configuration: metadata.managedFields must be nil"
    );
    assert!(matches!(
        apply(None, &json!([1]), "m", false, ty(), T1),
        Err(ApplyError::Invalid(_))
    ));
    let mut live = config(Some(1), json!({}), app("a"));
    live["metadata"]["managedFields"] = json!([
        {"manager": "broken", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"nonsense": {}}},
        {"manager": "other-format", "operation": "Update", "fieldsType": "FieldsV2", "fieldsV2": {}},
        "not an entry"
    ]);
    let out = apply(
        Some(&live),
        &config(Some(2), json!({}), app("a")),
        "m",
        false,
        ty(),
        T2,
    )
    .unwrap();
    assert_eq!(managed(&out).len(), 1);
    assert_eq!(out["spec"]["replicas"], 2);
}

/// Property: applying the same configuration again changes nothing.
#[test]
fn property_reapply_is_idempotent() {
    for (index, image) in ["a", "b:1", "c@sha256:00"].iter().enumerate() {
        let applied = config(
            Some(index as u32),
            json!({"i": index.to_string()}),
            app(image),
        );
        let once = apply(None, &applied, "m", false, ty(), T1).unwrap();
        let twice = apply(Some(&once), &applied, "m", false, ty(), T1).unwrap();
        assert_eq!(once, twice);
    }
}

/// Property: the applier's entry round-trips through FieldsV1 and equals the config's field set.
#[test]
fn property_field_sets_round_trip() {
    for generated in crate::testgen::documents(100, false) {
        let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": generated});
        let out = apply(
            None,
            &applied,
            "m",
            false,
            Schema::builtin().kind_type("v1", "ConfigMap"),
            T1,
        )
        .unwrap();
        if let Some(list) = out["metadata"].get("managedFields") {
            let fields = &list[0]["fieldsV1"];
            assert_eq!(
                &FieldSet::from_fields_v1(fields).unwrap().to_fields_v1(),
                fields
            );
        }
    }
}

#[test]
fn entry_times_move_only_when_the_object_changes() {
    let applied = config(Some(1), json!({}), app("a"));
    let once = apply(None, &applied, "m", false, ty(), T1).unwrap();
    let again = apply(Some(&once), &applied, "m", false, ty(), T2).unwrap();
    assert_eq!(entry(&again, "m")["time"], T1);
    let changed = apply(
        Some(&once),
        &config(Some(2), json!({}), app("a")),
        "m",
        false,
        ty(),
        T2,
    )
    .unwrap();
    assert_eq!(entry(&changed, "m")["time"], T2);
    let updated = record_update(Some(&changed), &changed, "m", ty(), T2);
    assert_eq!(managed(&updated).len(), 1, "a no-op update adds no entry");
}

#[test]
fn kept_list_items_keep_their_key_fields() {
    let live = apply(
        None,
        &config(None, json!({}), app("a")),
        "alice",
        false,
        ty(),
        T1,
    )
    .unwrap();
    // Bob takes the image of Alice's container; Alice then stops applying the container.
    let bob = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "b"}]}}}});
    let shared = apply(Some(&live), &bob, "bob", true, ty(), T2).unwrap();
    let out = apply(
        Some(&shared),
        &config(None, json!({}), json!([])),
        "alice",
        false,
        ty(),
        T2,
    )
    .unwrap();
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app", "image": "b"}])
    );
}

#[test]
fn maps_emptied_by_removal_are_removed() {
    let with_tier = config(None, json!({"tier": "x"}), app("a"));
    let live = apply(None, &with_tier, "alice", false, ty(), T1).unwrap();
    let mut without = with_tier.clone();
    without["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("labels");
    let out = apply(Some(&live), &without, "alice", false, ty(), T2).unwrap();
    assert!(
        out["metadata"].get("labels").is_none(),
        "{}",
        out["metadata"]
    );
}

#[test]
fn requests_may_replace_or_reset_managed_fields() {
    let created = record_update(
        None,
        &config(Some(1), json!({}), app("a")),
        "creator",
        ty(),
        T1,
    );
    let mut scaled = created.clone();
    scaled["spec"]["replicas"] = json!(2);
    // Stored entries are kept when the request omits or empties them.
    for request in [json!(null), json!([])] {
        let mut body = scaled.clone();
        body["metadata"]["managedFields"] = request;
        let out = record_update(Some(&created), &body, "scaler", ty(), T2);
        assert_eq!(managed(&out).len(), 2);
    }
    // A single empty entry resets them: only this update's changes remain tracked.
    let mut body = scaled.clone();
    body["metadata"]["managedFields"] = json!([{}]);
    let out = record_update(Some(&created), &body, "scaler", ty(), T2);
    assert_eq!(managed(&out).len(), 1);
    assert_eq!(
        entry(&out, "scaler")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    // Valid entries in the request replace the stored ones.
    let mut body = scaled.clone();
    body["metadata"]["managedFields"] = json!([{"manager": "imported", "operation": "Update",
        "apiVersion": "apps/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}}]);
    let out = record_update(Some(&created), &body, "scaler", ty(), T2);
    let names: Vec<&str> = managed(&out)
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["imported", "scaler"]);
}

#[test]
fn applied_nulls_remove_fields_and_conflict_with_their_owners() {
    let live = apply(
        None,
        &config(Some(3), json!({}), app("a")),
        "alice",
        false,
        ty(),
        T1,
    )
    .unwrap();
    let mut nulled = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": null}});
    assert_eq!(
        conflicts(apply(Some(&live), &nulled, "bob", false, ty(), T2)),
        [("alice".to_owned(), ".spec.replicas".to_owned())]
    );
    let out = apply(Some(&live), &nulled, "bob", true, ty(), T2).unwrap();
    assert!(out["spec"].get("replicas").is_none());
    assert_eq!(
        entry(&out, "bob")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert!(
        entry(&out, "alice")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    // Nulling a field nobody has is no conflict.
    nulled["spec"] = json!({"paused": null});
    assert!(apply(Some(&live), &nulled, "bob", false, ty(), T2).is_ok());
}
