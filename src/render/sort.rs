//! Output ordering: kustomize's `legacy` order (by kind priority, then GVK, namespace and
//! name) or `fifo` (load order).

use std::cmp::Ordering;

use super::RenderError;
use super::kustomization::SortOptions;
use super::resource::Res;

/// Kinds kustomize puts first, in this order.
const ORDER_FIRST: [&str; 22] = [
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];

/// Kinds kustomize puts last, in this order.
const ORDER_LAST: [&str; 2] = [
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Sorts `resources` as the top-level kustomization's `sortOptions` ask (legacy by default).
pub fn apply(
    resources: &mut Vec<Res>,
    options: Option<&SortOptions>,
    file: &str,
) -> Result<(), RenderError> {
    let order = options.and_then(|o| o.order.as_deref()).unwrap_or("legacy");
    match order {
        "fifo" => Ok(()),
        "legacy" => {
            let custom = options.and_then(|o| o.legacy_sort_options.as_ref());
            let first: Vec<&str> = match custom {
                Some(c) => c.order_first.iter().map(String::as_str).collect(),
                None => ORDER_FIRST.to_vec(),
            };
            let last: Vec<&str> = match custom {
                Some(c) => c.order_last.iter().map(String::as_str).collect(),
                None => ORDER_LAST.to_vec(),
            };
            let rank = |kind: &str| -> i64 {
                if let Some(i) = first.iter().position(|k| *k == kind) {
                    i as i64 - first.len() as i64
                } else if let Some(i) = last.iter().position(|k| *k == kind) {
                    1 + i as i64
                } else {
                    0
                }
            };
            let mut keyed: Vec<(i64, String, String, Res)> = std::mem::take(resources)
                .into_iter()
                .map(|r| (rank(r.kind()), gvk_string(&r), id_string(&r), r))
                .collect();
            keyed.sort_by(compare);
            *resources = keyed.into_iter().map(|(_, _, _, r)| r).collect();
            Ok(())
        }
        other => Err(RenderError::Kustomization {
            file: file.to_string(),
            message: format!("sortOptions.order must be 'legacy' or 'fifo', not '{other}'"),
        }),
    }
}

/// kustomize's legacy comparison on precomputed (kind rank, GVK string, id string) keys.
fn compare(a: &(i64, String, String, Res), b: &(i64, String, String, Res)) -> Ordering {
    if a.1 != b.1 {
        if a.0 != b.0 {
            return a.0.cmp(&b.0);
        }
        return a.1.cmp(&b.1);
    }
    a.2.cmp(&b.2)
}

fn or<'a>(s: &'a str, placeholder: &'a str) -> &'a str {
    if s.is_empty() { placeholder } else { s }
}

fn gvk_string(r: &Res) -> String {
    format!(
        "{}_{}_{}",
        or(r.group(), "~G"),
        or(r.version(), "~V"),
        or(r.kind(), "~K")
    )
}

fn id_string(r: &Res) -> String {
    format!(
        "{}|{}|{}",
        gvk_string(r),
        or(r.namespace(), "~X"),
        or(r.name(), "~N")
    )
}
