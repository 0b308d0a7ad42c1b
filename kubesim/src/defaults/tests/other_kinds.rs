//! Tests of the defaults of the remaining kinds: Secrets, Namespaces, PVCs, HPAs, CRDs and the
//! kinds with status shapes only.

use serde_json::{Value, json};

use super::*;

#[test]
fn core_kind_defaults() {
    assert_eq!(
        defaulted("v1", "Secret", json!({"data": {}}))["type"],
        "Opaque"
    );
    assert_eq!(
        defaulted("v1", "Secret", json!({"type": "kubernetes.io/tls"}))["type"],
        "kubernetes.io/tls"
    );
    let ns = defaulted("v1", "Namespace", json!({"metadata": {"name": "prod"}}));
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "prod"
    );
    assert_eq!(ns["spec"], json!({}), "finalizers are added on create only");
    assert_eq!(ns["status"]["phase"], "Active");
    let pvc = defaulted(
        "v1",
        "PersistentVolumeClaim",
        json!({"spec": {"accessModes": ["ReadWriteOnce"]}}),
    );
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["status"]["phase"], "Pending");
    let cm = json!({"data": {"a": "b"}});
    assert_eq!(defaulted("v1", "ConfigMap", cm.clone()), cm);
    let pdb = json!({"spec": {"minAvailable": 1}});
    assert_eq!(
        defaulted("policy/v1", "PodDisruptionBudget", pdb)["spec"],
        json!({"minAvailable": 1})
    );
}

#[test]
fn hpa_defaults() {
    let h = defaulted(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"maxReplicas": 5, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
    );
    let spec = &h["spec"];
    assert_eq!(spec["minReplicas"], 1);
    assert_eq!(
        spec["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    assert_eq!(
        spec["behavior"]["scaleUp"],
        json!({"selectPolicy": "Max", "stabilizationWindowSeconds": 0, "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]})
    );
    assert_eq!(
        spec["behavior"]["scaleDown"],
        json!({"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]})
    );
    let no_behavior = defaulted(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"maxReplicas": 5}}),
    );
    assert!(no_behavior["spec"].get("behavior").is_none());
}

#[test]
fn remaining_kinds() {
    let template = defaulted(
        "v1",
        "PodTemplate",
        json!({"template": {"spec": {"containers": [{"name": "c", "image": "x:1"}]}}}),
    );
    assert_eq!(template["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(
        template["template"]["metadata"]["creationTimestamp"],
        Value::Null
    );
    let rc = defaulted(
        "v1",
        "ReplicationController",
        json!({"spec": {"template": {"spec": {}}}}),
    );
    assert_eq!(rc["spec"]["replicas"], 1);
    assert_eq!(rc["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    let hpa = defaulted(
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        json!({"spec": {"maxReplicas": 3}}),
    );
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    let ingress = defaulted(
        "networking.k8s.io/v1",
        "Ingress",
        json!({"spec": {"rules": []}}),
    );
    assert_eq!(ingress["status"], json!({"loadBalancer": {}}));
    assert_eq!(ingress["spec"], json!({"rules": []}));
    let pdb = defaulted(
        "policy/v1",
        "PodDisruptionBudget",
        json!({"spec": {"minAvailable": 1}}),
    );
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
}

#[test]
fn crd_defaults() {
    let c = defaulted(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        json!({"spec": {"group": "x.io", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced"}}),
    );
    assert_eq!(c["spec"]["names"]["singular"], "widget");
    assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
}
