//! `/openapi/v2`: the Swagger 2.0 document kube-apiserver still serves beside OpenAPI v3,
//! built from the same schema data as [`crate::openapi`] (built-in definitions and CRD
//! schemas) with every served resource's paths. kubectl 1.32 reads it for client-side
//! `apply` and `diff` patches (when the v3 document does not offer a strategic merge patch
//! for the kind) and for `explain --output=plaintext-openapiv2`, always asking for the
//! protobuf form ([`proto`], gnostic's `openapi.v2.Document`); other clients get JSON.

mod proto;

pub use proto::{MEDIA_TYPE, encode};

/// The form of the document a media range asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Form {
    /// Swagger JSON.
    Json,
    /// gnostic's `openapi.v2.Document`.
    Protobuf,
}

/// The form a media range (`application/json`, `*/*`, gnostic's types) asks for, if any.
pub fn form(media: &str) -> Option<Form> {
    match media {
        "application/json" | "application/*" | "*/*" => Some(Form::Json),
        proto::MEDIA_TYPE | proto::DEPRECATED_MEDIA_TYPE => Some(Form::Protobuf),
        _ => None,
    }
}

use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::openapi::{
    Dialect, PARAMETERS, builtin_schemas, custom_schema, definition_name, patch_types,
    resource_paths,
};
use crate::resources::{Registry, ResourceInfo};

fn operation(info: &ResourceInfo, action: &str, def: &str) -> Value {
    let consumes = match action {
        "patch" => patch_types(info),
        _ => vec!["*/*"],
    };
    let parameters: Vec<Value> = PARAMETERS
        .iter()
        .map(|p| json!({"name": p, "in": "query", "type": "string", "uniqueItems": true}))
        .collect();
    json!({
        "operationId": format!("{action}{}", info.kind),
        "consumes": consumes,
        "produces": ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
        "schemes": ["https"],
        "parameters": parameters,
        "responses": {"200": {"description": "OK", "schema": {"$ref": format!("#/definitions/{def}")}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": info.group, "version": info.version, "kind": info.kind},
    })
}

/// The document in both forms, rendered once per registry (as kube-apiserver caches its own).
pub struct Rendered {
    /// The JSON form.
    pub json: Bytes,
    /// The protobuf form.
    pub protobuf: Bytes,
}

/// The rendered document of `registry`: the last one rendered when it was for the same
/// registry (a registry is replaced, not changed, when CRDs change), else a new one.
pub fn rendered(registry: &Arc<Registry>) -> Arc<Rendered> {
    static LAST: Mutex<Option<(Weak<Registry>, Arc<Rendered>)>> = Mutex::new(None);
    let mut last = LAST.lock();
    if let Some((of, doc)) = last.as_ref()
        && Weak::ptr_eq(of, &Arc::downgrade(registry))
    {
        return doc.clone();
    }
    let doc = document(registry);
    let doc = Arc::new(Rendered {
        json: Bytes::from(serde_json::to_vec(&doc).unwrap_or_default()),
        protobuf: Bytes::from(encode(&doc)),
    });
    *last = Some((Arc::downgrade(registry), doc.clone()));
    doc
}

/// The whole document: every served resource's paths, every built-in definition and each
/// custom resource version's schema.
pub fn document(registry: &Registry) -> Value {
    let mut paths = Map::new();
    let mut definitions = builtin_schemas(Dialect::V2).clone();
    for r in registry.all() {
        let def = definition_name(r);
        if !r.is_builtin() {
            definitions.insert(def.clone(), custom_schema(r, Dialect::V2));
        }
        for (path, item) in resource_paths(r, |action| operation(r, action, &def)) {
            paths.insert(path, item);
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.32.5"},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header",
            "description": "Bearer Token authentication"}},
        "security": [{"BearerToken": []}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(node: &Value, out: &mut Vec<String>) {
        match node {
            Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => out.push(r.clone()),
                        _ => refs(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn media_ranges_pick_the_form() {
        assert_eq!(form("*/*"), Some(Form::Json));
        assert_eq!(
            form("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
            Some(Form::Protobuf)
        );
        assert_eq!(form(MEDIA_TYPE), Some(Form::Protobuf));
        assert_eq!(form("text/html"), None);
    }

    #[test]
    fn every_reference_resolves_and_kinds_carry_their_gvk() {
        let doc = document(&Registry::new(&[]));
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(all.len() > 1000);
        for r in all {
            let name = r.strip_prefix("#/definitions/").unwrap();
            assert!(doc["definitions"][name].is_object(), "{r} does not resolve");
        }
        let deploy = &doc["definitions"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deploy["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        let strategy =
            &doc["definitions"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"];
        assert_eq!(
            strategy["x-kubernetes-patch-strategy"], "retainKeys",
            "{strategy}"
        );
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert!(
            patch["consumes"]
                .as_array()
                .unwrap()
                .contains(&json!("application/strategic-merge-patch+json"))
        );
    }
}
