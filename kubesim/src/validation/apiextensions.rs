//! CustomResourceDefinition rules of apiextensions' `ValidateCustomResourceDefinition`: the
//! name is `<plural>.<group>`, the group is a domain with a dot, protected groups
//! (`*.k8s.io`, `*.kubernetes.io`) carry the `api-approved.kubernetes.io` annotation, one
//! storage version, and every version's schema is structural (`ValidateStructural`, errors
//! sorted as it sorts them) with CEL rules that compile.

use serde_json::Value;

use super::custom;
use super::field::{self, Errors};

const APPROVAL: &str = "api-approved.kubernetes.io";
const APPROVAL_FIELD: &str = "metadata.annotations[api-approved.kubernetes.io]";
const APPROVAL_LINK: &str = "see https://github.com/kubernetes/enhancements/pull/1111";

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The rules of a new or updated CRD (`old`: the stored one).
pub fn crd(old: Option<&Value>, obj: &Value, errs: &mut Errors) {
    name(obj, errs);
    group(obj, errs);
    approval(old, obj, errs);
    if obj
        .pointer("/spec/preserveUnknownFields")
        .and_then(Value::as_bool)
        == Some(true)
    {
        errs.push(field::invalid(
            "spec.preserveUnknownFields",
            "true",
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    versions(obj, errs);
}

fn name(obj: &Value, errs: &mut Errors) {
    let name = text(obj, "/metadata/name");
    let expected = format!(
        "{}.{}",
        text(obj, "/spec/names/plural"),
        text(obj, "/spec/group")
    );
    if !name.is_empty() && name != expected {
        errs.push(field::invalid_str(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
}

fn group(obj: &Value, errs: &mut Errors) {
    let group = text(obj, "/spec/group");
    if group.is_empty() {
        errs.push(field::required("spec.group", ""));
    } else if !group.contains('.') {
        errs.push(field::invalid_str(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
}

/// Whether a group is reserved for the Kubernetes project.
fn protected(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|d| group == *d || group.ends_with(&format!(".{d}")))
}

/// A URL (scheme and host) or a reason starting with "unapproved".
fn approval_ok(value: &str) -> bool {
    if value.starts_with("unapproved") {
        return true;
    }
    value.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest.split('/').next().unwrap_or_default().is_empty()
    })
}

fn approval(old: Option<&Value>, obj: &Value, errs: &mut Errors) {
    if !protected(text(obj, "/spec/group")) {
        return;
    }
    let annotation = |o: &Value| {
        o.pointer("/metadata/annotations")
            .and_then(|a| a.get(APPROVAL))
            .and_then(Value::as_str)
            .map(String::from)
    };
    let value = annotation(obj);
    if let Some(old) = old
        && annotation(old) == value
        && value.is_some()
    {
        return;
    }
    match value {
        None => errs.push(field::required(
            APPROVAL_FIELD,
            &format!(
                "protected groups must have approval annotation \"{APPROVAL}\", {APPROVAL_LINK}"
            ),
        )),
        Some(v) if !approval_ok(&v) => errs.push(field::invalid_str(
            APPROVAL_FIELD,
            &v,
            &format!(
                "protected groups must have approval annotation \"{APPROVAL}\" with either a URL or a reason starting with \"unapproved\", {APPROVAL_LINK}"
            ),
        )),
        Some(_) => {}
    }
}

fn versions(obj: &Value, errs: &mut Errors) {
    let versions = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if versions.is_empty() {
        errs.push(field::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
        return;
    }
    let storage = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if storage != 1 {
        errs.push(field::invalid(
            "spec.versions",
            Value::Array(versions.to_vec()).to_string(),
            "must have exactly one version marked as storage version",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match v.pointer("/schema/openAPIV3Schema") {
            Some(schema) if schema.is_object() => {
                let mut found = Errors::new();
                structural(schema, Level::Root, &at, &mut found);
                found.sort_by_key(field::FieldError::message);
                errs.extend(found);
            }
            _ => errs.push(field::required(&at, "schemas are required")),
        }
    }
}

/// Where a schema node sits, for the wording of its errors.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural`'s invariants of one node and below.
fn structural(node: &Value, level: Level, at: &str, errs: &mut Errors) {
    let ty = node.get("type").and_then(Value::as_str).unwrap_or_default();
    let flag = |k: &str| node.get(k).and_then(Value::as_bool) == Some(true);
    if ty == "array" && node.get("items").is_none() {
        errs.push(field::required(&format!("{at}.items"), "must be specified"));
    }
    if let Some(items) = node.get("items").filter(|i| i.is_object()) {
        structural(items, Level::Item, &format!("{at}.items"), errs);
    }
    let props = node.get("properties").and_then(Value::as_object);
    for (k, v) in props.into_iter().flatten() {
        structural(v, Level::Field, &format!("{at}.properties[{k}]"), errs);
    }
    if let Some(extra) = node.get("additionalProperties") {
        if level == Level::Root {
            errs.push(field::forbidden(
                &format!("{at}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if props.is_some() && extra.as_bool() != Some(false) {
            errs.push(field::forbidden(
                &format!("{at}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if extra.is_object() {
            structural(
                extra,
                Level::Field,
                &format!("{at}.additionalProperties"),
                errs,
            );
        }
    }
    let int_or_string = flag("x-kubernetes-int-or-string");
    if int_or_string && flag("x-kubernetes-preserve-unknown-fields") {
        errs.push(field::invalid(
            &format!("{at}.x-kubernetes-preserve-unknown-fields"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if flag("x-kubernetes-embedded-resource") && ty != "object" {
        let f = format!("{at}.type");
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if ty.is_empty() {
            field::required(&f, detail)
        } else {
            field::invalid_str(&f, ty, detail)
        });
    } else if ty.is_empty() && !int_or_string && !flag("x-kubernetes-preserve-unknown-fields") {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(field::required(&format!("{at}.type"), detail));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(field::invalid_str(
            &format!("{at}.type"),
            ty,
            "must be object at the root",
        ));
    }
    if let Some(meta) = props.and_then(|p| p.get("metadata")) {
        metadata(
            meta,
            level == Level::Root || flag("x-kubernetes-embedded-resource"),
            level,
            &format!("{at}.properties[metadata]"),
            errs,
        );
    }
    list_extensions(node, at, errs);
    if let Some(pattern) = node.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(pattern)
    {
        errs.push(field::invalid_str(
            &format!("{at}.pattern"),
            pattern,
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
    for (j, rule) in node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let source = rule.get("rule").and_then(Value::as_str).unwrap_or_default();
        let f = format!("{at}.x-kubernetes-validations[{j}].rule");
        if source.trim().is_empty() {
            errs.push(field::required(&f, ""));
        } else if let Some(e) = custom::compile_error(source) {
            errs.push(field::invalid_str(
                &f,
                source,
                &format!("compilation failed: {e}"),
            ));
        }
    }
    let int_or_string_any_of = node
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.len() == 2
                && a[0] == serde_json::json!({"type": "integer"})
                && a[1] == serde_json::json!({"type": "string"})
        });
    for junction in ["allOf", "anyOf", "oneOf"] {
        if junction == "anyOf" && int_or_string_any_of {
            continue;
        }
        for (i, sub) in node
            .get(junction)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            nested(sub, &format!("{at}.{junction}[{i}]"), errs);
        }
    }
    if let Some(not) = node.get("not") {
        nested(not, &format!("{at}.not"), errs);
    }
}

/// At the root (or in an embedded resource) metadata may restrict name and generateName only.
fn metadata(meta: &Value, check: bool, level: Level, at: &str, errs: &mut Errors) {
    let ty = meta.get("type").and_then(Value::as_str).unwrap_or_default();
    if check && ty != "object" {
        errs.push(field::invalid_str(
            &format!("{at}.type"),
            ty,
            "must be object",
        ));
    }
    if level != Level::Root {
        return;
    }
    let only_names = meta.as_object().is_some_and(|m| {
        m.iter().all(|(k, v)| match k.as_str() {
            "type" => true,
            "properties" => v
                .as_object()
                .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
            _ => false,
        })
    });
    if !only_names {
        errs.push(field::forbidden(
            at,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` go together.
fn list_extensions(node: &Value, at: &str, errs: &mut Errors) {
    let list_type = node.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys = node
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if list_type == Some("map") && keys == 0 {
        errs.push(field::required(
            &format!("{at}.x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    if keys > 0 && list_type != Some("map") {
        errs.push(field::required(
            &format!("{at}.x-kubernetes-list-type"),
            "must be map if x-kubernetes-list-map-keys is non-empty",
        ));
    }
    if let Some(t) = list_type
        && !matches!(t, "atomic" | "set" | "map")
    {
        errs.push(field::not_supported(
            &format!("{at}.x-kubernetes-list-type"),
            t,
            &["atomic", "set", "map"],
        ));
    }
}

/// A value validation under allOf/anyOf/oneOf/not may not declare structure.
fn nested(node: &Value, at: &str, errs: &mut Errors) {
    let rules: [(&str, &str, bool); 13] = [
        ("type", "must be empty to be structural", false),
        (
            "additionalProperties",
            "must be undefined to be structural",
            false,
        ),
        ("default", "must be undefined to be structural", false),
        ("title", "must be empty to be structural", false),
        ("description", "must be empty to be structural", false),
        ("nullable", "must be false to be structural", true),
        ("externalDocs", "must be undefined to be structural", false),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
            true,
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
            true,
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
            true,
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
            false,
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
            false,
        ),
        (
            "x-kubernetes-map-type",
            "must be undefined to be structural",
            false,
        ),
    ];
    for (key, detail, boolean) in rules {
        let set = match node.get(key) {
            None => false,
            Some(v) if boolean => v.as_bool() == Some(true),
            Some(_) => true,
        };
        if set {
            errs.push(field::forbidden(&format!("{at}.{key}"), detail));
        }
    }
    if node.get("x-kubernetes-validations").is_some() {
        errs.push(field::forbidden(
            &format!("{at}.x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    let props = node.get("properties").and_then(Value::as_object);
    if props.is_some_and(|p| p.contains_key("metadata")) {
        errs.push(field::forbidden(
            &format!("{at}.properties[metadata]"),
            "must not be specified in a nested context",
        ));
    }
    for (k, v) in props.into_iter().flatten() {
        nested(v, &format!("{at}.properties[{k}]"), errs);
    }
    if let Some(items) = node.get("items") {
        nested(items, &format!("{at}.items"), errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(group: &str, schema: Value) -> Value {
        json!({"metadata": {"name": format!("widgets.{group}")},
            "spec": {"group": group, "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": schema}}]}})
    }

    fn messages(old: Option<&Value>, obj: &Value) -> Vec<String> {
        let mut errs = Errors::new();
        super::crd(old, obj, &mut errs);
        errs.iter().map(|e| e.message()).collect()
    }

    #[test]
    fn non_structural_schemas_are_refused_with_sorted_errors() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"properties": {"list": {"type": "array"}, "x": {"type": "string", "pattern": "("}}},
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            "other": {"type": "string", "anyOf": [{"type": "string", "description": "no"}]}}});
        let p = "spec.versions[0].schema.openAPIV3Schema";
        let got = messages(None, &crd("example.com", schema));
        assert!(got.contains(&format!("{p}.properties[spec].type: Required value: must not be empty for specified object fields")), "{got:?}");
        assert!(got.contains(&format!(
            "{p}.properties[spec].properties[list].items: Required value: must be specified"
        )));
        assert!(got.contains(&format!("{p}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")));
        assert!(got.contains(&format!(
            "{p}.properties[other].anyOf[0].type: Forbidden: must be empty to be structural"
        )));
        assert!(got.iter().any(|m| m.starts_with(&format!("{p}.properties[spec].properties[x].pattern: Invalid value: \"(\": must be a valid regular expression"))));
        let mut sorted = got.clone();
        sorted.sort();
        assert_eq!(got, sorted);
        assert!(messages(None, &crd("example.com", json!({"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}))).is_empty());
        let missing = json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com",
            "names": {"plural": "widgets"}, "versions": [{"name": "v1", "served": true, "storage": true}]}});
        assert_eq!(
            messages(None, &missing),
            vec![format!("{p}: Required value: schemas are required")]
        );
    }

    #[test]
    fn protected_and_dotless_groups_are_refused() {
        let ok = json!({"type": "object"});
        assert_eq!(
            messages(None, &crd("widgets.k8s.io", ok.clone())),
            vec![
                "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
            ]
        );
        let mut approved = crd("x.kubernetes.io", ok.clone());
        approved["metadata"]["annotations"] =
            json!({APPROVAL: "https://github.com/kubernetes/enhancements/pull/1111"});
        assert!(messages(None, &approved).is_empty());
        approved["metadata"]["annotations"] = json!({APPROVAL: "unapproved, testing only"});
        assert!(messages(None, &approved).is_empty());
        approved["metadata"]["annotations"] = json!({APPROVAL: "yes please"});
        assert_eq!(messages(None, &approved).len(), 1);
        assert!(messages(Some(&approved.clone()), &approved).is_empty());
        assert_eq!(
            messages(None, &crd("apps", ok)),
            vec!["spec.group: Invalid value: \"apps\": should be a domain with at least one dot"]
        );
    }
}
