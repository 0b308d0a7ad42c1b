//! Access to the Kubernetes v1.32 API structure (`schema/v1.32.json`): kinds, definitions and
//! the `x-kubernetes-*` merge metadata that strategic merge patch and server-side apply follow.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The embedded data file, produced by `scripts/extract-schema.py` from kubernetes-validate.
const RAW: &str = include_str!("../schema/v1.32.json");

/// How many `ref` hops are followed before a node is treated as untyped (guards against cycles
/// of pure aliases, which a well-formed data file never has).
const MAX_REF_DEPTH: usize = 16;

/// The Kubernetes v1.32 API structure: every built-in kind and the type definitions behind it.
///
/// Built from the embedded data file once (see [`Schema::builtin`]); the renderer and kubesim
/// read list merge keys and patch strategies from it instead of hand-written tables.
#[derive(Debug)]
pub struct Schema {
    raw: Value,
    kinds: Vec<KindEntry>,
    by_gvk: HashMap<(String, String, String), usize>,
    /// `x-kubernetes-list-map-keys` as owned strings, keyed by the address of the annotated node
    /// inside `raw` (which is never mutated, so addresses are stable).
    list_keys: HashMap<usize, Vec<String>>,
}

/// One built-in kind of the API: its group (empty for the core group), version, kind name and
/// the definition describing its objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindEntry {
    /// API group, empty for the core (`v1`) group.
    pub group: String,
    /// API version within the group, e.g. `v1`.
    pub version: String,
    /// Kind name, e.g. `Deployment`.
    pub kind: String,
    /// Name of the definition describing objects of this kind.
    pub definition: String,
}

/// The `x-kubernetes-list-type` of an array: how its items are identified when merging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    /// The list is one value: replaced whole (the default).
    Atomic,
    /// Items are scalars identified by their value.
    Set,
    /// Items are objects identified by the `x-kubernetes-list-map-keys` fields.
    Map,
}

/// The `x-kubernetes-patch-strategy` of a field, as strategic merge patch reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PatchStrategy {
    /// `merge`: lists are merged (by the patch merge key for lists of objects).
    pub merge: bool,
    /// `retainKeys`: `$retainKeys` directives clear the keys they do not list.
    pub retain_keys: bool,
    /// `replace`: the field is replaced whole.
    pub replace: bool,
}

/// What a schema node describes, once refs are followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeKind {
    /// An object with declared properties (a struct).
    Struct,
    /// An object whose values all have one type (`additionalProperties`).
    Map,
    /// An array.
    List,
    /// A scalar: string, number, boolean, or a scalar union such as IntOrString and Quantity.
    Scalar,
    /// Anything goes (`{}` definitions, objects without declared structure).
    Untyped,
}

/// A node of the schema: a type, with refs followed transparently.
///
/// The `x-kubernetes-*` annotations a property carries next to its `ref` (e.g. `retainKeys` on
/// `DeploymentSpec.strategy`) take precedence over those of the referenced definition.
#[derive(Clone, Copy)]
pub struct TypeRef<'a> {
    schema: &'a Schema,
    node: &'a Value,
    outer: Option<&'a Value>,
    /// What `node` describes, computed once (the merge walks ask for it at every field).
    kind: NodeKind,
}

impl std::fmt::Debug for TypeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypeRef")
            .field("node", self.node)
            .field("outer", &self.outer)
            .finish()
    }
}

