//! Defaults of ReplicationControllers' selector and labels and of the kinds cluster
//! administrators write: admission webhook configurations, ValidatingAdmissionPolicies and
//! CSIDrivers.

use serde_json::{Map, Value, json};

use super::fields::{array_objects, child, default, default_str, existing};

/// `SetDefaults_ReplicationController`: an empty selector and empty labels take the
/// template's labels.
pub(super) fn replication_controller_labels(root: &mut Map<String, Value>) {
    let template_labels = root
        .get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let Some(labels) = template_labels else {
        return;
    };
    let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(Map::is_empty);
    if let Some(spec) = child(root, "spec")
        && empty(spec.get("selector"))
    {
        spec.insert("selector".into(), labels.clone());
    }
    if let Some(meta) = child(root, "metadata")
        && empty(meta.get("labels"))
    {
        meta.insert("labels".into(), labels);
    }
}

/// The defaults of one rule list: `scope: "*"`.
fn rules(hook: &mut Map<String, Value>, key: &str) {
    for rule in array_objects(hook, key) {
        default_str(rule, "scope", "*");
    }
}

/// Webhook configurations' `webhooks[]` defaults.
pub(super) fn webhooks(root: &mut Map<String, Value>, mutating: bool) {
    for hook in array_objects(root, "webhooks") {
        default_str(hook, "failurePolicy", "Fail");
        default_str(hook, "matchPolicy", "Equivalent");
        default(hook, "namespaceSelector", json!({}));
        default(hook, "objectSelector", json!({}));
        default(hook, "timeoutSeconds", json!(10));
        if mutating {
            default_str(hook, "reinvocationPolicy", "Never");
        }
        rules(hook, "rules");
        if let Some(service) = existing(hook, "clientConfig").and_then(|c| existing(c, "service")) {
            default(service, "port", json!(443));
        }
    }
}

/// A ValidatingAdmissionPolicy's defaults.
pub(super) fn admission_policy(root: &mut Map<String, Value>) {
    let Some(spec) = child(root, "spec") else {
        return;
    };
    default_str(spec, "failurePolicy", "Fail");
    if let Some(constraints) = existing(spec, "matchConstraints") {
        default_str(constraints, "matchPolicy", "Equivalent");
        default(constraints, "namespaceSelector", json!({}));
        default(constraints, "objectSelector", json!({}));
        rules(constraints, "resourceRules");
        rules(constraints, "excludeResourceRules");
    }
}

/// A CSIDriver's defaults.
pub(super) fn csi_driver(root: &mut Map<String, Value>) {
    let Some(spec) = child(root, "spec") else {
        return;
    };
    default(spec, "attachRequired", json!(true));
    default(spec, "podInfoOnMount", json!(false));
    default(spec, "storageCapacity", json!(false));
    default_str(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
    default(spec, "volumeLifecycleModes", json!(["Persistent"]));
    default(spec, "requiresRepublish", json!(false));
    default(spec, "seLinuxMount", json!(false));
}
