//! Normalisation: strips the fields the API server maintains on its own (identity,
//! bookkeeping, status) so that two versions of an object compare equal exactly when the
//! user-visible desired state is the same.

use serde_json::Value;

/// `metadata` fields the server sets or bumps on its own.
const SERVER_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
    "deletionGracePeriodSeconds",
];

/// Annotations written by controllers or clients, never by wardn's manifests.
const SERVER_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
];

/// Returns `object` without server-maintained metadata, annotations and `status`.
pub fn normalize(object: &Value) -> Value {
    let mut out = object.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("status");
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in SERVER_METADATA {
                meta.remove(*field);
            }
            let mut drop_annotations = false;
            if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                for a in SERVER_ANNOTATIONS {
                    ann.remove(*a);
                }
                drop_annotations = ann.is_empty();
            }
            if drop_annotations {
                meta.remove("annotations");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strips_server_fields_and_keeps_desired_state() {
        let live = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "uid": "u", "resourceVersion": "7",
                "generation": 2, "creationTimestamp": "t", "managedFields": [],
                "labels": {"a": "b"},
                "annotations": {"deployment.kubernetes.io/revision": "3"}},
            "data": {"k": "v"},
            "status": {"x": 1}
        });
        assert_eq!(
            normalize(&live),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "namespace": "n", "labels": {"a": "b"}},
                "data": {"k": "v"}})
        );
    }

    #[test]
    fn keeps_user_annotations() {
        let o = json!({"metadata": {"annotations": {"team": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"}}});
        assert_eq!(
            normalize(&o),
            json!({"metadata": {"annotations": {"team": "x"}}})
        );
    }
}
