//! Clusters declared as code: `Cluster` documents (`cd.wardn.space/v1alpha1`) in a file
//! (`wardn serve --clusters FILE`) or as resources in the management cluster
//! ([`super::cluster_resources`]). wardn takes each one's credentials from Secrets in the
//! management cluster and keeps the registry in step with its source: declared clusters are
//! added, updated and removed as the source changes, under the same rules as API
//! registrations (https only, exec and auth-provider kubeconfigs refused, namespaces are DNS
//! labels). They coexist with API-registered clusters; the API may not change or remove a
//! declared one (409), and a name declared by two sources, or declared and registered through
//! the API, is an error naming both.
//!
//! ```yaml
//! apiVersion: cd.wardn.space/v1alpha1
//! kind: Cluster
//! metadata: {name: prod}
//! spec:
//!   server: https://prod.internal:6443
//!   namespaces: [shop]
//!   secretRef: {name: prod-credentials, key: kubeconfig}      # a whole kubeconfig, or:
//!   # tokenRef: {name: prod-sa-token, key: token}
//!   # caRef: {name: prod-ca, key: ca.crt}
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client, CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::registry::{Registry, RegistryError};
use crate::render::tree::FileStamp;
use crate::store::clusters::ClusterRecord;
use crate::time::now_rfc3339;

/// The `apiVersion` of a `Cluster` document.
pub const API_VERSION: &str = "cd.wardn.space/v1alpha1";

/// How long a `--clusters` file must stay unchanged (content, inode, size and times) before a
/// reading of it is used: a file saved in place is empty, then partly written, for a moment,
/// and a declaration cut short can still be valid (one cut before its `namespaces` allows
/// every namespace).
pub const SETTLE: Duration = Duration::from_millis(250);

/// How many readings a `--clusters` file that keeps changing gets, [`SETTLE`] apart.
const READINGS: u32 = 5;

/// Why a clusters file or a declared cluster's credentials cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DeclaredError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A document is not a valid `Cluster`.
    #[error("{path} (document {document}): {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The document's position in the file (from 1).
        document: usize,
        /// What is wrong, naming the field.
        reason: String,
    },
    /// A Secret a declaration refers to cannot be used.
    #[error("cluster {cluster:?}: spec.{field}: Secret {namespace}/{secret}: {reason}")]
    Secret {
        /// The cluster.
        cluster: String,
        /// `secretRef`, `tokenRef` or `caRef`.
        field: &'static str,
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        secret: String,
        /// Why.
        reason: String,
    },
    /// The registry's store failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The management cluster did not answer for a declaration's Secrets in time.
    #[error("cluster {cluster:?}: its Secrets could not be read within {after:?}")]
    SecretsTimedOut {
        /// The cluster.
        cluster: String,
        /// The time allowed (the probe timeout).
        after: Duration,
    },
    /// The file kept changing: no two readings [`SETTLE`] apart agreed.
    #[error(
        "{path}: kept changing for {waited:?} (being written?); read again at the next reading"
    )]
    Unsettled {
        /// The file.
        path: PathBuf,
        /// How long it was read for.
        waited: Duration,
    },
    /// No management cluster to read Secrets from.
    #[error(
        "cluster {0:?}: its credentials are Secrets in the management cluster, and there is none (--kubeconfig)"
    )]
    NoManagementCluster(String),
}

/// A key of a Secret in the management cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyRef {
    /// The Secret's name.
    pub name: String,
    /// Its namespace (default: the management cluster client's namespace for a file, the
    /// resource's own namespace, the only one allowed, for a `Cluster` resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The key in its `data` (defaults: `kubeconfig`, `token`, `ca.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// `spec` of a `Cluster`: one destination cluster declared as code, in a `--clusters` file or
/// as a resource in the management cluster (whose CRD `wardn crd` prints beside the App's).
#[derive(CustomResource, Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cd.wardn.space",
    version = "v1alpha1",
    kind = "Cluster",
    plural = "clusters",
    doc = "A destination cluster declared as code, its credentials in Secrets of its own namespace.",
    namespaced,
    status = "ClusterStatus",
    printcolumn = r#"{"name":"Server","type":"string","jsonPath":".spec.server"}"#,
    printcolumn = r#"{"name":"Registered","type":"boolean","jsonPath":".status.registered"}"#,
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".status.message"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    /// The API server URL (https://).
    pub server: String,
    /// Namespace allowlist; empty means every namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Accept a kubeconfig that skips TLS verification.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_insecure_tls: bool,
    /// A Secret key holding a whole kubeconfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<KeyRef>,
    /// A Secret key holding a bearer token (with `caRef`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ref: Option<KeyRef>,
    /// A Secret key holding the server's CA certificate (PEM), with `tokenRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_ref: Option<KeyRef>,
}

