//! The inventory: the identities of the objects wardn applied for an App. It is kept in the
//! App's status, and prune only ever deletes objects listed in it.

use std::collections::BTreeSet;

use crate::object::ObjectRef;

/// The objects of `previous` that are no longer in `current`: the prune candidates.
pub fn orphans(previous: &[ObjectRef], current: &BTreeSet<ObjectRef>) -> Vec<ObjectRef> {
    previous
        .iter()
        .filter(|r| !current.contains(*r))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orphans_are_previous_minus_current() {
        let a = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: "a".into(),
        };
        let b = ObjectRef {
            name: "b".into(),
            ..a.clone()
        };
        let current: BTreeSet<_> = [a.clone()].into_iter().collect();
        assert_eq!(orphans(&[a, b.clone()], &current), vec![b]);
    }
}
