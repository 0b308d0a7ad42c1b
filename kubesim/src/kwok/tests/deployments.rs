//! Tests of the deployment controller: ReplicaSets and revisions.

use serde_json::json;

use super::*;

#[test]
fn deployment_replica_set() {
    let d = deployment(3);
    let rs = replica_set_for(&d, 4);
    let name = rs["metadata"]["name"].as_str().unwrap();
    let hash = rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap();
    assert_eq!(name, format!("web-{hash}"));
    assert_eq!(name, replica_set_name(&d));
    assert_eq!(rs["metadata"]["namespace"], "prod");
    assert_eq!(rs["spec"]["replicas"], 3);
    assert_eq!(
        rs["spec"]["selector"]["matchLabels"],
        json!({"app": "web", "pod-template-hash": hash})
    );
    assert_eq!(
        rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"],
        hash
    );
    let annotations = &rs["metadata"]["annotations"];
    assert_eq!(annotations["deployment.kubernetes.io/revision"], "4");
    assert_eq!(
        annotations["deployment.kubernetes.io/desired-replicas"],
        "3"
    );
    assert_eq!(annotations["deployment.kubernetes.io/max-replicas"], "4");
    assert_eq!(annotations["team"], "a");
    assert!(
        annotations
            .get("kubectl.kubernetes.io/last-applied-configuration")
            .is_none()
    );
    assert_eq!(
        rs["metadata"]["ownerReferences"][0],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-uid",
            "controller": true, "blockOwnerDeletion": true})
    );
    assert_eq!(revision(&rs), 4);
    let mut changed = d.clone();
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    assert_ne!(replica_set_name(&changed), replica_set_name(&d));
}

#[test]
fn revision_annotation() {
    let mut d = deployment(1);
    assert_eq!(revision(&d), 0);
    mark_revision(&mut d, 3);
    assert_eq!(revision(&d), 3);
    assert_eq!(d["metadata"]["annotations"]["team"], "a");
}