/// `status` of a `Cluster` resource: whether wardn registered it, and why not.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Whether the registry holds this cluster as declared by this resource.
    #[serde(default)]
    pub registered: bool,
    /// `registered`, or what kept the declaration from being applied (naming the field).
    #[serde(default)]
    pub message: String,
    /// The `metadata.generation` this status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Why the Cluster CRD could not be printed.
#[derive(Debug, thiserror::Error)]
#[error("cannot serialise the Cluster CRD to YAML: {0}")]
pub struct CrdError(String);

/// The Cluster CustomResourceDefinition as YAML, for `wardn crd | kubectl apply -f -`.
pub fn crd_yaml() -> Result<String, CrdError> {
    serde_saphyr::to_string(&Cluster::crd()).map_err(|e| CrdError(e.to_string()))
}

/// Where a declared cluster's credentials are: the one form of `spec`'s references that
/// [`read_file`] accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    /// `secretRef`: a whole kubeconfig.
    Kubeconfig(KeyRef),
    /// `tokenRef` and `caRef`: a bearer token and the server's CA.
    TokenAndCa {
        /// The token's Secret key.
        token: KeyRef,
        /// The CA's Secret key.
        ca: KeyRef,
    },
}

/// One declared cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// Its name.
    pub name: String,
    /// What the file says of it.
    pub spec: ClusterSpec,
    /// Its credentials, from `spec`'s references.
    pub credentials: Credentials,
}

/// A declaration its source holds but that is not valid, kept apart so that its previous
/// registration stays (a typo must not remove a cluster).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Invalid {
    /// The cluster's name.
    pub name: String,
    /// What is wrong, naming the field.
    pub reason: String,
}

/// What became of one declared cluster in [`Registry::declare`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Outcome {
    /// The cluster's name.
    pub name: String,
    /// Why it was not applied (or not removed), if it was not.
    pub problem: Option<String>,
}

impl Outcome {
    /// The outcome of a declaration `problem` kept from being applied.
    fn failed(name: &str, problem: String) -> Outcome {
        Outcome {
            name: name.to_string(),
            problem: Some(problem),
        }
    }
}

/// Reads the `Cluster` documents of `path`: each needs `metadata.name`, `spec.server`, and
/// either `spec.secretRef` or both `spec.tokenRef` and `spec.caRef`; a name declared twice is
/// refused. Errors name the file, the document and the field.
pub fn read_file(path: &Path) -> Result<Vec<Declaration>, DeclaredError> {
    let (_, text) = read_stamped(path)?;
    parse(path, &text)
}

/// Reads `path` as [`read_file`] does, once two readings `settle` apart agree (the same text,
/// and the file's [`FileStamp`] unchanged between them): a reading taken while the file was
/// being saved in place is never used, unless the writer stopped half-way for longer than
/// `settle`. A file that keeps changing for [`READINGS`] readings is [`DeclaredError::Unsettled`].
pub async fn read_settled(
    path: &Path,
    settle: Duration,
) -> Result<Vec<Declaration>, DeclaredError> {
    let mut reading = read_stamped(path)?;
    for _ in 1..READINGS {
        tokio::time::sleep(settle).await;
        let next = read_stamped(path)?;
        if next == reading {
            return parse(path, &next.1);
        }
        reading = next;
    }
    Err(DeclaredError::Unsettled {
        path: path.to_path_buf(),
        waited: settle * READINGS,
    })
}

/// The file's stamp, taken before its text is read, and the text.
fn read_stamped(path: &Path) -> Result<(FileStamp, String), DeclaredError> {
    let io = |source| DeclaredError::Io {
        path: path.to_path_buf(),
        source,
    };
    let stamp = FileStamp::of(&std::fs::metadata(path).map_err(io)?);
    let text = std::fs::read_to_string(path).map_err(io)?;
    Ok((stamp, text))
}