impl Schema {
    /// The built-in v1.32 schema, parsed from the embedded data file on first use.
    pub fn builtin() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| Schema::from_value(serde_json::from_str(RAW).unwrap_or(Value::Null)))
    }

    /// Builds a schema from a data file's JSON (`{"source", "kinds", "definitions"}`); entries
    /// that do not have the expected shape are skipped.
    pub fn from_value(raw: Value) -> Schema {
        let mut kinds = Vec::new();
        let mut by_gvk = HashMap::new();
        let text =
            |entry: &Value, key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
        for entry in raw
            .get("kinds")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(group), Some(version), Some(kind), Some(definition)) = (
                text(entry, "group"),
                text(entry, "version"),
                text(entry, "kind"),
                text(entry, "definition"),
            ) else {
                continue;
            };
            by_gvk.insert((group.clone(), version.clone(), kind.clone()), kinds.len());
            kinds.push(KindEntry {
                group,
                version,
                kind,
                definition,
            });
        }
        let mut list_keys = HashMap::new();
        collect_list_keys(&raw, &mut list_keys);
        Schema {
            raw,
            kinds,
            by_gvk,
            list_keys,
        }
    }

    /// The schema of a custom resource version: its CRD's `openAPIV3Schema` as the one kind
    /// `group/version` `kind`, with `metadata` typed as the built-in ObjectMeta (and the
    /// definitions it references), as the API server types custom resources for server-side
    /// apply. The CRD's `x-kubernetes-list-type`, `x-kubernetes-list-map-keys` and
    /// `x-kubernetes-map-type` annotations are read as for built-in kinds.
    pub fn custom_resource(group: &str, version: &str, kind: &str, openapi: &Value) -> Schema {
        const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
        const ROOT: &str = "custom-resource";
        let mut definitions = Map::new();
        if let Some(builtin) = Schema::builtin().definitions() {
            copy_closure(builtin, OBJECT_META, &mut definitions);
        }
        let mut root = if openapi.is_object() {
            openapi.clone()
        } else {
            serde_json::json!({"type": "object"})
        };
        if !root.get("properties").is_some_and(Value::is_object) {
            root["properties"] = Value::Object(Map::new());
        }
        root["properties"]["metadata"] = serde_json::json!({ "ref": OBJECT_META });
        root["properties"]["apiVersion"] = serde_json::json!({"type": "string"});
        root["properties"]["kind"] = serde_json::json!({"type": "string"});
        definitions.insert(ROOT.to_owned(), root);
        Schema::from_value(serde_json::json!({
            "kinds": [{"group": group, "version": version, "kind": kind, "definition": ROOT}],
            "definitions": definitions,
        }))
    }

    /// The type of objects of `kind` in `api_version` (`group/version`, or `v1` for the core
    /// group); `None` for kinds the schema does not know (custom resources).
    pub fn kind_type(&self, api_version: &str, kind: &str) -> Option<TypeRef<'_>> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let index = self
            .by_gvk
            .get(&(group.to_owned(), version.to_owned(), kind.to_owned()))?;
        self.definition(&self.kinds.get(*index)?.definition)
    }

    /// Every built-in kind, sorted by group, version and kind.
    pub fn kinds(&self) -> &[KindEntry] {
        &self.kinds
    }

    /// The definition called `name` (e.g. `io.k8s.api.core.v1.Container`).
    pub fn definition(&self, name: &str) -> Option<TypeRef<'_>> {
        let node = self.definitions()?.get(name)?;
        Some(TypeRef::new(self, node, None))
    }

    /// The whole data file, for generating OpenAPI documents.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    fn definitions(&self) -> Option<&Map<String, Value>> {
        self.raw.get("definitions").and_then(Value::as_object)
    }
}

/// What a (ref-resolved) node describes.
fn node_kind(node: &Value) -> NodeKind {
    if node.get("oneOf").is_some() {
        return NodeKind::Scalar;
    }
    let is_map = node
        .get("additionalProperties")
        .is_some_and(Value::is_object);
    match node.get("type").and_then(Value::as_str) {
        Some("array") => NodeKind::List,
        Some("object") if node.get("properties").is_some() => NodeKind::Struct,
        Some("object") if is_map => NodeKind::Map,
        Some("object") | None => NodeKind::Untyped,
        Some(_) => NodeKind::Scalar,
    }
}

/// Copies the definition `name` and every definition it references (transitively) from
/// `from` into `to`.
fn copy_closure(from: &Map<String, Value>, name: &str, to: &mut Map<String, Value>) {
    let mut pending = vec![name.to_owned()];
    while let Some(next) = pending.pop() {
        if to.contains_key(&next) {
            continue;
        }
        let Some(def) = from.get(&next) else {
            continue;
        };
        collect_refs(def, &mut pending);
        to.insert(next, def.clone());
    }
}

