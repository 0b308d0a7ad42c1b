//! The PersistentVolumeClaims of a StatefulSet's volumeClaimTemplates, one per template and
//! ordinal, Bound.

use serde_json::{Value, json};

use crate::defaults;

use super::fields::{int_at, owner_reference, str_at};
use super::names::sha256_hex;
use super::pods::{claim_names, pod_count};

/// A stable UUID-shaped identifier for `seed` (8-4-4-4-12 hex digits).
fn stable_uuid(seed: &str) -> String {
    let hex = sha256_hex(seed);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The PersistentVolumeClaims a StatefulSet's volumeClaimTemplates produce, one per
/// template and ordinal (`TEMPLATE-STATEFULSET-ORDINAL`), as its controller creates them
/// (template labels plus the selector's matchLabels; owned by the StatefulSet when
/// `persistentVolumeClaimRetentionPolicy.whenDeleted` is Delete), shown Bound to a volume as a
/// dynamic provisioner would leave them, with the requested storage as capacity.
pub fn stateful_set_claims(stateful_set: &Value) -> Vec<Value> {
    let replicas = pod_count(int_at(stateful_set, "/spec/replicas", 1));
    let templates: Vec<&Value> = stateful_set
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|template| !str_at(template, "/metadata/name").is_empty())
        .collect();
    let owned = str_at(
        stateful_set,
        "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted",
    ) == "Delete";
    let mut claims = Vec::new();
    for ordinal in 0..replicas {
        for (template, (_, claim_name)) in templates.iter().zip(claim_names(stateful_set, ordinal))
        {
            let mut labels = template
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if let Some(selector) = stateful_set
                .pointer("/spec/selector/matchLabels")
                .and_then(Value::as_object)
            {
                labels.extend(selector.clone());
            }
            let mut claim = json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name,
                    "namespace": str_at(stateful_set, "/metadata/namespace"),
                    "labels": labels,
                    "annotations": {
                        "pv.kubernetes.io/bind-completed": "yes",
                        "pv.kubernetes.io/bound-by-controller": "yes"
                    }
                },
                "spec": template
                    .get("spec")
                    .filter(|spec| spec.is_object())
                    .cloned()
                    .unwrap_or_else(|| json!({}))
            });
            if owned {
                claim["metadata"]["ownerReferences"] = json!([owner_reference(stateful_set)]);
            }
            defaults::apply_defaults("v1", "PersistentVolumeClaim", &mut claim);
            let volume = format!(
                "pvc-{}",
                stable_uuid(&format!(
                    "{}/{claim_name}",
                    str_at(stateful_set, "/metadata/uid")
                ))
            );
            claim["spec"]["volumeName"] = json!(volume);
            let access_modes = claim["spec"]
                .get("accessModes")
                .cloned()
                .unwrap_or_else(|| json!([]));
            let mut status = json!({"accessModes": access_modes, "phase": "Bound"});
            if let Some(storage) = claim.pointer("/spec/resources/requests/storage") {
                status["capacity"] = json!({"storage": storage});
            }
            claim["status"] = status;
            claims.push(claim);
        }
    }
    claims
}
