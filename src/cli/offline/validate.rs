//! `wardn clusters validate`: checks App files against the registered clusters before they are
//! deployed — every `destination.cluster` names a registered cluster (empty: the management
//! cluster), its `destination.namespace` is in that cluster's allowlist, and every object the
//! App renders lands in an allowed namespace (the reconciler's own allowlist check, with the
//! built-in kinds of Kubernetes 1.32 for scopes: cluster-scoped built-ins are refused by a
//! restricted allowlist), and no rendered CRD redeclares a kind of a built-in group.

use std::path::PathBuf;

use super::targets::RenderedApp;
use crate::clusters::allowlist::{self, Allowlist};
use crate::clusters::registry::ClusterView;

/// One problem found in an App file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The App file.
    pub file: PathBuf,
    /// The App's `namespace/name`.
    pub app: String,
    /// The offending field (`spec.destination.cluster`, `spec.destination.namespace`, or
    /// `spec.targets.NAME.cluster|namespace` for a target; `spec.source`).
    pub field: String,
    /// Why it is refused.
    pub reason: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: App {}: {}: {}",
            self.file.display(),
            self.app,
            self.field,
            self.reason
        )
    }
}

/// Every violation of `apps` against the registered `clusters`, in App order.
pub fn validate(apps: &[RenderedApp], clusters: &[ClusterView]) -> Vec<Violation> {
    let mut violations = Vec::new();
    for app in apps {
        let cluster_field = app.app.spec.destination.cluster_field();
        let namespace_field = app.app.spec.destination.namespace_field();
        let violation = |field: &str, reason: String| Violation {
            file: app.file.clone(),
            app: app.key(),
            field: field.to_string(),
            reason,
        };
        let cluster = app.cluster();
        let allowlist = if cluster.is_empty() {
            Allowlist::unrestricted()
        } else {
            match clusters.iter().find(|c| c.name == cluster) {
                None => {
                    let known: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
                    violations.push(violation(
                        &cluster_field,
                        format!(
                            "cluster {cluster:?} is not registered (registered: {})",
                            if known.is_empty() {
                                "none".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    ));
                    continue;
                }
                Some(view) if view.namespaces.is_empty() => Allowlist::unrestricted(),
                Some(view) => Allowlist::namespaces(view.namespaces.iter().cloned()),
            }
        };
        let destination = &app.app.spec.destination.namespace;
        let destination_refused = !allowlist.allows_namespace(destination);
        for reason in &app.refused_crds {
            violations.push(violation("spec.source (rendered objects)", reason.clone()));
        }
        let placed = match &app.placed {
            Ok(placed) => placed.as_slice(),
            Err(reason) => {
                violations.push(violation("spec.source", reason.clone()));
                &[]
            }
        };
        if let Err(forbidden) = allowlist::check(&allowlist, cluster, destination, placed) {
            let mut lines = forbidden.violations.into_iter();
            if destination_refused && let Some(line) = lines.next() {
                violations.push(violation(&namespace_field, line));
            }
            violations.extend(lines.map(|line| violation("spec.source (rendered objects)", line)));
        }
    }
    violations
}
