//! `wardn clusters bootstrap`: prepares a least-privilege identity for wardn on a target
//! cluster — the objects of [`rbac::identity_objects`] (ServiceAccount, rules for the granted
//! kinds only, Roles per allowed namespace, read access to Nodes for probing, a token Secret),
//! applied with server-side apply — and returns a kubeconfig using that token.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::{Discovery, Scope};
use serde_json::Value;

use super::rbac::{self, Grant, IdentityPlan};
use crate::redact::Hidden;

/// Field manager of the objects bootstrap applies.
pub const FIELD_MANAGER: &str = "wardn-bootstrap";
/// Name of the ServiceAccount (and of the token Secret's prefix).
pub const SERVICE_ACCOUNT: &str = rbac::SERVICE_ACCOUNT;

/// What to set up.
#[derive(Debug, Clone)]
pub struct BootstrapPlan {
    /// The cluster's registry name (names the RBAC objects).
    pub name: String,
    /// Namespace of the ServiceAccount and its token Secret.
    pub sa_namespace: String,
    /// Kinds to grant, as `Kind` (core group) or `group/Kind`, resolved through discovery.
    pub kinds: Vec<String>,
    /// Resources already resolved (from the Apps routed to the cluster).
    pub grants: Vec<Grant>,
    /// Namespace allowlist: Roles are made in these only; empty means cluster-wide.
    pub namespaces: Vec<String>,
}

/// The identity bootstrap created.
#[derive(Clone)]
pub struct Bootstrapped {
    /// The ServiceAccount token.
    pub token: String,
    /// The cluster CA (PEM, base64) from the token Secret.
    pub ca_data: String,
}

impl std::fmt::Debug for Bootstrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrapped")
            .field("token", &Hidden)
            .field("ca_data", &self.ca_data)
            .finish()
    }
}

/// Why bootstrap failed.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// No kind was named, or a kind the cluster does not serve.
    #[error("kinds: {0}")]
    Kind(String),
    /// A generated object could not be applied as such (a bug in the identity builder).
    #[error("{0}")]
    Object(String),
    /// A request to the cluster failed.
    #[error("{step}: {source}")]
    Cluster {
        /// What was being done.
        step: String,
        /// The client error.
        source: kube::Error,
    },
    /// The token Secret was not filled in by the cluster's token controller in time.
    #[error("the token Secret {namespace}/{name} got no token within {waited:?}")]
    NoToken {
        /// Secret namespace.
        namespace: String,
        /// Secret name.
        name: String,
        /// How long bootstrap waited.
        waited: Duration,
    },
}

/// Resolves `Kind` / `group/Kind` names to resources through the cluster's discovery.
pub async fn grants_for(
    client: &kube::Client,
    kinds: &[String],
) -> Result<Vec<Grant>, BootstrapError> {
    if kinds.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: Vec<(&str, &str)> = kinds
        .iter()
        .map(|k| k.rsplit_once('/').unwrap_or(("", k.as_str())))
        .collect();
    let mut groups: Vec<&str> = wanted.iter().map(|(g, _)| *g).collect();
    groups.sort();
    groups.dedup();
    let discovery = Discovery::new(client.clone())
        .filter(&groups)
        .run()
        .await
        .map_err(|source| BootstrapError::Cluster {
            step: "API discovery".into(),
            source,
        })?;
    wanted
        .iter()
        .map(|(group, kind)| {
            discovery
                .get(group)
                .and_then(|g| {
                    g.recommended_resources()
                        .into_iter()
                        .find(|(resource, _)| resource.kind == *kind)
                })
                .map(|(resource, caps)| Grant {
                    group: group.to_string(),
                    resource: resource.plural,
                    namespaced: caps.scope == Scope::Namespaced,
                })
                .ok_or_else(|| {
                    BootstrapError::Kind(format!(
                        "the cluster serves no kind {kind:?} in group {group:?}"
                    ))
                })
        })
        .collect()
}

/// Server-side applies one generated object.
async fn apply(client: &kube::Client, object: Value) -> Result<(), BootstrapError> {
    let field = |name: &str| object.get(name).and_then(Value::as_str).map(str::to_string);
    let (Some(api_version), Some(kind)) = (field("apiVersion"), field("kind")) else {
        return Err(BootstrapError::Object(format!(
            "object without kind: {object}"
        )));
    };
    let meta = |key: &str| {
        object["metadata"]
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let name = meta("name").unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, &kind));
    let api: Api<DynamicObject> = match meta("namespace") {
        Some(ns) => Api::namespaced_with(client.clone(), &ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&object),
    )
    .await
    .map(|_| ())
    .map_err(|source| BootstrapError::Cluster {
        step: format!("applying {kind} {name}"),
        source,
    })
}

/// Creates (idempotently, by server-side apply) the identity described by `plan`.
pub async fn bootstrap(
    client: &kube::Client,
    plan: &BootstrapPlan,
) -> Result<Bootstrapped, BootstrapError> {
    let mut grants = plan.grants.clone();
    grants.extend(grants_for(client, &plan.kinds).await?);
    grants.sort();
    grants.dedup();
    if grants.is_empty() {
        return Err(BootstrapError::Kind(
            "nothing to grant: name kinds with --kinds, or Apps routed to the cluster with --apps"
                .into(),
        ));
    }
    let identity = IdentityPlan {
        cluster: plan.name.clone(),
        sa_namespace: plan.sa_namespace.clone(),
        grants,
        namespaces: plan.namespaces.clone(),
    };
    for object in rbac::identity_objects(&identity) {
        apply(client, object).await?;
    }
    let secrets = Api::<Secret>::namespaced(client.clone(), &plan.sa_namespace);
    wait_for_token(&secrets, &plan.sa_namespace, &identity.secret_name()).await
}

/// Waits for the token controller to fill the Secret (real clusters do it asynchronously).
async fn wait_for_token(
    secrets: &Api<Secret>,
    namespace: &str,
    name: &str,
) -> Result<Bootstrapped, BootstrapError> {
    const WAIT: Duration = Duration::from_secs(30);
    const STEP: Duration = Duration::from_millis(250);
    let started = std::time::Instant::now();
    loop {
        let secret = secrets
            .get(name)
            .await
            .map_err(|source| BootstrapError::Cluster {
                step: "reading the token secret".into(),
                source,
            })?;
        let data = secret.data.unwrap_or_default();
        if let (Some(token), Some(ca)) = (data.get("token"), data.get("ca.crt")) {
            return Ok(Bootstrapped {
                token: String::from_utf8_lossy(&token.0).into_owned(),
                ca_data: STANDARD.encode(&ca.0),
            });
        }
        if started.elapsed() >= WAIT {
            return Err(BootstrapError::NoToken {
                namespace: namespace.to_string(),
                name: name.to_string(),
                waited: WAIT,
            });
        }
        tokio::time::sleep(STEP).await;
    }
}

/// A kubeconfig for `server_url` with the CA and the ServiceAccount token.
pub fn kubeconfig(name: &str, server_url: &str, identity: &Bootstrapped) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {server_url}\n    \
         certificate-authority-data: {ca}\nusers:\n- name: wardn\n  user:\n    token: {token}\n\
         contexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: wardn\ncurrent-context: {name}\n",
        ca = identity.ca_data,
        token = identity.token,
    )
}