/// Pushes the name of every `ref` under `node`.
fn collect_refs(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("ref", Value::String(name)) => out.push(name.clone()),
                    _ => collect_refs(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, out)),
        _ => {}
    }
}

/// The address of a node of the data file, the key of [`Schema::list_keys`].
fn node_address(node: &Value) -> usize {
    node as *const Value as usize
}

/// Records every `x-kubernetes-list-map-keys` array under `node` as owned strings.
fn collect_list_keys(node: &Value, out: &mut HashMap<usize, Vec<String>>) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "x-kubernetes-list-map-keys" {
                    let keys = value.as_array().into_iter().flatten();
                    let keys = keys.filter_map(Value::as_str).map(str::to_owned).collect();
                    out.insert(node_address(value), keys);
                } else {
                    collect_list_keys(value, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_list_keys(item, out)),
        _ => {}
    }
}

/// True when `kind` in `api_version` is a built-in Kubernetes v1.32 kind (not a custom resource).
pub fn is_builtin(api_version: &str, kind: &str) -> bool {
    Schema::builtin().kind_type(api_version, kind).is_some()
}

impl<'a> TypeRef<'a> {
    /// Wraps `node`, following its `ref`s; `outer` is the property node that held the first ref.
    fn new(schema: &'a Schema, node: &'a Value, outer: Option<&'a Value>) -> TypeRef<'a> {
        let mut current = node;
        let mut outer = outer;
        for _ in 0..MAX_REF_DEPTH {
            let Some(name) = current.get("ref").and_then(Value::as_str) else {
                break;
            };
            let Some(target) = schema.definitions().and_then(|defs| defs.get(name)) else {
                break;
            };
            outer = outer.or(Some(current));
            current = target;
        }
        TypeRef {
            schema,
            node: current,
            outer,
            kind: node_kind(current),
        }
    }

    /// A child node such as a property, `items` or `additionalProperties`.
    fn child(&self, node: &'a Value) -> TypeRef<'a> {
        TypeRef::new(self.schema, node, None)
    }

    /// An annotation, from the referring property first, then from the definition.
    fn annotation(&self, key: &str) -> Option<&'a Value> {
        self.outer
            .and_then(|outer| outer.get(key))
            .or_else(|| self.node.get(key))
    }

    /// The declared type of an object property.
    pub fn field(&self, name: &str) -> Option<TypeRef<'a>> {
        let node = self.node.get("properties")?.get(name)?;
        Some(self.child(node))
    }

