//! Tests across every kind: malformed objects, unknown kinds, odd JSON, and idempotence.

use serde_json::{Value, json};

use super::*;

#[test]
fn malformed_objects_and_unknown_kinds_are_left_alone() {
    let mut odd = json!({"spec": "not an object"});
    apply_defaults("apps/v1", "Deployment", &mut odd);
    assert_eq!(odd["spec"], "not an object");
    let mut containers = json!({"spec": {"containers": "x", "volumes": [1, null]}});
    apply_defaults("v1", "Pod", &mut containers);
    assert_eq!(containers["spec"]["containers"], "x");
    let mut scalar = json!(3);
    apply_defaults("v1", "Pod", &mut scalar);
    assert_eq!(scalar, json!(3));
    let custom = json!({"spec": {"size": 1}});
    assert_eq!(
        defaulted("example.com/v1", "Widget", custom.clone()),
        custom
    );
}

#[test]
fn odd_json_anywhere_never_panics() {
    let kinds = [
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "ReplicaSet"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("v1", "Pod"),
        ("v1", "PodTemplate"),
        ("v1", "ReplicationController"),
        ("v1", "Service"),
        ("v1", "Secret"),
        ("v1", "Namespace"),
        ("v1", "PersistentVolumeClaim"),
        ("autoscaling/v2", "HorizontalPodAutoscaler"),
        ("autoscaling/v1", "HorizontalPodAutoscaler"),
        ("networking.k8s.io/v1", "Ingress"),
        ("policy/v1", "PodDisruptionBudget"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ];
    let odd_values = [
        json!(null),
        json!("x"),
        json!(-1),
        json!(true),
        json!([null, 1, "s"]),
        json!({"k": [{}]}),
    ];
    let full = json!({
        "metadata": {"name": "n", "labels": {}},
        "spec": {"template": {"metadata": {"labels": {}}, "spec": {
            "containers": [{"name": "c", "image": "i", "ports": [{}], "livenessProbe": {"httpGet": {}, "grpc": {}},
                "lifecycle": {"preStop": {"httpGet": {}}}, "env": [{"valueFrom": {"fieldRef": {}, "resourceFieldRef": {}}}],
                "resources": {"limits": {}}, "volumeMounts": [{}]}],
            "volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {}, "downwardAPI": {"items": [{}]}}]},
                "downwardAPI": {"items": [{}]}, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}},
            "jobTemplate": {"spec": {"template": {}}}, "ports": [{"port": 80}], "strategy": {}, "updateStrategy": {},
            "volumeClaimTemplates": [{}], "behavior": {"scaleUp": {}}, "names": {"kind": "K"}, "podFailurePolicy": {"rules": [{}]},
            "selector": {}, "sessionAffinity": "ClientIP", "type": "LoadBalancer"}
    });
    let mut paths = Vec::new();
    fn collect(value: &Value, path: String, out: &mut Vec<String>) {
        out.push(path.clone());
        match value {
            Value::Object(map) => map
                .iter()
                .for_each(|(k, v)| collect(v, format!("{path}/{k}"), out)),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .for_each(|(i, v)| collect(v, format!("{path}/{i}"), out)),
            _ => {}
        }
    }
    collect(&full, String::new(), &mut paths);
    for (api_version, kind) in kinds {
        for path in &paths {
            for odd in &odd_values {
                let mut object = full.clone();
                match object.pointer_mut(path) {
                    Some(slot) => *slot = odd.clone(),
                    None => continue,
                }
                prepare_for_create(api_version, kind, &mut object);
                apply_defaults(api_version, kind, &mut object);
                generate_job_selector(&mut object, "uid");
                admit_pod(&mut object, "x");
                assign_cluster_ip(&mut object, "10.96.0.9");
                assign_node_ports(&mut object, || 30001);
                let _ = qos_class(&object);
            }
        }
    }
}

#[test]
fn defaulting_is_idempotent() {
    let once = defaulted(
        "apps/v1",
        "StatefulSet",
        json!({"spec": {"template": web_template(), "volumeClaimTemplates": [{"metadata": {"name": "d"}}]}}),
    );
    assert_eq!(defaulted("apps/v1", "StatefulSet", once.clone()), once);
}
