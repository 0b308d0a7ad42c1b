//! Discovery documents: legacy (`/api`, `/apis`, `/apis/{group}`, `/api/v1` and
//! `/apis/{group}/{version}`), aggregated (`apidiscovery.k8s.io/v2` APIGroupDiscoveryList on
//! `/api` and `/apis`, for clients that ask for it in `Accept`, as kubectl 1.32 does first),
//! plus `/version`.

use serde_json::{Value, json};

use crate::resources::{Registry, ResourceInfo};

/// `/version`, reporting Kubernetes v1.32.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.5-kubesim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-05-15T00:00:00Z",
        "goVersion": "go1.23.8",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`: the core group's versions.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    })
}

/// The named groups in order of first appearance, each with its versions (preferred first).
fn groups(registry: &Registry) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for r in registry.all().iter().filter(|r| !r.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => {
                if !versions.contains(&r.version) {
                    versions.push(r.version.clone());
                }
            }
            None => out.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    out
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let gv: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": gv,
        "preferredVersion": gv.first().cloned().unwrap_or(Value::Null),
    })
}

/// `/apis`: every named group.
pub fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = groups(registry)
        .iter()
        .map(|(g, v)| group_doc(g, v))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, or None when the group is not served.
pub fn group(registry: &Registry, group: &str) -> Option<Value> {
    let (name, versions) = groups(registry).into_iter().find(|(g, _)| g == group)?;
    let mut doc = group_doc(&name, &versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn resource_entry(r: &ResourceInfo) -> Value {
    let mut e = json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": r.verbs(),
    });
    if !r.short_names.is_empty() {
        e["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        e["categories"] = json!(r.categories);
    }
    e["storageVersionHash"] = json!(format!("{:x}", fxhash(&r.store_key())));
    e
}

fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// One subresource of a served resource.
struct Subresource {
    name: &'static str,
    /// The kind answered, as (group, version, kind).
    response: (String, String, String),
    verbs: &'static [&'static str],
}

const READ_WRITE: &[&str] = &["get", "patch", "update"];

/// The subresources `r` serves: status, scale, and ServiceAccounts' token.
fn subresources(r: &ResourceInfo) -> Vec<Subresource> {
    let own = || (r.group.clone(), r.version.clone(), r.kind.clone());
    let mut out = Vec::new();
    if r.status {
        out.push(Subresource {
            name: "status",
            response: own(),
            verbs: READ_WRITE,
        });
    }
    if r.scale.is_some() {
        out.push(Subresource {
            name: "scale",
            response: ("autoscaling".into(), "v1".into(), "Scale".into()),
            verbs: READ_WRITE,
        });
    }
    if r.group.is_empty() && r.plural == "pods" {
        out.push(Subresource {
            name: "log",
            response: own(),
            verbs: &["get"],
        });
    }
    if r.group.is_empty() && r.plural == "serviceaccounts" {
        out.push(Subresource {
            name: "token",
            response: (
                "authentication.k8s.io".into(),
                "v1".into(),
                "TokenRequest".into(),
            ),
            verbs: &["create"],
        });
    }
    out
}

/// `/api/v1` or `/apis/{group}/{version}`: the resources and subresources served there.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    if !registry.has_group_version(group, version) {
        return None;
    }
    let mut resources = Vec::new();
    for r in registry
        .all()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        resources.push(resource_entry(r));
        for sub in subresources(r) {
            let mut e = json!({
                "name": format!("{}/{}", r.plural, sub.name),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": sub.response.2,
                "verbs": sub.verbs,
            });
            if sub.response.0 != r.group || sub.response.1 != r.version {
                e["group"] = json!(sub.response.0);
                e["version"] = json!(sub.response.1);
            }
            resources.push(e);
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

/// The media type of aggregated discovery documents.
pub const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an `Accept` header asks for aggregated discovery (`apidiscovery.k8s.io/v2`).
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        params.contains(&"g=apidiscovery.k8s.io")
            && params.contains(&"v=v2")
            && params.contains(&"as=APIGroupDiscoveryList")
    })
}

fn kind_ref(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

/// One resource as aggregated discovery lists it.
fn aggregated_resource(r: &ResourceInfo) -> Value {
    let mut e = json!({
        "resource": r.plural,
        "responseKind": kind_ref(&r.group, &r.version, &r.kind),
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs(),
    });
    if !r.short_names.is_empty() {
        e["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        e["categories"] = json!(r.categories);
    }
    let subs: Vec<Value> = subresources(r)
        .iter()
        .map(|s| {
            json!({
                "subresource": s.name,
                "responseKind": kind_ref(&s.response.0, &s.response.1, &s.response.2),
                "verbs": s.verbs,
            })
        })
        .collect();
    if !subs.is_empty() {
        e["subresources"] = Value::Array(subs);
    }
    e
}

fn aggregated_group(registry: &Registry, group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = registry
                .all()
                .iter()
                .filter(|r| r.group == group && r.version == *v)
                .map(|r| aggregated_resource(r))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let mut metadata = json!({"creationTimestamp": null});
    if !group.is_empty() {
        metadata["name"] = json!(group);
    }
    json!({"metadata": metadata, "versions": versions})
}

/// The aggregated discovery document of `/api` (`core: true`: the core group) or `/apis`
/// (every named group, preferred version first).
pub fn aggregated(registry: &Registry, core: bool) -> Value {
    let items: Vec<Value> = if core {
        vec![aggregated_group(registry, "", &["v1".to_string()])]
    } else {
        groups(registry)
            .iter()
            .map(|(g, v)| aggregated_group(registry, g, v))
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_groups_resources_and_subresources() {
        let reg = Registry::new(&[]);
        let apis = group_list(&reg);
        assert!(
            apis["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == "apps")
        );
        assert!(group(&reg, "nope").is_none());
        let apps = resource_list(&reg, "apps", "v1").unwrap();
        let names: Vec<&str> = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(names.contains(&"deployments/status"));
        assert!(names.contains(&"deployments/scale"));
        let deploy = &apps["resources"][0];
        assert_eq!(deploy["shortNames"][0], "deploy");
        assert!(resource_list(&reg, "apps", "v2").is_none());
    }
}