    /// The element type of an array.
    pub fn items(&self) -> Option<TypeRef<'a>> {
        self.node
            .get("items")
            .filter(|v| v.is_object())
            .map(|node| self.child(node))
    }

    /// The type of a map's values (`additionalProperties`).
    pub fn values(&self) -> Option<TypeRef<'a>> {
        self.node
            .get("additionalProperties")
            .filter(|v| v.is_object())
            .map(|node| self.child(node))
    }

    /// The `x-kubernetes-list-type` of an array (`Atomic` when absent).
    pub fn list_type(&self) -> ListType {
        match self
            .annotation("x-kubernetes-list-type")
            .and_then(Value::as_str)
        {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map,
            _ => ListType::Atomic,
        }
    }

    /// The `x-kubernetes-list-map-keys` of a `map` list (empty otherwise).
    pub fn list_map_keys(&self) -> &'a [String] {
        static EMPTY: Vec<String> = Vec::new();
        self.list_map_keys_value().unwrap_or(&EMPTY)
    }

    fn list_map_keys_value(&self) -> Option<&'a [String]> {
        let node = self.annotation("x-kubernetes-list-map-keys")?;
        self.schema
            .list_keys
            .get(&node_address(node))
            .map(Vec::as_slice)
    }

    /// The `x-kubernetes-patch-merge-key` of a list of objects merged by strategic merge patch.
    pub fn patch_merge_key(&self) -> Option<&'a str> {
        self.annotation("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str)
    }

    /// The `x-kubernetes-patch-strategy` (a comma-separated list upstream).
    pub fn patch_strategy(&self) -> PatchStrategy {
        let mut strategy = PatchStrategy::default();
        let text = self
            .annotation("x-kubernetes-patch-strategy")
            .and_then(Value::as_str)
            .unwrap_or("");
        for part in text.split(',').map(str::trim) {
            match part {
                "merge" => strategy.merge = true,
                "retainKeys" => strategy.retain_keys = true,
                "replace" => strategy.replace = true,
                _ => {}
            }
        }
        strategy
    }

    /// True for `x-kubernetes-map-type: atomic` (the map is replaced and owned whole).
    pub fn is_atomic_map(&self) -> bool {
        self.annotation("x-kubernetes-map-type")
            .and_then(Value::as_str)
            == Some("atomic")
    }

    /// The type of `key` inside an object of this type: a declared property, or a map's
    /// values; `None` when undeclared or when this is not an object type.
    pub(crate) fn member(&self, key: &str) -> Option<TypeRef<'a>> {
        match self.kind() {
            NodeKind::Struct => self.field(key),
            NodeKind::Map => self.values(),
            _ => None,
        }
    }

    /// What this node describes.
    pub(crate) fn kind(&self) -> NodeKind {
        self.kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> TypeRef<'static> {
        Schema::builtin()
            .kind_type("apps/v1", "Deployment")
            .unwrap()
    }

    fn pod_spec() -> TypeRef<'static> {
        deployment()
            .field("spec")
            .unwrap()
            .field("template")
            .unwrap()
            .field("spec")
            .unwrap()
    }

    #[test]
    fn custom_resource_schema_reads_the_crd_list_and_map_types() {
        let openapi = serde_json::json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "protocol"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}}}}}});
        let schema = Schema::custom_resource("example.com", "v1", "Widget", &openapi);
        let root = schema.kind_type("example.com/v1", "Widget").unwrap();
        let spec = root.field("spec").unwrap();
        let ports = spec.field("ports").unwrap();
        assert_eq!(ports.list_type(), ListType::Map);
        assert_eq!(ports.list_map_keys(), ["name", "protocol"]);
        assert_eq!(spec.field("tags").unwrap().list_type(), ListType::Set);
        assert!(spec.field("selector").unwrap().is_atomic_map());
        let meta = root.field("metadata").unwrap();
        let owners = meta.field("ownerReferences").unwrap();
        assert_eq!(owners.list_map_keys(), ["uid"]);
        assert!(owners.items().unwrap().field("uid").is_some());
        assert!(schema.kind_type("example.com/v1", "Other").is_none());
    }

    #[test]
    fn builtin_schema_loads_every_kind_and_definition() {
        let schema = Schema::builtin();
        assert_eq!(schema.kinds().len(), 282);
        assert_eq!(schema.raw()["definitions"].as_object().unwrap().len(), 638);
        assert!(schema.raw()["source"].as_str().unwrap().contains("v1.32"));
        let entry = schema
            .kinds()
            .iter()
            .find(|k| k.kind == "Deployment" && k.group == "apps")
            .unwrap();
        assert_eq!(entry.definition, "io.k8s.api.apps.v1.Deployment");
    }

    #[test]
    fn kind_type_splits_group_and_version() {
        let schema = Schema::builtin();
        assert!(
            schema
                .kind_type("v1", "ConfigMap")
                .unwrap()
                .field("data")
                .is_some()
        );
        assert!(schema.kind_type("apps/v1", "Deployment").is_some());
        assert!(
            schema
                .kind_type("networking.k8s.io/v1", "Ingress")
                .is_some()
        );
        assert!(schema.kind_type("v1", "Deployment").is_none());
        assert!(schema.kind_type("example.com/v1", "Widget").is_none());
        assert!(is_builtin("rbac.authorization.k8s.io/v1", "ClusterRole"));
        assert!(is_builtin(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition"
        ));
        assert!(!is_builtin("cert-manager.io/v1", "Certificate"));
    }

    #[test]
    fn list_metadata_of_containers_ports_and_finalizers() {
        let containers = pod_spec().field("containers").unwrap();
        assert_eq!(containers.list_type(), ListType::Map);
        assert_eq!(containers.list_map_keys(), ["name"]);
        assert_eq!(containers.patch_merge_key(), Some("name"));
        assert_eq!(
            containers.patch_strategy(),
            PatchStrategy {
                merge: true,
                ..Default::default()
            }
        );
        let ports = containers.items().unwrap().field("ports").unwrap();
        assert_eq!(ports.list_map_keys(), ["containerPort", "protocol"]);
        assert_eq!(ports.patch_merge_key(), Some("containerPort"));
        let args = containers.items().unwrap().field("args").unwrap();
        assert_eq!(args.list_type(), ListType::Atomic);
        assert!(args.list_map_keys().is_empty());
        let finalizers = deployment()
            .field("metadata")
            .unwrap()
            .field("finalizers")
            .unwrap();
        assert_eq!(finalizers.list_type(), ListType::Set);
        assert!(finalizers.patch_strategy().merge);
        let volumes = pod_spec().field("volumes").unwrap();
        assert_eq!(
            volumes.patch_strategy(),
            PatchStrategy {
                merge: true,
                retain_keys: true,
                replace: false
            }
        );
    }

    #[test]
    fn annotations_next_to_a_ref_win() {
        let strategy = deployment()
            .field("spec")
            .unwrap()
            .field("strategy")
            .unwrap();
        assert!(strategy.patch_strategy().retain_keys);
        assert!(strategy.field("rollingUpdate").is_some());
        let pdb = Schema::builtin()
            .kind_type("policy/v1", "PodDisruptionBudget")
            .unwrap();
        assert!(
            pdb.field("spec")
                .unwrap()
                .field("selector")
                .unwrap()
                .patch_strategy()
                .replace
        );
    }

    #[test]
    fn maps_scalars_and_untyped_nodes() {
        let spec = pod_spec();
        assert!(spec.field("nodeSelector").unwrap().is_atomic_map());
        assert_eq!(spec.field("nodeSelector").unwrap().kind(), NodeKind::Map);
        let selector = deployment()
            .field("spec")
            .unwrap()
            .field("selector")
            .unwrap();
        assert!(selector.is_atomic_map());
        assert_eq!(selector.kind(), NodeKind::Struct);
        let labels = deployment()
            .field("metadata")
            .unwrap()
            .field("labels")
            .unwrap();
        assert!(!labels.is_atomic_map());
        assert_eq!(labels.values().unwrap().kind(), NodeKind::Scalar);
        let resources = spec
            .field("containers")
            .unwrap()
            .items()
            .unwrap()
            .field("resources")
            .unwrap();
        let limits = resources.field("limits").unwrap();
        assert_eq!(
            limits.values().unwrap().kind(),
            NodeKind::Scalar,
            "Quantity is a scalar"
        );
        let port = spec
            .field("containers")
            .unwrap()
            .items()
            .unwrap()
            .field("livenessProbe")
            .unwrap();
        let port = port.field("httpGet").unwrap().field("port").unwrap();
        assert_eq!(port.kind(), NodeKind::Scalar, "IntOrString is a scalar");
        assert_eq!(spec.field("containers").unwrap().kind(), NodeKind::List);
        let crd = Schema::builtin()
            .definition("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON")
            .unwrap();
        assert_eq!(crd.kind(), NodeKind::Untyped);
        assert!(Schema::builtin().definition("no.such.Definition").is_none());
    }

    #[test]
    fn malformed_data_gives_an_empty_schema() {
        let schema =
            Schema::from_value(serde_json::json!({"kinds": [{"group": 1}], "definitions": 3}));
        assert!(schema.kinds().is_empty());
        assert!(schema.definition("x").is_none());
    }
}
