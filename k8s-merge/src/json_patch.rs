//! JSON patch (RFC 6902) with JSON pointers (RFC 6901).

use serde_json::Value;

use crate::error::PatchError;
use crate::value::{json_equal, remove_key, type_name};

/// Applies a JSON patch (RFC 6902): `operations` is an array of `add`, `remove`, `replace`,
/// `move`, `copy` and `test` operations, applied in order. The patch is atomic: on error the
/// caller's document is untouched and the error names the failing operation's index and path.
pub fn json_patch(original: &Value, operations: &Value) -> Result<Value, PatchError> {
    let Value::Array(operations) = operations else {
        return Err(PatchError::Invalid(format!(
            "a JSON patch must be an array of operations, not {}",
            type_name(operations)
        )));
    };
    let mut document = original.clone();
    for (index, operation) in operations.iter().enumerate() {
        apply_operation(&mut document, operation, index)?;
    }
    Ok(document)
}

/// Applies one operation to `document`.
fn apply_operation(
    document: &mut Value,
    operation: &Value,
    index: usize,
) -> Result<(), PatchError> {
    let op = operation.get("op").and_then(Value::as_str).unwrap_or("?");
    let path_text = operation.get("path").and_then(Value::as_str);
    let fail = |reason: String| PatchError::Operation {
        index,
        op: op.to_owned(),
        path: path_text.unwrap_or("").to_owned(),
        reason,
    };
    if !operation.is_object() {
        return Err(fail(format!(
            "an operation must be an object, not {}",
            type_name(operation)
        )));
    }
    let path_text = path_text.ok_or_else(|| fail("missing string member \"path\"".to_owned()))?;
    let path = parse_pointer(path_text).map_err(&fail)?;
    let value = || {
        operation
            .get("value")
            .ok_or_else(|| fail("missing member \"value\"".to_owned()))
    };
    let from = || -> Result<Vec<String>, PatchError> {
        let text = operation.get("from").and_then(Value::as_str);
        let text = text.ok_or_else(|| fail("missing string member \"from\"".to_owned()))?;
        parse_pointer(text).map_err(|reason| fail(format!("from: {reason}")))
    };
    match op {
        "add" => add(document, &path, value()?.clone()).map_err(fail),
        "remove" => remove(document, &path).map(drop).map_err(fail),
        "replace" => {
            let slot = resolve_mut(document, &path).map_err(&fail)?;
            *slot = value()?.clone();
            Ok(())
        }
        "move" => {
            let from = from()?;
            if path.len() > from.len() && path[..from.len()] == from[..] {
                return Err(fail(
                    "cannot move a value into one of its own children".to_owned(),
                ));
            }
            let moved =
                remove(document, &from).map_err(|reason| fail(format!("from: {reason}")))?;
            add(document, &path, moved).map_err(fail)
        }
        "copy" => {
            let from = from()?;
            let copied =
                resolve(document, &from).map_err(|reason| fail(format!("from: {reason}")))?;
            add(document, &path, copied.clone()).map_err(fail)
        }
        "test" => {
            let expected = value()?;
            let actual = resolve(document, &path).map_err(&fail)?;
            if json_equal(actual, expected) {
                Ok(())
            } else {
                Err(PatchError::TestFailed {
                    index,
                    path: path_text.to_owned(),
                })
            }
        }
        "?" => Err(fail("missing string member \"op\"".to_owned())),
        other => Err(fail(format!("unknown operation {other:?}"))),
    }
}

/// Splits a JSON pointer into unescaped reference tokens (`~1` is `/`, `~0` is `~`).
fn parse_pointer(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!(
            "JSON pointer {pointer:?} must be empty or start with '/'"
        ));
    };
    rest.split('/').map(unescape_token).collect()
}

/// Unescapes one reference token.
fn unescape_token(token: &str) -> Result<String, String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            _ => {
                return Err(format!(
                    "invalid escape in JSON pointer token {token:?} (only ~0 and ~1)"
                ));
            }
        }
    }
    Ok(out)
}

/// Parses an array index token; `len` bounds it (inclusive when `allow_end`).
fn array_index(token: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    if token == "-" {
        return if allow_end {
            Ok(len)
        } else {
            Err("index \"-\" refers past the end of the array".to_owned())
        };
    }
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    let index: usize = if valid { token.parse().ok() } else { None }
        .ok_or_else(|| format!("invalid array index {token:?}"))?;
    let limit = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if index > limit || (!allow_end && len == 0) {
        return Err(format!(
            "array index {index} is out of bounds (length {len})"
        ));
    }
    Ok(index)
}

/// The value at `path`.
fn resolve<'v>(document: &'v Value, path: &[String]) -> Result<&'v Value, String> {
    let mut current = document;
    for (depth, token) in path.iter().enumerate() {
        current = match current {
            Value::Object(map) => map.get(token),
            Value::Array(items) => Some(&items[array_index(token, items.len(), false)?]),
            _ => None,
        }
        .ok_or_else(|| missing(path, depth))?;
    }
    Ok(current)
}

