//! The RBAC authorizer, with the semantics of kube-apiserver's
//! (`plugin/pkg/auth/authorizer/rbac`): ClusterRoleBindings grant cluster-wide, RoleBindings
//! grant a Role or a ClusterRole within their namespace; rules match verbs, API groups,
//! resources (`resource/subresource`, `*`, `*/subresource`), resourceNames and
//! nonResourceURLs (exact or `prefix*`); aggregated ClusterRoles take the rules of the
//! ClusterRoles their `aggregationRule` selects, as the aggregation controller would write them.
//!
//! Also the 403 Forbidden message and Status body worded as kube-apiserver words them
//! (`apiserver/pkg/endpoints/handlers/responsewriters` and `apimachinery` `NewForbidden`),
//! the SelfSubjectAccessReview and SelfSubjectRulesReview statuses, and the bootstrap
//! ClusterRoles and bindings every cluster has
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`).

use std::collections::BTreeSet;

use serde_json::{Value, json};
use thiserror::Error;

use crate::selectors::LabelSelector;

/// The authenticated user a request is authorized for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name, e.g. `admin` or `system:serviceaccount:ns:sa`.
    pub name: String,
    /// The groups the user belongs to.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// A user with a name and groups.
    pub fn new(name: &str, groups: &[&str]) -> Self {
        UserInfo {
            name: name.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    /// The user a ServiceAccount token authenticates as: `system:serviceaccount:NS:NAME`
    /// in `system:serviceaccounts`, `system:serviceaccounts:NS` and `system:authenticated`.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        UserInfo {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_string(),
            ],
        }
    }
}

/// What a request asks to do: the authorizer attributes of a resource or non-resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// A request on an API resource.
    Resource(ResourceAttributes),
    /// A request on a non-resource path such as `/version` or `/healthz`.
    NonResource {
        /// The HTTP-derived verb (`get`, `post`, …, lowercase).
        verb: String,
        /// The URL path.
        path: String,
    },
}

/// The attributes of a resource request. For requests on Namespace objects the server sets
/// `namespace` to the Namespace's name, as kube-apiserver's request info does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    /// The verb: get, list, watch, create, update, patch, delete, deletecollection, …
    pub verb: String,
    /// The API group, "" for the core group.
    pub api_group: String,
    /// The API version (used only in Status details).
    pub api_version: String,
    /// The resource (plural), e.g. `deployments`.
    pub resource: String,
    /// The subresource, e.g. `status` or `scale`; "" for none.
    pub subresource: String,
    /// The namespace; "" for cluster-scoped requests and cluster-wide lists.
    pub namespace: String,
    /// The object name; "" for list, watch, create (without name) and collection requests.
    pub name: String,
}

/// The authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A rule allows the request; the reason names the binding, role and subject.
    Allow {
        /// e.g. `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"`.
        reason: String,
    },
    /// No rule allows the request. The reason is empty unless some binding could not be
    /// resolved (e.g. `RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found`),
    /// as with kube-apiserver.
    Deny {
        /// The explanation appended to the 403 message; usually empty.
        reason: String,
    },
}

impl Decision {
    /// Whether the request is allowed.
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }

    /// The reason text (empty for a plain denial).
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow { reason } | Decision::Deny { reason } => reason,
        }
    }
}

/// Why a SelfSubjectAccessReview could not be turned into a [`Request`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReviewError {
    /// Neither or both of resourceAttributes and nonResourceAttributes are given.
    #[error(
        "spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified"
    )]
    Attributes,
    /// A field has the wrong JSON type.
    #[error("spec.{0}: must be a string")]
    NotAString(String),
}

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
fn str_at<'v>(value: &'v Value, path: &str) -> &'v str {
    path.split('/')
        .skip(1)
        .try_fold(value, |current, key| current.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The strings of the list at `key` (absent or non-list: none), without allocating.
fn strings<'v>(value: &'v Value, key: &str) -> impl Iterator<Item = &'v str> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
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

