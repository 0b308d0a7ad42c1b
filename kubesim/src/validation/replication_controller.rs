//! ReplicationControllers (`ValidateReplicationControllerSpec`): a non-empty equality
//! selector that the template's labels satisfy, a non-negative replica count, and a valid
//! Pod template.

use serde_json::Value;

use super::field::{Errors, go_string_map, invalid, required};

/// The rules of a ReplicationController.
pub fn replication_controller(obj: &Value, errs: &mut Errors) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    super::apps::nonnegative(spec, "replicas", "spec", errs);
    let selector = spec
        .get("selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty());
    match selector {
        None => errs.push(required("spec.selector", "")),
        Some(_) => super::meta::labels(spec.get("selector"), "spec.selector", errs),
    }
    let Some(template) = spec.get("template").filter(|t| !t.is_null()) else {
        errs.push(required("spec.template", ""));
        return;
    };
    let labels = template.pointer("/metadata/labels");
    let matches = selector.is_some_and(|sel| {
        sel.iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    });
    if selector.is_some() && !matches {
        errs.push(invalid(
            "spec.template.metadata.labels",
            go_string_map(labels),
            "`selector` does not match template `labels`",
        ));
    }
    super::core::pod_template(Some(template), "spec.template", errs);
}
