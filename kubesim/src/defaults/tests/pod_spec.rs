//! Tests of the Pod and pod template defaults: pull policies, Pod-only defaults, probes, env and
//! volumes.

use serde_json::json;

use super::*;

#[test]
fn pull_policy_follows_the_tag_rule() {
    assert_eq!(default_pull_policy("nginx"), "Always");
    assert_eq!(default_pull_policy("nginx:latest"), "Always");
    assert_eq!(default_pull_policy("nginx:1.27"), "IfNotPresent");
    assert_eq!(default_pull_policy("localhost:5000/nginx"), "Always");
    assert_eq!(
        default_pull_policy("localhost:5000/nginx:v1"),
        "IfNotPresent"
    );
    assert_eq!(
        default_pull_policy(
            "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        ),
        "IfNotPresent"
    );
    assert_eq!(
        default_pull_policy(
            "nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        ),
        "Always"
    );
    assert_eq!(default_pull_policy(""), "IfNotPresent");
}

#[test]
fn pod_only_defaults() {
    let p = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"hostNetwork": true, "serviceAccount": "builder", "containers": [{"name": "c", "image": "busybox:1",
            "ports": [{"containerPort": 8080}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]}}),
    );
    let spec = &p["spec"];
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["serviceAccountName"], "builder");
    let c = &spec["containers"][0];
    assert_eq!(
        c["resources"]["requests"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    assert_eq!(c["ports"][0]["hostPort"], 8080);
}

#[test]
fn probes_env_and_volumes() {
    let p = defaulted(
        "v1",
        "Pod",
        json!({"spec": {"containers": [{"name": "c", "image": "app:v1",
            "livenessProbe": {"httpGet": {"port": 8080}},
            "readinessProbe": {"grpc": {"port": 9090}, "periodSeconds": 5},
            "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}],
            "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "cfg"}},
                {"name": "s", "secret": {"secretName": "s", "defaultMode": 256}},
                {"name": "h", "hostPath": {"path": "/tmp"}},
                {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]}}),
    );
    let c = &p["spec"]["containers"][0];
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
            "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c["readinessProbe"]["periodSeconds"], 5);
    assert_eq!(c["readinessProbe"]["grpc"]["service"], "");
    assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["path"], "/stop");
    assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["scheme"], "HTTP");
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(c["env"][1]["valueFrom"]["resourceFieldRef"]["divisor"], "0");
    let volumes = &p["spec"]["volumes"];
    assert_eq!(volumes[0], json!({"name": "scratch", "emptyDir": {}}));
    assert_eq!(volumes[1]["configMap"]["defaultMode"], 420);
    assert_eq!(volumes[2]["secret"]["defaultMode"], 256);
    assert_eq!(volumes[3]["hostPath"]["type"], "");
    assert_eq!(volumes[4]["projected"]["defaultMode"], 420);
    assert_eq!(
        volumes[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
}