/// Whether one PolicyRule allows a request (`RuleAllows`).
pub fn rule_allows(rule: &Value, request: &Request) -> bool {
    let verb_matches = |verb: &str| strings(rule, "verbs").any(|v| v == "*" || v == verb);
    match request {
        Request::Resource(a) => {
            if !verb_matches(&a.verb)
                || !strings(rule, "apiGroups").any(|g| g == "*" || g == a.api_group)
            {
                return false;
            }
            // The rule's resource must be `*`, the combined `resource/subresource`, or
            // `*/subresource`.
            let resource_matches = strings(rule, "resources").any(|resource| {
                if resource == "*" {
                    return true;
                }
                if a.subresource.is_empty() {
                    return resource == a.resource;
                }
                match resource.split_once('/') {
                    Some((base, sub)) => {
                        sub == a.subresource && (base == "*" || base == a.resource)
                    }
                    None => false,
                }
            });
            if !resource_matches {
                return false;
            }
            let mut names = strings(rule, "resourceNames").peekable();
            names.peek().is_none() || names.any(|name| name == a.name)
        }
        Request::NonResource { verb, path } => {
            verb_matches(verb)
                && strings(rule, "nonResourceURLs").any(|url| {
                    url == "*"
                        || url == path
                        || url
                            .strip_suffix('*')
                            .is_some_and(|prefix| path.starts_with(prefix))
                })
        }
    }
}

/// The message of a 403 Forbidden Status, exactly as kube-apiserver words it, e.g.
/// `deployments.apps "web" is forbidden: User "u" cannot get resource "deployments" in API
/// group "apps" in the namespace "ns"`; without a name (list, watch, create)
/// `pods is forbidden: …`; `… at the cluster scope` without a namespace;
/// `forbidden: User "u" cannot get path "/x"` for non-resource requests. A non-empty
/// `reason` (see [`Decision::Deny`]) is appended after `: `.
pub fn forbidden_message(user: &UserInfo, request: &Request, reason: &str) -> String {
    let detail = match request {
        Request::NonResource { verb, path } => {
            format!("User {:?} cannot {verb} path {path:?}", user.name)
        }
        Request::Resource(a) => {
            let resource = if a.subresource.is_empty() {
                a.resource.clone()
            } else {
                format!("{}/{}", a.resource, a.subresource)
            };
            let scope = if a.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {:?}", a.namespace)
            };
            format!(
                "User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
                user.name, a.verb, a.api_group
            )
        }
    };
    let detail = if reason.is_empty() {
        detail
    } else {
        format!("{detail}: {reason}")
    };
    match request {
        Request::NonResource { .. } => format!("forbidden: {detail}"),
        Request::Resource(a) => {
            let qualified = if a.api_group.is_empty() {
                a.resource.clone()
            } else {
                format!("{}.{}", a.resource, a.api_group)
            };
            if a.name.is_empty() {
                format!("{qualified} is forbidden: {detail}")
            } else {
                format!("{qualified} {:?} is forbidden: {detail}", a.name)
            }
        }
    }
}

/// The whole 403 Status body kube-apiserver sends for a denied request (`NewForbidden`):
/// reason Forbidden, code 403, details with the group, the resource as `kind` and the name.
pub fn forbidden_status(user: &UserInfo, request: &Request, reason: &str) -> Value {
    let mut details = serde_json::Map::new();
    if let Request::Resource(a) = request {
        if !a.name.is_empty() {
            details.insert("name".into(), json!(a.name));
        }
        if !a.api_group.is_empty() {
            details.insert("group".into(), json!(a.api_group));
        }
        if !a.resource.is_empty() {
            details.insert("kind".into(), json!(a.resource));
        }
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": forbidden_message(user, request, reason),
        "reason": "Forbidden",
        "details": details,
        "code": 403
    })
}

/// The `status` of a SelfSubjectAccessReview (or SubjectAccessReview) answered by the
/// authorizer: `{"allowed": true, "reason": "RBAC: allowed by …"}`, or `{"allowed": false}`
/// with the reason only when there is one, as kube-apiserver serializes it.
pub fn access_review_status(decision: &Decision) -> Value {
    let mut status = serde_json::Map::new();
    status.insert("allowed".into(), json!(decision.allowed()));
    if !decision.reason().is_empty() {
        status.insert("reason".into(), json!(decision.reason()));
    }
    Value::Object(status)
}