/// The `Cluster` documents of `text`, read from `path` (see [`read_file`]).
fn parse(path: &Path, text: &str) -> Result<Vec<Declaration>, DeclaredError> {
    let invalid = |document, reason: String| DeclaredError::Invalid {
        path: path.to_path_buf(),
        document,
        reason,
    };
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| invalid(1, e.to_string()))?;
    let mut names = BTreeSet::new();
    let mut declarations = Vec::new();
    for (index, document) in documents.iter().enumerate().filter(|(_, d)| !d.is_null()) {
        let declaration = declaration(document).map_err(|reason| invalid(index + 1, reason))?;
        if !names.insert(declaration.name.clone()) {
            return Err(invalid(
                index + 1,
                format!(
                    "metadata.name: cluster {:?} is declared twice",
                    declaration.name
                ),
            ));
        }
        declarations.push(declaration);
    }
    Ok(declarations)
}

/// One document as a [`Declaration`], or what is wrong with it.
fn declaration(document: &Value) -> Result<Declaration, String> {
    let api_version = document.get("apiVersion").and_then(Value::as_str);
    let kind = document.get("kind").and_then(Value::as_str);
    if api_version != Some(API_VERSION) || kind != Some("Cluster") {
        return Err(format!(
            "apiVersion/kind: expected {API_VERSION} Cluster, found {api_version:?} {kind:?}"
        ));
    }
    let name = document
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("metadata.name: required")?
        .to_string();
    let spec: ClusterSpec =
        serde_json::from_value(document.get("spec").cloned().unwrap_or(Value::Null))
            .map_err(|e| format!("spec: {e}"))?;
    checked(name, spec)
}

/// `spec` of the cluster `name` as a [`Declaration`], or what is wrong with it (naming the
/// field): an https server, and either `secretRef` or both `tokenRef` and `caRef`.
pub(super) fn checked(name: String, spec: ClusterSpec) -> Result<Declaration, String> {
    super::kubeconfig::check_server_url(&spec.server)
        .map_err(|e| format!("spec.server: {}", e.reason))?;
    let credentials = match (&spec.secret_ref, &spec.token_ref, &spec.ca_ref) {
        (Some(kubeconfig), None, None) => Credentials::Kubeconfig(kubeconfig.clone()),
        (None, Some(token), Some(ca)) => Credentials::TokenAndCa {
            token: token.clone(),
            ca: ca.clone(),
        },
        _ => {
            return Err(
                "spec: credentials are either secretRef (a kubeconfig) or tokenRef and caRef"
                    .into(),
            );
        }
    };
    Ok(Declaration {
        name,
        spec,
        credentials,
    })
}

/// The kubeconfig of `declaration`, from its Secrets in the management cluster (`client`).
pub async fn kubeconfig_of(
    client: &Client,
    declaration: &Declaration,
) -> Result<String, DeclaredError> {
    let (token, ca) = match &declaration.credentials {
        Credentials::Kubeconfig(secret) => {
            return secret_text(client, declaration, "secretRef", secret, "kubeconfig").await;
        }
        Credentials::TokenAndCa { token, ca } => (token, ca),
    };
    let token = secret_text(client, declaration, "tokenRef", token, "token").await?;
    let ca = secret_text(client, declaration, "caRef", ca, "ca.crt").await?;
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": declaration.name, "cluster": {
            "server": declaration.spec.server,
            "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca),
        }}],
        "users": [{"name": declaration.name, "user": {"token": token.trim()}}],
        "contexts": [{"name": declaration.name,
                      "context": {"cluster": declaration.name, "user": declaration.name}}],
        "current-context": declaration.name,
    });
    Ok(config.to_string())
}

/// The UTF-8 text at `reference` (key `default_key` unless it names one).
async fn secret_text(
    client: &Client,
    declaration: &Declaration,
    field: &'static str,
    reference: &KeyRef,
    default_key: &str,
) -> Result<String, DeclaredError> {
    let namespace = reference
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let key = reference.key.as_deref().unwrap_or(default_key);
    let failed = |reason: String| DeclaredError::Secret {
        cluster: declaration.name.clone(),
        field,
        namespace: namespace.clone(),
        secret: reference.name.clone(),
        reason,
    };
    let secret = Api::<Secret>::namespaced(client.clone(), &namespace)
        .get(&reference.name)
        .await
        .map_err(|e| failed(crate::kube_error::describe(&e)))?;
    let bytes = secret
        .data
        .and_then(|mut data| data.remove(key))
        .ok_or_else(|| failed(format!("has no key {key:?}")))?;
    String::from_utf8(bytes.0).map_err(|_| failed(format!("key {key:?} is not UTF-8 text")))
}

