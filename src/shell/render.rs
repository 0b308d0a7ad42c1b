//! What the command box shows: the rows of `get` (a server-side Table's columns when the
//! cluster prints one, else NAME and AGE as kubectl prints objects without a Table), and the
//! text of `describe` (metadata, spec and status; a Secret's values never, only their sizes).

use base64::Engine;
use serde_json::Value;

/// The `Accept` header of `get`: a server-side Table (as `kubectl get` asks), else JSON.
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// An age as kubectl prints it (`45s`, `3m12s`, `2h5m`, `4d`…), from whole seconds.
pub fn human_age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    let days = hours / 24;
    if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        }
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        }
    } else if days < 365 * 2 {
        format!("{days}d")
    } else {
        let years = days / 365;
        match days % 365 {
            0 => format!("{years}y"),
            d if years < 8 => format!("{years}y{d}d"),
            _ => format!("{years}y"),
        }
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::Null => "<none>".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn age_of(object: &Value, now: i64) -> String {
    object
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or_else(
            || "<unknown>".to_string(),
            |t| human_age(now - t.as_second()),
        )
}

fn namespace_of(object: &Value) -> String {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The rows of a `get` answer (header first): a Table's priority-0 columns, or NAME and AGE
/// of one object or a list; NAMESPACE first when `all_namespaces`. `now` is Unix seconds.
pub fn get_rows(answer: &Value, all_namespaces: bool, now: i64) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    if answer["kind"] == "Table" {
        let definitions = answer["columnDefinitions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let shown: Vec<usize> = (0..definitions.len())
            .filter(|i| definitions[*i]["priority"].as_i64().unwrap_or(0) == 0)
            .collect();
        let mut header: Vec<String> = shown
            .iter()
            .map(|i| text(&definitions[*i]["name"]).to_uppercase())
            .collect();
        if all_namespaces {
            header.insert(0, "NAMESPACE".into());
        }
        rows.push(header);
        for row in answer["rows"].as_array().into_iter().flatten() {
            let cells = row["cells"].as_array().cloned().unwrap_or_default();
            let mut line: Vec<String> = shown
                .iter()
                .map(|i| cells.get(*i).map(text).unwrap_or_default())
                .collect();
            if all_namespaces {
                line.insert(0, namespace_of(&row["object"]));
            }
            rows.push(line);
        }
        return rows;
    }
    let objects: Vec<&Value> = match answer["items"].as_array() {
        Some(items) => items.iter().collect(),
        None => vec![answer],
    };
    rows.push(if all_namespaces {
        vec!["NAMESPACE".into(), "NAME".into(), "AGE".into()]
    } else {
        vec!["NAME".into(), "AGE".into()]
    });
    for object in objects {
        let mut line = vec![
            text(object.pointer("/metadata/name").unwrap_or(&Value::Null)),
            age_of(object, now),
        ];
        if all_namespaces {
            line.insert(0, namespace_of(object));
        }
        rows.push(line);
    }
    rows
}

/// The text of `describe` for `object`: kind, name, namespace, labels, annotations, age, then
/// spec and status as YAML; for a Secret, its keys and value sizes instead of its data.
pub fn describe(object: &Value, now: i64) -> String {
    let mut out = String::new();
    let field = |out: &mut String, name: &str, value: String| {
        out.push_str(&format!("{:<13}{value}\n", format!("{name}:")));
    };
    let meta = &object["metadata"];
    field(&mut out, "Name", text(&meta["name"]));
    if let Some(ns) = meta["namespace"].as_str() {
        field(&mut out, "Namespace", ns.to_string());
    }
    field(&mut out, "Kind", text(&object["kind"]));
    field(&mut out, "API Version", text(&object["apiVersion"]));
    for (title, key) in [("Labels", "labels"), ("Annotations", "annotations")] {
        let pairs: Vec<String> = meta[key]
            .as_object()
            .into_iter()
            .flatten()
            // The last-applied annotation repeats the whole object (Secret data included).
            .filter(|(k, _)| *k != "kubectl.kubernetes.io/last-applied-configuration")
            .map(|(k, v)| format!("{k}={}", text(v)))
            .collect();
        field(
            &mut out,
            title,
            if pairs.is_empty() {
                "<none>".into()
            } else {
                pairs.join(", ")
            },
        );
    }
    field(&mut out, "Age", age_of(object, now));
    if object["kind"] == "Secret" && object["apiVersion"] == "v1" {
        field(&mut out, "Type", text(&object["type"]));
        out.push_str("Data:\n");
        for (key, value) in object["data"].as_object().into_iter().flatten() {
            let size = value
                .as_str()
                .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
                .map_or(0, |bytes| bytes.len());
            out.push_str(&format!("  {key}: {size} bytes\n"));
        }
        return out;
    }
    for (title, key) in [("Spec", "spec"), ("Status", "status"), ("Data", "data")] {
        if let Some(value) = object.get(key).filter(|v| !v.is_null()) {
            out.push_str(&format!("{title}:\n"));
            let yaml = serde_saphyr::to_string(value).unwrap_or_else(|err| err.to_string());
            for line in yaml.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ages_read_like_kubectl() {
        for (seconds, age) in [
            (5, "5s"),
            (119, "119s"),
            (190, "3m10s"),
            (600, "10m"),
            (4 * 3600 + 60, "4h1m"),
            (30 * 3600, "30h"),
            (3 * 86400 + 3600, "3d1h"),
            (40 * 86400, "40d"),
            (800 * 86400, "2y70d"),
        ] {
            assert_eq!(human_age(seconds), age);
        }
    }

    #[test]
    fn tables_and_plain_lists_become_rows() {
        let table = json!({"kind": "Table", "columnDefinitions": [
            {"name": "Name", "priority": 0}, {"name": "Ready", "priority": 0},
            {"name": "Node", "priority": 1}],
            "rows": [{"cells": ["web", "1/1", "n1"], "object": {"metadata": {"namespace": "demo"}}}]});
        assert_eq!(
            get_rows(&table, true, 0),
            vec![
                vec!["NAMESPACE", "NAME", "READY"],
                vec!["demo", "web", "1/1"]
            ]
        );
        let list = json!({"items": [{"metadata": {"name": "a",
            "creationTimestamp": "1970-01-01T00:00:00Z"}}]});
        assert_eq!(
            get_rows(&list, false, 30),
            vec![vec!["NAME", "AGE"], vec!["a", "30s"]]
        );
    }

    #[test]
    fn secrets_are_described_without_their_values() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "s", "namespace": "demo", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"data\":{\"password\":\"aHVudGVyMg==\"}}"}},
            "data": {"password": "aHVudGVyMg=="}});
        let text = describe(&secret, 0);
        assert!(text.contains("password: 7 bytes"), "{text}");
        assert!(!text.contains("aHVudGVyMg"), "{text}");
    }
}
