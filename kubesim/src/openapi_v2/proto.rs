//! The protobuf form of the Swagger 2.0 document: gnostic's `openapi.v2.Document`
//! (`github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto`, proto3), which client-go's
//! `OpenAPISchema()` reads, unconditionally, as protobuf. Written: the document's version
//! and info, each path's operations (id, consumes, produces, schemes, tags, query
//! parameters, responses and `x-` extensions) and every definition's schema. Extension,
//! default, enum and example values travel as YAML text (`Any.yaml`), here their JSON
//! form, which is YAML.

use serde_json::{Map, Value};

use crate::protobuf::wire::{put_bytes, put_key, put_varint};

/// The media type of the protobuf form (kube-openapi answers with it).
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The older spelling of it, which client-go still asks for.
pub const DEPRECATED_MEDIA_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// Encodes the JSON document as an `openapi.v2.Document`.
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, doc.get("swagger"));
    if let Some(info) = doc.get("info") {
        let mut bytes = Vec::new();
        string(&mut bytes, 1, info.get("title"));
        string(&mut bytes, 2, info.get("version"));
        put_bytes(&mut out, 2, &bytes);
    }
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        let mut bytes = Vec::new();
        for (name, item) in paths {
            let mut path_item = Vec::new();
            for (number, method) in [
                (2, "get"),
                (3, "put"),
                (4, "post"),
                (5, "delete"),
                (8, "patch"),
            ] {
                if let Some(op) = item.get(method) {
                    put_bytes(&mut path_item, number, &operation(op));
                }
            }
            put_bytes(&mut bytes, 2, &named(name, &path_item));
        }
        put_bytes(&mut out, 8, &bytes);
    }
    if let Some(definitions) = doc.get("definitions").and_then(Value::as_object) {
        put_bytes(&mut out, 9, &named_schemas(definitions));
    }
    out
}

/// A NamedPathItem, NamedSchema or NamedAny: name 1, value 2.
fn named(name: &str, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, 1, name.as_bytes());
    put_bytes(&mut out, 2, value);
    out
}

/// Definitions and Properties: repeated NamedSchema 1.
fn named_schemas(schemas: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, schema_value) in schemas {
        put_bytes(&mut out, 1, &named(name, &schema(schema_value)));
    }
    out
}

fn operation(op: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    strings(&mut out, 1, op.get("tags"));
    string(&mut out, 5, op.get("operationId"));
    strings(&mut out, 6, op.get("produces"));
    strings(&mut out, 7, op.get("consumes"));
    for parameter in op
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        put_bytes(&mut out, 8, &query_parameter(parameter));
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        let mut codes = Vec::new();
        for (code, response) in responses {
            let mut body = Vec::new();
            string(&mut body, 1, response.get("description"));
            if let Some(s) = response.get("schema") {
                put_bytes(&mut body, 2, &wrapped(1, s));
            }
            let mut value = Vec::new();
            put_bytes(&mut value, 1, &body);
            put_bytes(&mut codes, 1, &named(code, &value));
        }
        put_bytes(&mut out, 9, &codes);
    }
    strings(&mut out, 10, op.get("schemes"));
    extensions(&mut out, 13, op);
    out
}

/// A query parameter as ParametersItem{parameter: Parameter{non_body_parameter:
/// NonBodyParameter{query_parameter_sub_schema}}} (the only kind the document lists).
fn query_parameter(parameter: &Value) -> Vec<u8> {
    let mut sub = Vec::new();
    string(&mut sub, 2, parameter.get("in"));
    string(&mut sub, 4, parameter.get("name"));
    string(&mut sub, 6, parameter.get("type"));
    if parameter.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        put_key(&mut sub, 20, 0);
        put_varint(&mut sub, 1);
    }
    let mut non_body = Vec::new();
    put_bytes(&mut non_body, 3, &sub);
    let mut param = Vec::new();
    put_bytes(&mut param, 2, &non_body);
    let mut item = Vec::new();
    put_bytes(&mut item, 1, &param);
    item
}

