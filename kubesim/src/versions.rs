//! Resources served at more than one version from one storage: which version is stored and
//! how an object is converted between the stored form and the version a request addresses.
//! Events (core `v1` stored, `events.k8s.io/v1` a view, see [`crate::event_versions`]) and
//! HorizontalPodAutoscalers (`autoscaling/v2` stored, `autoscaling/v1` a view, see
//! [`crate::hpa_versions`]); every other resource is served at its storage version only.

use serde_json::Value;

use crate::resources::{ResourceInfo, is_events_view};

/// Whether `info` is the `autoscaling/v1` view of HorizontalPodAutoscalers.
fn is_hpa_v1(info: &ResourceInfo) -> bool {
    info.group == "autoscaling" && info.version == "v1" && info.kind == "HorizontalPodAutoscaler"
}

/// The form `object`, written through `info`, is stored in (defaulted as the storage version
/// defaults it when read back).
pub fn storage_form(info: &ResourceInfo, object: Value) -> Value {
    if is_events_view(info) {
        return crate::event_versions::to_core(&object);
    }
    if is_hpa_v1(info) {
        let mut v2 = crate::hpa_versions::to_v2(&object);
        crate::defaults::apply_defaults("autoscaling/v2", "HorizontalPodAutoscaler", &mut v2);
        return v2;
    }
    object
}

/// A stored object as the version `info` addresses shows it.
pub fn view(info: &ResourceInfo, stored: &Value) -> Value {
    if is_events_view(info) {
        return crate::event_versions::to_events_view(stored);
    }
    if is_hpa_v1(info) {
        return crate::hpa_versions::to_v1(stored);
    }
    let mut out = stored.clone();
    out["apiVersion"] = Value::String(info.api_version());
    out
}
