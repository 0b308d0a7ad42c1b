//! Events are one resource served under two groups, as in the API server: core `v1` Event is
//! the storage form, and `events.k8s.io/v1` Event is a view of the same objects with renamed
//! fields (`regarding` for `involvedObject`, `note` for `message`, …). An Event written through
//! either group is listed, watched and read through both.

use serde_json::Value;

/// `(events.k8s.io/v1 field, core v1 field)`.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn renamed(object: &Value, pairs: impl Iterator<Item = (&'static str, &'static str)>) -> Value {
    let mut out = object.clone();
    if let Some(map) = out.as_object_mut() {
        for (from, to) in pairs {
            if let Some(value) = map.remove(from) {
                map.insert(to.to_string(), value);
            }
        }
    }
    out
}

/// An `events.k8s.io/v1` Event in the storage (core `v1`) form.
pub fn to_core(event: &Value) -> Value {
    let mut out = renamed(event, RENAMED.iter().copied());
    out["apiVersion"] = Value::String("v1".into());
    out
}

/// A stored (core `v1`) Event as `events.k8s.io/v1` shows it.
pub fn to_events_view(event: &Value) -> Value {
    let mut out = renamed(event, RENAMED.iter().map(|(view, core)| (*core, *view)));
    out["apiVersion"] = Value::String("events.k8s.io/v1".into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_two_forms_convert_both_ways() {
        let view = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "n"},
            "regarding": {"kind": "App", "name": "web"}, "note": "Synced", "reason": "Synced",
            "type": "Normal", "reportingController": "wardn", "reportingInstance": "wardn-0",
            "action": "Reconcile", "eventTime": "2026-11-30T10:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2026-11-30T10:01:00.000000Z"}});
        let core = to_core(&view);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["message"], "Synced");
        assert_eq!(core["reportingComponent"], "wardn");
        assert!(core.get("regarding").is_none() && core.get("note").is_none());
        assert_eq!(core["series"]["count"], 2);
        assert_eq!(to_events_view(&core), view);
    }
}
