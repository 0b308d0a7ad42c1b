//! Named targets: `spec.targets: {NAME: {cluster, namespace?, primary?}}` fans one App out to
//! several destinations. A target's `cluster` (a name or a template, see [`super::routing`])
//! overrides `spec.destination.cluster`; with neither, the target deploys to the management
//! cluster; its `namespace` defaults to `spec.destination.namespace`.
//!
//! [`expand`] runs where Apps enter wardn (next to [`super::routing::resolve`]): it turns an
//! App with targets into one App per target, each carrying its target's name
//! ([`Destination::target`]) and resolved destination, so planning, Held plans and their
//! approval, inventories, prune, status and promotion work per target unchanged. A target's
//! key is `namespace/name:target` ([`super::key::app_key`]); an App without targets keeps
//! `namespace/name`. Two targets may not deploy to the same cluster and namespace (their
//! objects would be the same objects).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::routing::{self, RoutingError};
use super::{App, AppStatus, Destination, HealthState, LOCAL_CLUSTER, Phase, PlanSummary};
use crate::object::{ObjectRef, is_dns_label};

/// The most targets one App may have.
pub const MAX_TARGETS: usize = 64;

/// `spec.targets.NAME`: one destination of the App.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// A registered cluster's name or a template (as `spec.destination.cluster`); empty means
    /// `spec.destination.cluster`, and when that is empty too, the management cluster.
    #[serde(default)]
    pub cluster: String,
    /// The namespace namespaced objects without one are placed in (default:
    /// `spec.destination.namespace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The target that answers for the App when a request names no target (at most one).
    #[serde(default)]
    pub primary: bool,
    /// Overrides `spec.syncPolicy.requiresApproval` for this target (e.g. production gated,
    /// staging not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_approval: Option<bool>,
}

/// `status.targets.NAME` of an App resource: one target's outcome.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetStatus {
    /// The cluster the target deploys to, as resolved (`local`: the management cluster).
    pub cluster: String,
    /// The namespace it deploys to.
    pub namespace: String,
    /// The target's lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The source revision of the target's last pass, whether it succeeded or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The revision last applied successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_revision: Option<String>,
    /// What the current plan does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanSummary>,
    /// The hash of the current plan; an approval of this target must name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    /// When the current plan was Held (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_at: Option<String>,
    /// The aggregate health after the last apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthState>,
    /// When the last successful apply finished (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_synced_at: Option<String>,
    /// Why the target is in its phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Every object wardn applied for this target and still manages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<ObjectRef>,
}

impl TargetStatus {
    /// The status of the target `destination` leads to, from its App's `status`.
    pub fn of(destination: &Destination, status: &AppStatus) -> TargetStatus {
        TargetStatus {
            cluster: destination.cluster_segment().to_string(),
            namespace: destination.namespace.clone(),
            phase: status.phase,
            revision: status.revision.clone(),
            synced_revision: status.synced_revision.clone(),
            plan: status.plan,
            plan_hash: status.plan_hash.clone(),
            held_at: status.held_at.clone(),
            health: status.health,
            last_synced_at: status.last_synced_at.clone(),
            message: status.message.clone(),
            inventory: status.inventory.clone(),
        }
    }
}

/// Why an App's targets cannot be expanded. Each error names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// A destination's template does not resolve.
    #[error(transparent)]
    Routing(#[from] RoutingError),
    /// Too many targets.
    #[error("spec.targets: {count} targets, at most {MAX_TARGETS} are allowed")]
    TooMany {
        /// How many the App has.
        count: usize,
    },
    /// A target's name is not a DNS label.
    #[error(
        "spec.targets.{name:?}: a target name must be a DNS label (lowercase letters, digits and '-', at most 63 characters)"
    )]
    Name {
        /// The name (cut to 100 characters).
        name: String,
    },
    /// A target's static cluster is not a cluster name.
    #[error(
        "spec.targets.{target}.cluster: {cluster:?} is not a cluster name (a DNS label, a template, or empty for spec.destination.cluster)"
    )]
    Cluster {
        /// The target.
        target: String,
        /// The value (cut to 100 characters).
        cluster: String,
    },
    /// A target's namespace is not a DNS label.
    #[error("spec.targets.{target}.namespace: {namespace:?} is not a namespace name (a DNS label)")]
    Namespace {
        /// The target.
        target: String,
        /// The value (cut to 100 characters).
        namespace: String,
    },
    /// Two targets deploy to the same cluster and namespace.
    #[error(
        "spec.targets.{second}.cluster: targets {first} and {second} both deploy to cluster {cluster}, namespace {namespace} (one target per cluster and namespace)"
    )]
    Duplicate {
        /// The first target (in name order).
        first: String,
        /// The second.
        second: String,
        /// The cluster segment.
        cluster: String,
        /// The namespace.
        namespace: String,
    },
    /// More than one target is `primary: true`.
    #[error("spec.targets: only one target may be primary (primary: {0})")]
    Primaries(String),
}

