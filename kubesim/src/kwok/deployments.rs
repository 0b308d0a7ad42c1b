//! The deployment controller: revision annotations, rolling-update fenceposts and the
//! ReplicaSet for a Deployment's current template (name `DEPLOYMENT-HASH`, `pod-template-hash`
//! label, revision annotations, ownerReference).

use serde_json::{Value, json};

use super::fields::{int_at, owner_reference, str_at};
use super::names::template_hash;

/// The `deployment.kubernetes.io/revision` of a Deployment or ReplicaSet (0 when absent).
/// The server gives a new ReplicaSet the highest revision among the Deployment's
/// ReplicaSets plus one, and copies it to the Deployment.
pub fn revision(object: &Value) -> u64 {
    str_at(
        object,
        "/metadata/annotations/deployment.kubernetes.io~1revision",
    )
    .parse()
    .unwrap_or(0)
}

/// Records `revision` in the `deployment.kubernetes.io/revision` annotation, as the deployment
/// controller does on a Deployment when its new ReplicaSet becomes current.
pub fn mark_revision(object: &mut Value, revision: u64) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations["deployment.kubernetes.io/revision"] = json!(revision.to_string());
}

/// `intstr.GetScaledValueFromIntOrPercent`: an int, or a percentage of `total` rounded up or
/// down.
fn scaled(value: Option<&Value>, total: i64, round_up: bool) -> i64 {
    match value {
        Some(Value::Number(number)) => number.as_i64().unwrap_or(0),
        Some(Value::String(text)) => {
            let percent = text
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .or_else(|| text.parse::<i64>().ok())
                .unwrap_or(0);
            let product = percent.saturating_mul(total);
            if round_up {
                product.saturating_add(99) / 100
            } else {
                product / 100
            }
        }
        _ => 0,
    }
}

/// `(maxSurge, maxUnavailable)` of a Deployment for `replicas` (`deploymentutil.ResolveFenceposts`).
pub(super) fn fenceposts(deployment: &Value, replicas: i64) -> (i64, i64) {
    if str_at(deployment, "/spec/strategy/type") == "Recreate" {
        return (0, 0);
    }
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate");
    let surge = scaled(rolling.and_then(|r| r.get("maxSurge")), replicas, true);
    let unavailable = scaled(
        rolling.and_then(|r| r.get("maxUnavailable")),
        replicas,
        false,
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

/// The pod-template-hash of a Deployment's current template (`status.collisionCount` included).
fn deployment_hash(deployment: &Value) -> String {
    let template = deployment
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let collisions = u32::try_from(int_at(deployment, "/status/collisionCount", 0)).unwrap_or(0);
    template_hash(&template, collisions)
}

/// The name of the ReplicaSet a Deployment's current template runs in (`NAME-HASH`).
pub fn replica_set_name(deployment: &Value) -> String {
    format!(
        "{}-{}",
        str_at(deployment, "/metadata/name"),
        deployment_hash(deployment)
    )
}

/// Adds `pod-template-hash: hash` to the labels map at `pointer` (created if absent).
fn add_hash_label(object: &mut Value, pointer: &str, hash: &str) {
    if let Some(map) = object.pointer_mut(pointer).and_then(Value::as_object_mut) {
        let labels = map.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            labels.insert("pod-template-hash".into(), json!(hash));
        }
    }
}

/// The ReplicaSet the deployment controller creates for a Deployment's current template, at
/// `revision`: named [`replica_set_name`], labelled and selecting with `pod-template-hash`,
/// annotated with desired/max replicas and the revision, owned by the Deployment, with the
/// Deployment's replica count. Its status comes from [`workload_status`](super::workload_status).
pub fn replica_set_for(deployment: &Value, revision: u64) -> Value {
    let hash = deployment_hash(deployment);
    let replicas = int_at(deployment, "/spec/replicas", 1);
    let (surge, _) = fenceposts(deployment, replicas);
    let mut template = deployment
        .pointer("/spec/template")
        .filter(|template| template.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(map) = template.as_object_mut()
        && map.get("metadata").is_none_or(|m| !m.is_object())
    {
        map.insert("metadata".into(), json!({}));
    }
    add_hash_label(&mut template, "/metadata", &hash);
    let mut selector = deployment
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if selector.is_object() {
        let match_labels = selector
            .as_object_mut()
            .map(|s| s.entry("matchLabels").or_insert_with(|| json!({})));
        if let Some(Value::Object(labels)) = match_labels {
            labels.insert("pod-template-hash".into(), json!(hash));
        }
    }
    let labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut annotations = deployment
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.retain(|key, _| {
        key != "kubectl.kubernetes.io/last-applied-configuration"
            && !key.starts_with("deployment.kubernetes.io/")
    });
    annotations.insert(
        "deployment.kubernetes.io/desired-replicas".into(),
        json!(replicas.to_string()),
    );
    annotations.insert(
        "deployment.kubernetes.io/max-replicas".into(),
        json!(replicas.saturating_add(surge).to_string()),
    );
    annotations.insert(
        "deployment.kubernetes.io/revision".into(),
        json!(revision.to_string()),
    );
    let mut replica_set = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": replica_set_name(deployment),
            "namespace": str_at(deployment, "/metadata/namespace"),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(deployment)]
        },
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": template
        }
    });
    if let Some(min_ready) = deployment.pointer("/spec/minReadySeconds") {
        replica_set["spec"]["minReadySeconds"] = min_ready.clone();
    }
    replica_set
}
