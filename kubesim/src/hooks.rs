//! Kind-specific server behaviour on writes: ServiceAccount token Secrets are filled in,
//! CRDs become Established (and their kinds are served), deleted CRDs take their objects with
//! them, new Namespaces get their `default` ServiceAccount and `kube-root-ca.crt`.

use std::collections::BTreeSet;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::auth::{SA_NAME_ANNOTATION, SA_TOKEN_TYPE};

use crate::resources::ResourceInfo;
use crate::state::State;
use crate::store::{EventType, Store};
use crate::util::{new_uid, now_rfc3339, random_token};

const CRDS: &str = "apiextensions.k8s.io/customresourcedefinitions";

fn is(info: &ResourceInfo, group: &str, kind: &str) -> bool {
    info.group == group && info.kind == kind
}

/// Adjusts a new object before it is stored: CRDs get their status; ServiceAccount token
/// Secrets get a token, the CA and the namespace, as the token controller fills them.
pub fn on_create(state: &State, info: &ResourceInfo, obj: &mut Value) {
    if is(info, "apiextensions.k8s.io", "CustomResourceDefinition") {
        crd_status(obj, None);
    }
    if is(info, "", "Secret")
        && obj.get("type").and_then(Value::as_str) == Some(SA_TOKEN_TYPE)
        && obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(SA_NAME_ANNOTATION))
            .is_some()
    {
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if !obj.get("data").is_some_and(Value::is_object) {
            obj["data"] = json!({});
        }
        obj["data"]["token"] = json!(STANDARD.encode(random_token()));
        obj["data"]["ca.crt"] = json!(STANDARD.encode(&state.ca_pem));
        obj["data"]["namespace"] = json!(STANDARD.encode(ns));
    }
}

/// Adjusts an updated object (main resource writes) before it is stored.
pub fn on_update(info: &ResourceInfo, old: &Value, obj: &mut Value) {
    if is(info, "apiextensions.k8s.io", "CustomResourceDefinition") {
        crd_status(obj, old.get("status"));
    }
}

/// A CRD's status as the apiextensions controller sets it: names accepted, Established,
/// stored versions.
fn crd_status(crd: &mut Value, old: Option<&Value>) {
    let now = now_rfc3339();
    let mut names = crd
        .pointer("/spec/names")
        .filter(|n| n.is_object())
        .cloned()
        .unwrap_or(json!({}));
    if names.get("singular").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        names["singular"] = json!(kind.to_ascii_lowercase());
    }
    if names.get("listKind").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        names["listKind"] = json!(format!("{kind}List"));
    }
    let mut stored: BTreeSet<String> = old
        .and_then(|s| s.get("storedVersions"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if let Some(versions) = crd.pointer("/spec/versions").and_then(Value::as_array) {
        for v in versions {
            if v.get("storage").and_then(Value::as_bool) == Some(true)
                && let Some(name) = v.get("name").and_then(Value::as_str)
            {
                stored.insert(name.to_string());
            }
        }
    }
    let kept_time = old
        .and_then(|s| s.pointer("/conditions/0/lastTransitionTime"))
        .cloned()
        .unwrap_or(json!(now));
    crd["status"] = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": kept_time,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": kept_time,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": names,
        "storedVersions": stored,
    });
}

/// The objects the controllers put in every namespace as it is created: the `default`
/// ServiceAccount (serviceaccount controller) and the `kube-root-ca.crt` ConfigMap with the
/// cluster's CA (root-ca-cert-publisher). Existing ones are kept.
pub fn populate_namespace(state: &State, store: &mut Store, ns: &str) {
    let now = now_rfc3339();
    let meta = |name: &str| json!({"name": name, "namespace": ns, "uid": new_uid(), "creationTimestamp": now});
    let account =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("default")});
    let mut root_ca = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("kube-root-ca.crt"),
        "data": {"ca.crt": state.ca_pem}});
    root_ca["metadata"]["annotations"] = json!({"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."});
    for (key, obj) in [("/serviceaccounts", account), ("/configmaps", root_ca)] {
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if store.get(key, ns, &name).is_none() {
            store.put(key, obj, EventType::Added);
        }
    }
}

/// After a new object is stored: a new Namespace gets its ServiceAccount and CA ConfigMap.
pub fn after_create(state: &State, store: &mut Store, info: &ResourceInfo, obj: &Value) {
    if is(info, "", "Namespace")
        && let Some(ns) = obj.pointer("/metadata/name").and_then(Value::as_str)
    {
        populate_namespace(state, store, ns);
    }
}

/// After any stored change of a resource: refresh served kinds when CRDs changed, and drop
/// the objects of CRDs that are gone.
pub fn after_change(state: &State, store: &mut Store, info: &ResourceInfo) {
    if !is(info, "apiextensions.k8s.io", "CustomResourceDefinition") {
        return;
    }
    let served: BTreeSet<String> = store
        .list(CRDS, None)
        .filter_map(|c| {
            Some(format!(
                "{}/{}",
                c.pointer("/spec/group")?.as_str()?,
                c.pointer("/spec/names/plural")?.as_str()?
            ))
        })
        .collect();
    let before: Vec<Arc<ResourceInfo>> = state
        .registry()
        .all()
        .iter()
        .filter(|r| !r.is_builtin())
        .cloned()
        .collect();
    for r in before {
        let key = r.store_key();
        if !served.contains(&key) {
            store.drop_table(&key);
        }
    }
    state.refresh_registry(store);
}
