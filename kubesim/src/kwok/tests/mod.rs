//! Tests of the kwok simulation, by concern, with the workloads they share.

mod claims;
mod deployments;
mod endpoints;
mod images;
mod names;
mod nodes;
mod pods;
mod status;

use serde_json::{Value, json};

use crate::defaults;

use super::*;

const NOW: &str = "2026-01-01T00:00:00Z";
const LATER: &str = "2026-01-01T00:05:00Z";
const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn deployment(replicas: i64) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "uid": "d-uid", "generation": 2,
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "a"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "web", "image": "nginx:1.27", "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": true}]},
                {"name": "sidecar", "image": format!("ghcr.io/acme/proxy@{DIGEST}")}]}}}
    });
    defaults::apply_defaults("apps/v1", "Deployment", &mut d);
    d
}

fn stateful_set() -> Value {
    let mut s = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "prod", "uid": "s-uid", "generation": 1},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres:16",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}}});
    defaults::apply_defaults("apps/v1", "StatefulSet", &mut s);
    s
}

fn job(extra: Value) -> Value {
    let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "prod", "uid": "j-uid"},
        "spec": {"template": {"metadata": {"labels": {"app": "pi"}}, "spec": {"restartPolicy": "Never",
            "containers": [{"name": "pi", "image": "perl:5.34"}]}}}});
    if let (Some(spec), Some(extra)) = (j["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    defaults::apply_defaults("batch/v1", "Job", &mut j);
    defaults::generate_job_selector(&mut j, "j-uid");
    j
}
