//! The RBAC group's rules (`pkg/apis/rbac/validation`): rules name verbs and resources,
//! bindings name a role in the RBAC group and subjects of a known kind; a binding's roleRef
//! cannot change.

use serde_json::Value;

use super::field::{Errors, invalid, invalid_str, not_supported, required};
use super::{arr, s};
use crate::names;

const GROUP: &str = "rbac.authorization.k8s.io";

/// The rules of a Role or ClusterRole (`ValidatePolicyRule`).
pub fn role(obj: &Value, namespaced: bool, errs: &mut Errors) {
    for (i, rule) in arr(obj, "rules").iter().enumerate() {
        let p = format!("rules[{i}]");
        if arr(rule, "verbs").is_empty() {
            errs.push(required(
                &format!("{p}.verbs"),
                "verbs must contain at least one value",
            ));
        }
        if !arr(rule, "nonResourceURLs").is_empty() {
            let shown = super::field::go_string_list(rule.get("nonResourceURLs"));
            if namespaced {
                errs.push(invalid(
                    &format!("{p}.nonResourceURLs"),
                    shown.clone(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if ["apiGroups", "resources", "resourceNames"]
                .iter()
                .any(|k| !arr(rule, k).is_empty())
            {
                errs.push(invalid(
                    &format!("{p}.nonResourceURLs"),
                    shown,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if arr(rule, "apiGroups").is_empty() {
            errs.push(required(
                &format!("{p}.apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if arr(rule, "resources").is_empty() {
            errs.push(required(
                &format!("{p}.resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

/// A RoleBinding or ClusterRoleBinding: roleRef and subjects.
pub fn binding(obj: &Value, namespaced: bool, errs: &mut Errors) {
    let empty = Value::Null;
    let role_ref = obj.get("roleRef").unwrap_or(&empty);
    let group = s(role_ref, "apiGroup");
    if group != GROUP {
        errs.push(not_supported("roleRef.apiGroup", group, &[GROUP]));
    }
    let kind = s(role_ref, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(not_supported("roleRef.kind", kind, kinds));
    }
    let name = s(role_ref, "name");
    if name.is_empty() {
        errs.push(required("roleRef.name", ""));
    } else {
        for m in names::path_segment_name(name) {
            errs.push(invalid_str("roleRef.name", name, &m));
        }
    }
    for (i, subject) in arr(obj, "subjects").iter().enumerate() {
        let p = format!("subjects[{i}]");
        let name = s(subject, "name");
        if name.is_empty() {
            errs.push(required(&format!("{p}.name"), ""));
        }
        let api_group = s(subject, "apiGroup");
        match s(subject, "kind") {
            "ServiceAccount" => {
                if !name.is_empty() {
                    for m in names::dns1123_subdomain(name) {
                        errs.push(invalid_str(&format!("{p}.name"), name, &m));
                    }
                }
                if !api_group.is_empty() {
                    errs.push(not_supported(&format!("{p}.apiGroup"), api_group, &[""]));
                }
                if !namespaced && s(subject, "namespace").is_empty() {
                    errs.push(required(&format!("{p}.namespace"), ""));
                }
            }
            "User" | "Group" => {
                if api_group != GROUP {
                    errs.push(not_supported(&format!("{p}.apiGroup"), api_group, &[GROUP]));
                }
            }
            other => errs.push(not_supported(
                &format!("{p}.kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
}

/// A binding update: the roleRef cannot change.
pub fn binding_update(old: &Value, new: &Value, errs: &mut Errors) {
    if old.get("roleRef") != new.get("roleRef") {
        let r = new.get("roleRef").unwrap_or(&Value::Null);
        errs.push(invalid(
            "roleRef",
            format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                super::field::quote(s(r, "apiGroup")),
                super::field::quote(s(r, "kind")),
                super::field::quote(s(r, "name"))
            ),
            "cannot change roleRef",
        ));
    }
}
