//! Tests of the API server defaulting, by kind family, with the helpers they share.

mod admission;
mod allocation;
mod create;
mod other_kinds;
mod pod_spec;
mod robustness;
mod service;
mod workloads;

use serde_json::{Value, json};

use super::*;

fn defaulted(api_version: &str, kind: &str, mut object: Value) -> Value {
    apply_defaults(api_version, kind, &mut object);
    object
}

fn web_template() -> Value {
    json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
    })
}
