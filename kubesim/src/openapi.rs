//! OpenAPI v3: the `/openapi/v3` index and per-group-version documents, generated from the
//! k8s-merge schema data (built-in kinds) and from CRDs' openAPIV3Schema (custom resources).
//! Enough for kubectl's apply, diff, explain-free validation and query-parameter checks.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::resources::{Registry, ResourceInfo};

const REF_PREFIX: &str = "#/components/schemas/";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The OpenAPI dialect a schema is written in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Dialect {
    /// OpenAPI v3 (`/openapi/v3`): refs to `#/components/schemas/`, wrapped in `allOf` when
    /// the node says more than the ref, as kube-apiserver writes them.
    V3,
    /// Swagger 2.0 (`/openapi/v2`): refs to `#/definitions/`, with their sibling keys.
    V2,
}

impl Dialect {
    fn ref_prefix(self) -> &'static str {
        match self {
            Dialect::V3 => REF_PREFIX,
            Dialect::V2 => "#/definitions/",
        }
    }
}

/// The schema data's definitions converted to the dialect (refs, int-or-string, GVKs).
pub(crate) fn builtin_schemas(dialect: Dialect) -> &'static Map<String, Value> {
    static V3: OnceLock<Map<String, Value>> = OnceLock::new();
    static V2: OnceLock<Map<String, Value>> = OnceLock::new();
    let cell = match dialect {
        Dialect::V3 => &V3,
        Dialect::V2 => &V2,
    };
    cell.get_or_init(|| {
        let raw = k8s_merge::Schema::builtin().raw();
        let mut gvks: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for k in raw
            .get("kinds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(def) = k.get("definition").and_then(Value::as_str) {
                gvks.entry(def.to_string()).or_default().push(json!({
                    "group": k.get("group").cloned().unwrap_or(json!("")),
                    "version": k.get("version").cloned().unwrap_or(json!("")),
                    "kind": k.get("kind").cloned().unwrap_or(json!("")),
                }));
            }
        }
        let mut out = Map::new();
        if let Some(defs) = raw.get("definitions").and_then(Value::as_object) {
            for (name, def) in defs {
                let mut converted = convert(def, dialect);
                if let Some(g) = gvks.remove(name) {
                    converted["x-kubernetes-group-version-kind"] = Value::Array(g);
                }
                out.insert(name.clone(), converted);
            }
        }
        out
    })
}

/// Converts one schema node of the data file to the dialect.
fn convert(node: &Value, dialect: Dialect) -> Value {
    match node {
        Value::Object(m) => {
            if let Some(Value::Array(alts)) = m.get("oneOf")
                && alts.iter().all(Value::is_string)
            {
                return match dialect {
                    Dialect::V3 => {
                        json!({"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": true})
                    }
                    Dialect::V2 => json!({"type": "string", "format": "int-or-string"}),
                };
            }
            let mut out = Map::new();
            let mut reference = None;
            for (k, v) in m {
                if k == "ref" {
                    reference = v.as_str().map(|r| format!("{}{r}", dialect.ref_prefix()));
                } else {
                    out.insert(k.clone(), convert(v, dialect));
                }
            }
            match (reference, dialect) {
                (Some(r), Dialect::V3) if out.is_empty() => json!({"$ref": r}),
                (Some(r), Dialect::V3) => {
                    out.insert("allOf".into(), json!([{"$ref": r}]));
                    Value::Object(out)
                }
                (Some(r), Dialect::V2) => {
                    out.insert("$ref".into(), Value::String(r));
                    Value::Object(out)
                }
                (None, _) => Value::Object(out),
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| convert(v, dialect)).collect()),
        other => other.clone(),
    }
}

fn collect_refs(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix(REF_PREFIX) {
                            out.push(name.to_string());
                        }
                    }
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// The named built-in schemas and everything they reference.
fn closure(roots: impl IntoIterator<Item = String>) -> Map<String, Value> {
    let all = builtin_schemas(Dialect::V3);
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    let mut out = Map::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(def) = all.get(&name) {
            collect_refs(def, &mut todo);
            out.insert(name, def.clone());
        }
    }
    out
}

/// The schema definition name of a resource's kind (built-in or CRD-derived).
pub fn definition_name(info: &ResourceInfo) -> String {
    if info.is_builtin() {
        k8s_merge::Schema::builtin()
            .kinds()
            .iter()
            .find(|k| k.group == info.group && k.version == info.version && k.kind == info.kind)
            .map(|k| k.definition.clone())
            .unwrap_or_default()
    } else {
        let reversed: Vec<&str> = info.group.split('.').rev().collect();
        format!("{}.{}.{}", reversed.join("."), info.version, info.kind)
    }
}

/// A CRD version's schema as a component (definition), with metadata typed as ObjectMeta.
pub(crate) fn custom_schema(info: &ResourceInfo, dialect: Dialect) -> Value {
    let mut schema = info.schema.clone().unwrap_or(json!({"type": "object"}));
    if !schema.is_object() {
        schema = json!({"type": "object"});
    }
    if !schema.get("properties").is_some_and(Value::is_object) {
        schema["properties"] = json!({});
    }
    let meta = format!("{}{OBJECT_META}", dialect.ref_prefix());
    schema["properties"]["metadata"] = match dialect {
        Dialect::V3 => json!({"allOf": [{"$ref": meta}]}),
        Dialect::V2 => json!({"$ref": meta}),
    };
    schema["properties"]["apiVersion"] = json!({"type": "string"});
    schema["properties"]["kind"] = json!({"type": "string"});
    schema["x-kubernetes-group-version-kind"] =
        json!([{"group": info.group, "version": info.version, "kind": info.kind}]);
    schema
}

