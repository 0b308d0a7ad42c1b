//! The resource registry: which kinds are served, under which group/version/plural, with
//! which scope, short names, categories, verbs and subresources.

use std::sync::Arc;

use serde_json::Value;

/// One served resource (a group/version/plural), built in or from a CRD.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// API group ("" for core).
    pub group: String,
    /// API version ("v1").
    pub version: String,
    /// Kind ("Deployment").
    pub kind: String,
    /// Plural resource name ("deployments").
    pub plural: String,
    /// Singular resource name ("deployment").
    pub singular: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// kubectl short names ("deploy").
    pub short_names: Vec<String>,
    /// Categories ("all").
    pub categories: Vec<String>,
    /// Whether the resource has a status subresource.
    pub status: bool,
    /// Whether the resource has a scale subresource, with the JSON paths of spec replicas,
    /// status replicas and the label selector.
    pub scale: Option<ScalePaths>,
    /// Whether only `create` is served (review resources such as SelfSubjectAccessReview).
    pub create_only: bool,
    /// The CRD's openAPIV3Schema for this version, for custom resources.
    pub schema: Option<Value>,
    /// The custom resource's merge types (its schema with ObjectMeta), for server-side apply.
    pub types: Option<CustomTypes>,
    /// The CRD's `additionalPrinterColumns` for this version (custom resources only; empty:
    /// Name and Age), for Table answers (see [`crate::table`]).
    pub printer_columns: Option<Vec<PrinterColumn>>,
}

/// A custom resource version's schema as k8s-merge types it (see
/// [`k8s_merge::Schema::custom_resource`]); equal only to itself, as it is built once per
/// registry refresh.
#[derive(Debug, Clone)]
pub struct CustomTypes(pub Arc<k8s_merge::Schema>);

impl PartialEq for CustomTypes {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One `additionalPrinterColumns` entry of a CRD version.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type: string, integer, number, boolean or date.
    pub type_: String,
    /// OpenAPI format, if any.
    pub format: String,
    /// Column description.
    pub description: String,
    /// 0: shown by default; higher: only with `-o wide`.
    pub priority: i64,
    /// The JSONPath of the value, e.g. `.status.phase`.
    pub json_path: String,
}

