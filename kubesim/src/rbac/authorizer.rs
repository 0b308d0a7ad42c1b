//! The RBAC authorizer over a cluster's Roles, ClusterRoles and bindings: bindings that apply
//! to a user, the rules their role references grant (with ClusterRole aggregation), the
//! decision for a request with its reason, and the SelfSubjectRulesReview status.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::selectors::LabelSelector;

use super::request::{Decision, Request, UserInfo};
use super::rules::{rule_allows, strings};

/// The RBAC objects of a cluster, borrowed from the server's store: Roles, ClusterRoles,
/// RoleBindings and ClusterRoleBindings as stored (`rbac.authorization.k8s.io/v1` JSON).
#[derive(Debug, Clone, Copy)]
pub struct Authorizer<'a> {
    /// All Roles, any namespace.
    pub roles: &'a [Value],
    /// All ClusterRoles.
    pub cluster_roles: &'a [Value],
    /// The RoleBindings: all of them, or (cheaper, as a store indexed by namespace can hand
    /// them out) only those of the request's namespace; bindings of other namespaces are
    /// skipped.
    pub role_bindings: &'a [Value],
    /// All ClusterRoleBindings.
    pub cluster_role_bindings: &'a [Value],
}

/// The string at a `/`-separated path of object keys ("" when absent or not a string).
/// Unlike `Value::pointer` it allocates nothing: it runs for every binding on every request.
pub(super) fn str_at<'v>(value: &'v Value, path: &str) -> &'v str {
    path.split('/')
        .skip(1)
        .try_fold(value, |current, key| current.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl<'a> Authorizer<'a> {
    /// Decides a request the way the RBAC authorizer does: ClusterRoleBindings first, then
    /// the RoleBindings of the request's namespace; the first rule that allows wins.
    pub fn authorize(&self, user: &UserInfo, request: &Request) -> Decision {
        let namespace = match request {
            Request::Resource(attributes) => attributes.namespace.as_str(),
            Request::NonResource { .. } => "",
        };
        let mut allowed_by = None;
        let errors = self.visit_rules(user, namespace, |source, rule| {
            if rule_allows(rule, request) {
                allowed_by = Some(source.describe());
                false
            } else {
                true
            }
        });
        match allowed_by {
            Some(source) => Decision::Allow {
                reason: format!("RBAC: allowed by {source}"),
            },
            None => Decision::Deny {
                reason: match aggregate_errors(errors) {
                    Some(errors) => format!("RBAC: {errors}"),
                    None => String::new(),
                },
            },
        }
    }

    /// The `status` of a SelfSubjectRulesReview (`kubectl auth can-i --list`): every rule the
    /// user has in `namespace` (cluster-wide grants included), split into `resourceRules`
    /// and `nonResourceRules`, with `incomplete` and the `evaluationError` when a binding
    /// could not be resolved.
    pub fn rules_review_status(&self, user: &UserInfo, namespace: &str) -> Value {
        let mut resource_rules = Vec::new();
        let mut non_resource_rules = Vec::new();
        let errors = self.visit_rules(user, namespace, |_, rule| {
            let list = |key: &str| -> Option<Vec<&str>> {
                let items: Vec<&str> = strings(rule, key).collect();
                (!items.is_empty()).then_some(items)
            };
            let verbs: Vec<&str> = strings(rule, "verbs").collect();
            if let Some(resources) = list("resources") {
                let mut entry = serde_json::Map::new();
                entry.insert("verbs".into(), json!(verbs));
                if let Some(groups) = list("apiGroups") {
                    entry.insert("apiGroups".into(), json!(groups));
                }
                entry.insert("resources".into(), json!(resources));
                if let Some(names) = list("resourceNames") {
                    entry.insert("resourceNames".into(), json!(names));
                }
                resource_rules.push(Value::Object(entry));
            }
            if let Some(urls) = list("nonResourceURLs") {
                non_resource_rules.push(json!({"verbs": verbs, "nonResourceURLs": urls}));
            }
            true
        });
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": false
        });
        if let Some(errors) = aggregate_errors(errors) {
            status["incomplete"] = json!(true);
            status["evaluationError"] = json!(errors);
        }
        status
    }

    /// `VisitRulesFor`: calls `visitor` with each rule granted to `user` by the
    /// ClusterRoleBindings and then the RoleBindings of `namespace` (none when ""), with the
    /// binding that grants it, until the visitor returns false. Returns the errors met
    /// resolving role references.
    fn visit_rules(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visitor: impl FnMut(&Source<'_>, &Value) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let cluster_wide = self.cluster_role_bindings.iter().map(|b| (b, ""));
        let namespaced = self
            .role_bindings
            .iter()
            .filter(|b| !namespace.is_empty() && str_at(b, "/metadata/namespace") == namespace)
            .map(|b| (b, namespace));
        for (binding, binding_namespace) in cluster_wide.chain(namespaced) {
            let Some(subject) = applying_subject(binding, user, binding_namespace) else {
                continue;
            };
            match self.role_ref_rules(binding, binding_namespace) {
                Ok(rules) => {
                    let source = Source {
                        binding,
                        subject,
                        namespace: binding_namespace,
                    };
                    for rule in rules {
                        if !visitor(&source, rule) {
                            return errors;
                        }
                    }
                }
                Err(error) => errors.push(error),
            }
        }
        errors
    }

    /// The rules a binding's `roleRef` grants: a Role in `namespace` or a ClusterRole
    /// (with aggregation). The error is worded as the server's lister words it.
    fn role_ref_rules(&self, binding: &Value, namespace: &str) -> Result<Vec<&'a Value>, String> {
        let name = str_at(binding, "/roleRef/name");
        match str_at(binding, "/roleRef/kind") {
            "Role" => self
                .roles
                .iter()
                .find(|role| {
                    str_at(role, "/metadata/name") == name
                        && str_at(role, "/metadata/namespace") == namespace
                })
                .map(|role| rules_of(role).iter().collect())
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io {name:?} not found")),
            "ClusterRole" => self
                .cluster_role(name)
                .map(|role| {
                    let mut rules = Vec::new();
                    self.collect_rules(role, &mut BTreeSet::new(), &mut rules);
                    rules
                })
                .ok_or_else(|| format!("clusterrole.rbac.authorization.k8s.io {name:?} not found")),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// The effective rules of a ClusterRole: its own rules, or, when it has an
    /// `aggregationRule`, the rules of every ClusterRole its selectors match (transitively,
    /// as the aggregation controller converges to), deduplicated. None if it does not exist.
    pub fn cluster_role_rules(&self, name: &str) -> Option<Vec<&'a Value>> {
        let role = self.cluster_role(name)?;
        let mut rules = Vec::new();
        self.collect_rules(role, &mut BTreeSet::new(), &mut rules);
        let mut unique: Vec<&'a Value> = Vec::with_capacity(rules.len());
        for rule in rules {
            if !unique.contains(&rule) {
                unique.push(rule);
            }
        }
        Some(unique)
    }

    fn cluster_role(&self, name: &str) -> Option<&'a Value> {
        self.cluster_roles
            .iter()
            .find(|role| str_at(role, "/metadata/name") == name)
    }

    /// Gathers a ClusterRole's effective rules (duplicates included: authorization does not
    /// care), visiting each aggregated role once.
    fn collect_rules(
        &self,
        role: &'a Value,
        visited: &mut BTreeSet<&'a str>,
        rules: &mut Vec<&'a Value>,
    ) {
        if !visited.insert(str_at(role, "/metadata/name")) {
            return;
        }
        let Some(aggregation) = role.get("aggregationRule").filter(|rule| !rule.is_null()) else {
            rules.extend(rules_of(role));
            return;
        };
        let selectors: Vec<LabelSelector> = aggregation
            .get("clusterRoleSelectors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|selector| LabelSelector::from_object(selector).ok())
            .collect();
        let mut matched: Vec<&'a Value> = self
            .cluster_roles
            .iter()
            .filter(|candidate| selectors.iter().any(|s| s.matches_object(candidate)))
            .collect();
        matched.sort_by_key(|candidate| str_at(candidate, "/metadata/name"));
        for candidate in matched {
            self.collect_rules(candidate, visited, rules);
        }
    }
}

