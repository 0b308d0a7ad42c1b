//! One Kubernetes object during a build, with the identity it was declared under (so that
//! references written against the original name can be fixed after renames).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::parse::Source;

/// An object being rendered.
#[derive(Debug, Clone)]
pub struct Res {
    /// The object itself.
    pub obj: Value,
    /// `metadata.name` as first loaded or generated.
    pub orig_name: String,
    /// `metadata.namespace` as first loaded or generated.
    pub orig_ns: String,
    /// A generated ConfigMap/Secret whose name still needs its content-hash suffix.
    pub needs_hash: bool,
    /// Where the object came from (for `buildMetadata: [originAnnotations]`).
    pub origin: Origin,
    /// The `vars` bound to this object (their values are read from it at the top).
    pub ref_vars: Vec<String>,
    /// Whether kustomize recorded a previous id for it: a namespace, name prefix/suffix or
    /// JSON 6902 transformer ran on it (even without changing it). Only then does a
    /// RoleBinding subject or webhook service naming it get its namespace written.
    pub has_previous_id: bool,
    /// The source file and document index, kept when the document holds nulls: the fields
    /// it wrote empty (`key:`) are dropped by a strategic merge patch (see
    /// [`super::parse::Source::empty_values`]).
    pub empty_source: Option<(Arc<Source>, usize)>,
}

/// Where an object was declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Loaded from this tree path.
    File(String),
    /// Made by a generator declared in this kustomization file.
    Generator {
        /// The kustomization file (tree path).
        file: String,
        /// `ConfigMapGenerator` or `SecretGenerator`.
        kind: &'static str,
    },
}

impl Res {
    /// Wraps a freshly loaded or generated object.
    pub fn new(obj: Value, origin: Origin) -> Self {
        let orig_name = str_at(&obj, &["metadata", "name"]).to_string();
        let orig_ns = str_at(&obj, &["metadata", "namespace"]).to_string();
        Self {
            obj,
            orig_name,
            orig_ns,
            needs_hash: false,
            origin,
            ref_vars: Vec::new(),
            has_previous_id: false,
            empty_source: None,
        }
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        str_at(&self.obj, &["kind"])
    }

    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        str_at(&self.obj, &["apiVersion"])
    }

    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        split_api_version(self.api_version()).0
    }

    /// The API version without its group.
    pub fn version(&self) -> &str {
        split_api_version(self.api_version()).1
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        str_at(&self.obj, &["metadata", "name"])
    }

    /// `metadata.namespace` (empty when unset).
    pub fn namespace(&self) -> &str {
        str_at(&self.obj, &["metadata", "namespace"])
    }

    /// Sets `metadata.name`.
    pub fn set_name(&mut self, name: &str) {
        metadata_mut(&mut self.obj).insert("name".into(), Value::String(name.into()));
    }

    /// Sets `metadata.namespace`.
    pub fn set_namespace(&mut self, ns: &str) {
        metadata_mut(&mut self.obj).insert("namespace".into(), Value::String(ns.into()));
    }

    /// The identity kustomize uses to detect duplicates and to address resources.
    pub fn id(&self) -> String {
        let group = if self.group().is_empty() {
            "[noGrp]"
        } else {
            self.group()
        };
        let ns = if self.namespace().is_empty() {
            "[noNs]"
        } else {
            self.namespace()
        };
        format!(
            "{}.{}.{}/{}.{}",
            self.kind(),
            self.version(),
            group,
            self.name(),
            ns
        )
    }

    /// Whether this is a cluster-scoped kind (never given a namespace).
    pub fn is_cluster_scoped(&self) -> bool {
        is_cluster_scoped_kind(self.kind())
    }
}

/// Splits `group/version` (`v1` → `("", "v1")`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// The string at `path`, or `""`.
pub fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(next) => cur = next,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

/// `metadata` as a mutable map, created when missing or not a map.
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    child_map(obj, "metadata")
}

/// `obj[key]` as a mutable map, created (or replaced when not a map) as needed. `obj` itself
/// is turned into a map when it is not one.
pub fn child_map<'a>(obj: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    ensure_map(
        ensure_map(obj)
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new())),
    )
}

/// `v` as a mutable map, replacing it with an empty map when it is something else.
pub fn ensure_map(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        _ => unreachable!("replaced by an object above"),
    }
}

/// Cluster-scoped kinds of the built-in API (kustomize never sets their namespace).
pub fn is_cluster_scoped_kind(kind: &str) -> bool {
    matches!(
        kind,
        "Namespace"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "CustomResourceDefinition"
            | "PersistentVolume"
            | "StorageClass"
            | "PriorityClass"
            | "Node"
            | "APIService"
            | "MutatingWebhookConfiguration"
            | "ValidatingWebhookConfiguration"
            | "ValidatingAdmissionPolicy"
            | "ValidatingAdmissionPolicyBinding"
            | "CSIDriver"
            | "CSINode"
            | "VolumeAttachment"
            | "RuntimeClass"
            | "PodSecurityPolicy"
            | "IngressClass"
            | "CertificateSigningRequest"
            | "ComponentStatus"
            | "FlowSchema"
            | "PriorityLevelConfiguration"
            | "TokenReview"
            | "SubjectAccessReview"
            | "SelfSubjectAccessReview"
            | "SelfSubjectRulesReview"
            | "SelfSubjectReview"
            | "ClusterTrustBundle"
            | "IPAddress"
            | "ServiceCIDR"
            | "DeviceClass"
            | "ResourceSlice"
    )
}