fn schema(node: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(m) = node.as_object() else {
        return out;
    };
    string(&mut out, 1, m.get("$ref"));
    string(&mut out, 2, m.get("format"));
    string(&mut out, 3, m.get("title"));
    string(&mut out, 4, m.get("description"));
    if let Some(v) = m.get("default") {
        put_bytes(&mut out, 5, &any(v));
    }
    for (number, key) in [(6, "multipleOf"), (7, "maximum"), (9, "minimum")] {
        if let Some(f) = m.get(key).and_then(Value::as_f64) {
            put_key(&mut out, number, 1);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
    }
    for (number, key) in [
        (8, "exclusiveMaximum"),
        (10, "exclusiveMinimum"),
        (16, "uniqueItems"),
        (27, "readOnly"),
    ] {
        if m.get(key).and_then(Value::as_bool) == Some(true) {
            put_key(&mut out, number, 0);
            put_varint(&mut out, 1);
        }
    }
    for (number, key) in [
        (11, "maxLength"),
        (12, "minLength"),
        (14, "maxItems"),
        (15, "minItems"),
        (17, "maxProperties"),
        (18, "minProperties"),
    ] {
        if let Some(i) = m.get(key).and_then(Value::as_i64).filter(|i| *i != 0) {
            put_key(&mut out, number, 0);
            put_varint(&mut out, i as u64);
        }
    }
    string(&mut out, 13, m.get("pattern"));
    strings(&mut out, 19, m.get("required"));
    for v in m
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        put_bytes(&mut out, 20, &any(v));
    }
    match m.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Vec::new();
            put_key(&mut item, 2, 0);
            put_varint(&mut item, u64::from(*b));
            put_bytes(&mut out, 21, &item);
        }
        Some(v @ Value::Object(_)) => put_bytes(&mut out, 21, &wrapped(1, v)),
        _ => {}
    }
    match m.get("type") {
        Some(Value::String(t)) => put_bytes(&mut out, 22, &string_bytes(1, t)),
        Some(Value::Array(types)) => {
            let mut item = Vec::new();
            strings(&mut item, 1, Some(&Value::Array(types.clone())));
            put_bytes(&mut out, 22, &item);
        }
        _ => {}
    }
    match m.get("items") {
        Some(v @ Value::Object(_)) => put_bytes(&mut out, 23, &wrapped(1, v)),
        Some(Value::Array(items)) => {
            let mut item = Vec::new();
            for v in items {
                put_bytes(&mut item, 1, &schema(v));
            }
            put_bytes(&mut out, 23, &item);
        }
        _ => {}
    }
    for v in m
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        put_bytes(&mut out, 24, &schema(v));
    }
    if let Some(properties) = m.get("properties").and_then(Value::as_object) {
        put_bytes(&mut out, 25, &named_schemas(properties));
    }
    if let Some(v) = m.get("example") {
        put_bytes(&mut out, 30, &any(v));
    }
    extensions(&mut out, 31, node);
    out
}

/// A message holding one schema as field `number` (AdditionalPropertiesItem, ItemsItem).
fn wrapped(number: u32, v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, number, &schema(v));
    out
}

/// An `Any` carrying the value as YAML (2).
fn any(v: &Value) -> Vec<u8> {
    string_bytes(2, &v.to_string())
}

/// The `x-` keys of an object as repeated NamedAny.
fn extensions(out: &mut Vec<u8>, number: u32, node: &Value) {
    for (k, v) in node.as_object().into_iter().flatten() {
        if k.starts_with("x-") {
            put_bytes(out, number, &named(k, &any(v)));
        }
    }
}

fn string_bytes(number: u32, text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, number, text.as_bytes());
    out
}

fn string(out: &mut Vec<u8>, number: u32, v: Option<&Value>) {
    if let Some(text) = v.and_then(Value::as_str).filter(|t| !t.is_empty()) {
        put_bytes(out, number, text.as_bytes());
    }
}

fn strings(out: &mut Vec<u8>, number: u32, v: Option<&Value>) {
    for text in v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        put_bytes(out, number, text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protobuf::wire::{Wire, fields};
    use serde_json::json;

    /// The length-delimited values of field `number`.
    fn all(buf: &[u8], number: u64) -> Vec<&[u8]> {
        fields(buf)
            .map(Result::unwrap)
            .filter_map(|(n, w)| match (n == number, w) {
                (true, Wire::Bytes(b)) => Some(b),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn operations_carry_parameters_and_responses_and_schemas_their_extensions() {
        let doc = json!({"swagger": "2.0", "paths": {"/x": {"patch": {
            "operationId": "patchX", "consumes": ["application/merge-patch+json"],
            "parameters": [{"name": "dryRun", "in": "query", "type": "string", "uniqueItems": true}],
            "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/X"}}},
            "x-kubernetes-action": "patch"}}},
            "definitions": {"X": {"type": "object", "additionalProperties": false,
                "properties": {"a": {"type": "array", "items": {"type": "string"}}},
                "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "X"}]}}});
        let bytes = encode(&doc);
        assert_eq!(all(&bytes, 1), [b"2.0".as_slice()]);
        let path = all(all(&bytes, 8)[0], 2)[0];
        assert_eq!(all(path, 1), [b"/x".as_slice()]);
        let patch = all(all(path, 2)[0], 8)[0];
        assert_eq!(all(patch, 5), [b"patchX".as_slice()]);
        assert_eq!(all(patch, 7), [b"application/merge-patch+json".as_slice()]);
        let query = all(all(all(all(patch, 8)[0], 1)[0], 2)[0], 3)[0];
        assert_eq!(all(query, 4), [b"dryRun".as_slice()]);
        let response = all(all(all(patch, 9)[0], 1)[0], 2)[0];
        let schema = all(all(all(response, 1)[0], 2)[0], 1)[0];
        assert_eq!(all(schema, 1), [b"#/definitions/X".as_slice()]);
        let extension = all(patch, 13)[0];
        assert_eq!(all(extension, 1), [b"x-kubernetes-action".as_slice()]);
        assert_eq!(all(all(extension, 2)[0], 2), [b"\"patch\"".as_slice()]);
        let definition = all(all(&bytes, 9)[0], 1)[0];
        let x = all(definition, 2)[0];
        assert_eq!(all(all(x, 22)[0], 1), [b"object".as_slice()]);
        assert_eq!(
            all(x, 21),
            [[0x10, 0x00].as_slice()],
            "additionalProperties: false"
        );
        let gvk = all(x, 31)[0];
        assert_eq!(all(gvk, 1), [b"x-kubernetes-group-version-kind".as_slice()]);
    }
}
