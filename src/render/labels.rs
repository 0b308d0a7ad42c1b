//! kustomize's field specs: where labels, selectors and annotations live in each kind (the
//! built-in ones, and those a `configurations:` file adds), and walkers that visit the nodes
//! at such a path (descending into every element of a list met on the way, creating missing
//! maps when the spec says so).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::resource::{Res, ensure_map};

/// A place in objects of some kind(s): kustomize's `FieldSpec`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FieldSpec {
    /// API group the spec is limited to (`None`: any).
    #[serde(default)]
    pub group: Option<Cow<'static, str>>,
    /// API version the spec is limited to (`None`: any).
    #[serde(default)]
    pub version: Option<Cow<'static, str>>,
    /// Kind the spec is limited to (`None`: any).
    #[serde(default)]
    pub kind: Option<Cow<'static, str>>,
    /// `/`-separated path; a list met on the way is descended into (`[]` after a segment
    /// marks one explicitly).
    pub path: Cow<'static, str>,
    /// Create missing maps along the path.
    #[serde(default)]
    pub create: bool,
}

const fn fs(
    group: Option<&'static str>,
    kind: &'static str,
    path: &'static str,
    create: bool,
) -> FieldSpec {
    FieldSpec {
        group: match group {
            Some(g) => Some(Cow::Borrowed(g)),
            None => None,
        },
        version: None,
        kind: Some(Cow::Borrowed(kind)),
        path: Cow::Borrowed(path),
        create,
    }
}

const APPS: Option<&str> = Some("apps");
const BATCH: Option<&str> = Some("batch");

/// `metadata/labels` of every object.
pub const METADATA_LABELS: FieldSpec = FieldSpec {
    group: None,
    version: None,
    kind: None,
    path: Cow::Borrowed("metadata/labels"),
    create: true,
};

/// `metadata/annotations` of every object.
pub const METADATA_ANNOTATIONS: FieldSpec = FieldSpec {
    group: None,
    version: None,
    kind: None,
    path: Cow::Borrowed("metadata/annotations"),
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

impl FieldSpec {
    /// The kinds it selects as kustomize prints a `Gvk` (`Kind.version.group`, with
    /// `[noKind]`, `[noVer]` and `[noGrp]` for the unset parts).
    pub fn gvk_string(&self) -> String {
        let part = |p: &Option<Cow<'static, str>>, none: &'static str| {
            p.as_deref()
                .filter(|p| !p.is_empty())
                .unwrap_or(none)
                .to_string()
        };
        format!(
            "{}.{}.{}",
            part(&self.kind, "[noKind]"),
            part(&self.version, "[noVer]"),
            part(&self.group, "[noGrp]")
        )
    }

    /// Whether the spec applies to `res` (its kind, group and version, where given).
    pub fn applies(&self, res: &Res) -> bool {
        self.kind.as_deref().is_none_or(|k| k == res.kind())
            && self.group.as_deref().is_none_or(|g| g == res.group())
            && self.version.as_deref().is_none_or(|v| v == res.version())
    }
}

/// Sets every `pairs` entry in the map at each spec's path of `res`.
pub fn set_pairs(res: &mut Res, specs: &[FieldSpec], pairs: &[(String, String)]) {
    for spec in specs {
        if !spec.applies(res) {
            continue;
        }
        let segments: Vec<&str> = spec.path.split('/').collect();
        walk(&mut res.obj, &segments, spec.create, &mut |node| {
            let map = ensure_map(node);
            for (k, v) in pairs {
                map.insert(k.clone(), Value::String(v.clone()));
            }
        });
    }
}

/// Calls `f` on every node at the spec's path in `res` (when the spec applies to it); with
/// `create`, a missing last field is created as null first (and missing maps on the way).
pub fn visit(res: &mut Res, spec: &FieldSpec, f: &mut dyn FnMut(&mut Value)) {
    if !spec.applies(res) {
        return;
    }
    let segments: Vec<&str> = spec.path.split('/').collect();
    walk_any(&mut res.obj, &segments, spec.create, f);
}

/// Calls `f` on the map at `path` below `node` (a null one too, with `create`), descending
/// into list elements.
fn walk(node: &mut Value, path: &[&str], create: bool, f: &mut dyn FnMut(&mut Value)) {
    walk_any(node, path, create, &mut |leaf| {
        if leaf.is_object() || (create && leaf.is_null()) {
            f(leaf);
        }
    });
}

/// Calls `f` on every node at `path` below `node`, descending into list elements; with
/// `create`, missing fields on the way are created (maps, the last one null).
fn walk_any(node: &mut Value, path: &[&str], create: bool, f: &mut dyn FnMut(&mut Value)) {
    if let Value::Array(items) = node {
        for item in items {
            walk_any(item, path, create, f);
        }
        return;
    }
    let Some((first, rest)) = path.split_first() else {
        f(node);
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
        Some(child) => walk_any(child, rest, create, f),
        None if create && !is_list => {
            let fresh = if rest.is_empty() {
                Value::Null
            } else {
                Value::Object(Map::new())
            };
            let child = map.entry(key.to_string()).or_insert(fresh);
            walk_any(child, rest, create, f);
        }
        None => {}
    }
}