/// `text` cut to at most 100 characters, for errors quoting what a user sent.
fn cut(text: &str) -> String {
    text.chars().take(100).collect()
}

/// The Apps `app` fans out to: itself with its destination resolved when it has no targets,
/// else one App per target (in name order), each with `spec.targets` cleared and its
/// [`Destination`] set to the target's resolved cluster, namespace and name. An App already
/// expanded (it names its target) is returned as it is.
pub fn expand(app: &App) -> Result<Vec<App>, TargetError> {
    if app.spec.destination.target.is_some() {
        return Ok(vec![app.clone()]);
    }
    let mut base = app.clone();
    routing::resolve(&mut base)?;
    if app.spec.targets.is_empty() {
        return Ok(vec![base]);
    }
    let targets = &app.spec.targets;
    if targets.len() > MAX_TARGETS {
        return Err(TargetError::TooMany {
            count: targets.len(),
        });
    }
    if let Some(name) = targets.keys().find(|name| !is_dns_label(name)) {
        return Err(TargetError::Name { name: cut(name) });
    }
    let primaries: Vec<&str> = targets
        .iter()
        .filter(|(_, t)| t.primary)
        .map(|(name, _)| name.as_str())
        .collect();
    if primaries.len() > 1 {
        return Err(TargetError::Primaries(primaries.join(", ")));
    }
    base.spec.targets.clear();
    let view = routing::routing_view(app);
    let mut placed: BTreeMap<(String, String), &str> = BTreeMap::new();
    let mut apps = Vec::with_capacity(targets.len());
    for (name, target) in targets {
        let destination = destination(&base.spec.destination, name, target, &view)?;
        let at = (
            destination.cluster_segment().to_string(),
            destination.namespace.clone(),
        );
        if let Some(first) = placed.insert(at.clone(), name) {
            return Err(TargetError::Duplicate {
                first: first.to_string(),
                second: name.clone(),
                cluster: at.0,
                namespace: at.1,
            });
        }
        let mut one = base.clone();
        one.spec.destination = destination;
        if let Some(gated) = target.requires_approval {
            one.spec.sync_policy.requires_approval = gated;
        }
        apps.push(one);
    }
    Ok(apps)
}

