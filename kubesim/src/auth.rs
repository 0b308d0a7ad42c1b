//! Bearer-token authentication and namespace-scoped authorization.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::status::{ApiError, qualified};
use crate::util::random_token;

/// The bearer tokens of one cluster, as written to `<name>.tokens.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Tokens {
    /// Full access.
    pub admin: String,
    /// Per namespace: a token allowed everything inside that namespace and nothing else.
    pub namespaced: BTreeMap<String, String>,
    /// A token the server always rejects with 401 (as an expired token).
    pub expired: String,
}

impl Tokens {
    /// Fresh random tokens for the admin, each namespace, and the expired token.
    pub fn generate(namespaces: &[String]) -> Tokens {
        Tokens {
            admin: random_token(),
            namespaced: namespaces
                .iter()
                .map(|ns| (ns.clone(), random_token()))
                .collect(),
            expired: random_token(),
        }
    }
}

/// Who a request is from.
#[derive(Debug, Clone, PartialEq)]
pub enum Identity {
    /// The admin token: allowed everything.
    Admin,
    /// A namespaced token: allowed everything in that namespace.
    Namespaced(String),
}

impl Identity {
    /// The user name the API server reports in 403 messages and access reviews.
    pub fn user(&self) -> String {
        match self {
            Identity::Admin => "kubesim-admin".to_string(),
            Identity::Namespaced(ns) => format!("system:serviceaccount:{ns}:kubesim"),
        }
    }
}

/// Resolves the `Authorization` header to an identity; 401 for none, unknown or expired.
pub fn authenticate(tokens: &Tokens, header: Option<&str>) -> Result<Identity, ApiError> {
    let token = header
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(ApiError::unauthorized)?;
    if token == tokens.admin {
        return Ok(Identity::Admin);
    }
    tokens
        .namespaced
        .iter()
        .find(|(_, t)| t.as_str() == token)
        .map(|(ns, _)| Identity::Namespaced(ns.clone()))
        .ok_or_else(ApiError::unauthorized)
}

/// What a request asks to do, in authorizer terms.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    /// get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: &'a str,
    /// API group.
    pub group: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource ("status", "scale"), if any.
    pub subresource: Option<&'a str>,
    /// Namespace of the request, if namespaced.
    pub namespace: Option<&'a str>,
    /// Object name, if any.
    pub name: Option<&'a str>,
}

/// Whether the identity may do this.
pub fn allowed(identity: &Identity, attrs: &Attributes<'_>) -> bool {
    match identity {
        Identity::Admin => true,
        Identity::Namespaced(ns) => {
            attrs.namespace == Some(ns.as_str())
                || (attrs.group == "authorization.k8s.io" && attrs.verb == "create")
        }
    }
}

/// 403 Forbidden, worded as kube-apiserver words RBAC denials.
pub fn forbidden(identity: &Identity, attrs: &Attributes<'_>) -> ApiError {
    let resource = match attrs.subresource {
        Some(sub) => format!("{}/{sub}", attrs.resource),
        None => attrs.resource.to_string(),
    };
    let subject = match attrs.name {
        Some(name) => format!("{} \"{name}\"", qualified(attrs.group, attrs.resource)),
        None => qualified(attrs.group, attrs.resource),
    };
    let scope = match attrs.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    ApiError::forbidden(
        format!(
            "{subject} is forbidden: User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
            identity.user(),
            attrs.verb,
            attrs.group
        ),
        attrs.group,
        attrs.resource,
        attrs.name.unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_resolve_and_namespaced_tokens_stay_in_their_namespace() {
        let t = Tokens::generate(&["team-a".to_string()]);
        let admin = format!("Bearer {}", t.admin);
        assert_eq!(authenticate(&t, Some(&admin)).unwrap(), Identity::Admin);
        assert_eq!(
            authenticate(&t, Some(&format!("Bearer {}", t.expired)))
                .unwrap_err()
                .code,
            401
        );
        assert_eq!(authenticate(&t, None).unwrap_err().code, 401);
        let id = authenticate(&t, Some(&format!("Bearer {}", t.namespaced["team-a"]))).unwrap();
        let mut attrs = Attributes {
            verb: "list",
            group: "",
            resource: "configmaps",
            subresource: None,
            namespace: Some("team-a"),
            name: None,
        };
        assert!(allowed(&id, &attrs));
        attrs.namespace = Some("team-b");
        assert!(!allowed(&id, &attrs));
        assert_eq!(
            forbidden(&id, &attrs).message,
            "configmaps is forbidden: User \"system:serviceaccount:team-a:kubesim\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
        );
    }
}
