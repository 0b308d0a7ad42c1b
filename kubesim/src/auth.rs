//! Authentication (admin, namespaced, expired and ServiceAccount bearer tokens),
//! impersonation (`Impersonate-User`/`Impersonate-Group`, authorized by the `impersonate`
//! verb) and authorization (admin: everything; namespaced tokens: their namespace, and what
//! RBAC grants their user beyond it; ServiceAccounts and impersonated users: RBAC over the
//! stored Roles and bindings, through the `rbac` module).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::rbac::{self, Authorizer, Decision, Request, UserInfo};
use crate::state::State;
use crate::status::ApiError;

/// The type of Secrets that carry ServiceAccount tokens.
pub const SA_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming a token Secret's ServiceAccount.
pub const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";

/// Who a request is from.
#[derive(Debug, Clone, PartialEq)]
pub enum Identity {
    /// The admin token: allowed everything.
    Admin,
    /// A namespaced token: allowed everything in that namespace.
    Namespaced(String),
    /// A ServiceAccount token from a token Secret: authorized by RBAC.
    ServiceAccount {
        /// The ServiceAccount's namespace.
        namespace: String,
        /// The ServiceAccount's name.
        name: String,
    },
    /// A user some other identity impersonates (`Impersonate-User`): authorized by RBAC.
    User(UserInfo),
}

impl Identity {
    /// The user as the authorizer and 403 messages see it.
    pub fn user(&self) -> UserInfo {
        match self {
            Identity::Admin => {
                UserInfo::new("kubesim-admin", &["system:masters", "system:authenticated"])
            }
            Identity::Namespaced(ns) => {
                UserInfo::new(&format!("kubesim-{ns}"), &["system:authenticated"])
            }
            Identity::ServiceAccount { namespace, name } => {
                UserInfo::service_account(namespace, name)
            }
            Identity::User(user) => user.clone(),
        }
    }
}

/// The identity a request acts as: its own, or the one its `Impersonate-User` and
/// `Impersonate-Group` headers name, once the caller is allowed to `impersonate` that user
/// (`users`, or `serviceaccounts` for `system:serviceaccount:NS:NAME`) and each group
/// (`groups`), as kube-apiserver's impersonation filter decides; 403 naming what was refused.
pub fn impersonate(
    state: &State,
    identity: Identity,
    user: Option<&str>,
    groups: &[&str],
) -> Result<Identity, ApiError> {
    let Some(user) = user.filter(|u| !u.is_empty()) else {
        if groups.is_empty() {
            return Ok(identity);
        }
        return Err(ApiError::internal(format!(
            "requested {groups:?} groups without impersonating a user"
        )));
    };
    let account = user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'));
    let mut wanted = vec![match account {
        Some((ns, name)) => ("serviceaccounts", ns.to_string(), name.to_string()),
        None => ("users", String::new(), user.to_string()),
    }];
    wanted.extend(
        groups
            .iter()
            .map(|g| ("groups", String::new(), g.to_string())),
    );
    for (resource, namespace, name) in wanted {
        let request = Request::Resource(rbac::ResourceAttributes {
            verb: "impersonate".into(),
            resource: resource.into(),
            namespace,
            name,
            ..Default::default()
        });
        check(state, &identity, &request)?;
    }
    Ok(match account {
        Some((ns, name)) if groups.is_empty() => Identity::ServiceAccount {
            namespace: ns.to_string(),
            name: name.to_string(),
        },
        _ => {
            let mut all: Vec<&str> = groups.to_vec();
            if !all.contains(&"system:authenticated") {
                all.push("system:authenticated");
            }
            Identity::User(UserInfo::new(user, &all))
        }
    })
}

/// The ServiceAccount whose token Secret holds `token`, if any.
fn service_account_for(state: &State, token: &str) -> Option<Identity> {
    let encoded = STANDARD.encode(token);
    let store = state.store();
    let secret = store.list("/secrets", None).find(|s| {
        s.get("type").and_then(Value::as_str) == Some(SA_TOKEN_TYPE)
            && s.pointer("/data/token").and_then(Value::as_str) == Some(encoded.as_str())
    })?;
    Some(Identity::ServiceAccount {
        namespace: secret.pointer("/metadata/namespace")?.as_str()?.to_string(),
        name: secret
            .pointer("/metadata/annotations")?
            .get(SA_NAME_ANNOTATION)?
            .as_str()?
            .to_string(),
    })
}

/// Resolves the `Authorization` header to an identity; 401 for none, unknown or expired.
pub fn authenticate(state: &State, header: Option<&str>) -> Result<Identity, ApiError> {
    let tokens = &state.tokens;
    let token = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(ApiError::unauthorized)?;
    if token == tokens.admin {
        return Ok(Identity::Admin);
    }
    if token == tokens.expired {
        return Err(ApiError::unauthorized());
    }
    if let Some((ns, _)) = tokens.namespaced.iter().find(|(_, t)| t.as_str() == token) {
        return Ok(Identity::Namespaced(ns.clone()));
    }
    service_account_for(state, token)
        .or_else(|| bound_service_account(state, token))
        .ok_or_else(ApiError::unauthorized)
}

