//! The structured change set: every leaf that differs between two versions of an object, as a
//! JSON pointer with its before and after values.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What happened at one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeOp {
    /// The path exists only after.
    Add,
    /// The path exists only before.
    Remove,
    /// The value at the path differs.
    Replace,
}

/// One difference between two documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// RFC 6901 JSON pointer, e.g. `/spec/replicas`.
    pub path: String,
    /// Add, remove or replace.
    pub op: ChangeOp,
    /// The value before (absent for `add`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// The value after (absent for `remove`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The differences from `before` to `after`; objects are compared key by key, arrays and
/// scalars as whole values (list element identity is kind-specific, so a changed list is
/// reported as one replace).
pub fn changes(before: &Value, after: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    walk(String::new(), before, after, &mut out);
    out
}

fn walk(path: String, before: &Value, after: &Value, out: &mut Vec<Change>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (k, bv) in b {
                let p = format!("{path}/{}", escape(k));
                match a.get(k) {
                    Some(av) => walk(p, bv, av, out),
                    None => out.push(Change {
                        path: p,
                        op: ChangeOp::Remove,
                        before: Some(bv.clone()),
                        after: None,
                    }),
                }
            }
            for (k, av) in a {
                if !b.contains_key(k) {
                    let p = format!("{path}/{}", escape(k));
                    out.push(Change {
                        path: p,
                        op: ChangeOp::Add,
                        before: None,
                        after: Some(av.clone()),
                    });
                }
            }
        }
        _ if before == after => {}
        _ => out.push(Change {
            path: if path.is_empty() {
                "/".to_string()
            } else {
                path
            },
            op: ChangeOp::Replace,
            before: Some(before.clone()),
            after: Some(after.clone()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_add_remove_replace_with_escaped_paths() {
        let b = json!({"spec": {"replicas": 1, "old": true}, "metadata": {"labels": {"a/b": "x"}}});
        let a = json!({"spec": {"replicas": 3, "new": [1]}, "metadata": {"labels": {"a/b": "y"}}});
        let c = changes(&b, &a);
        let paths: Vec<_> = c.iter().map(|c| (c.path.as_str(), c.op)).collect();
        assert_eq!(
            paths,
            vec![
                ("/spec/replicas", ChangeOp::Replace),
                ("/spec/old", ChangeOp::Remove),
                ("/spec/new", ChangeOp::Add),
                ("/metadata/labels/a~1b", ChangeOp::Replace),
            ]
        );
        assert_eq!(c[0].after, Some(json!(3)));
    }

    #[test]
    fn equal_documents_have_no_changes() {
        let v = json!({"a": [1, {"b": 2}]});
        assert!(changes(&v, &v).is_empty());
    }
}