impl Registry {
    /// Re-reads `file` every `interval` (the first read is the caller's, at start-up), so
    /// edits to it and to the Secrets it names take effect without a restart.
    pub async fn declare_loop(
        self: std::sync::Arc<Self>,
        file: PathBuf,
        management: Option<Client>,
        interval: std::time::Duration,
    ) {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            ticker.tick().await;
            if let Err(error) = self.declare_from(&file, management.as_ref()).await {
                tracing::warn!(%error, "--clusters file not applied; the declared clusters stay as they were");
                self.declaration_problems
                    .write()
                    .insert(file.display().to_string(), vec![error.to_string()]);
            }
        }
    }

    /// Brings the clusters declared in `file` in line with its current text, once it has
    /// settled ([`read_settled`], then [`Registry::declare`]). Returns one message per
    /// declaration that could not be applied; a file that cannot be read changes nothing, and
    /// neither does the first reading that finds no cluster in a file that declared some (a
    /// save in progress; the next reading that finds it empty too removes them).
    pub async fn declare_from(
        &self,
        file: &Path,
        management: Option<&Client>,
    ) -> Result<Vec<String>, DeclaredError> {
        let declarations = read_settled(file, SETTLE).await?;
        let source = file.display().to_string();
        if !declarations.is_empty() {
            self.emptied_files.lock().remove(&source);
        } else if let Some(held) = self.hold_emptied(&source).await? {
            tracing::warn!(source, problem = %held, "declared clusters kept");
            self.declaration_problems
                .write()
                .insert(source, vec![held.clone()]);
            return Ok(vec![held]);
        }
        let entries = declarations.into_iter().map(Ok).collect();
        let outcomes = self
            .declare(&source, &format!("file:{source}"), entries, management)
            .await?;
        Ok(outcomes.into_iter().filter_map(|o| o.problem).collect())
    }

    /// Whether a reading of file `source` that declares no cluster is held back: the first
    /// such reading of a file that declared clusters is taken for a save in progress (the file
    /// truncated and not written yet) and changes nothing; the next reading that still finds
    /// it empty removes them. The message saying so, or `None` to go on.
    async fn hold_emptied(&self, source: &str) -> Result<Option<String>, DeclaredError> {
        let declared = self
            .store
            .list_clusters()
            .await
            .map_err(RegistryError::from)?
            .iter()
            .filter(|r| r.declared_in.as_deref() == Some(source))
            .count();
        if declared == 0 || !self.emptied_files.lock().insert(source.to_string()) {
            return Ok(None);
        }
        Ok(Some(format!(
            "{source}: declares no cluster now (a save in progress?); its {declared} cluster(s) stay registered unless the next reading finds it empty too"
        )))
    }

    /// Brings the clusters `source` declares in line with `entries`: each declaration whose
    /// Secrets can be read is validated and added or updated (audited as `cluster.declare` by
    /// `actor` when it changes something or first fails); clusters `source` declared before and absent from `entries` are removed
    /// (`cluster.undeclare`). An entry that is invalid, or whose Secrets cannot be read, keeps
    /// its previous registration. Returns the outcome of each entry and of each removal.
    pub(super) async fn declare(
        &self,
        source: &str,
        actor: &str,
        entries: Vec<Result<Declaration, Invalid>>,
        management: Option<&Client>,
    ) -> Result<Vec<Outcome>, DeclaredError> {
        // A failure is audited when it first appears, not at every reading that still sees it.
        let known: BTreeSet<String> = self
            .declaration_problems
            .read()
            .get(source)
            .map(|problems| problems.iter().cloned().collect())
            .unwrap_or_default();
        let mut outcomes = Vec::new();
        let mut keep = BTreeSet::new();
        for entry in entries {
            let declaration = match entry {
                Ok(declaration) => declaration,
                Err(invalid) => {
                    keep.insert(invalid.name.clone());
                    let problem = format!("cluster {:?}: {}", invalid.name, invalid.reason);
                    outcomes.push(Outcome::failed(&invalid.name, problem));
                    continue;
                }
            };
            keep.insert(declaration.name.clone());
            let kubeconfig = match management {
                Some(client) => {
                    tokio::time::timeout(self.probe_timeout, kubeconfig_of(client, &declaration))
                        .await
                        .unwrap_or_else(|_| {
                            Err(DeclaredError::SecretsTimedOut {
                                cluster: declaration.name.clone(),
                                after: self.probe_timeout,
                            })
                        })
                }
                None => Err(DeclaredError::NoManagementCluster(declaration.name.clone())),
            };
            let outcome = match kubeconfig {
                Ok(kubeconfig) => self.declare_one(source, &declaration, kubeconfig).await,
                Err(error) => {
                    outcomes.push(Outcome::failed(&declaration.name, error.to_string()));
                    continue;
                }
            };
            match outcome {
                Ok(changed) => {
                    if changed {
                        self.audit(actor, "cluster.declare", &declaration.name, "ok")
                            .await;
                    }
                    outcomes.push(Outcome {
                        name: declaration.name,
                        problem: None,
                    });
                }
                Err(error) => {
                    let message = format!("cluster {:?}: {error}", declaration.name);
                    if !known.contains(&message) {
                        self.audit(actor, "cluster.declare", &declaration.name, &message)
                            .await;
                    }
                    outcomes.push(Outcome::failed(&declaration.name, message));
                }
            }
        }
        let stale: Vec<ClusterRecord> = self
            .store
            .list_clusters()
            .await
            .map_err(RegistryError::from)?
            .into_iter()
            .filter(|r| r.declared_in.as_deref() == Some(source) && !keep.contains(&r.name))
            .collect();
        for record in stale {
            let outcome = match self.remove_inner(&record.name, Some(source)).await {
                Ok(()) => "ok".to_string(),
                Err(error) => {
                    let message = format!("cluster {:?}: {error}", record.name);
                    outcomes.push(Outcome::failed(&record.name, message));
                    error.to_string()
                }
            };
            self.audit(actor, "cluster.undeclare", &record.name, &outcome)
                .await;
        }
        let problems: Vec<String> = outcomes.iter().filter_map(|o| o.problem.clone()).collect();
        for problem in &problems {
            tracing::warn!(source, %problem, "declared cluster not applied");
        }
        self.declaration_problems
            .write()
            .insert(source.to_string(), problems);
        Ok(outcomes)
    }

    /// Adds or updates one declared cluster; whether anything changed.
    async fn declare_one(
        &self,
        source: &str,
        declaration: &Declaration,
        kubeconfig: String,
    ) -> Result<bool, RegistryError> {
        let spec = &declaration.spec;
        super::kubeconfig::check_name(&declaration.name)?;
        super::kubeconfig::check_namespaces(&spec.namespaces)?;
        let (expires, insecure) =
            Registry::check(&spec.server, &kubeconfig, spec.allow_insecure_tls)?;
        let existing = self.store.get_cluster(&declaration.name).await?;
        let now = now_rfc3339();
        let (record, new) = match existing {
            Some(current) if current.declared_in.as_deref() != Some(source) => {
                return Err(RegistryError::Clash {
                    name: declaration.name.clone(),
                    file: source.to_string(),
                    other: match current.declared_in {
                        Some(elsewhere) => format!("declared in {elsewhere}"),
                        None => "registered through the API".to_string(),
                    },
                });
            }
            Some(current) => {
                let unchanged = current.server_url == spec.server
                    && current.namespaces == spec.namespaces
                    && self
                        .sealer
                        .open(&current.kubeconfig_sealed)
                        .is_ok_and(|plain| plain == kubeconfig);
                if unchanged {
                    return Ok(false);
                }
                let record = ClusterRecord {
                    server_url: spec.server.clone(),
                    kubeconfig_sealed: self.sealer.seal(&kubeconfig)?,
                    namespaces: spec.namespaces.clone(),
                    credential_expires_at: expires,
                    updated_at: now,
                    ..current
                };
                (record, false)
            }
            None => {
                let record = ClusterRecord {
                    name: declaration.name.clone(),
                    server_url: spec.server.clone(),
                    kubeconfig_sealed: self.sealer.seal(&kubeconfig)?,
                    namespaces: spec.namespaces.clone(),
                    credential_expires_at: expires,
                    created_at: now.clone(),
                    updated_at: now,
                    declared_in: Some(source.to_string()),
                };
                (record, true)
            }
        };
        if new {
            self.store.insert_cluster(&record).await?;
        } else {
            self.store.update_cluster(&record).await?;
        }
        self.forget(&record.name).await;
        self.board_put(&record, insecure).await?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Declaration>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clusters.yaml");
        std::fs::write(&path, text).unwrap();
        read_file(&path).map_err(|e| e.to_string())
    }

    const PROD: &str = "apiVersion: cd.wardn.space/v1alpha1\nkind: Cluster\nmetadata: {name: prod}\n\
        spec:\n  server: https://prod.internal:6443\n  namespaces: [shop]\n  secretRef: {name: prod-credentials}\n";

    #[test]
    fn reads_declarations_and_names_what_is_wrong() {
        let declared = read(PROD).unwrap();
        assert_eq!(declared[0].name, "prod");
        assert_eq!(declared[0].spec.namespaces, ["shop"]);
        let cases = [
            (
                PROD.replace("kind: Cluster", "kind: App"),
                "(document 1): apiVersion/kind",
            ),
            (
                PROD.replace("metadata: {name: prod}", "metadata: {}"),
                "metadata.name: required",
            ),
            (
                PROD.replace("namespaces", "namspaces"),
                "spec: unknown field `namspaces`",
            ),
            (
                PROD.replace("secretRef: {name: prod-credentials}", "tokenRef: {name: t}"),
                "either secretRef (a kubeconfig) or tokenRef and caRef",
            ),
            (
                format!("{PROD}---\n{PROD}"),
                "(document 2): metadata.name: cluster \"prod\" is declared twice",
            ),
            ("{{{".to_string(), "(document 1)"),
        ];
        for (text, want) in cases {
            let error = read(&text).unwrap_err();
            assert!(error.contains(want), "{want}: {error}");
        }
    }

    /// A declaration with its allowlist last, and the same document cut before the allowlist
    /// as a save in progress leaves it: still valid, and allowing every namespace.
    fn saved_and_cut() -> (String, String) {
        let cut = "apiVersion: cd.wardn.space/v1alpha1\nkind: Cluster\nmetadata: {name: prod}\n\
            spec:\n  server: https://prod.internal:6443\n  secretRef: {name: prod-credentials}\n";
        (format!("{cut}  namespaces: [shop]\n"), cut.to_string())
    }

    /// A thousand saves in place, each read first while the file held the cut document, then
    /// while it held a longer cut one (both valid, allowing every namespace): every reading
    /// waits for two readings a settle period apart to agree and returns the saved
    /// allowlist, wherever within the period each write lands. (Time is paused: the test's
    /// sleeps and the reader's are ordered by the clock alone.)
    #[tokio::test(start_paused = true)]
    async fn a_thousand_saves_in_progress_are_never_read_cut_short() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clusters.yaml");
        let (saved, cut) = saved_and_cut();
        assert!(read(&cut).unwrap()[0].spec.namespaces.is_empty());
        for save in 0..1_000u32 {
            std::fs::write(&path, &cut).unwrap();
            let reading = tokio::spawn({
                let path = path.clone();
                async move { read_settled(&path, SETTLE).await }
            });
            tokio::time::sleep(SETTLE * (1 + save % 9) / 10).await;
            std::fs::write(&path, format!("{cut}  # saving\n")).unwrap();
            tokio::time::sleep(SETTLE).await;
            std::fs::write(&path, &saved).unwrap();
            let declared = reading.await.unwrap().unwrap();
            assert_eq!(declared[0].spec.namespaces, ["shop"], "save {save}");
        }
    }

    /// A file written more often than the settle period is refused, naming it, after
    /// [`READINGS`] readings.
    #[tokio::test(start_paused = true)]
    async fn a_file_that_keeps_changing_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clusters.yaml");
        let (saved, _) = saved_and_cut();
        std::fs::write(&path, &saved).unwrap();
        let reading = tokio::spawn({
            let path = path.clone();
            async move { read_settled(&path, SETTLE).await }
        });
        let mut saves = 0;
        while !reading.is_finished() {
            tokio::time::sleep(SETTLE * 2 / 5).await;
            saves += 1;
            std::fs::write(&path, format!("# save {saves}\n{saved}")).unwrap();
        }
        let error = reading.await.unwrap().unwrap_err().to_string();
        assert!(
            error.contains("clusters.yaml: kept changing for 1.25s"),
            "{error}"
        );
    }
}
