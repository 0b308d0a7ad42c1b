//! The prune guard: deletions that are too large or too dangerous to run unattended. A plan
//! the guard refuses is Held with the reason, even when the App is automated.

use crate::object::ObjectRef;

/// Kinds whose deletion takes data or other objects with it: never pruned without approval.
const PROTECTED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("", "PersistentVolumeClaim"),
];

/// Why the guard refuses the prunes, or `None` when they may run: more than half of the
/// inventory, or any Namespace, CustomResourceDefinition or PersistentVolumeClaim.
pub fn check(inventory_len: usize, prunes: &[ObjectRef]) -> Option<String> {
    let mut reasons = Vec::new();
    if !prunes.is_empty() && prunes.len() * 2 > inventory_len {
        reasons.push(format!(
            "the plan deletes {} of the {} objects in the inventory (more than half)",
            prunes.len(),
            inventory_len
        ));
    }
    let protected: Vec<String> = prunes
        .iter()
        .filter(|r| PROTECTED.contains(&(r.group(), r.kind.as_str())))
        .map(ToString::to_string)
        .collect();
    if !protected.is_empty() {
        reasons.push(format!("the plan deletes {}", protected.join(", ")));
    }
    (!reasons.is_empty()).then(|| {
        format!(
            "prune guard: {}; approve the plan to proceed",
            reasons.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(kind: &str, name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: Some("n".into()),
            name: name.into(),
        }
    }

    #[test]
    fn small_prunes_pass() {
        assert_eq!(check(4, &[r("ConfigMap", "a")]), None);
        assert_eq!(check(4, &[r("ConfigMap", "a"), r("ConfigMap", "b")]), None);
        assert_eq!(check(0, &[]), None);
    }

    #[test]
    fn more_than_half_is_refused() {
        let why = check(
            4,
            &[
                r("ConfigMap", "a"),
                r("ConfigMap", "b"),
                r("ConfigMap", "c"),
            ],
        )
        .unwrap();
        assert!(why.contains("3 of the 4"), "{why}");
    }

    #[test]
    fn protected_kinds_are_refused() {
        let why = check(10, &[r("PersistentVolumeClaim", "data")]).unwrap();
        assert!(why.contains("PersistentVolumeClaim n/data"), "{why}");
        let ns = ObjectRef {
            namespace: None,
            ..r("Namespace", "team")
        };
        assert!(check(10, &[ns]).is_some());
        let crd = ObjectRef {
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            namespace: None,
            name: "w.example.com".into(),
        };
        assert!(check(10, &[crd]).is_some());
    }
}
