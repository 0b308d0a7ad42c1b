//! `Cluster` resources in the management cluster: the same documents as a `--clusters` file
//! ([`super::declared`]), kept as resources of `clusters.cd.wardn.space` in one namespace
//! (wardn's own), so the control plane's clusters can themselves be managed from Git.
//!
//! Only that namespace is read, and a resource's Secret references may only name Secrets of
//! its own namespace: whoever may create a `Cluster` there may already read wardn's Secrets,
//! so a `Cluster` never lets anyone reach a Secret they could not read themselves. Each
//! resource's `status` says whether it is registered and, if not, why; it is written only when
//! it changes. When the CRD is not installed nothing changes and one line is logged.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::declared::{
    Cluster, ClusterStatus, Declaration, DeclaredError, Invalid, KeyRef, checked,
};
use super::registry::{Registry, RegistryError};

/// The field manager of the status wardn writes on `Cluster` resources.
const FIELD_MANAGER: &str = "wardn";

/// Why the `Cluster` resources of a namespace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ResourcesError {
    /// The management cluster does not serve `clusters.cd.wardn.space`.
    #[error(
        "the Cluster CRD (clusters.cd.wardn.space) is not installed in the management cluster (install it with `wardn crd | kubectl apply -f -`)"
    )]
    CrdMissing,
    /// Listing failed.
    #[error("cannot list Cluster resources in namespace {namespace:?}: {reason}")]
    List {
        /// The namespace.
        namespace: String,
        /// Why, as the API server said it.
        reason: String,
    },
    /// The management cluster did not answer in time.
    #[error("reading the Cluster resources of namespace {namespace:?} took longer than {after:?}")]
    TimedOut {
        /// The namespace.
        namespace: String,
        /// The time allowed.
        after: Duration,
    },
    /// Applying the declarations failed in the store.
    #[error(transparent)]
    Declared(#[from] DeclaredError),
}

/// The registry source name of the `Cluster` resources of `namespace`, as the API shows it in
/// `declared_in` and in its 409 answers.
pub fn source_name(namespace: &str) -> String {
    format!("Cluster resources of namespace {namespace:?}")
}

impl Registry {
    /// Brings the registry in line with the `Cluster` resources of `namespace` in the
    /// management cluster (`client`), and writes each resource's status. Returns one message
    /// per resource that could not be applied.
    pub async fn declare_resources(
        &self,
        client: &Client,
        namespace: &str,
    ) -> Result<Vec<String>, ResourcesError> {
        let api: Api<Cluster> = Api::namespaced(client.clone(), namespace);
        let resources = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                return Err(ResourcesError::CrdMissing);
            }
            Err(error) => {
                return Err(ResourcesError::List {
                    namespace: namespace.to_string(),
                    reason: crate::kube_error::describe(&error),
                });
            }
        };
        let entries = resources
            .iter()
            .map(|resource| declaration_of(resource, namespace))
            .collect();
        let source = source_name(namespace);
        let actor = format!("resources:{namespace}");
        let outcomes = self.declare(&source, &actor, entries, Some(client)).await?;
        let problems: BTreeMap<String, String> = outcomes
            .into_iter()
            .filter_map(|o| o.problem.map(|problem| (o.name, problem)))
            .collect();
        for resource in &resources {
            let name = resource.name_any();
            // The registry's in-memory board, kept in step with the store by `declare`.
            let registered = match self.get(&name).await {
                Ok(view) => view.declared_in.as_deref() == Some(source.as_str()),
                Err(RegistryError::NotFound(_)) => false,
                Err(error) => return Err(DeclaredError::Registry(error).into()),
            };
            let status = ClusterStatus {
                registered,
                message: problems
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| "registered".to_string()),
                observed_generation: resource.metadata.generation,
            };
            if resource.status.as_ref() != Some(&status) {
                write_status(&api, &name, &status).await;
            }
        }
        Ok(problems.into_values().collect())
    }

    /// Reads the `Cluster` resources of `namespace` now, then every `interval`, so edits to
    /// them and to their Secrets take effect without a restart; each reading gives up after
    /// `timeout` (a silent management cluster must not hold up start-up or the next reading).
    /// Returns once the first reading is done (its clusters are in the registry before any App
    /// is resolved) with the task that goes on. A missing CRD or a failed reading changes
    /// nothing and is logged once until a reading succeeds.
    pub async fn follow_resources(
        self: Arc<Self>,
        client: Client,
        namespace: String,
        interval: Duration,
        timeout: Duration,
    ) -> tokio::task::JoinHandle<()> {
        let mut failing = false;
        let first = self.read_resources(&client, &namespace, timeout).await;
        log_failure(first, &mut failing);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let outcome = self.read_resources(&client, &namespace, timeout).await;
                log_failure(outcome, &mut failing);
            }
        })
    }

    /// [`Registry::declare_resources`] within `timeout`.
    async fn read_resources(
        &self,
        client: &Client,
        namespace: &str,
        timeout: Duration,
    ) -> Result<Vec<String>, ResourcesError> {
        tokio::time::timeout(timeout, self.declare_resources(client, namespace))
            .await
            .unwrap_or_else(|_| {
                Err(ResourcesError::TimedOut {
                    namespace: namespace.to_string(),
                    after: timeout,
                })
            })
    }
}

