//! `wardn clusters bootstrap`: prepares a least-privilege identity for wardn on a target
//! cluster — a ServiceAccount, a ClusterRole granting only the listed kinds (no wildcards),
//! bindings (per allowed namespace, or cluster-wide without an allowlist), read access to Nodes
//! for probing, and a token Secret — and returns a kubeconfig using that token.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::api::{Api, Patch, PatchParams};
use kube::discovery::Discovery;
use serde_json::{Value, json};

/// Field manager of the objects bootstrap applies.
pub const FIELD_MANAGER: &str = "wardn-bootstrap";
/// Name of the ServiceAccount (and of the token Secret's prefix).
pub const SERVICE_ACCOUNT: &str = "wardn";
/// Verbs granted on each listed kind: what server-side apply, diff, prune and health need.
pub const VERBS: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// What to set up.
#[derive(Debug, Clone)]
pub struct BootstrapPlan {
    /// The cluster's registry name (names the RBAC objects).
    pub name: String,
    /// Namespace of the ServiceAccount and its token Secret.
    pub sa_namespace: String,
    /// Kinds to grant, as `Kind` (core group) or `group/Kind`.
    pub kinds: Vec<String>,
    /// Namespace allowlist: bindings are made in these only; empty means cluster-wide.
    pub namespaces: Vec<String>,
}

/// The identity bootstrap created.
#[derive(Debug, Clone)]
pub struct Bootstrapped {
    /// The ServiceAccount token.
    pub token: String,
    /// The cluster CA (PEM, base64) from the token Secret.
    pub ca_data: String,
}

/// Why bootstrap failed.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// `--kinds` was empty or named a kind the cluster does not serve.
    #[error("kinds: {0}")]
    Kind(String),
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

/// One RBAC rule line: API group and resource plural of a granted kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// API group (`""` for core).
    pub group: String,
    /// Resource plural, e.g. `deployments`.
    pub resource: String,
}

/// The ClusterRole's rules for `grants`: one rule per group, explicit resources and verbs.
pub fn rules(grants: &[Grant]) -> Vec<Value> {
    let mut groups: Vec<&str> = grants.iter().map(|g| g.group.as_str()).collect();
    groups.sort();
    groups.dedup();
    groups
        .into_iter()
        .map(|group| {
            let mut resources: Vec<&str> = grants
                .iter()
                .filter(|g| g.group == group)
                .map(|g| g.resource.as_str())
                .collect();
            resources.sort();
            resources.dedup();
            json!({"apiGroups": [group], "resources": resources, "verbs": VERBS})
        })
        .collect()
}

/// Resolves `Kind` / `group/Kind` names to resources through the cluster's discovery.
pub async fn grants_for(
    client: &kube::Client,
    kinds: &[String],
) -> Result<Vec<Grant>, BootstrapError> {
    if kinds.is_empty() {
        return Err(BootstrapError::Kind(
            "name at least one kind to grant".into(),
        ));
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
                .map(|(resource, _)| Grant {
                    group: group.to_string(),
                    resource: resource.plural,
                })
                .ok_or_else(|| {
                    BootstrapError::Kind(format!(
                        "the cluster serves no kind {kind:?} in group {group:?}"
                    ))
                })
        })
        .collect()
}

async fn apply<K>(api: Api<K>, name: &str, object: Value, step: &str) -> Result<(), BootstrapError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map(|_| ())
    .map_err(|source| BootstrapError::Cluster {
        step: step.to_string(),
        source,
    })
}

/// Creates (idempotently, by server-side apply) the identity described by `plan`.
pub async fn bootstrap(
    client: &kube::Client,
    plan: &BootstrapPlan,
) -> Result<Bootstrapped, BootstrapError> {
    let grants = grants_for(client, &plan.kinds).await?;
    let ns = &plan.sa_namespace;
    let role = format!("wardn-{}", plan.name);
    let probe_role = format!("wardn-{}-probe", plan.name);
    let subject = json!([{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": ns}]);

    apply(
        Api::<Namespace>::all(client.clone()),
        ns,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        "namespace",
    )
    .await?;
    apply(Api::<ServiceAccount>::namespaced(client.clone(), ns), SERVICE_ACCOUNT,
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": ns}}),
        "service account").await?;
    apply(
        Api::<ClusterRole>::all(client.clone()),
        &role,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": role}, "rules": rules(&grants)}),
        "cluster role",
    )
    .await?;
    apply(
        Api::<ClusterRole>::all(client.clone()),
        &probe_role,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": probe_role},
               "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]}),
        "probe cluster role",
    )
    .await?;
    apply(Api::<ClusterRoleBinding>::all(client.clone()), &probe_role,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": probe_role}, "subjects": subject,
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": probe_role}}),
        "probe binding").await?;
    let role_ref =
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role});
    if plan.namespaces.is_empty() {
        apply(
            Api::<ClusterRoleBinding>::all(client.clone()),
            &role,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                   "metadata": {"name": role}, "subjects": subject, "roleRef": role_ref}),
            "cluster role binding",
        )
        .await?;
    }
    for target in &plan.namespaces {
        apply(Api::<RoleBinding>::namespaced(client.clone(), target), &role,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": role, "namespace": target}, "subjects": subject, "roleRef": role_ref}),
            &format!("role binding in {target}")).await?;
    }
    let secret_name = format!("{SERVICE_ACCOUNT}-token");
    let secrets = Api::<Secret>::namespaced(client.clone(), ns);
    apply(secrets.clone(), &secret_name,
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
               "metadata": {"name": secret_name, "namespace": ns,
                            "annotations": {"kubernetes.io/service-account.name": SERVICE_ACCOUNT}}}),
        "token secret").await?;
    wait_for_token(&secrets, ns, &secret_name).await
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_group_resources_without_wildcards() {
        let grant = |g: &str, r: &str| Grant {
            group: g.into(),
            resource: r.into(),
        };
        let rules = rules(&[
            grant("apps", "deployments"),
            grant("", "configmaps"),
            grant("", "services"),
        ]);
        assert_eq!(
            rules,
            vec![
                json!({"apiGroups": [""], "resources": ["configmaps", "services"], "verbs": VERBS}),
                json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": VERBS}),
            ]
        );
        assert!(!serde_json::to_string(&rules).unwrap().contains('*'));
    }
}