/// Reads the request a SelfSubjectAccessReview asks about from its `spec`
/// (`resourceAttributes` {namespace, verb, group, version, resource, subresource, name} or
/// `nonResourceAttributes` {path, verb}).
pub fn review_request(spec: &Value) -> Result<Request, ReviewError> {
    let field = |object: &Value, prefix: &str, key: &str| -> Result<String, ReviewError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(text)) => Ok(text.clone()),
            Some(_) => Err(ReviewError::NotAString(format!("{prefix}.{key}"))),
        }
    };
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(r), None) => {
            let p = "resourceAttributes";
            Ok(Request::Resource(ResourceAttributes {
                verb: field(r, p, "verb")?,
                api_group: field(r, p, "group")?,
                api_version: field(r, p, "version")?,
                resource: field(r, p, "resource")?,
                subresource: field(r, p, "subresource")?,
                namespace: field(r, p, "namespace")?,
                name: field(r, p, "name")?,
            }))
        }
        (None, Some(n)) => {
            let p = "nonResourceAttributes";
            Ok(Request::NonResource {
                verb: field(n, p, "verb")?,
                path: field(n, p, "path")?,
            })
        }
        _ => Err(ReviewError::Attributes),
    }
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// A resource PolicyRule.
fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// The rules of the bootstrap `system:aggregate-to-view` ClusterRole.
fn view_rules() -> Value {
    json!([
        rule(
            &[""],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status"
            ],
            READ
        ),
        rule(
            &[""],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status"
            ],
            READ
        ),
        rule(&[""], &["namespaces"], READ),
        rule(&["discovery.k8s.io"], &["endpointslices"], READ),
        rule(
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status"
            ],
            READ
        ),
        rule(
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status"
            ],
            READ
        ),
        rule(
            &["batch"],
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
            READ
        ),
        rule(
            &["extensions"],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale"
            ],
            READ
        ),
        rule(
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
            READ
        ),
        rule(
            &["networking.k8s.io"],
            &["ingresses", "ingresses/status", "networkpolicies"],
            READ
        )
    ])
}

/// The rules of the bootstrap `system:aggregate-to-edit` ClusterRole.
fn edit_rules() -> Value {
    json!([
        rule(
            &[""],
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy"
            ],
            READ
        ),
        rule(&[""], &["serviceaccounts"], &["impersonate"]),
        rule(
            &[""],
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy"
            ],
            WRITE
        ),
        rule(&[""], &["pods/eviction"], &["create"]),
        rule(
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy"
            ],
            WRITE
        ),
        rule(&[""], &["serviceaccounts/token"], &["create"]),
        rule(
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale"
            ],
            WRITE
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
        rule(&["batch"], &["cronjobs", "jobs"], WRITE),
        rule(
            &["extensions"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale"
            ],
            WRITE
        ),
        rule(&["policy"], &["poddisruptionbudgets"], WRITE),
        rule(
            &["networking.k8s.io"],
            &["ingresses", "networkpolicies"],
            WRITE
        ),
        rule(&["coordination.k8s.io"], &["leases"], READ_WRITE)
    ])
}