/// The ServiceAccount a TokenRequest token (see [`crate::sa_tokens`]) authenticates as: the
/// token verifies, and its ServiceAccount and bound object still exist with the uids it names.
fn bound_service_account(state: &State, token: &str) -> Option<Identity> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    let claims = crate::sa_tokens::verify(&state.sa_key, token, now)?;
    let store = state.store();
    let uid_of = |key: &str, name: &str| {
        store
            .get(key, &claims.namespace, name)
            .and_then(|o| o.pointer("/metadata/uid")?.as_str().map(String::from))
    };
    if uid_of("/serviceaccounts", &claims.name)? != claims.uid {
        return None;
    }
    if let Some((kind, name, uid)) = &claims.bound {
        let key = if kind == "Pod" { "/pods" } else { "/secrets" };
        if uid_of(key, name)? != *uid {
            return None;
        }
    }
    Some(Identity::ServiceAccount {
        namespace: claims.namespace,
        name: claims.name,
    })
}

fn rbac_objects(state: &State, key: &str) -> Vec<Value> {
    state
        .store()
        .list(key, None)
        .map(|o| (**o).clone())
        .collect()
}

/// Decides whether the identity may make the request.
pub fn authorize(state: &State, identity: &Identity, request: &Request) -> Decision {
    let allow = || Decision::Allow {
        reason: String::new(),
    };
    match identity {
        Identity::Admin => allow(),
        Identity::Namespaced(ns) => match request {
            Request::NonResource { .. } => allow(),
            Request::Resource(a)
                if (a.namespace == *ns && a.verb != "impersonate")
                    || (a.api_group == "authorization.k8s.io"
                        && a.resource.starts_with("selfsubject")) =>
            {
                allow()
            }
            // beyond its namespace, what RBAC grants its user (RoleBindings to User/Group)
            Request::Resource(_) => rbac_decision(state, &identity.user(), request),
        },
        Identity::ServiceAccount { .. } | Identity::User(_) => {
            rbac_decision(state, &identity.user(), request)
        }
    }
}

/// Runs `f` with an RBAC authorizer over the stored Roles and bindings.
fn with_rbac<T>(state: &State, f: impl FnOnce(&Authorizer<'_>) -> T) -> T {
    const G: &str = "rbac.authorization.k8s.io";
    let roles = rbac_objects(state, &format!("{G}/roles"));
    let cluster_roles = rbac_objects(state, &format!("{G}/clusterroles"));
    let role_bindings = rbac_objects(state, &format!("{G}/rolebindings"));
    let cluster_role_bindings = rbac_objects(state, &format!("{G}/clusterrolebindings"));
    f(&Authorizer {
        roles: &roles,
        cluster_roles: &cluster_roles,
        role_bindings: &role_bindings,
        cluster_role_bindings: &cluster_role_bindings,
    })
}

/// What RBAC over the stored Roles and bindings decides for `user`.
fn rbac_decision(state: &State, user: &UserInfo, request: &Request) -> Decision {
    with_rbac(state, |authorizer| authorizer.authorize(user, request))
}

/// The `status` of a SelfSubjectRulesReview in `namespace` (`kubectl auth can-i --list`):
/// the admin may do everything; a namespaced token everything in its namespace; and every
/// identity what RBAC grants its user.
pub fn rules_review(state: &State, identity: &Identity, namespace: &str) -> Value {
    let mut status = with_rbac(state, |authorizer| {
        authorizer.rules_review_status(&identity.user(), namespace)
    });
    let everything = match identity {
        Identity::Admin => true,
        Identity::Namespaced(ns) => ns == namespace,
        _ => false,
    };
    if everything && let Some(rules) = status["resourceRules"].as_array_mut() {
        rules.insert(
            0,
            serde_json::json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
        );
    }
    if matches!(identity, Identity::Admin | Identity::Namespaced(_))
        && let Some(rules) = status["nonResourceRules"].as_array_mut()
    {
        rules.insert(
            0,
            serde_json::json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
        );
    }
    status
}

/// Authorizes a request, or the 403 Forbidden Status kube-apiserver would send.
pub fn check(state: &State, identity: &Identity, request: &Request) -> Result<(), ApiError> {
    match authorize(state, identity, request) {
        Decision::Allow { .. } => Ok(()),
        Decision::Deny { reason } => Err(ApiError::from_status(&rbac::forbidden_status(
            &identity.user(),
            request,
            &reason,
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClusterConfig;
    use crate::tokens::Tokens;

    #[test]
    fn tokens_resolve_and_namespaced_tokens_stay_in_their_namespace() {
        let t = Tokens::generate(&["team-a".to_string()]);
        let state = State::new(ClusterConfig::default(), t.clone(), String::new());
        let admin = format!("Bearer {}", t.admin);
        assert_eq!(authenticate(&state, Some(&admin)).unwrap(), Identity::Admin);
        let expired = format!("Bearer {}", t.expired);
        assert_eq!(authenticate(&state, Some(&expired)).unwrap_err().code, 401);
        assert_eq!(authenticate(&state, None).unwrap_err().code, 401);
        let ns_token = format!("Bearer {}", t.namespaced["team-a"]);
        let id = authenticate(&state, Some(&ns_token)).unwrap();
        let mut attrs = rbac::ResourceAttributes {
            verb: "list".into(),
            resource: "configmaps".into(),
            namespace: "team-a".into(),
            ..Default::default()
        };
        assert!(check(&state, &id, &Request::Resource(attrs.clone())).is_ok());
        attrs.namespace = "team-b".into();
        let denied = check(&state, &id, &Request::Resource(attrs)).unwrap_err();
        assert_eq!(denied.code, 403);
        assert_eq!(
            denied.message,
            "configmaps is forbidden: User \"kubesim-team-a\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
        );
    }
}