/// The value at `path`, mutably.
fn resolve_mut<'v>(document: &'v mut Value, path: &[String]) -> Result<&'v mut Value, String> {
    let mut current = document;
    for (depth, token) in path.iter().enumerate() {
        current = match current {
            Value::Object(map) => map.get_mut(token),
            Value::Array(items) => {
                let index = array_index(token, items.len(), false)?;
                items.get_mut(index)
            }
            _ => None,
        }
        .ok_or_else(|| missing(path, depth))?;
    }
    Ok(current)
}

/// The message for a path whose prefix up to `depth` does not exist.
fn missing(path: &[String], depth: usize) -> String {
    let prefix: String = path[..=depth]
        .iter()
        .map(|t| format!("/{}", escape_token(t)))
        .collect();
    format!("no value at {prefix}")
}

/// Escapes a reference token for messages.
fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// RFC 6902 `add`: sets an object member, inserts into an array, or replaces the root.
fn add(document: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parent_path)) = path.split_last() else {
        *document = value;
        return Ok(());
    };
    match resolve_mut(document, parent_path)? {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let index = array_index(last, items.len(), true)?;
            items.insert(index, value);
            Ok(())
        }
        other => Err(format!("cannot add a member to a {}", type_name(other))),
    }
}

/// RFC 6902 `remove`: removes and returns the value at `path`.
fn remove(document: &mut Value, path: &[String]) -> Result<Value, String> {
    let Some((last, parent_path)) = path.split_last() else {
        return Err("cannot remove the whole document".to_owned());
    };
    match resolve_mut(document, parent_path)? {
        Value::Object(map) => remove_key(map, last).ok_or_else(|| missing(path, path.len() - 1)),
        Value::Array(items) => {
            let index = array_index(last, items.len(), false)?;
            Ok(items.remove(index))
        }
        _ => Err(missing(path, path.len() - 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(doc: Value, ops: Value) -> Value {
        json_patch(&doc, &ops).unwrap()
    }

    fn err(doc: Value, ops: Value) -> PatchError {
        json_patch(&doc, &ops).unwrap_err()
    }

    /// RFC 6902 appendix A examples.
    #[test]
    fn rfc6902_appendix_a() {
        assert_eq!(
            ok(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux"}])
            ),
            json!({"baz":"qux","foo":"bar"})
        );
        assert_eq!(
            ok(
                json!({"foo":["bar","baz"]}),
                json!([{"op":"add","path":"/foo/1","value":"qux"}])
            ),
            json!({"foo":["bar","qux","baz"]})
        );
        assert_eq!(
            ok(
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"remove","path":"/baz"}])
            ),
            json!({"foo":"bar"})
        );
        assert_eq!(
            ok(
                json!({"foo":["bar","qux","baz"]}),
                json!([{"op":"remove","path":"/foo/1"}])
            ),
            json!({"foo":["bar","baz"]})
        );
        assert_eq!(
            ok(
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"replace","path":"/baz","value":"boo"}])
            ),
            json!({"baz":"boo","foo":"bar"})
        );
        assert_eq!(
            ok(
                json!({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}),
                json!([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])
            ),
            json!({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})
        );
        assert_eq!(
            ok(
                json!({"foo":["all","grass","cows","eat"]}),
                json!([{"op":"move","from":"/foo/1","path":"/foo/3"}])
            ),
            json!({"foo":["all","cows","eat","grass"]})
        );
        assert_eq!(
            ok(
                json!({"baz":"qux","foo":["a",2,"c"]}),
                json!([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}])
            ),
            json!({"baz":"qux","foo":["a",2,"c"]})
        );
        assert_eq!(
            err(
                json!({"baz":"qux"}),
                json!([{"op":"test","path":"/baz","value":"bar"}])
            ),
            PatchError::TestFailed {
                index: 0,
                path: "/baz".into()
            }
        );
        assert_eq!(
            ok(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/child","value":{"grandchild":{}}}])
            ),
            json!({"foo":"bar","child":{"grandchild":{}}})
        );
        assert_eq!(
            ok(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux","xyz":123}])
            ),
            json!({"foo":"bar","baz":"qux"})
        );
        assert!(matches!(
            err(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz/bat","value":"qux"}])
            ),
            PatchError::Operation { index: 0, .. }
        ));
        assert_eq!(
            ok(
                json!({"/":9,"~1":10}),
                json!([{"op":"test","path":"/~01","value":10}])
            ),
            json!({"/":9,"~1":10})
        );
        assert!(matches!(
            err(
                json!({"/":9,"~1":10}),
                json!([{"op":"test","path":"/~01","value":"10"}])
            ),
            PatchError::TestFailed { .. }
        ));
        assert_eq!(
            ok(
                json!({"foo":["bar"]}),
                json!([{"op":"add","path":"/foo/-","value":["abc","def"]}])
            ),
            json!({"foo":["bar",["abc","def"]]})
        );
    }

    #[test]
    fn pointer_escapes() {
        let doc = json!({"a/b": 1, "m~n": 2});
        assert_eq!(
            ok(
                doc.clone(),
                json!([{"op":"replace","path":"/a~1b","value":3},{"op":"remove","path":"/m~0n"}])
            ),
            json!({"a/b": 3})
        );
        let e = err(doc, json!([{"op":"remove","path":"/m~2n"}]));
        assert!(e.to_string().contains("invalid escape"), "{e}");
    }

    #[test]
    fn copy_and_root_operations() {
        assert_eq!(
            ok(
                json!({"a":{"b":1}}),
                json!([{"op":"copy","from":"/a","path":"/c"}])
            ),
            json!({"a":{"b":1},"c":{"b":1}})
        );
        assert_eq!(
            ok(
                json!({"a":1}),
                json!([{"op":"replace","path":"","value":[1]}])
            ),
            json!([1])
        );
        assert_eq!(
            ok(
                json!({"a":1}),
                json!([{"op":"add","path":"","value":{"b":2}}])
            ),
            json!({"b":2})
        );
        assert_eq!(
            ok(
                json!({"a":null}),
                json!([{"op":"test","path":"/a","value":null}])
            ),
            json!({"a":null})
        );
        assert_eq!(
            ok(
                json!({"a":1}),
                json!([{"op":"test","path":"/a","value":1.0}])
            ),
            json!({"a":1})
        );
    }

    #[test]
    fn errors_name_operation_index_and_path() {
        let e = err(
            json!({"a":[1,2]}),
            json!([{"op":"add","path":"/b","value":1},{"op":"remove","path":"/a/5"}]),
        );
        assert_eq!(
            e.to_string(),
            "JSON patch operation 1 (remove /a/5): array index 5 is out of bounds (length 2)"
        );
        let cases = [
            (
                json!([{"op":"add","path":"/a/01","value":0}]),
                "invalid array index \"01\"",
            ),
            (
                json!([{"op":"add","path":"/a/3","value":0}]),
                "out of bounds",
            ),
            (json!([{"op":"remove","path":"/a/-"}]), "past the end"),
            (json!([{"op":"remove","path":"/zz"}]), "no value at /zz"),
            (
                json!([{"op":"replace","path":"/zz","value":1}]),
                "no value at /zz",
            ),
            (
                json!([{"op":"add","path":"/b"}]),
                "missing member \"value\"",
            ),
            (
                json!([{"op":"move","path":"/b"}]),
                "missing string member \"from\"",
            ),
            (
                json!([{"op":"move","from":"/a","path":"/a/0"}]),
                "own children",
            ),
            (json!([{"op":"jump","path":"/a"}]), "unknown operation"),
            (json!([{"path":"/a"}]), "missing string member \"op\""),
            (
                json!([{"op":"add","value":1}]),
                "missing string member \"path\"",
            ),
            (
                json!([{"op":"add","path":"a","value":1}]),
                "must be empty or start with '/'",
            ),
            (json!([{"op":"remove","path":""}]), "whole document"),
            (json!(["add"]), "must be an object"),
        ];
        for (ops, expected) in cases {
            let e = err(json!({"a":[1,2]}), ops.clone());
            assert!(e.to_string().contains(expected), "{ops}: {e}");
        }
        assert!(matches!(
            err(json!({}), json!({"op":"add"})),
            PatchError::Invalid(_)
        ));
    }

    #[test]
    fn failed_patch_leaves_no_partial_result() {
        let doc = json!({"a":1});
        let result = json_patch(
            &doc,
            &json!([{"op":"add","path":"/b","value":2},{"op":"test","path":"/a","value":9}]),
        );
        assert!(result.is_err());
        assert_eq!(doc, json!({"a":1}));
    }

    /// Property: replacing the root with a document yields it, and a test of every top-level
    /// member against itself passes.
    #[test]
    fn property_root_replace_and_self_test() {
        for doc in crate::testgen::documents(200, true) {
            let replaced = json_patch(
                &json!({}),
                &json!([{"op":"add","path":"","value":doc.clone()}]),
            )
            .unwrap();
            assert_eq!(replaced, doc);
            if let Value::Object(map) = &doc {
                let tests: Vec<Value> = map
                    .iter()
                    .map(|(k, v)| json!({"op":"test","path":format!("/{}", escape_token(k)),"value":v}))
                    .collect();
                assert_eq!(json_patch(&doc, &Value::Array(tests)).unwrap(), doc);
            }
        }
    }
}