/// Logs a failed reading once until a reading succeeds again (a missing CRD at info: it is
/// how an install without Cluster resources looks).
fn log_failure(outcome: Result<Vec<String>, ResourcesError>, failing: &mut bool) {
    match outcome {
        Ok(_) => *failing = false,
        Err(error) if !*failing => {
            *failing = true;
            match error {
                ResourcesError::CrdMissing => tracing::info!(%error, "no Cluster resources read"),
                error => {
                    tracing::warn!(%error, "Cluster resources not applied; the clusters they declared stay as they were")
                }
            }
        }
        Err(_) => {}
    }
}

/// `resource` as a declaration of the registry, or what is wrong with it: the document rules
/// of a `--clusters` file, and Secret references confined to `namespace` (the default).
fn declaration_of(resource: &Cluster, namespace: &str) -> Result<Declaration, Invalid> {
    let name = resource.name_any();
    let invalid = |reason: String| Invalid {
        name: name.clone(),
        reason,
    };
    let mut spec = resource.spec.clone();
    for (field, reference) in [
        ("secretRef", &mut spec.secret_ref),
        ("tokenRef", &mut spec.token_ref),
        ("caRef", &mut spec.ca_ref),
    ] {
        if let Some(reference) = reference {
            confine(reference, namespace)
                .map_err(|reason| invalid(format!("spec.{field}.{reason}")))?;
        }
    }
    checked(name.clone(), spec).map_err(invalid)
}

/// Places `reference` in `namespace`, refusing one that names another.
fn confine(reference: &mut KeyRef, namespace: &str) -> Result<(), String> {
    match reference.namespace.as_deref() {
        Some(other) if other != namespace => Err(format!(
            "namespace: {other:?} is not this Cluster resource's namespace {namespace:?}: a Cluster resource may only read Secrets of its own namespace"
        )),
        _ => {
            reference.namespace = Some(namespace.to_string());
            Ok(())
        }
    }
}

/// Writes `status` on the resource `name`; a failure is logged (the next reading retries).
async fn write_status(api: &Api<Cluster>, name: &str, status: &ClusterStatus) {
    let patch = Patch::Merge(json!({ "status": status }));
    if let Err(error) = api
        .patch_status(name, &PatchParams::apply(FIELD_MANAGER), &patch)
        .await
    {
        tracing::warn!(cluster = name, error = %crate::kube_error::describe(&error), "cannot write the status of a Cluster resource");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(refs: serde_json::Value) -> Cluster {
        let mut spec = json!({"server": "https://prod.internal:6443"});
        if let (Some(spec), Some(refs)) = (spec.as_object_mut(), refs.as_object()) {
            spec.extend(refs.clone());
        }
        serde_json::from_value(json!({
            "apiVersion": "cd.wardn.space/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "prod", "namespace": "wardn"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn secret_references_stay_in_the_resources_namespace() {
        let declared =
            declaration_of(&resource(json!({"secretRef": {"name": "creds"}})), "wardn").unwrap();
        let super::super::declared::Credentials::Kubeconfig(secret) = declared.credentials else {
            panic!("a kubeconfig reference");
        };
        assert_eq!(secret.namespace.as_deref(), Some("wardn"));

        let elsewhere = resource(json!({
            "tokenRef": {"name": "t", "namespace": "wardn"},
            "caRef": {"name": "ca", "namespace": "kube-system"},
        }));
        let refused = declaration_of(&elsewhere, "wardn").unwrap_err();
        assert_eq!(refused.name, "prod");
        assert!(
            refused
                .reason
                .starts_with("spec.caRef.namespace: \"kube-system\" is not"),
            "{}",
            refused.reason
        );

        let plain_http = resource(json!({"secretRef": {"name": "creds"}}));
        let mut plain_http = plain_http;
        plain_http.spec.server = "http://prod.internal:6443".into();
        let refused = declaration_of(&plain_http, "wardn").unwrap_err();
        assert!(
            refused.reason.starts_with("spec.server:"),
            "{}",
            refused.reason
        );
    }
}
