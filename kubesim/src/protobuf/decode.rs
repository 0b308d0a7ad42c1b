//! Protobuf → JSON, driven by the schema: each message's fields become the JSON object
//! kube-apiserver's Go types would marshal, with Go's rules for what the JSON form omits
//! (a zero non-pointer scalar under omitempty; an empty non-pointer struct, as if the JSON
//! had left it out) and keeps (anything behind a pointer that was on the wire), inlined
//! structs merged into their parent, and the special types in their JSON forms. Unknown
//! field numbers are skipped, as Go's generated decoders skip them; a wrong wire type, a
//! truncated value, invalid UTF-8, bad embedded JSON or nesting deeper than [`MAX_DEPTH`]
//! is an error naming the field.

use std::borrow::Cow;

use base64::Engine;
use serde_json::{Map, Value};

use super::path::{Path, Step};
use super::schema::{Field, Label, Message, Schema, Ty, schema};
use super::special::{Special, format_time, special};
use super::wire::{Wire, fields};

/// How deep messages may nest (Kubernetes objects nest about 15 deep; CRD schemas more).
pub(super) const MAX_DEPTH: usize = 100;

/// What one field collected from the wire before it becomes JSON.
enum Collected<'a> {
    /// A singular scalar (last one wins), and whether it is its type's zero.
    Scalar(Value, bool),
    /// A singular message: its occurrences concatenated (protobuf merges them).
    Message(Cow<'a, [u8]>),
    /// A repeated field's elements.
    Array(Vec<Value>),
    /// A map field's entries.
    Map(Map<String, Value>),
}

