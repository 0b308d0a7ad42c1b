//! What is authorized: the user ([`UserInfo`]), the request ([`Request`], with
//! [`ResourceAttributes`] for resource requests) and the authorizer's [`Decision`].

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
