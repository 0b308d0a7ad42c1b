//! kustomize's built-in field specs: where labels, selectors and annotations live in each
//! kind, and a walker that sets map entries along such a path (descending into every element
//! of a list met on the way, creating missing maps when the spec says so).

use serde_json::{Map, Value};

use super::resource::{Res, ensure_map};

/// A place in objects of some kind(s).
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    /// API group the spec is limited to (`None`: any).
    pub group: Option<&'static str>,
    /// Kind the spec is limited to (`None`: any).
    pub kind: Option<&'static str>,
    /// `/`-separated path; `[]` after a segment marks a list.
    pub path: &'static str,
    /// Create missing maps along the path.
    pub create: bool,
}

const fn fs(
    group: Option<&'static str>,
    kind: &'static str,
    path: &'static str,
    create: bool,
) -> FieldSpec {
    FieldSpec {
        group,
        kind: Some(kind),
        path,
        create,
    }
}

const APPS: Option<&str> = Some("apps");
const BATCH: Option<&str> = Some("batch");

/// `metadata/labels` of every object.
pub const METADATA_LABELS: FieldSpec = FieldSpec {
    group: None,
    kind: None,
    path: "metadata/labels",
    create: true,
};

/// `metadata/annotations` of every object.
pub const METADATA_ANNOTATIONS: FieldSpec = FieldSpec {
    group: None,
    kind: None,
    path: "metadata/annotations",
    create: true,
};

const AFFINITY: [&str; 5] = [
    "spec/template/spec/affinity/podAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
    "spec/template/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
    "spec/template/spec/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/podAffinityTerm/labelSelector/matchLabels",
    "spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/labelSelector/matchLabels",
    "spec/template/spec/topologySpreadConstraints/labelSelector/matchLabels",
];

/// Selector fields (`commonLabels`, `labels` with `includeSelectors`), besides metadata and
/// templates.
pub fn selector_specs() -> Vec<FieldSpec> {
    let mut v = vec![
        fs(None, "Service", "spec/selector", true),
        fs(None, "ReplicationController", "spec/selector", true),
        fs(None, "Deployment", "spec/selector/matchLabels", true),
        fs(None, "ReplicaSet", "spec/selector/matchLabels", true),
        fs(None, "DaemonSet", "spec/selector/matchLabels", true),
        fs(APPS, "StatefulSet", "spec/selector/matchLabels", true),
        fs(BATCH, "Job", "spec/selector/matchLabels", false),
        fs(
            BATCH,
            "CronJob",
            "spec/jobTemplate/spec/selector/matchLabels",
            false,
        ),
        fs(
            Some("policy"),
            "PodDisruptionBudget",
            "spec/selector/matchLabels",
            false,
        ),
        fs(
            Some("networking.k8s.io"),
            "NetworkPolicy",
            "spec/podSelector/matchLabels",
            false,
        ),
        fs(
            Some("networking.k8s.io"),
            "NetworkPolicy",
            "spec/ingress/from/podSelector/matchLabels",
            false,
        ),
        fs(
            Some("networking.k8s.io"),
            "NetworkPolicy",
            "spec/egress/to/podSelector/matchLabels",
            false,
        ),
    ];
    for kind in ["Deployment", "StatefulSet"] {
        for path in AFFINITY {
            v.push(fs(APPS, kind, path, false));
        }
    }
    v
}

/// Pod-template label fields (`labels` with `includeTemplates`, and with selectors).
pub fn template_label_specs() -> Vec<FieldSpec> {
    vec![
        fs(
            None,
            "ReplicationController",
            "spec/template/metadata/labels",
            true,
        ),
        fs(None, "Deployment", "spec/template/metadata/labels", true),
        fs(None, "ReplicaSet", "spec/template/metadata/labels", true),
        fs(None, "DaemonSet", "spec/template/metadata/labels", true),
        fs(APPS, "StatefulSet", "spec/template/metadata/labels", true),
        fs(
            APPS,
            "StatefulSet",
            "spec/volumeClaimTemplates[]/metadata/labels",
            true,
        ),
        fs(BATCH, "Job", "spec/template/metadata/labels", true),
        fs(BATCH, "CronJob", "spec/jobTemplate/metadata/labels", true),
        fs(
            BATCH,
            "CronJob",
            "spec/jobTemplate/spec/template/metadata/labels",
            true,
        ),
    ]
}

/// Annotation fields besides `metadata/annotations`.
pub fn template_annotation_specs() -> Vec<FieldSpec> {
    vec![
        fs(
            None,
            "ReplicationController",
            "spec/template/metadata/annotations",
            true,
        ),
        fs(
            None,
            "Deployment",
            "spec/template/metadata/annotations",
            true,
        ),
        fs(
            None,
            "ReplicaSet",
            "spec/template/metadata/annotations",
            true,
        ),
        fs(
            None,
            "DaemonSet",
            "spec/template/metadata/annotations",
            true,
        ),
        fs(
            APPS,
            "StatefulSet",
            "spec/template/metadata/annotations",
            true,
        ),
        fs(BATCH, "Job", "spec/template/metadata/annotations", true),
        fs(
            BATCH,
            "CronJob",
            "spec/jobTemplate/metadata/annotations",
            true,
        ),
        fs(
            BATCH,
            "CronJob",
            "spec/jobTemplate/spec/template/metadata/annotations",
            true,
        ),
    ]
}

/// Whether `spec` applies to `res`.
fn applies(spec: &FieldSpec, res: &Res) -> bool {
    spec.kind.is_none_or(|k| k == res.kind()) && spec.group.is_none_or(|g| g == res.group())
}

/// Sets every `pairs` entry in the map at each spec's path of `res`.
pub fn set_pairs(res: &mut Res, specs: &[FieldSpec], pairs: &[(String, String)]) {
    for spec in specs {
        if !applies(spec, res) {
            continue;
        }
        let segments: Vec<&str> = spec.path.split('/').collect();
        walk(&mut res.obj, &segments, spec.create, &mut |map| {
            for (k, v) in pairs {
                map.insert(k.clone(), Value::String(v.clone()));
            }
        });
    }
}

/// Calls `f` on the map at `path` below `node`, descending into list elements.
fn walk(node: &mut Value, path: &[&str], create: bool, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    if let Value::Array(items) = node {
        for item in items {
            walk(item, path, create, f);
        }
        return;
    }
    let Some((first, rest)) = path.split_first() else {
        if node.is_object() || (create && node.is_null()) {
            f(ensure_map(node));
        }
        return;
    };
    let Value::Object(map) = node else {
        return;
    };
    let (key, is_list) = match first.strip_suffix("[]") {
        Some(k) => (k, true),
        None => (*first, false),
    };
    match map.get_mut(key) {
        Some(child) => walk(child, rest, create, f),
        None if create && !is_list => {
            let child = map
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            walk(child, rest, create, f);
        }
        None => {}
    }
}