/// Target `name`'s destination: its cluster (static, a template evaluated against `view`, or
/// the App's resolved `default`), its namespace (or the default's) and its name.
fn destination(
    default: &Destination,
    name: &str,
    target: &Target,
    view: &serde_json::Value,
) -> Result<Destination, TargetError> {
    let (cluster, cluster_template) = if target.cluster.is_empty() {
        (default.cluster.clone(), default.cluster_template.clone())
    } else if super::template::is_template(&target.cluster) {
        let field = format!("spec.targets.{name}.cluster");
        let resolved = routing::evaluate(&target.cluster, view, &field)?;
        (resolved, Some(target.cluster.clone()))
    } else if is_dns_label(&target.cluster) && target.cluster != LOCAL_CLUSTER {
        (target.cluster.clone(), None)
    } else {
        return Err(TargetError::Cluster {
            target: name.to_string(),
            cluster: cut(&target.cluster),
        });
    };
    let namespace = match &target.namespace {
        Some(namespace) if !is_dns_label(namespace) => {
            return Err(TargetError::Namespace {
                target: name.to_string(),
                namespace: cut(namespace),
            });
        }
        Some(namespace) => namespace.clone(),
        None => default.namespace.clone(),
    };
    Ok(Destination {
        cluster,
        cluster_template,
        target: Some(name.to_string()),
        primary: target.primary,
        namespace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(destination: &str, targets: &str) -> App {
        let yaml = format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: web\n  namespace: team\n  labels: {{region: eu}}\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: /srv\n\
             \x20 destination: {{cluster: '{destination}', namespace: shop}}\n  targets: {targets}\n"
        );
        serde_saphyr::from_str(&yaml).unwrap()
    }

    fn routes(apps: &[App]) -> Vec<String> {
        apps.iter()
            .map(|a| {
                let d = &a.spec.destination;
                format!(
                    "{}→{}/{}{}",
                    d.target.as_deref().unwrap_or("-"),
                    d.cluster_segment(),
                    d.namespace,
                    if d.cluster_template.is_some() {
                        " (template)"
                    } else {
                        ""
                    }
                )
            })
            .collect()
    }

    #[test]
    fn targets_override_fall_back_and_resolve_templates() {
        let targets = r#"{prod: {cluster: prod, primary: true, requiresApproval: true}, staging: {namespace: shop-staging}, regional: {cluster: '{{ printf "prod-%s" .metadata.labels.region }}'}}"#;
        let expanded = expand(&app("staging", targets)).unwrap();
        assert_eq!(
            routes(&expanded),
            [
                "prod→prod/shop",
                "regional→prod-eu/shop (template)",
                "staging→staging/shop-staging"
            ]
        );
        assert!(expanded[0].spec.destination.primary);
        assert!(expanded[0].spec.sync_policy.requires_approval);
        assert!(!expanded[2].spec.sync_policy.requires_approval);
        assert!(expanded.iter().all(|a| a.spec.targets.is_empty()));
        // Neither a target's nor the App's cluster: the management cluster.
        let local = expand(&app("", "{a: {}, b: {cluster: prod}}")).unwrap();
        assert_eq!(routes(&local), ["a→local/shop", "b→prod/shop"]);
        // An inherited template stays a template; expanding again changes nothing.
        let inherited = expand(&app("{{ .metadata.labels.region }}", "{x: {}}")).unwrap();
        assert_eq!(routes(&inherited), ["x→eu/shop (template)"]);
        assert_eq!(routes(&expand(&inherited[0]).unwrap()), routes(&inherited));
        // Without targets: the App itself, resolved.
        let plain = expand(&app("{{ .metadata.labels.region }}", "{}")).unwrap();
        assert_eq!(routes(&plain), ["-→eu/shop (template)"]);
    }

    #[test]
    fn hostile_targets_are_refused_naming_the_field() {
        let error = |targets: &str| expand(&app("staging", targets)).unwrap_err().to_string();
        assert!(
            error("{Prod: {}}")
                .starts_with("spec.targets.\"Prod\": a target name must be a DNS label")
        );
        assert!(error("{'a:b': {}}").contains("\"a:b\""));
        assert!(error("{'../x': {}}").contains("\"../x\""));
        assert_eq!(
            error("{a: {cluster: '../etc'}}"),
            "spec.targets.a.cluster: \"../etc\" is not a cluster name (a DNS label, a template, or empty for spec.destination.cluster)"
        );
        assert!(error("{a: {cluster: local}}").starts_with("spec.targets.a.cluster:"));
        assert!(error("{a: {namespace: 'x/y'}}").starts_with("spec.targets.a.namespace:"));
        assert_eq!(
            error("{a: {cluster: prod}, b: {cluster: prod}}"),
            "spec.targets.b.cluster: targets a and b both deploy to cluster prod, namespace shop (one target per cluster and namespace)"
        );
        // The same cluster, another namespace: kept apart.
        assert!(
            expand(&app(
                "staging",
                "{a: {cluster: prod}, b: {cluster: prod, namespace: b}}"
            ))
            .is_ok()
        );
        assert!(error("{a: {}, b: {cluster: staging}}").contains("targets a and b"));
        assert!(
            error("{a: {cluster: '{{ lookup 1 }}'}}")
                .starts_with("spec.targets.a.cluster: template column 1: function \"lookup\"")
        );
        assert!(
            error("{a: {cluster: '{{ .metadata.name }} x'}}")
                .starts_with("spec.targets.a.cluster: template resolved to \"web x\"")
        );
        assert!(
            error("{a: {primary: true}, b: {primary: true, cluster: p}}").contains("primary: a, b")
        );
        let many: Vec<String> = (0..1000).map(|i| format!("t{i}: {{}}")).collect();
        assert_eq!(
            error(&format!("{{{}}}", many.join(", "))),
            "spec.targets: 1000 targets, at most 64 are allowed"
        );
    }

    #[test]
    fn target_status_copies_the_target_fields() {
        let destination = Destination {
            cluster: String::new(),
            namespace: "shop".into(),
            target: Some("a".into()),
            ..Destination::default()
        };
        let status = AppStatus {
            phase: Some(Phase::Held),
            plan_hash: Some("h".into()),
            ..AppStatus::default()
        };
        let target = TargetStatus::of(&destination, &status);
        assert_eq!(
            (
                target.cluster.as_str(),
                target.phase,
                target.plan_hash.as_deref()
            ),
            ("local", Some(Phase::Held), Some("h"))
        );
    }
}
