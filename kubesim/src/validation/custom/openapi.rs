//! OpenAPI value validation of a custom resource, worded as kube-openapi's validator and
//! apiextensions' `kubeOpenAPIResultToFieldErrors` word it: `spec.replicas: Invalid value:
//! "string": spec.replicas in body must be of type integer: "string"`, `spec.image: Required
//! value`, `spec.mode: Unsupported value: "x": supported values: "a", "b"`, bounds, patterns,
//! lengths and item counts.

use serde_json::Value;

use super::super::field::{self, Errors, go_float, go_value, quote};
use super::{child, node};

/// Deepest nesting validated.
const MAX_DEPTH: usize = 64;

/// Validates the whole object (its metadata, apiVersion and kind are left to the generic
/// ObjectMeta rules).
pub fn validate_root(schema: &Value, obj: &Value, errs: &mut Errors) {
    let Some(fields) = obj.as_object() else {
        return;
    };
    let mut root = schema.clone();
    if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
        for key in ["metadata", "apiVersion", "kind"] {
            props.remove(key);
        }
    }
    if let Some(required) = root.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| !matches!(r.as_str(), Some("metadata" | "apiVersion" | "kind")));
    }
    let mut body = fields.clone();
    for key in ["metadata", "apiVersion", "kind"] {
        body.remove(key);
    }
    validate(&root, &Value::Object(body), "", 0, errs);
}

/// The name go-openapi gives a path in its messages.
fn shown(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

fn type_ok(expected: &str, value: &Value) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.is_finite())
        }
        _ => true,
    }
}

