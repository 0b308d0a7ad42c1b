//! JSON → protobuf, driven by the schema: the inverse of [`super::decode`]. Fields are
//! written in number order; a field absent from (or null in) the JSON is not written (a Go
//! decoder reads that as the zero value, as it reads the JSON); inlined structs are encoded
//! from the parent's object; map entries are sorted by key; repeated scalars are unpacked,
//! as Go's proto2 encoder writes them. A JSON value of the wrong type is an error naming
//! the field; JSON keys the schema does not know are not written.

use base64::Engine;
use serde_json::{Map, Value};

use super::path::{Path, Step};
use super::schema::{Label, Message, Ty, schema};
use super::special::{Special, parse_time, special};
use super::wire::{put_bytes, put_key, put_varint};

const PROPS: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";

/// Appends the message `msg` encoded from the JSON object `obj`.
pub(super) fn message(
    msg: &Message,
    obj: &Map<String, Value>,
    path: &Path<'_>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if depth > super::decode::MAX_DEPTH {
        return Err(format!(
            "{path}: objects nest deeper than {}",
            super::decode::MAX_DEPTH
        ));
    }
    for field in &msg.fields {
        let here = super::decode::field_path(path, field);
        if field.inline {
            if let Ty::Message(name) = &field.ty {
                let inner = lookup(name, &here)?;
                let mut bytes = Vec::new();
                message(inner, obj, &here, depth + 1, &mut bytes)?;
                put_bytes(out, field.number, &bytes);
            }
            continue;
        }
        let Some(value) = obj.get(&field.json).filter(|v| !v.is_null()) else {
            continue;
        };
        match field.label {
            Label::Single => put(out, field.number, &field.ty, value, &here, depth)?,
            Label::Repeated => {
                let items = value
                    .as_array()
                    .ok_or_else(|| expected(&here, "an array", value))?;
                for (i, item) in items.iter().enumerate() {
                    put(
                        out,
                        field.number,
                        &field.ty,
                        item,
                        &here.then(Step::Index(i)),
                        depth,
                    )?;
                }
            }
            Label::Map => {
                let map = value
                    .as_object()
                    .ok_or_else(|| expected(&here, "an object", value))?;
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for key in keys {
                    let mut entry = Vec::new();
                    put_bytes(&mut entry, 1, key.as_bytes());
                    let item = &map[key];
                    if !item.is_null() {
                        let entry_path = here.then(Step::Key(key));
                        put(&mut entry, 2, &field.ty, item, &entry_path, depth)?;
                    }
                    put_bytes(out, field.number, &entry);
                }
            }
        }
    }
    Ok(())
}

/// Appends one value of type `ty` as field `number`.
fn put(
    out: &mut Vec<u8>,
    number: u32,
    ty: &Ty,
    value: &Value,
    path: &Path<'_>,
    depth: usize,
) -> Result<(), String> {
    match ty {
        Ty::Str => {
            let text = value
                .as_str()
                .ok_or_else(|| expected(path, "a string", value))?;
            put_bytes(out, number, text.as_bytes());
        }
        Ty::Bytes => {
            let text = value
                .as_str()
                .ok_or_else(|| expected(path, "a base64 string", value))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("{path}: not base64: {e}"))?;
            put_bytes(out, number, &bytes);
        }
        Ty::Bool => {
            let b = value
                .as_bool()
                .ok_or_else(|| expected(path, "a boolean", value))?;
            put_key(out, number, 0);
            put_varint(out, u64::from(b));
        }
        Ty::Int32 | Ty::Int64 => {
            let i = value
                .as_i64()
                .filter(|i| *ty == Ty::Int64 || i32::try_from(*i).is_ok())
                .ok_or_else(|| expected(path, "an integer in range", value))?;
            put_key(out, number, 0);
            put_varint(out, i as u64);
        }
        Ty::Double => {
            let f = value
                .as_f64()
                .ok_or_else(|| expected(path, "a number", value))?;
            put_key(out, number, 1);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Ty::Message(name) => {
            let mut bytes = Vec::new();
            message_value(name, value, path, depth + 1, &mut bytes)?;
            put_bytes(out, number, &bytes);
        }
    }
    Ok(())
}

