//! Legacy discovery documents: `/api`, `/apis`, `/apis/{group}`, `/api/v1` and
//! `/apis/{group}/{version}`, plus `/version`. Clients asking for aggregated discovery get
//! these with `Content-Type: application/json` and fall back to them.

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
        if r.status {
            resources.push(json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r.group.is_empty() && r.plural == "serviceaccounts" {
            resources.push(json!({
                "name": "serviceaccounts/token",
                "singularName": "",
                "namespaced": true,
                "group": "authentication.k8s.io",
                "version": "v1",
                "kind": "TokenRequest",
                "verbs": ["create"],
            }));
        }
        if r.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
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