/// Validates `value` against `schema` at `path`, appending the errors found.
pub fn validate(schema: &Value, value: &Value, path: &str, depth: usize, errs: &mut Errors) {
    if depth > MAX_DEPTH {
        return;
    }
    let name = shown(path);
    if value.is_null() {
        if node::flag(schema, "nullable") {
            return;
        }
        let declared = declared_type(schema);
        if !declared.is_empty() {
            errs.push(field::type_invalid(
                path,
                quote("null"),
                &format!("{name} in body must be of type {declared}: \"null\""),
            ));
        }
        return;
    }
    let declared = declared_type(schema);
    if !declared.is_empty() && !declared.split(',').any(|t| type_ok(t, value)) {
        let found = node::json_type(value);
        errs.push(field::type_invalid(
            path,
            quote(found),
            &format!("{name} in body must be of type {declared}: \"{found}\""),
        ));
        return;
    }
    junctions(schema, value, path, depth, errs);
    match value {
        Value::String(s) => string_rules(schema, s, path, errs),
        Value::Number(_) => number_rules(schema, value, path, errs),
        _ => {}
    }
    if let Value::Array(items) = value {
        array_rules(schema, items, path, depth, errs);
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.iter().any(|a| same(a, value))
    {
        errs.push(field::not_supported_value(path, value, allowed));
    }
    if let Value::Object(fields) = value {
        object_rules(schema, fields, path, depth, errs);
    }
}

/// The type a node requires: `type`, or `integer,string` for `x-kubernetes-int-or-string`.
fn declared_type(schema: &Value) -> &str {
    if node::flag(schema, "x-kubernetes-int-or-string") {
        return "integer,string";
    }
    node::type_of(schema)
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

fn string_rules(schema: &Value, s: &str, path: &str, errs: &mut Errors) {
    let name = shown(path);
    let chars = s.chars().count() as i64;
    if let Some(max) = schema.get("maxLength").and_then(Value::as_i64)
        && chars > max
    {
        errs.push(field::too_long_max_length(path, max));
    }
    if let Some(min) = schema.get("minLength").and_then(Value::as_i64)
        && chars < min
    {
        errs.push(field::invalid(
            path,
            quote(s),
            &format!("{name} in body should be at least {min} chars long"),
        ));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
        && let Ok(re) = regex::Regex::new(pattern)
        && !re.is_match(s)
    {
        errs.push(field::invalid(
            path,
            quote(s),
            &format!("{name} in body should match '{pattern}'"),
        ));
    }
}

fn number_rules(schema: &Value, value: &Value, path: &str, errs: &mut Errors) {
    let name = shown(path);
    let Some(v) = value.as_f64() else {
        return;
    };
    let shown_value = go_value(value);
    if let Some(m) = schema.get("multipleOf").and_then(Value::as_f64)
        && m > 0.0
        && (v / m).fract().abs() > f64::EPSILON
    {
        errs.push(field::invalid(
            path,
            shown_value.clone(),
            &format!("{name} in body should be a multiple of {}", go_float(m)),
        ));
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
        let exclusive = node::flag(schema, "exclusiveMaximum");
        if (exclusive && v >= max) || v > max {
            let words = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            errs.push(field::invalid(
                path,
                shown_value.clone(),
                &format!("{name} in body should be {words} {}", go_float(max)),
            ));
        }
    }
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
        let exclusive = node::flag(schema, "exclusiveMinimum");
        if (exclusive && v <= min) || v < min {
            let words = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errs.push(field::invalid(
                path,
                shown_value,
                &format!("{name} in body should be {words} {}", go_float(min)),
            ));
        }
    }
}

fn array_rules(schema: &Value, items: &[Value], path: &str, depth: usize, errs: &mut Errors) {
    let name = shown(path);
    if let Some(item) = node::items(schema) {
        for (i, v) in items.iter().enumerate() {
            validate(item, v, &format!("{path}[{i}]"), depth + 1, errs);
        }
    }
    let len = items.len() as i64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_i64)
        && len < min
    {
        errs.push(field::invalid(
            path,
            len.to_string(),
            &format!("{name} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_i64)
        && len > max
    {
        errs.push(field::too_many(path, items.len(), max));
    }
}

fn object_rules(
    schema: &Value,
    fields: &serde_json::Map<String, Value>,
    path: &str,
    depth: usize,
    errs: &mut Errors,
) {
    let name = shown(path);
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !fields.contains_key(required) {
            errs.push(field::required(&child(path, required), ""));
        }
    }
    let props = node::properties(schema);
    let values = node::additional(schema);
    for (key, v) in fields {
        if let Some(sub) = props.and_then(|p| p.get(key)).or(values) {
            validate(sub, v, &child(path, key), depth + 1, errs);
        }
    }
    let count = fields.len() as i64;
    if let Some(max) = schema.get("maxProperties").and_then(Value::as_i64)
        && count > max
    {
        errs.push(field::too_many(path, fields.len(), max));
    }
    if let Some(min) = schema.get("minProperties").and_then(Value::as_i64)
        && count < min
    {
        errs.push(field::invalid(
            path,
            min.to_string(),
            &format!("{name} in body should have at least {min} properties"),
        ));
    }
}

/// allOf (every one), anyOf (at least one), oneOf (exactly one) and not (none).
fn junctions(schema: &Value, value: &Value, path: &str, depth: usize, errs: &mut Errors) {
    let name = shown(path);
    let passes = |sub: &Value| {
        let mut scratch = Errors::new();
        validate(sub, value, path, depth + 1, &mut scratch);
        scratch.is_empty()
    };
    for sub in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        validate(sub, value, path, depth + 1, errs);
    }
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array)
        && !any.is_empty()
        && !any.iter().any(passes)
    {
        errs.push(field::invalid(
            path,
            quote(""),
            &format!("\"{name}\" must validate at least one schema (anyOf)"),
        ));
    }
    if let Some(one) = schema.get("oneOf").and_then(Value::as_array)
        && !one.is_empty()
    {
        let valid = one.iter().filter(|s| passes(s)).count();
        if valid != 1 {
            let found = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            errs.push(field::invalid(
                path,
                quote(""),
                &format!("\"{name}\" must validate one and only one schema (oneOf). {found}"),
            ));
        }
    }
    if let Some(not) = schema.get("not")
        && not.is_object()
        && passes(not)
    {
        errs.push(field::invalid(
            path,
            quote(""),
            &format!("\"{name}\" must not validate the schema (not)"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(schema: &Value, obj: &Value) -> Vec<String> {
        let mut errs = Errors::new();
        validate_root(schema, obj, &mut errs);
        errs.iter().map(|e| e.message()).collect()
    }

    #[test]
    fn errors_are_worded_as_the_apiextensions_validator_words_them() {
        let schema = json!({"type": "object", "required": ["spec"], "properties": {"spec": {
            "type": "object", "required": ["image"], "properties": {
                "image": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$", "maxLength": 5},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
                "mode": {"type": "string", "enum": ["Auto", "Manual"]},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
                "port": {"x-kubernetes-int-or-string": true},
                "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.5}}}}});
        assert_eq!(messages(&schema, &json!({})), vec!["spec: Required value"]);
        assert_eq!(
            messages(&schema, &json!({"spec": {"replicas": "3"}})),
            vec![
                "spec.image: Required value",
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
            ]
        );
        assert_eq!(
            messages(
                &schema,
                &json!({"spec": {"image": "ABCDEFG", "replicas": -1, "mode": "x",
                "tags": ["a", "b", "c"], "port": true, "ratio": 1.5}})
            ),
            vec![
                "spec.image: Too long: may not be longer than 5",
                "spec.image: Invalid value: \"ABCDEFG\": spec.image in body should match '^[a-z]+$'",
                "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
                "spec.mode: Unsupported value: \"x\": supported values: \"Auto\", \"Manual\"",
                "spec.tags: Too many: 3: must have at most 2 items",
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5",
            ]
        );
        assert_eq!(
            messages(
                &schema,
                &json!({"spec": {"image": "", "tags": [], "replicas": 11, "port": "http"}})
            ),
            vec![
                "spec.image: Invalid value: \"\": spec.image in body should be at least 1 chars long",
                "spec.image: Invalid value: \"\": spec.image in body should match '^[a-z]+$'",
                "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            ]
        );
        assert!(
            messages(
                &schema,
                &json!({"spec": {"image": "web", "replicas": 2.0, "port": 8080}})
            )
            .is_empty()
        );
    }
}
