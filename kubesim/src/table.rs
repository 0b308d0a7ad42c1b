//! Server-side printing: a `get` or `list` asking for `application/json;as=Table;g=meta.k8s.io`
//! (what `kubectl get` sends) is answered with a `meta.k8s.io/v1` Table. For custom resources
//! the columns are the CRD's `additionalPrinterColumns` (Name and Age when it has none), as
//! the API server's CRD table convertor does: JSONPath cells, `date` columns as a human age.
//! For the common built-in kinds they are kube-apiserver's printers' (`printers`); other
//! built-ins keep answering plain JSON (kubectl then prints NAME and AGE itself).

mod more_kinds;
mod printers;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use crate::resources::{PrinterColumn, ResourceInfo};

/// Whether an `Accept` header asks for a Table.
pub fn wanted(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io")
    })
}

/// The Table of `result` (one object or a list) for a custom resource, or `None` when `info`
/// has no printer columns (built-ins). `include` is `?includeObject=` (`Metadata` by default,
/// `Object` or `None`).
pub fn of(info: &ResourceInfo, result: &Value, include: Option<&str>) -> Option<Value> {
    let Some(columns) = info.printer_columns.as_ref() else {
        let builtin = printers::columns(info)?;
        let now = Utc::now();
        let definitions = builtin
            .iter()
            .map(|(name, ty, priority)| {
                json!({"name": name, "type": ty, "format": "", "description": "", "priority": priority})
            })
            .collect();
        // Events have no leading Name column (their name is a wide column at the end).
        let with_name = info.kind != "Event";
        return Some(table(result, include, definitions, with_name, |o| {
            printers::cells(info, o, now)
        }));
    };
    let columns: Vec<PrinterColumn> = if columns.is_empty() {
        vec![PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        }]
    } else {
        columns.clone()
    };
    let now = Utc::now();
    let definitions = columns
        .iter()
        .map(|c| {
            json!({"name": c.name, "type": c.type_, "format": c.format,
                "description": c.description, "priority": c.priority})
        })
        .collect();
    Some(table(result, include, definitions, true, |object| {
        columns.iter().map(|c| cell(c, object, now)).collect()
    }))
}

/// The Table of `result` with a Name column (when `with_name`), then `definitions` filled by
/// `cells`.
fn table(
    result: &Value,
    include: Option<&str>,
    definitions: Vec<Value>,
    with_name: bool,
    cells_of: impl Fn(&Value) -> Vec<Value>,
) -> Value {
    let (objects, metadata) = match result.get("items").and_then(Value::as_array) {
        Some(items) => (items.iter().collect::<Vec<_>>(), result["metadata"].clone()),
        None => (
            vec![result],
            json!({"resourceVersion": result.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null)}),
        ),
    };
    let mut all = Vec::new();
    if with_name {
        all.push(json!({
            "name": "Name", "type": "string", "format": "name", "priority": 0,
            "description": "Name must be unique within a namespace. More info: http://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        }));
    }
    all.extend(definitions);
    let rows: Vec<Value> = objects
        .into_iter()
        .map(|object| {
            let mut cells = Vec::new();
            if with_name {
                cells.push(
                    object
                        .pointer("/metadata/name")
                        .cloned()
                        .unwrap_or(Value::Null),
                );
            }
            cells.extend(cells_of(object));
            let mut row = Map::new();
            row.insert("cells".into(), Value::Array(cells));
            match include.unwrap_or("Metadata") {
                "None" => {}
                "Object" => {
                    row.insert("object".into(), object.clone());
                }
                _ => {
                    row.insert(
                        "object".into(),
                        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                            "metadata": object.get("metadata").cloned().unwrap_or(Value::Null)}),
                    );
                }
            }
            Value::Object(row)
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": all,
        "rows": rows,
    })
}

/// One cell: the column's JSONPath value (`date`: the age; missing: null).
fn cell(column: &PrinterColumn, object: &Value, now: DateTime<Utc>) -> Value {
    let Some(value) = json_path(object, &column.json_path) else {
        return Value::Null;
    };
    if column.type_ == "date" {
        return match value
            .as_str()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        {
            Some(t) => Value::String(human_duration(
                now.signed_duration_since(t.with_timezone(&Utc))
                    .num_seconds(),
            )),
            None => Value::Null,
        };
    }
    value
}

/// Evaluates a printer-column JSONPath (`.a.b`, `.a[0].b`, `.a[?(@.k=="v")].b`, `\.` escapes
/// a dot in a key); the first match.
pub fn json_path(object: &Value, path: &str) -> Option<Value> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut current = object.clone();
    for step in steps(path.strip_prefix('.').unwrap_or(path))? {
        current = match step {
            Step::Key(key) => current.get(&key)?.clone(),
            Step::Index(i) => current.get(i)?.clone(),
            Step::Filter(key, want) => current
                .as_array()?
                .iter()
                .find(|item| item.get(&key).and_then(scalar_text).as_deref() == Some(&want))?
                .clone(),
        };
    }
    Some(current)
}

enum Step {
    Key(String),
    Index(usize),
    Filter(String, String),
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
        _ => None,
    }
}

/// Splits a path into keys, indexes and equality filters; `None` when malformed.
fn steps(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut key = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => key.push(chars.next()?),
            '.' => {
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
            }
            '[' => {
                if !key.is_empty() {
                    steps.push(Step::Key(std::mem::take(&mut key)));
                }
                let mut inner = String::new();
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    inner.push(c);
                }
                steps.push(bracket(&inner)?);
            }
            c => key.push(c),
        }
    }
    if !key.is_empty() {
        steps.push(Step::Key(key));
    }
    Some(steps)
}

fn bracket(inner: &str) -> Option<Step> {
    if let Ok(i) = inner.trim().parse::<usize>() {
        return Some(Step::Index(i));
    }
    let filter = inner.trim().strip_prefix("?(")?.strip_suffix(')')?;
    let (left, right) = filter.split_once("==")?;
    let key = left.trim().strip_prefix("@.")?.to_string();
    let want = right
        .trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .to_string();
    Some(Step::Filter(key, want))
}

/// A duration in seconds as the API server prints ages (apimachinery's `HumanDuration`).
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = (hours / 24) % 365;
        return if days == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{days}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_print_as_the_api_server_prints_them() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 300, "3h5m"),
            (47 * 3600, "47h"),
            (2 * 86400, "2d"),
            (2 * 86400 + 3600, "2d1h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400, "3y"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (9 * 365 * 86400, "9y"),
        ];
        for (seconds, want) in cases {
            assert_eq!(human_duration(seconds), want, "{seconds}");
        }
    }

    #[test]
    fn printer_column_paths() {
        let o = json!({"metadata": {"annotations": {"a.b/c": "x"}},
            "spec": {"items": [{"n": 1}, {"n": 2}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]}});
        assert_eq!(json_path(&o, ".spec.items[1].n"), Some(json!(2)));
        assert_eq!(
            json_path(&o, r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(json!("True"))
        );
        assert_eq!(
            json_path(&o, r".metadata.annotations.a\.b/c"),
            Some(json!("x"))
        );
        assert_eq!(json_path(&o, "{.spec.items[0].n}"), Some(json!(1)));
        assert_eq!(json_path(&o, ".status.phase"), None);
    }

    #[test]
    fn accept_headers() {
        assert!(wanted(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        ));
        assert!(!wanted("application/json"));
        assert!(!wanted("application/vnd.kubernetes.protobuf"));
    }
}