/// The printer columns of a CRD version.
fn printer_columns(version: &Value) -> Vec<PrinterColumn> {
    let text = |c: &Value, key: &str| {
        c.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|columns| {
            columns
                .iter()
                .map(|c| PrinterColumn {
                    name: text(c, "name"),
                    type_: text(c, "type"),
                    format: text(c, "format"),
                    description: text(c, "description"),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    json_path: text(c, "jsonPath"),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Where a scalable resource keeps its replica counts and selector.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    /// e.g. `.spec.replicas`
    pub spec_replicas: String,
    /// e.g. `.status.replicas`
    pub status_replicas: String,
    /// e.g. `.status.selector`, if any
    pub label_selector: Option<String>,
}

/// Whether `info` is the `events.k8s.io` view of Events (see [`crate::event_versions`]).
pub fn is_events_view(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io" && info.plural == "events"
}

impl ResourceInfo {
    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The store key shared by every version of the resource: `apps/deployments`. The
    /// `events.k8s.io` Events share the core Events' (see [`crate::event_versions`]).
    pub fn store_key(&self) -> String {
        if is_events_view(self) {
            return "/events".to_string();
        }
        format!("{}/{}", self.group, self.plural)
    }

    /// Verbs served, as discovery lists them.
    pub fn verbs(&self) -> Vec<&'static str> {
        if self.create_only {
            vec!["create"]
        } else {
            vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }

    /// Whether this is a built-in (schema-known) kind rather than a custom resource.
    pub fn is_builtin(&self) -> bool {
        self.schema.is_none()
    }
}

/// (group, version, kind, plural, namespaced, short names, categories, status, scale)
type Builtin = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
    &'static [&'static str],
    bool,
    bool,
);

const ALL: &[&str] = &["all"];
const NONE: &[&str] = &[];

/// The built-in kinds kubesim serves.
const BUILTINS: &[Builtin] = &[
    (
        "",
        "v1",
        "Namespace",
        "namespaces",
        false,
        &["ns"],
        NONE,
        true,
        false,
    ),
    (
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        true,
        &["cm"],
        NONE,
        false,
        false,
    ),
    (
        "", "v1", "Secret", "secrets", true, NONE, NONE, false, false,
    ),
    (
        "",
        "v1",
        "Service",
        "services",
        true,
        &["svc"],
        ALL,
        true,
        false,
    ),
    (
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        true,
        &["sa"],
        NONE,
        false,
        false,
    ),
    ("", "v1", "Pod", "pods", true, &["po"], ALL, true, false),
    ("", "v1", "Node", "nodes", false, &["no"], NONE, true, false),
    (
        "",
        "v1",
        "Event",
        "events",
        true,
        &["ev"],
        NONE,
        false,
        false,
    ),
    (
        "",
        "v1",
        "Endpoints",
        "endpoints",
        true,
        &["ep"],
        NONE,
        false,
        false,
    ),
    (
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
        &["pvc"],
        NONE,
        true,
        false,
    ),
    (
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        false,
        &["pv"],
        NONE,
        true,
        false,
    ),
    (
        "",
        "v1",
        "LimitRange",
        "limitranges",
        true,
        &["limits"],
        NONE,
        false,
        false,
    ),
    (
        "",
        "v1",
        "ResourceQuota",
        "resourcequotas",
        true,
        &["quota"],
        NONE,
        true,
        false,
    ),
    (
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        true,
        &["rc"],
        ALL,
        true,
        true,
    ),
    (
        "",
        "v1",
        "PodTemplate",
        "podtemplates",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
        &["deploy"],
        ALL,
        true,
        true,
    ),
    (
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        true,
        &["sts"],
        ALL,
        true,
        true,
    ),
    (
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        true,
        &["ds"],
        ALL,
        true,
        false,
    ),
    (
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        true,
        &["rs"],
        ALL,
        true,
        true,
    ),
    ("batch", "v1", "Job", "jobs", true, NONE, ALL, true, false),
    (
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        true,
        &["cj"],
        ALL,
        true,
        false,
    ),
    (
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        &["ing"],
        NONE,
        true,
        false,
    ),
    (
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        true,
        &["netpol"],
        NONE,
        false,
        false,
    ),
    (
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        &["hpa"],
        ALL,
        true,
        false,
    ),
    (
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        true,
        &["hpa"],
        ALL,
        true,
        false,
    ),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
        &["pdb"],
        NONE,
        true,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        true,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        true,
        &["ev"],
        NONE,
        false,
        false,
    ),
    (
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
        &["sc"],
        NONE,
        false,
        false,
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        false,
        &["pc"],
        NONE,
        false,
        false,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["crd", "crds"],
        NONE,
        true,
        false,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
        NONE,
        &["api-extensions"],
        false,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
        NONE,
        &["api-extensions"],
        false,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        false,
        NONE,
        &["api-extensions"],
        true,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        false,
        NONE,
        &["api-extensions"],
        false,
        false,
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        false,
        NONE,
        &["api-extensions"],
        true,
        false,
    ),
    (
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        false,
        &["csr"],
        NONE,
        true,
        false,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        "flowschemas",
        false,
        NONE,
        NONE,
        true,
        false,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        false,
        NONE,
        NONE,
        true,
        false,
    ),
    (
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        "runtimeclasses",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "storage.k8s.io",
        "v1",
        "CSINode",
        "csinodes",
        false,
        NONE,
        NONE,
        false,
        false,
    ),
    (
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        false,
        NONE,
        NONE,
        true,
        false,
    ),
];

/// The built-in resources, in discovery order.
pub fn builtins() -> Vec<Arc<ResourceInfo>> {
    BUILTINS
        .iter()
        .map(
            |&(group, version, kind, plural, namespaced, short, cats, status, scale)| {
                Arc::new(ResourceInfo {
                    group: group.into(),
                    version: version.into(),
                    kind: kind.into(),
                    plural: plural.into(),
                    singular: kind.to_ascii_lowercase(),
                    namespaced,
                    short_names: short.iter().map(|s| s.to_string()).collect(),
                    categories: cats.iter().map(|s| s.to_string()).collect(),
                    status,
                    scale: scale.then(|| ScalePaths {
                        spec_replicas: ".spec.replicas".into(),
                        status_replicas: ".status.replicas".into(),
                        // a ReplicationController's selector is a map in its spec, not a
                        // string in its status
                        label_selector: (kind != "ReplicationController")
                            .then(|| ".status.selector".into()),
                    }),
                    create_only: matches!(group, "authorization.k8s.io" | "authentication.k8s.io"),
                    schema: None,
                    types: None,
                    printer_columns: None,
                })
            },
        )
        .collect()
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

fn strings_at(v: &Value, path: &[&str]) -> Vec<String> {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(next) => cur = next,
            None => return Vec::new(),
        }
    }
    cur.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The resources a stored CustomResourceDefinition serves (one per served version).
pub fn from_crd(crd: &Value) -> Vec<Arc<ResourceInfo>> {
    let (Some(group), Some(kind), Some(plural)) = (
        str_at(crd, &["spec", "group"]),
        str_at(crd, &["spec", "names", "kind"]),
        str_at(crd, &["spec", "names", "plural"]),
    ) else {
        return Vec::new();
    };
    let singular = str_at(crd, &["spec", "names", "singular"])
        .map(String::from)
        .unwrap_or_else(|| kind.to_ascii_lowercase());
    let namespaced = str_at(crd, &["spec", "scope"]) != Some("Cluster");
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(true))
        .filter_map(|v| {
            let version = v.get("name")?.as_str()?;
            let openapi = v
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .unwrap_or(Value::Object(Default::default()));
            let scale = v.pointer("/subresources/scale").map(|s| ScalePaths {
                spec_replicas: s
                    .get("specReplicasPath")
                    .and_then(Value::as_str)
                    .unwrap_or(".spec.replicas")
                    .into(),
                status_replicas: s
                    .get("statusReplicasPath")
                    .and_then(Value::as_str)
                    .unwrap_or(".status.replicas")
                    .into(),
                label_selector: s
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(String::from),
            });
            Some(Arc::new(ResourceInfo {
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
                plural: plural.into(),
                singular: singular.clone(),
                namespaced,
                short_names: strings_at(crd, &["spec", "names", "shortNames"]),
                categories: strings_at(crd, &["spec", "names", "categories"]),
                status: v.pointer("/subresources/status").is_some(),
                scale,
                create_only: false,
                schema: Some(openapi.clone()),
                types: Some(CustomTypes(Arc::new(k8s_merge::Schema::custom_resource(
                    group, version, kind, &openapi,
                )))),
                printer_columns: Some(printer_columns(v)),
            }))
        })
        .collect()
}