/// Decodes the message `msg` in `buf` into its JSON object.
pub(super) fn message(
    msg: &Message,
    buf: &[u8],
    path: &Path<'_>,
    depth: usize,
) -> Result<Map<String, Value>, String> {
    if depth > MAX_DEPTH {
        return Err(format!("{path}: messages nest deeper than {MAX_DEPTH}"));
    }
    let schema = schema();
    let mut collected: Vec<Option<Collected<'_>>> = Vec::new();
    collected.resize_with(msg.fields.len(), || None);
    for item in fields(buf) {
        let (number, wire) = item.map_err(|e| at(path, &e))?;
        let Some(index) = msg
            .fields
            .binary_search_by_key(&number, |f| u64::from(f.number))
            .ok()
        else {
            continue;
        };
        let field = &msg.fields[index];
        let here = field_path(path, field);
        let slot = &mut collected[index];
        match field.label {
            Label::Single => match (&field.ty, wire) {
                (Ty::Message(_), Wire::Bytes(b)) => match slot {
                    Some(Collected::Message(chunks)) => chunks.to_mut().extend_from_slice(b),
                    _ => *slot = Some(Collected::Message(Cow::Borrowed(b))),
                },
                (ty, wire) => {
                    let (value, zero) = scalar(ty, wire, &here)?;
                    *slot = Some(Collected::Scalar(value, zero));
                }
            },
            Label::Repeated => {
                if !matches!(slot, Some(Collected::Array(_))) {
                    *slot = Some(Collected::Array(Vec::new()));
                }
                let Some(Collected::Array(items)) = slot else {
                    continue;
                };
                let element = here.then(Step::Index(items.len()));
                match (&field.ty, wire) {
                    (Ty::Message(name), Wire::Bytes(b)) => {
                        items.push(value_of(schema, name, b, &element, depth)?);
                    }
                    (Ty::Bool | Ty::Int32 | Ty::Int64, Wire::Bytes(packed)) => {
                        let mut pos = 0;
                        while pos < packed.len() {
                            let v = super::wire::varint(packed, &mut pos)
                                .map_err(|e| at(&element, &e))?;
                            items.push(scalar(&field.ty, Wire::Varint(v), &element)?.0);
                        }
                    }
                    (ty, wire) => items.push(scalar(ty, wire, &element)?.0),
                }
            }
            Label::Map => {
                let Wire::Bytes(entry) = wire else {
                    return Err(wrong_wire(&here, wire));
                };
                if !matches!(slot, Some(Collected::Map(_))) {
                    *slot = Some(Collected::Map(Map::new()));
                }
                let Some(Collected::Map(map)) = slot else {
                    continue;
                };
                let (key, value) = map_entry(schema, field, entry, &here, depth)?;
                map.insert(key, value);
            }
        }
    }
    let mut out = Map::new();
    for (field, slot) in msg.fields.iter().zip(collected) {
        let here = field_path(path, field);
        match slot {
            None => {}
            Some(Collected::Scalar(_, true)) if field.omitempty && !field.pointer => {}
            Some(Collected::Scalar(value, _)) => {
                out.insert(field.json.clone(), value);
            }
            Some(Collected::Array(items)) => {
                out.insert(field.json.clone(), Value::Array(items));
            }
            Some(Collected::Map(map)) => {
                out.insert(field.json.clone(), Value::Object(map));
            }
            Some(Collected::Message(bytes)) => {
                let Ty::Message(name) = &field.ty else {
                    continue;
                };
                match value_of(schema, name, &bytes, &here, depth)? {
                    Value::Object(inner) if field.inline => out.extend(inner),
                    Value::Object(inner) if inner.is_empty() && !field.pointer => {}
                    Value::Null => {}
                    Value::String(s) if s.is_empty() && !field.pointer => {}
                    value => {
                        out.insert(field.json.clone(), value);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The JSON value of a message of type `name` (special types in their own forms; named
/// slices as arrays).
fn value_of(
    schema: &Schema,
    name: &str,
    buf: &[u8],
    path: &Path<'_>,
    depth: usize,
) -> Result<Value, String> {
    let msg = schema
        .message(name)
        .ok_or_else(|| format!("{path}: no message {name} in the schema"))?;
    if let Some(kind) = special(name) {
        return special_value(schema, kind, buf, path, depth);
    }
    let mut object = message(msg, buf, path, depth + 1)?;
    if msg.list {
        return Ok(object
            .remove("items")
            .unwrap_or_else(|| Value::Array(Vec::new())));
    }
    Ok(Value::Object(object))
}

/// One `map<string, V>` entry: key 1, value 2 (the zero value when absent).
fn map_entry(
    schema: &Schema,
    field: &Field,
    entry: &[u8],
    path: &Path<'_>,
    depth: usize,
) -> Result<(String, Value), String> {
    let mut key = String::new();
    let mut value = None;
    for item in fields(entry) {
        match item.map_err(|e| at(path, &e))? {
            (1, Wire::Bytes(k)) => key = utf8(k, path)?,
            (1, wire) => return Err(wrong_wire(path, wire)),
            (2, wire) => value = Some(wire),
            _ => {}
        }
    }
    let here = path.then(Step::Key(&key));
    let value = match (&field.ty, value) {
        (Ty::Message(name), Some(Wire::Bytes(b))) => value_of(schema, name, b, &here, depth)?,
        (Ty::Message(name), None) => value_of(schema, name, &[], &here, depth)?,
        (ty, Some(wire)) => scalar(ty, wire, &here)?.0,
        (Ty::Bytes | Ty::Str, None) => Value::String(String::new()),
        (ty, None) => scalar(ty, Wire::Varint(0), &here)?.0,
    };
    Ok((key, value))
}

/// A scalar's JSON value and whether it is its type's zero.
fn scalar(ty: &Ty, wire: Wire<'_>, path: &Path<'_>) -> Result<(Value, bool), String> {
    Ok(match (ty, wire) {
        (Ty::Str, Wire::Bytes(b)) => (Value::String(utf8(b, path)?), b.is_empty()),
        (Ty::Bytes, Wire::Bytes(b)) => (
            Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            b.is_empty(),
        ),
        (Ty::Bool, Wire::Varint(v)) => (Value::Bool(v != 0), v == 0),
        (Ty::Int32, Wire::Varint(v)) => ((v as i64 as i32).into(), v as i32 == 0),
        (Ty::Int64, Wire::Varint(v)) => ((v as i64).into(), v == 0),
        (Ty::Double, Wire::Fixed64(bits)) => {
            let f = f64::from_bits(bits);
            let value = if f.fract() == 0.0 && f.abs() < 9.0e15 {
                Value::from(f as i64)
            } else {
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("{path}: {f} is not a JSON number"))?
            };
            (value, f == 0.0)
        }
        (_, wire) => return Err(wrong_wire(path, wire)),
    })
}

fn special_value(
    schema: &Schema,
    kind: Special,
    buf: &[u8],
    path: &Path<'_>,
    depth: usize,
) -> Result<Value, String> {
    let mut varints = [0u64; 4];
    let mut strings: [Option<&[u8]>; 4] = [None; 4];
    let mut schemas = Vec::new();
    let mut property = Vec::new();
    for item in fields(buf) {
        let (number, wire) = item.map_err(|e| at(path, &e))?;
        let repeated_at = match kind {
            Special::SchemaOrArray | Special::SchemaOrStringArray => 2,
            _ => 0,
        };
        match (number, wire) {
            (n, Wire::Varint(v)) if n < 4 => varints[n as usize] = v,
            (n, Wire::Bytes(b)) if n == repeated_at && kind == Special::SchemaOrArray => {
                let element = path.then(Step::Index(schemas.len()));
                schemas.push(props(schema, b, &element, depth)?);
            }
            (n, Wire::Bytes(b)) if n == repeated_at => {
                property.push(Value::String(utf8(b, path)?));
            }
            (n, Wire::Bytes(b)) if n < 4 => strings[n as usize] = Some(b),
            (n, wire) if n < 4 => return Err(wrong_wire(path, wire)),
            _ => {}
        }
    }
    Ok(match kind {
        Special::Time | Special::MicroTime if buf.is_empty() => Value::Null,
        Special::Time | Special::MicroTime => Value::String(
            format_time(
                varints[1] as i64,
                varints[2] as i64 as i32,
                kind == Special::MicroTime,
            )
            .map_err(|e| at(path, &e))?,
        ),
        Special::Quantity => Value::String(utf8(strings[1].unwrap_or_default(), path)?),
        Special::IntOrString => match varints[1] {
            0 => (varints[2] as i64 as i32).into(),
            1 => Value::String(utf8(strings[3].unwrap_or_default(), path)?),
            other => {
                return Err(format!(
                    "{path}: IntOrString type {other} is neither 0 (int) nor 1 (string)"
                ));
            }
        },
        Special::RawJson => match strings[1] {
            None | Some([]) => Value::Null,
            Some(raw) => serde_json::from_slice(raw)
                .map_err(|e| format!("{path}: the raw bytes are not JSON: {e}"))?,
        },
        Special::SchemaOrArray if !schemas.is_empty() => Value::Array(schemas),
        Special::SchemaOrStringArray if !property.is_empty() => Value::Array(property),
        Special::SchemaOrArray | Special::SchemaOrStringArray => match strings[1] {
            Some(b) => props(schema, b, path, depth)?,
            None => Value::Null,
        },
        Special::SchemaOrBool => match strings[2] {
            Some(b) => props(schema, b, path, depth)?,
            None => Value::Bool(varints[1] != 0),
        },
    })
}

/// A JSONSchemaProps inside one of the apiextensions unions.
fn props(schema: &Schema, buf: &[u8], path: &Path<'_>, depth: usize) -> Result<Value, String> {
    value_of(
        schema,
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        buf,
        path,
        depth + 1,
    )
}

/// The path of a field: an inlined struct's fields sit in the parent's object.
pub(super) fn field_path<'a>(path: &'a Path<'a>, field: &'a Field) -> Path<'a> {
    if field.inline {
        *path
    } else {
        path.then(Step::Field(&field.json))
    }
}

fn utf8(bytes: &[u8], path: &Path<'_>) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|e| format!("{path}: invalid UTF-8: {e}"))
}

fn wrong_wire(path: &Path<'_>, wire: Wire<'_>) -> String {
    format!(
        "proto: wrong wireType = {} for field {path}",
        wire.wire_type()
    )
}

fn at(path: &Path<'_>, e: &str) -> String {
    if path.to_string().is_empty() {
        e.to_string()
    } else {
        format!("{path}: {e}")
    }
}