/// Appends the body of a message of type `name` from its JSON value.
fn message_value(
    name: &str,
    value: &Value,
    path: &Path<'_>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let msg = lookup(name, path)?;
    if let Some(kind) = special(name) {
        return special_value(kind, value, path, depth, out);
    }
    if msg.list {
        let items = value
            .as_array()
            .ok_or_else(|| expected(path, "an array", value))?;
        for (i, item) in items.iter().enumerate() {
            put(out, 1, &Ty::Str, item, &path.then(Step::Index(i)), depth)?;
        }
        return Ok(());
    }
    let obj = value
        .as_object()
        .ok_or_else(|| expected(path, "an object", value))?;
    message(msg, obj, path, depth, out)
}

fn special_value(
    kind: Special,
    value: &Value,
    path: &Path<'_>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match (kind, value) {
        (Special::Time | Special::MicroTime, Value::String(text)) => {
            let (seconds, nanos) = parse_time(text).map_err(|e| format!("{path}: {e}"))?;
            put_key(out, 1, 0);
            put_varint(out, seconds as u64);
            put_key(out, 2, 0);
            put_varint(out, i64::from(nanos) as u64);
        }
        (Special::Quantity, Value::String(text)) => put_bytes(out, 1, text.as_bytes()),
        (Special::Quantity, Value::Number(n)) => put_bytes(out, 1, n.to_string().as_bytes()),
        (Special::IntOrString, Value::Number(_)) => {
            put(out, 1, &Ty::Int64, &Value::from(0), path, depth)?;
            put(out, 2, &Ty::Int32, value, path, depth)?;
            put_bytes(out, 3, b"");
        }
        (Special::IntOrString, Value::String(text)) => {
            put(out, 1, &Ty::Int64, &Value::from(1), path, depth)?;
            put(out, 2, &Ty::Int32, &Value::from(0), path, depth)?;
            put_bytes(out, 3, text.as_bytes());
        }
        (Special::RawJson, value) => {
            let raw = serde_json::to_vec(value).map_err(|e| format!("{path}: {e}"))?;
            put_bytes(out, 1, &raw);
        }
        (Special::SchemaOrArray, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let element = path.then(Step::Index(i));
                put(out, 2, &Ty::Message(PROPS.into()), item, &element, depth)?;
            }
        }
        (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Object(_)) => {
            put(out, 1, &Ty::Message(PROPS.into()), value, path, depth)?;
        }
        (Special::SchemaOrStringArray, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                put(out, 2, &Ty::Str, item, &path.then(Step::Index(i)), depth)?;
            }
        }
        (Special::SchemaOrBool, Value::Bool(allows)) => {
            put(out, 1, &Ty::Bool, &Value::Bool(*allows), path, depth)?;
        }
        (Special::SchemaOrBool, Value::Object(_)) => {
            put(out, 1, &Ty::Bool, &Value::Bool(true), path, depth)?;
            put(out, 2, &Ty::Message(PROPS.into()), value, path, depth)?;
        }
        (kind, value) => {
            let want = match kind {
                Special::Time | Special::MicroTime => "an RFC 3339 time",
                Special::Quantity => "a quantity",
                Special::IntOrString => "an integer or a string",
                _ => "a schema, or an array or boolean in its place",
            };
            return Err(expected(path, want, value));
        }
    }
    Ok(())
}

fn lookup(name: &str, path: &Path<'_>) -> Result<&'static Message, String> {
    schema()
        .message(name)
        .ok_or_else(|| format!("{path}: no message {name} in the schema"))
}

fn expected(path: &Path<'_>, what: &str, value: &Value) -> String {
    let got = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("{path}: expected {what}, got {got}")
}