/// The set of resources currently served: built-ins plus those of established CRDs.
#[derive(Debug, Clone)]
pub struct Registry {
    resources: Vec<Arc<ResourceInfo>>,
}

impl Registry {
    /// A registry of the built-ins plus the given CRDs' resources.
    pub fn new(crds: &[Arc<Value>]) -> Registry {
        let mut resources = builtins();
        for crd in crds {
            resources.extend(from_crd(crd));
        }
        Registry { resources }
    }

    /// Every served resource.
    pub fn all(&self) -> &[Arc<ResourceInfo>] {
        &self.resources
    }

    /// The resource served at group/version/plural.
    pub fn by_plural(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
            .cloned()
    }

    /// The resource of an apiVersion and kind.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        let (group, version) = split_api_version(api_version);
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }

    /// Whether any version of the group is served.
    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.resources
            .iter()
            .any(|r| r.group == group && r.version == version)
    }
}

/// Splits `apps/v1` into ("apps", "v1") and `v1` into ("", "v1").
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_versions_become_resources() {
        let crd = json!({"spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object"}}},
                {"name": "v0", "served": false}]}});
        let r = from_crd(&crd);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].singular, "widget");
        assert!(r[0].status && r[0].namespaced && !r[0].is_builtin());
        let reg = Registry::new(&[Arc::new(crd)]);
        assert!(reg.by_kind("example.com/v1", "Widget").is_some());
        assert!(
            reg.by_plural("apps", "v1", "deployments")
                .unwrap()
                .is_builtin()
        );
    }
}