/// The query parameters every operation lists.
pub(crate) const PARAMETERS: &[&str] = &[
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "pretty",
];

const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";

/// The patch types a resource accepts: strategic merge patches for built-in kinds only, as
/// kube-apiserver lists them (kubectl picks client-side apply's patch type from this list).
pub(crate) fn patch_types(info: &ResourceInfo) -> Vec<&'static str> {
    let mut types = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if info.is_builtin() {
        types.insert(2, "application/strategic-merge-patch+json");
    }
    types
}

fn operation(info: &ResourceInfo, action: &str, def: &str) -> Value {
    let params: Vec<Value> = PARAMETERS
        .iter()
        .map(|p| json!({"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": true}}))
        .collect();
    let mut op = json!({
        "operationId": format!("{action}{}", info.kind),
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": {"application/json": {
            "schema": {"$ref": format!("{REF_PREFIX}{def}")}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": info.group, "version": info.version, "kind": info.kind},
    });
    if action == "patch" {
        let content: Map<String, Value> = patch_types(info)
            .into_iter()
            .map(|t| {
                (
                    t.to_string(),
                    json!({"schema": {"$ref": format!("{REF_PREFIX}{PATCH}")}}),
                )
            })
            .collect();
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

/// The path prefix of a group-version: `/api/v1` or `/apis/apps/v1`.
pub(crate) fn prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// A resource's collection and object paths, each with its operations (`op(action)`).
pub(crate) fn resource_paths(r: &ResourceInfo, op: impl Fn(&str) -> Value) -> Vec<(String, Value)> {
    let base = prefix(&r.group, &r.version);
    let collection = if r.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", r.plural)
    } else {
        format!("{base}/{}", r.plural)
    };
    let mut out = vec![(collection.clone(), json!({"post": op("post")}))];
    if !r.create_only {
        out.push((
            format!("{collection}/{{name}}"),
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        ));
    }
    out
}

/// The OpenAPI v3 document of one group-version, or None if it is not served.
pub fn document(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<_> = registry
        .all()
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .cloned()
        .collect();
    if resources.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut roots = vec![OBJECT_META.to_string(), PATCH.to_string()];
    let mut custom = Map::new();
    for r in &resources {
        let def = definition_name(r);
        if r.is_builtin() {
            roots.push(def.clone());
        } else {
            custom.insert(def.clone(), custom_schema(r, Dialect::V3));
        }
        for (path, item) in resource_paths(r, |action| operation(r, action, &def)) {
            paths.insert(path, item);
        }
    }
    let mut schemas = closure(roots);
    schemas.extend(custom);
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.5"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// A stable hash of what a group-version's document is generated from (its resources), for
/// the index's cache-busting URLs.
fn hash(registry: &Registry, group: &str, version: &str) -> String {
    let mut h = Sha256::new();
    h.update(env!("CARGO_PKG_VERSION"));
    for r in registry
        .all()
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        h.update(format!("{r:?}"));
    }
    hex::encode(&h.finalize()[..16]).to_uppercase()
}

/// `/openapi/v3`: every served group-version with its document URL.
pub fn index(registry: &Registry) -> Value {
    let mut gvs: Vec<(String, String)> = Vec::new();
    for r in registry.all() {
        let gv = (r.group.clone(), r.version.clone());
        if !gvs.contains(&gv) {
            gvs.push(gv);
        }
    }
    let mut paths = Map::new();
    for (g, v) in gvs {
        let rel = prefix(&g, &v).trim_start_matches('/').to_string();
        let h = hash(registry, &g, &v);
        paths.insert(
            rel.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{rel}?hash={h}")}),
        );
    }
    json!({"paths": paths})
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn builtin_documents_carry_refs_extensions_and_gvks() {
        let reg = Registry::new(&[]);
        let doc = document(&reg, "apps", "v1").unwrap();
        let deploy = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deploy["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        assert!(
            deploy["properties"]["spec"]["$ref"]
                .as_str()
                .unwrap()
                .starts_with(REF_PREFIX)
        );
        let containers =
            &doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        let body = &patch["requestBody"]["content"];
        assert!(
            body["application/strategic-merge-patch+json"].is_object(),
            "{patch}"
        );
        assert!(doc["components"]["schemas"][PATCH].is_object());
        assert!(
            index(&reg)["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .contains("hash=")
        );
        assert!(document(&reg, "apps", "v9").is_none());
    }

    #[test]
    fn crd_documents_use_the_crd_schema() {
        let crd = json!({"spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}]}});
        let reg = Registry::new(&[Arc::new(crd)]);
        let doc = document(&reg, "example.com", "v1").unwrap();
        let w = &doc["components"]["schemas"]["com.example.v1.Widget"];
        assert_eq!(w["properties"]["spec"]["type"], "object");
        assert!(doc["components"]["schemas"][OBJECT_META].is_object());
    }
}