fn rules_of(role: &Value) -> &[Value] {
    role.get("rules")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The binding (and the subject in it) a rule was granted through.
struct Source<'v> {
    binding: &'v Value,
    subject: &'v Value,
    /// The RoleBinding's namespace; "" for a ClusterRoleBinding.
    namespace: &'v str,
}

impl Source<'_> {
    /// `clusterRoleBindingDescriber` / `roleBindingDescriber`, e.g.
    /// `RoleBinding "name/ns" of ClusterRole "edit" to ServiceAccount "sa/ns"`.
    fn describe(&self) -> String {
        let name = str_at(self.binding, "/metadata/name");
        let binding = if self.namespace.is_empty() {
            format!("ClusterRoleBinding {name:?}")
        } else {
            format!("RoleBinding {:?}", format!("{name}/{}", self.namespace))
        };
        format!(
            "{binding} of {} {:?} to {}",
            str_at(self.binding, "/roleRef/kind"),
            str_at(self.binding, "/roleRef/name"),
            describe_subject(self.subject, self.namespace)
        )
    }
}

/// `utilerrors.NewAggregate(...).Error()`: duplicates dropped, one error as is, several in
/// brackets; None without errors.
fn aggregate_errors(errors: Vec<String>) -> Option<String> {
    let mut unique: Vec<String> = Vec::new();
    for error in errors {
        if !unique.contains(&error) {
            unique.push(error);
        }
    }
    match unique.as_slice() {
        [] => None,
        [single] => Some(single.clone()),
        several => Some(format!("[{}]", several.join(", "))),
    }
}

/// The first subject of a binding that applies to the user (`appliesToUser`). ServiceAccount
/// subjects without a namespace default to the binding's namespace.
fn applying_subject<'v>(binding: &'v Value, user: &UserInfo, namespace: &str) -> Option<&'v Value> {
    binding
        .get("subjects")
        .and_then(Value::as_array)?
        .iter()
        .find(|subject| {
            let name = str_at(subject, "/name");
            match str_at(subject, "/kind") {
                "User" => user.name == name,
                "Group" => user.groups.iter().any(|group| group == name),
                "ServiceAccount" => {
                    let account_namespace = match str_at(subject, "/namespace") {
                        "" => namespace,
                        explicit => explicit,
                    };
                    !account_namespace.is_empty()
                        && user
                            .name
                            .strip_prefix("system:serviceaccount:")
                            .and_then(|rest| rest.split_once(':'))
                            == Some((account_namespace, name))
                }
                _ => false,
            }
        })
}

/// `describeSubject`: `User "x"`, `Group "g"`, `ServiceAccount "name/namespace"`.
fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = str_at(subject, "/kind");
    let name = str_at(subject, "/name");
    if kind == "ServiceAccount" {
        let namespace = match str_at(subject, "/namespace") {
            "" => binding_namespace,
            explicit => explicit,
        };
        format!("{kind} {:?}", format!("{name}/{namespace}"))
    } else {
        format!("{kind} {name:?}")
    }
}
