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
    resources: &mut [Res],
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
            resources.sort_by(|a, b| compare(a, b, &rank));
            Ok(())
        }
        other => Err(RenderError::Kustomization {
            file: file.to_string(),
            message: format!("sortOptions.order must be 'legacy' or 'fifo', not '{other}'"),
        }),
    }
}

fn compare(a: &Res, b: &Res, rank: &dyn Fn(&str) -> i64) -> Ordering {
    let (ga, gb) = (gvk_string(a), gvk_string(b));
    if ga != gb {
        let (ra, rb) = (rank(a.kind()), rank(b.kind()));
        if ra != rb {
            return ra.cmp(&rb);
        }
        return ga.cmp(&gb);
    }
    id_string(a).cmp(&id_string(b))
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