/// The bootstrap RBAC objects of a v1.32 cluster that clients rely on
/// (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`, `testdata/cluster-roles.yaml`):
/// * ClusterRoles `cluster-admin`, `system:discovery`, `system:basic-user`,
///   `system:public-info-viewer`, and the user-facing aggregated `admin`, `edit` and `view`
///   with their `system:aggregate-to-*` parts (aggregated rules filled in, as the
///   aggregation controller leaves them);
/// * ClusterRoleBindings of `cluster-admin` to `system:masters`, `system:discovery` and
///   `system:basic-user` to `system:authenticated`, and `system:public-info-viewer` to
///   `system:authenticated` and `system:unauthenticated`.
///
/// Without them a ServiceAccount token could not run discovery or `kubectl auth can-i`, and
/// RoleBindings to `edit` or `view` would not resolve.
pub fn bootstrap_policy() -> Vec<Value> {
    let metadata = |name: &str, aggregate_to: Option<&str>| {
        let mut labels = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
        if let Some(target) = aggregate_to {
            labels[format!("rbac.authorization.k8s.io/aggregate-to-{target}")] = json!("true");
        }
        json!({
            "name": name,
            "labels": labels,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}
        })
    };
    let role = |name: &str, aggregate_to: Option<&str>, rules: Value| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": metadata(name, aggregate_to),
            "rules": rules
        })
    };
    let aggregated = |name: &str, aggregate_to: Option<&str>, selects: &str| {
        let mut role = role(name, aggregate_to, json!([]));
        role["aggregationRule"] = json!({"clusterRoleSelectors": [
            {"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{selects}"): "true"}}
        ]});
        role
    };
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|group| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}))
            .collect();
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": metadata(name, None),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects
        })
    };
    let mut cluster_roles = vec![
        aggregated("admin", None, "admin"),
        role(
            "cluster-admin",
            None,
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]}
            ]),
        ),
        aggregated("edit", Some("admin"), "edit"),
        role(
            "system:aggregate-to-admin",
            Some("admin"),
            json!([
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"]
                ),
                rule(
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                    READ_WRITE
                )
            ]),
        ),
        role("system:aggregate-to-edit", Some("edit"), edit_rules()),
        role("system:aggregate-to-view", Some("view"), view_rules()),
        role(
            "system:basic-user",
            None,
            json!([
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"]
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"]
                )
            ]),
        ),
        role(
            "system:discovery",
            None,
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                "/openapi", "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        role(
            "system:public-info-viewer",
            None,
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        aggregated("view", Some("edit"), "view"),
    ];
    let filled: Vec<(usize, Vec<Value>)> = {
        let authorizer = Authorizer {
            roles: &[],
            cluster_roles: &cluster_roles,
            role_bindings: &[],
            cluster_role_bindings: &[],
        };
        cluster_roles
            .iter()
            .enumerate()
            .filter(|(_, role)| role.get("aggregationRule").is_some())
            .filter_map(|(index, role)| {
                let rules = authorizer.cluster_role_rules(str_at(role, "/metadata/name"))?;
                Some((index, rules.into_iter().cloned().collect()))
            })
            .collect()
    };
    for (index, rules) in filled {
        cluster_roles[index]["rules"] = Value::Array(rules);
    }
    cluster_roles.extend([
        binding("cluster-admin", &["system:masters"]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
    ]);
    cluster_roles
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(group: &str, resource: &str, namespace: &str, name: &str) -> Request {
        verb("get", group, resource, "", namespace, name)
    }

    fn verb(
        verb: &str,
        group: &str,
        resource: &str,
        subresource: &str,
        namespace: &str,
        name: &str,
    ) -> Request {
        Request::Resource(ResourceAttributes {
            verb: verb.into(),
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
        })
    }

    fn role(namespace: &str, name: &str, rules: Value) -> Value {
        json!({"kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules})
    }

    fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    fn role_binding(namespace: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
        json!({"kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role}, "subjects": subjects})
    }

    fn cluster_role_binding(name: &str, role: &str, subjects: Value) -> Value {
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}, "subjects": subjects})
    }

    struct Fixture {
        roles: Vec<Value>,
        cluster_roles: Vec<Value>,
        role_bindings: Vec<Value>,
        cluster_role_bindings: Vec<Value>,
    }

    impl Fixture {
        fn authorizer(&self) -> Authorizer<'_> {
            Authorizer {
                roles: &self.roles,
                cluster_roles: &self.cluster_roles,
                role_bindings: &self.role_bindings,
                cluster_role_bindings: &self.cluster_role_bindings,
            }
        }
    }

    fn fixture() -> Fixture {
        Fixture {
            roles: vec![role(
                "apps",
                "deployer",
                json!([
                    {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch", "create", "update", "patch"]},
                    {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"], "verbs": ["get"]},
                    {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]}
                ]),
            )],
            cluster_roles: vec![
                cluster_role(
                    "pod-reader",
                    json!({}),
                    json!([{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]),
                ),
                cluster_role(
                    "status-writer",
                    json!({}),
                    json!([{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update"]}]),
                ),
                cluster_role(
                    "monitoring",
                    json!({}),
                    json!([{"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}]),
                ),
            ],
            role_bindings: vec![
                role_binding(
                    "apps",
                    "deployer",
                    "Role",
                    "deployer",
                    json!([{"kind": "ServiceAccount", "name": "ci"}]),
                ),
                role_binding(
                    "apps",
                    "readers",
                    "ClusterRole",
                    "pod-reader",
                    json!([{"kind": "Group", "name": "system:serviceaccounts:tools"}]),
                ),
            ],
            cluster_role_bindings: vec![
                cluster_role_binding(
                    "status",
                    "status-writer",
                    json!([{"kind": "ServiceAccount", "name": "controller", "namespace": "kube-system"}]),
                ),
                cluster_role_binding(
                    "monitoring",
                    "monitoring",
                    json!([{"kind": "User", "name": "prometheus"}]),
                ),
            ],
        }
    }

    #[test]
    fn malformed_rbac_objects_are_ignored() {
        let odd = [
            json!(null),
            json!("x"),
            json!(1),
            json!([]),
            json!({"subjects": "x", "roleRef": 1, "rules": "r"}),
            json!({"metadata": {"name": "m", "namespace": "apps"}, "subjects": [null, {"kind": 1}], "roleRef": {"kind": "Role", "name": "deployer"}}),
            json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": ["x", {"matchExpressions": "y"}]}}),
        ];
        let mut f = fixture();
        for value in &odd {
            f.roles.push(value.clone());
            f.cluster_roles.push(value.clone());
            f.role_bindings.push(value.clone());
            f.cluster_role_bindings.push(value.clone());
        }
        f.cluster_roles.push(json!({"metadata": {"name": "bad-rules"}, "rules": [null, {"verbs": "get"}, {"verbs": ["*"], "apiGroups": [1]}]}));
        f.cluster_role_bindings.push(cluster_role_binding(
            "bad",
            "bad-rules",
            json!([{"kind": "User", "name": "eve"}]),
        ));
        let auth = f.authorizer();
        let ci = UserInfo::service_account("apps", "ci");
        assert!(
            auth.authorize(&ci, &get("apps", "deployments", "apps", "web"))
                .allowed()
        );
        let eve = UserInfo::new("eve", &[]);
        assert!(
            !auth
                .authorize(&eve, &get("", "pods", "apps", "p"))
                .allowed()
        );
        let _ = auth.rules_review_status(&eve, "apps");
        assert_eq!(auth.cluster_role_rules("agg"), Some(vec![]));
    }

    #[test]
    fn service_account_identity() {
        let user = UserInfo::service_account("ns", "sa");
        assert_eq!(user.name, "system:serviceaccount:ns:sa");
        assert_eq!(
            user.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn role_binding_grants_within_its_namespace_only() {
        let f = fixture();
        let auth = f.authorizer();
        let ci = UserInfo::service_account("apps", "ci");
        let decision = auth.authorize(&ci, &get("apps", "deployments", "apps", "web"));
        assert_eq!(
            decision,
            Decision::Allow {
                reason: r#"RBAC: allowed by RoleBinding "deployer/apps" of Role "deployer" to ServiceAccount "ci/apps""#.into()
            }
        );
        assert!(
            !auth
                .authorize(&ci, &get("apps", "deployments", "other", "web"))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&ci, &get("apps", "deployments", "", "web"))
                .allowed()
        );
        assert!(
            !auth
                .authorize(
                    &ci,
                    &verb("delete", "apps", "deployments", "", "apps", "web")
                )
                .allowed()
        );
        assert!(
            !auth
                .authorize(&ci, &get("", "deployments", "apps", "web"))
                .allowed(),
            "group must match"
        );
        let other_sa = UserInfo::service_account("other", "ci");
        assert!(
            !auth
                .authorize(&other_sa, &get("apps", "deployments", "apps", "web"))
                .allowed()
        );
    }

    #[test]
    fn resource_names_and_subresources() {
        let f = fixture();
        let auth = f.authorizer();
        let ci = UserInfo::service_account("apps", "ci");
        assert!(
            auth.authorize(&ci, &get("", "configmaps", "apps", "settings"))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&ci, &get("", "configmaps", "apps", "secrets"))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&ci, &verb("list", "", "configmaps", "", "apps", ""))
                .allowed()
        );
        assert!(
            auth.authorize(
                &ci,
                &verb("update", "apps", "deployments", "scale", "apps", "web")
            )
            .allowed()
        );
        assert!(
            !auth
                .authorize(
                    &ci,
                    &verb("update", "apps", "deployments", "status", "apps", "web")
                )
                .allowed()
        );
        assert!(
            !auth
                .authorize(
                    &ci,
                    &verb("get", "apps", "deployments", "scale", "apps", "web")
                )
                .allowed(),
            "a resource rule does not grant its subresources"
        );
    }

    #[test]
    fn role_binding_to_cluster_role_and_group_subject() {
        let f = fixture();
        let auth = f.authorizer();
        let tool = UserInfo::service_account("tools", "runner");
        let decision = auth.authorize(&tool, &verb("get", "", "pods", "log", "apps", "p"));
        assert_eq!(
            decision.reason(),
            r#"RBAC: allowed by RoleBinding "readers/apps" of ClusterRole "pod-reader" to Group "system:serviceaccounts:tools""#
        );
        assert!(
            !auth
                .authorize(&tool, &verb("list", "", "pods", "", "", ""))
                .allowed()
        );
    }

    #[test]
    fn cluster_role_bindings_and_wildcards() {
        let f = fixture();
        let auth = f.authorizer();
        let controller = UserInfo::service_account("kube-system", "controller");
        let decision = auth.authorize(
            &controller,
            &verb("update", "apps", "deployments", "status", "x", "web"),
        );
        assert_eq!(
            decision.reason(),
            r#"RBAC: allowed by ClusterRoleBinding "status" of ClusterRole "status-writer" to ServiceAccount "controller/kube-system""#
        );
        assert!(
            auth.authorize(&controller, &verb("update", "", "pods", "status", "", "p"))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&controller, &verb("update", "", "pods", "", "x", "p"))
                .allowed()
        );
    }

    #[test]
    fn non_resource_urls() {
        let f = fixture();
        let auth = f.authorizer();
        let prometheus = UserInfo::new("prometheus", &[]);
        let path = |verb: &str, path: &str| Request::NonResource {
            verb: verb.into(),
            path: path.into(),
        };
        assert!(
            auth.authorize(&prometheus, &path("get", "/metrics"))
                .allowed()
        );
        assert!(
            auth.authorize(&prometheus, &path("get", "/debug/pprof/heap"))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&prometheus, &path("post", "/metrics"))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&prometheus, &path("get", "/metricsx"))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&prometheus, &get("", "pods", "x", ""))
                .allowed()
        );
    }

    #[test]
    fn aggregated_cluster_roles() {
        let mut f = fixture();
        f.cluster_roles.push(json!({"kind": "ClusterRole", "metadata": {"name": "aggregate"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-reader": "true"}}]},
            "rules": []}));
        f.cluster_roles.push(cluster_role(
            "secrets-part",
            json!({"rbac.example.com/aggregate-to-reader": "true"}),
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
        ));
        f.cluster_roles.push(cluster_role(
            "jobs-part",
            json!({"rbac.example.com/aggregate-to-reader": "true"}),
            json!([{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list"]}]),
        ));
        f.cluster_role_bindings.push(cluster_role_binding(
            "reader",
            "aggregate",
            json!([{"kind": "User", "name": "alice"}]),
        ));
        let auth = f.authorizer();
        let alice = UserInfo::new("alice", &["system:authenticated"]);
        assert!(
            auth.authorize(&alice, &get("", "secrets", "x", "s"))
                .allowed()
        );
        assert!(
            auth.authorize(&alice, &verb("list", "batch", "jobs", "", "", ""))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&alice, &get("", "configmaps", "x", "c"))
                .allowed()
        );
        let rules = auth.cluster_role_rules("aggregate").unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(
            rules[0]["apiGroups"],
            json!(["batch"]),
            "ordered by role name"
        );
    }

    #[test]
    fn aggregation_cycles_terminate() {
        let selects =
            |label: &str| json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
        let roles = vec![
            json!({"metadata": {"name": "a", "labels": {"to-b": "true"}}, "aggregationRule": selects("to-a")}),
            json!({"metadata": {"name": "b", "labels": {"to-a": "true"}}, "aggregationRule": selects("to-b")}),
        ];
        let auth = Authorizer {
            roles: &[],
            cluster_roles: &roles,
            role_bindings: &[],
            cluster_role_bindings: &[],
        };
        assert_eq!(auth.cluster_role_rules("a"), Some(vec![]));
        assert_eq!(auth.cluster_role_rules("missing"), None);
    }

    #[test]
    fn missing_roles_are_reported_in_the_reason() {
        let bindings = vec![
            cluster_role_binding("b", "missing", json!([{"kind": "User", "name": "bob"}])),
            cluster_role_binding("b2", "missing", json!([{"kind": "User", "name": "bob"}])),
        ];
        let role_bindings = vec![role_binding(
            "ns",
            "rb",
            "Role",
            "gone",
            json!([{"kind": "User", "name": "bob"}]),
        )];
        let auth = Authorizer {
            roles: &[],
            cluster_roles: &[],
            role_bindings: &role_bindings,
            cluster_role_bindings: &bindings,
        };
        let bob = UserInfo::new("bob", &[]);
        let decision = auth.authorize(&bob, &get("", "pods", "", "p"));
        assert_eq!(
            decision,
            Decision::Deny {
                reason: r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#.into()
            }
        );
        let decision = auth.authorize(&bob, &get("", "pods", "ns", "p"));
        assert_eq!(
            decision.reason(),
            r#"RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "gone" not found]"#
        );
        let carol = UserInfo::new("carol", &[]);
        assert_eq!(
            auth.authorize(&carol, &get("", "pods", "ns", "p")).reason(),
            ""
        );
    }

    #[test]
    fn self_subject_rules_reviews() {
        let f = fixture();
        let auth = f.authorizer();
        let ci = UserInfo::service_account("apps", "ci");
        let status = auth.rules_review_status(&ci, "apps");
        assert_eq!(status["incomplete"], false);
        let rules = status["resourceRules"].as_array().unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(
            rules[1],
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"]})
        );
        assert_eq!(status["nonResourceRules"], json!([]));
        assert_eq!(
            auth.rules_review_status(&ci, "other")["resourceRules"],
            json!([])
        );
        let prometheus = UserInfo::new("prometheus", &[]);
        assert_eq!(
            auth.rules_review_status(&prometheus, "")["nonResourceRules"],
            json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/debug/*"]}])
        );
        let broken = vec![role_binding(
            "apps",
            "b",
            "Role",
            "gone",
            json!([{"kind": "ServiceAccount", "name": "ci"}]),
        )];
        let auth = Authorizer {
            role_bindings: &broken,
            ..f.authorizer()
        };
        let status = auth.rules_review_status(&ci, "apps");
        assert_eq!(status["incomplete"], true);
        assert_eq!(
            status["evaluationError"],
            r#"role.rbac.authorization.k8s.io "gone" not found"#
        );
    }

    #[test]
    fn forbidden_messages_match_kube_apiserver() {
        let sa = UserInfo::service_account("ns", "sa");
        assert_eq!(
            forbidden_message(&sa, &get("apps", "deployments", "ns", "web"), ""),
            r#"deployments.apps "web" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "deployments" in API group "apps" in the namespace "ns""#
        );
        assert_eq!(
            forbidden_message(&sa, &verb("list", "", "pods", "", "ns", ""), ""),
            r#"pods is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "pods" in API group "" in the namespace "ns""#
        );
        assert_eq!(
            forbidden_message(&sa, &verb("list", "", "namespaces", "", "", ""), ""),
            r#"namespaces is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "namespaces" in API group "" at the cluster scope"#
        );
        assert_eq!(
            forbidden_message(
                &sa,
                &verb("patch", "apps", "deployments", "scale", "ns", "web"),
                ""
            ),
            r#"deployments.apps "web" is forbidden: User "system:serviceaccount:ns:sa" cannot patch resource "deployments/scale" in API group "apps" in the namespace "ns""#
        );
        assert_eq!(
            forbidden_message(
                &sa,
                &Request::NonResource {
                    verb: "get".into(),
                    path: "/metrics".into()
                },
                ""
            ),
            r#"forbidden: User "system:serviceaccount:ns:sa" cannot get path "/metrics""#
        );
        assert_eq!(
            forbidden_message(
                &sa,
                &get("", "secrets", "ns", "s"),
                r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#
            ),
            r#"secrets "s" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "secrets" in API group "" in the namespace "ns": RBAC: role.rbac.authorization.k8s.io "r" not found"#
        );
    }

    #[test]
    fn forbidden_status_body() {
        let user = UserInfo::new("u", &[]);
        let status = forbidden_status(&user, &get("apps", "deployments", "ns", "web"), "");
        assert_eq!(status["code"], 403);
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["status"], "Failure");
        assert_eq!(
            status["details"],
            json!({"name": "web", "group": "apps", "kind": "deployments"})
        );
        let path = Request::NonResource {
            verb: "get".into(),
            path: "/x".into(),
        };
        assert_eq!(forbidden_status(&user, &path, "")["details"], json!({}));
    }

    #[test]
    fn self_subject_access_reviews() {
        let f = fixture();
        let auth = f.authorizer();
        let ci = UserInfo::service_account("apps", "ci");
        let spec = json!({"resourceAttributes": {"namespace": "apps", "verb": "create", "group": "apps", "resource": "deployments"}});
        let request = review_request(&spec).unwrap();
        let status = access_review_status(&auth.authorize(&ci, &request));
        assert_eq!(status["allowed"], true);
        assert!(
            status["reason"]
                .as_str()
                .unwrap()
                .starts_with("RBAC: allowed by RoleBinding")
        );
        let spec = json!({"resourceAttributes": {"namespace": "apps", "verb": "delete", "resource": "pods"}});
        let status = access_review_status(&auth.authorize(&ci, &review_request(&spec).unwrap()));
        assert_eq!(status, json!({"allowed": false}));
        let spec = json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}});
        assert_eq!(
            review_request(&spec).unwrap(),
            Request::NonResource {
                verb: "get".into(),
                path: "/metrics".into()
            }
        );
        assert_eq!(
            review_request(&json!({})).unwrap_err(),
            ReviewError::Attributes
        );
        assert_eq!(
            review_request(&json!({"resourceAttributes": {"verb": 1}}))
                .unwrap_err()
                .to_string(),
            "spec.resourceAttributes.verb: must be a string"
        );
    }

    #[test]
    fn bootstrap_edit_and_view_roles_through_role_bindings() {
        let (cluster_roles, cluster_role_bindings): (Vec<Value>, Vec<Value>) = bootstrap_policy()
            .into_iter()
            .partition(|o| o["kind"] == "ClusterRole");
        let role_bindings = vec![
            role_binding(
                "team",
                "deployers",
                "ClusterRole",
                "edit",
                json!([{"kind": "ServiceAccount", "name": "deployer"}]),
            ),
            role_binding(
                "team",
                "viewers",
                "ClusterRole",
                "view",
                json!([{"kind": "ServiceAccount", "name": "viewer"}]),
            ),
            role_binding(
                "team",
                "admins",
                "ClusterRole",
                "admin",
                json!([{"kind": "User", "name": "lead"}]),
            ),
        ];
        let auth = Authorizer {
            roles: &[],
            cluster_roles: &cluster_roles,
            role_bindings: &role_bindings,
            cluster_role_bindings: &cluster_role_bindings,
        };
        let deployer = UserInfo::service_account("team", "deployer");
        let viewer = UserInfo::service_account("team", "viewer");
        let lead = UserInfo::new("lead", &["system:authenticated"]);
        assert!(
            auth.authorize(
                &deployer,
                &verb("patch", "apps", "deployments", "", "team", "web")
            )
            .allowed()
        );
        assert!(
            auth.authorize(
                &deployer,
                &verb("get", "apps", "deployments", "", "team", "web")
            )
            .allowed(),
            "edit includes view"
        );
        assert!(
            auth.authorize(&deployer, &verb("create", "", "secrets", "", "team", ""))
                .allowed()
        );
        assert!(
            !auth
                .authorize(
                    &deployer,
                    &verb(
                        "create",
                        "rbac.authorization.k8s.io",
                        "roles",
                        "",
                        "team",
                        ""
                    )
                )
                .allowed()
        );
        assert!(
            !auth
                .authorize(
                    &deployer,
                    &verb("patch", "apps", "deployments", "", "other", "web")
                )
                .allowed()
        );
        assert!(
            auth.authorize(&viewer, &verb("list", "", "pods", "", "team", ""))
                .allowed()
        );
        assert!(
            !auth
                .authorize(&viewer, &verb("get", "", "secrets", "", "team", "s"))
                .allowed(),
            "view cannot read secrets"
        );
        assert!(
            !auth
                .authorize(&viewer, &verb("delete", "", "pods", "", "team", "p"))
                .allowed()
        );
        assert!(
            auth.authorize(
                &lead,
                &verb(
                    "create",
                    "rbac.authorization.k8s.io",
                    "rolebindings",
                    "",
                    "team",
                    ""
                )
            )
            .allowed()
        );
        assert!(
            auth.authorize(&lead, &verb("delete", "batch", "jobs", "", "team", "j"))
                .allowed(),
            "admin includes edit"
        );
        let admin = cluster_roles
            .iter()
            .find(|r| r["metadata"]["name"] == "admin")
            .unwrap();
        let stored = admin["rules"].as_array().unwrap().len();
        assert_eq!(
            stored,
            auth.cluster_role_rules("admin").unwrap().len(),
            "aggregated rules are filled in"
        );
        assert!(stored > 20);
    }

    #[test]
    fn bootstrap_policy_allows_discovery_and_can_i() {
        let policy = bootstrap_policy();
        let (roles, bindings): (Vec<Value>, Vec<Value>) =
            policy.into_iter().partition(|o| o["kind"] == "ClusterRole");
        let auth = Authorizer {
            roles: &[],
            cluster_roles: &roles,
            role_bindings: &[],
            cluster_role_bindings: &bindings,
        };
        let sa = UserInfo::service_account("ns", "sa");
        let path = |p: &str| Request::NonResource {
            verb: "get".into(),
            path: p.into(),
        };
        assert!(auth.authorize(&sa, &path("/api")).allowed());
        assert!(auth.authorize(&sa, &path("/apis/apps/v1")).allowed());
        assert!(auth.authorize(&sa, &path("/openapi/v3")).allowed());
        assert!(auth.authorize(&sa, &path("/version")).allowed());
        assert!(!auth.authorize(&sa, &path("/metrics")).allowed());
        assert!(
            auth.authorize(
                &sa,
                &verb(
                    "create",
                    "authorization.k8s.io",
                    "selfsubjectaccessreviews",
                    "",
                    "",
                    ""
                )
            )
            .allowed()
        );
        assert!(!auth.authorize(&sa, &get("", "pods", "ns", "p")).allowed());
        let admin = UserInfo::new("admin", &["system:masters", "system:authenticated"]);
        assert_eq!(
            auth.authorize(&admin, &verb("delete", "apps", "deployments", "", "x", "y"))
                .reason(),
            r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters""#
        );
        assert!(auth.authorize(&admin, &path("/metrics")).allowed());
    }
}
