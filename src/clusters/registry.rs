//! The cluster registry service: registration, update, removal and connection tests, each
//! validated, sealed and audited; the registrations and status board the API answers from,
//! kept in step with the store (the prober, [`super::probes`], fills the board).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::access::{self, CheckReport, CheckRequest};
use super::cache::{CachedCluster, ClientCache};
use super::connect::{self, ConnectError};
use super::expiry::credential_expiry;
use super::kubeconfig::{self, ValidationError};
use super::status::{Status, Statuses};

use super::throttle::Throttles;
use crate::redact::{Hidden, hidden};
use crate::seal::{SealError, Sealer};
use crate::store::clusters::ClusterRecord;
use crate::store::{Store, StoreError};
use crate::time::{now_rfc3339, rfc3339};

/// `POST /api/v1/clusters` body.
#[derive(Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    /// Cluster name (a DNS label).
    pub name: String,
    /// API server URL (https://).
    pub server_url: String,
    /// Kubeconfig YAML text.
    pub kubeconfig: String,
    /// Namespace allowlist; absent or empty means every namespace.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Accept a kubeconfig with `insecure-skip-tls-verify: true` (refused otherwise).
    #[serde(default)]
    pub allow_insecure_tls: bool,
}

impl std::fmt::Debug for RegisterRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisterRequest")
            .field("name", &self.name)
            .field("server_url", &self.server_url)
            .field("kubeconfig", &Hidden)
            .field("namespaces", &self.namespaces)
            .field("allow_insecure_tls", &self.allow_insecure_tls)
            .finish()
    }
}

/// `PUT /api/v1/clusters/{name}` body: absent fields keep their stored value.
#[derive(Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ClusterUpdateRequest")]
pub struct UpdateRequest {
    /// Must equal the path's name when given.
    pub name: Option<String>,
    /// New API server URL.
    pub server_url: Option<String>,
    /// New kubeconfig.
    pub kubeconfig: Option<String>,
    /// New namespace allowlist.
    pub namespaces: Option<Vec<String>>,
    /// Accept a kubeconfig with `insecure-skip-tls-verify: true`; when absent, a cluster
    /// registered with an insecure kubeconfig keeps that allowance.
    pub allow_insecure_tls: Option<bool>,
}

impl std::fmt::Debug for UpdateRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateRequest")
            .field("name", &self.name)
            .field("server_url", &self.server_url)
            .field("kubeconfig", &hidden(&self.kubeconfig))
            .field("namespaces", &self.namespaces)
            .field("allow_insecure_tls", &self.allow_insecure_tls)
            .finish()
    }
}

/// `POST /api/v1/clusters/test` body.
#[derive(Clone, Deserialize, schemars::JsonSchema)]
pub struct TestRequest {
    /// API server URL (https://).
    pub server_url: String,
    /// Kubeconfig YAML text.
    pub kubeconfig: String,
    /// Accept a kubeconfig with `insecure-skip-tls-verify: true` (refused otherwise).
    #[serde(default)]
    pub allow_insecure_tls: bool,
}

impl std::fmt::Debug for TestRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestRequest")
            .field("server_url", &self.server_url)
            .field("kubeconfig", &Hidden)
            .field("allow_insecure_tls", &self.allow_insecure_tls)
            .finish()
    }
}

/// A cluster as the API shows it: registration plus cached status, never credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClusterView {
    /// Name.
    pub name: String,
    /// API server URL.
    pub server_url: String,
    /// Connectivity, version, node count and last error.
    #[serde(flatten)]
    pub status: Status,
    /// Namespace allowlist (empty: every namespace).
    pub namespaces: Vec<String>,
    /// Whether every namespace and cluster-scoped objects are allowed (the allowlist is empty).
    #[serde(default)]
    pub unrestricted: bool,
    /// Whether the kubeconfig skips verifying the server's certificate (registered with
    /// `allow_insecure_tls`).
    #[serde(default)]
    pub insecure_tls: bool,
    /// When the registered credentials expire, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_expires_at: Option<String>,
    /// The file declaring the cluster (`wardn serve --clusters FILE`); absent for clusters
    /// registered through the API. Declared clusters change only in their file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_in: Option<String>,
}

/// What the internal endpoint hands the operator: the unsealed kubeconfig and the allowlist.
#[derive(Clone, Serialize, Deserialize)]
pub struct ResolvedCluster {
    /// Name.
    pub name: String,
    /// API server URL.
    pub server_url: String,
    /// Plain kubeconfig text (only ever sent to internal-token holders).
    pub kubeconfig: String,
    /// Namespace allowlist.
    pub namespaces: Vec<String>,
}

impl std::fmt::Debug for ResolvedCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedCluster")
            .field("name", &self.name)
            .field("server_url", &self.server_url)
            .field("kubeconfig", &Hidden)
            .field("namespaces", &self.namespaces)
            .finish()
    }
}

/// Refuses an API change to a cluster declared in a file.
fn refuse_declared(record: &ClusterRecord) -> Result<(), RegistryError> {
    match &record.declared_in {
        Some(file) => Err(RegistryError::Declared {
            name: record.name.clone(),
            file: file.clone(),
        }),
        None => Ok(()),
    }
}

/// Errors of registry operations, each mapped to one HTTP status by the server.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Invalid input (400).
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The name is taken (409).
    #[error("cluster {0:?} already exists")]
    Duplicate(String),
    /// No such cluster (404).
    #[error("cluster {0:?} not found")]
    NotFound(String),
    /// The cluster is declared as code, so the API may not change it (409).
    #[error("cluster {name:?} is declared in {file}: change or remove it there")]
    Declared {
        /// The cluster.
        name: String,
        /// The file declaring it.
        file: String,
    },
    /// A declared cluster's name is taken by a cluster registered through the API or declared
    /// by another source (409).
    #[error("cluster {name:?} is declared in {file} and also {other}: remove one of them")]
    Clash {
        /// The cluster.
        name: String,
        /// The source declaring it (a file, or the namespace of `Cluster` resources).
        file: String,
        /// Where else it comes from: `registered through the API` or `declared in SOURCE`.
        other: String,
    },
    /// Sealing or unsealing failed (500).
    #[error(transparent)]
    Seal(#[from] SealError),
    /// The store failed (500).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The parts of a registration the API shows (no credentials), kept in memory so listing never
/// waits on the store.
#[derive(Debug, Clone)]
struct Registered {
    server_url: String,
    namespaces: Vec<String>,
    credential_expires_at: Option<String>,
    insecure_tls: bool,
    declared_in: Option<String>,
    /// A digest of the stored record (see [`revision`]): a refresh recomputes the entries
    /// whose record changed.
    revision: [u8; 32],
}

/// A digest of every stored field of `record`, the sealed kubeconfig included (sealing draws a
/// fresh nonce, so a rotated kubeconfig changes it even when the text is the same).
fn revision(record: &ClusterRecord) -> [u8; 32] {
    let mut digest = Sha256::new();
    for field in [
        record.server_url.as_str(),
        record.kubeconfig_sealed.as_str(),
        record.credential_expires_at.as_deref().unwrap_or_default(),
        record.updated_at.as_str(),
        record.declared_in.as_deref().unwrap_or_default(),
    ]
    .into_iter()
    .chain(record.namespaces.iter().map(String::as_str))
    {
        digest.update(field.as_bytes());
        digest.update([0]);
    }
    digest.finalize().into()
}

impl Registered {
    fn of(record: &ClusterRecord, insecure_tls: bool) -> Registered {
        Registered {
            server_url: record.server_url.clone(),
            namespaces: record.namespaces.clone(),
            credential_expires_at: record.credential_expires_at.clone(),
            insecure_tls,
            declared_in: record.declared_in.clone(),
            revision: revision(record),
        }
    }
}

/// The registry: store, sealer, status board and client cache.
pub struct Registry {
    pub(super) store: Store,
    pub(super) sealer: Sealer,
    /// Why declarations were not applied, by source (the `--clusters` file, the namespace of
    /// `Cluster` resources), as of each source's last reading.
    pub(super) declaration_problems: RwLock<BTreeMap<String, Vec<String>>>,
    /// The `--clusters` files whose last reading found no cluster after they had declared
    /// some (see [`Registry::hold_emptied`]).
    pub(super) emptied_files: Mutex<BTreeSet<String>>,
    /// Every registration by name, loaded from the store on first use, then kept in step by
    /// register, update and remove (after their store writes).
    board: tokio::sync::OnceCell<RwLock<BTreeMap<String, Registered>>>,
    /// Counts this process's own changes to the board, so that a refresh from a store listing
    /// taken before one of them does not undo it.
    board_changes: AtomicU64,
    /// The latest probe result of each cluster, this process's or another's (from the store).
    pub(super) statuses: Statuses,
    clients: ClientCache,
    /// How long a probe, or a read of a declared cluster's Secrets, may take.
    pub(super) probe_timeout: Duration,
    throttles: Arc<Throttles>,
}

impl Registry {
    /// A registry over `store`, sealing with `sealer`; probes give up after `probe_timeout`.
    pub fn new(store: Store, sealer: Sealer, probe_timeout: Duration) -> Registry {
        Registry {
            store,
            sealer,
            declaration_problems: RwLock::default(),
            emptied_files: Mutex::default(),
            board: tokio::sync::OnceCell::new(),
            board_changes: AtomicU64::new(0),
            statuses: Statuses::default(),
            clients: ClientCache::new(),
            probe_timeout,
            throttles: Arc::default(),
        }
    }

    /// Rate-limits the clients of registered clusters through `throttles` (shared with the
    /// resolver and `/metrics`) instead of private default ones.
    pub fn with_throttles(self, throttles: Arc<Throttles>) -> Registry {
        Registry { throttles, ..self }
    }

    /// The underlying store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The client cache (probing and resolution share it).
    pub fn clients(&self) -> &ClientCache {
        &self.clients
    }

    /// Records an audit entry with an `outcome` of the caller's wording (bounded by the store).
    pub(super) async fn audit(&self, actor: &str, action: &str, target: &str, outcome: &str) {
        self.store
            .record_audit(actor, action, target, outcome, &now_rfc3339())
            .await;
    }

    fn status_of(&self, name: &str) -> Status {
        self.statuses.get(name).unwrap_or_else(Status::pending)
    }

    /// Drops what this process and the store know of `name`'s connection: its cached client
    /// and its probe result (after a registration change, or its removal).
    pub(super) async fn forget(&self, name: &str) {
        self.forget_here(name);
        if let Err(error) = self.store.forget_probe(name).await {
            tracing::warn!(cluster = name, %error, "cannot drop the stored probe result");
        }
    }

    /// Drops what this process alone knows of `name`'s connection: its cached client and its
    /// probe result on the board (the store's row is the changer's to drop, see
    /// [`Registry::forget`]).
    fn forget_here(&self, name: &str) {
        self.clients.invalidate(name);
        self.statuses.remove(name);
    }

    async fn board(&self) -> Result<&RwLock<BTreeMap<String, Registered>>, RegistryError> {
        self.board
            .get_or_try_init(|| async {
                let records = self.store.list_clusters().await?;
                Ok::<_, RegistryError>(RwLock::new(
                    records
                        .iter()
                        .map(|r| (r.name.clone(), Registered::of(r, self.insecure_of(r))))
                        .collect(),
                ))
            })
            .await
    }

    /// Whether the stored kubeconfig of `record` skips TLS verification (false when it cannot
    /// be unsealed: the prober reports that).
    fn insecure_of(&self, record: &ClusterRecord) -> bool {
        self.sealer
            .open(&record.kubeconfig_sealed)
            .is_ok_and(|plain| kubeconfig::skips_tls_verify(&plain))
    }

    /// Records `record` on the board (after it was written to the store).
    pub(super) async fn board_put(
        &self,
        record: &ClusterRecord,
        insecure_tls: bool,
    ) -> Result<(), RegistryError> {
        let mut board = self.board().await?.write();
        board.insert(record.name.clone(), Registered::of(record, insecure_tls));
        self.board_changes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Removes `name` from the board (after it was deleted from the store).
    async fn board_remove(&self, name: &str) -> Result<(), RegistryError> {
        let mut board = self.board().await?.write();
        board.remove(name);
        self.board_changes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// How many changes this process made to the board so far: read before listing the store
    /// for [`Registry::refresh_board`].
    pub(super) fn board_changes(&self) -> u64 {
        self.board_changes.load(Ordering::SeqCst)
    }

    /// Brings the board in step with `records`, a listing of the store taken when this process
    /// had made `changes_seen` changes: registrations, updates and removals made through other
    /// processes sharing the store show up, and a removed or changed cluster's cached client
    /// and status are dropped. Skipped when this process changed the board since (the listing
    /// may predate that change; the next refresh brings it in step).
    pub(super) async fn refresh_board(
        &self,
        records: &[ClusterRecord],
        changes_seen: u64,
    ) -> Result<(), RegistryError> {
        let mut board = self.board().await?.write();
        if self.board_changes() != changes_seen {
            return Ok(());
        }
        let listed: HashMap<&str, &ClusterRecord> =
            records.iter().map(|r| (r.name.as_str(), r)).collect();
        let stale: Vec<String> = board
            .iter()
            .filter(|(name, registered)| {
                listed
                    .get(name.as_str())
                    .is_none_or(|record| revision(record) != registered.revision)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in &stale {
            board.remove(name);
            self.forget_here(name);
        }
        for record in records {
            if !board.contains_key(&record.name) {
                let insecure = self.insecure_of(record);
                board.insert(record.name.clone(), Registered::of(record, insecure));
            }
        }
        Ok(())
    }

    fn view(&self, name: &str, registered: &Registered) -> ClusterView {
        ClusterView {
            name: name.to_string(),
            server_url: registered.server_url.clone(),
            status: self.status_of(name),
            namespaces: registered.namespaces.clone(),
            unrestricted: registered.namespaces.is_empty(),
            insecure_tls: registered.insecure_tls,
            credential_expires_at: registered.credential_expires_at.clone(),
            declared_in: registered.declared_in.clone(),
        }
    }

    /// Validates a server URL and kubeconfig pair (one that skips TLS verification only when
    /// `allow_insecure_tls`); returns the credential expiry if known, and whether it skips TLS
    /// verification.
    pub(super) fn check(
        server_url: &str,
        kubeconfig: &str,
        allow_insecure_tls: bool,
    ) -> Result<(Option<String>, bool), ValidationError> {
        kubeconfig::check_server_url(server_url)?;
        let parsed = kubeconfig::validate(kubeconfig, server_url)?;
        let insecure = kubeconfig::check_tls(&parsed, allow_insecure_tls)?;
        Ok((credential_expiry(&parsed).map(rfc3339), insecure))
    }

    /// Audits that the cluster `name` was accepted with a kubeconfig skipping TLS verification.
    async fn audit_insecure(&self, actor: &str, name: &str, view: &ClusterView) {
        if view.insecure_tls {
            self.audit(
                actor,
                "cluster.insecure_tls",
                name,
                "allowed: the kubeconfig skips TLS verification (allow_insecure_tls)",
            )
            .await;
        }
    }

    /// Registers a cluster (audited as `cluster.register`).
    pub async fn register(
        &self,
        actor: &str,
        request: RegisterRequest,
    ) -> Result<ClusterView, RegistryError> {
        let name = request.name.clone();
        let result = self.register_inner(request).await;
        let view = self
            .store
            .audited(actor, "cluster.register", &name, result)
            .await?;
        self.audit_insecure(actor, &name, &view).await;
        Ok(view)
    }

    async fn register_inner(&self, request: RegisterRequest) -> Result<ClusterView, RegistryError> {
        kubeconfig::check_name(&request.name)?;
        kubeconfig::check_namespaces(&request.namespaces)?;
        let (expires, insecure) = Registry::check(
            &request.server_url,
            &request.kubeconfig,
            request.allow_insecure_tls,
        )?;
        let now = now_rfc3339();
        let record = ClusterRecord {
            name: request.name.clone(),
            server_url: request.server_url,
            kubeconfig_sealed: self.sealer.seal(&request.kubeconfig)?,
            namespaces: request.namespaces,
            credential_expires_at: expires,
            created_at: now.clone(),
            updated_at: now,
            declared_in: None,
        };
        match self.store.insert_cluster(&record).await {
            Err(StoreError::Duplicate(_)) => return Err(RegistryError::Duplicate(request.name)),
            other => other?,
        }
        self.forget(&record.name).await;
        self.board_put(&record, insecure).await?;
        Ok(self.view(&record.name, &Registered::of(&record, insecure)))
    }

    /// Updates a cluster (audited as `cluster.update`); drops its cached client.
    pub async fn update(
        &self,
        actor: &str,
        name: &str,
        request: UpdateRequest,
    ) -> Result<ClusterView, RegistryError> {
        let result = self.update_inner(name, request).await;
        let view = self
            .store
            .audited(actor, "cluster.update", name, result)
            .await?;
        self.audit_insecure(actor, name, &view).await;
        Ok(view)
    }

    async fn update_inner(
        &self,
        name: &str,
        request: UpdateRequest,
    ) -> Result<ClusterView, RegistryError> {
        let mut record = self
            .store
            .get_cluster(name)
            .await?
            .ok_or_else(|| RegistryError::NotFound(name.to_string()))?;
        refuse_declared(&record)?;
        if request.name.as_deref().is_some_and(|n| n != name) {
            return Err(ValidationError {
                field: "name".to_string(),
                reason: "differs from the cluster in the path (clusters cannot be renamed)"
                    .to_string(),
            }
            .into());
        }
        if let Some(namespaces) = request.namespaces {
            kubeconfig::check_namespaces(&namespaces)?;
            record.namespaces = namespaces;
        }
        let mut insecure = self.insecure_of(&record);
        if request.server_url.is_some()
            || request.kubeconfig.is_some()
            || request.allow_insecure_tls.is_some()
        {
            let server_url = request.server_url.unwrap_or(record.server_url.clone());
            let plain = match request.kubeconfig {
                Some(plain) => plain,
                None => self.sealer.open(&record.kubeconfig_sealed)?,
            };
            let allow = request.allow_insecure_tls.unwrap_or(insecure);
            let (expires, now_insecure) = Registry::check(&server_url, &plain, allow)?;
            record.credential_expires_at = expires;
            insecure = now_insecure;
            record.kubeconfig_sealed = self.sealer.seal(&plain)?;
            record.server_url = server_url;
        }
        record.updated_at = now_rfc3339();
        if !self.store.update_cluster(&record).await? {
            return Err(RegistryError::NotFound(name.to_string()));
        }
        self.forget(name).await;
        self.board_put(&record, insecure).await?;
        Ok(self.view(name, &Registered::of(&record, insecure)))
    }

    /// Removes a cluster (audited as `cluster.remove`); drops its cached client.
    pub async fn remove(&self, actor: &str, name: &str) -> Result<(), RegistryError> {
        let result = self.remove_inner(name, None).await;
        self.store
            .audited(actor, "cluster.remove", name, result)
            .await
    }

    /// Deletes cluster `name` from the store and the board: one registered through the API
    /// when `declared_in` is `None`, else one declared in that file.
    pub(super) async fn remove_inner(
        &self,
        name: &str,
        declared_in: Option<&str>,
    ) -> Result<(), RegistryError> {
        let record = self
            .store
            .get_cluster(name)
            .await?
            .ok_or_else(|| RegistryError::NotFound(name.to_string()))?;
        if declared_in.is_none() {
            refuse_declared(&record)?;
        }
        let result = match self.store.delete_cluster(name).await {
            Ok(true) => self.board_remove(name).await,
            Ok(false) => Err(RegistryError::NotFound(name.to_string())),
            Err(err) => Err(err.into()),
        };
        self.forget(name).await;
        result
    }

    /// Connects with an unregistered kubeconfig and reports, storing nothing but the audit
    /// entry `cluster.test`. Invalid input is an error; an unreachable cluster is a report.
    pub async fn test(&self, actor: &str, request: TestRequest) -> Result<Status, RegistryError> {
        let result = match Registry::check(
            &request.server_url,
            &request.kubeconfig,
            request.allow_insecure_tls,
        ) {
            Err(err) => Err(err.into()),
            Ok(_) => Ok(self.connect_and_probe(&request.kubeconfig).await),
        };
        let outcome = match &result {
            Ok(status) => match &status.error {
                None => "success: connected".to_string(),
                Some(error) => format!("success: disconnected: {error}"),
            },
            Err(err) => format!("failure: {err}"),
        };
        self.audit(actor, "cluster.test", &request.server_url, &outcome)
            .await;
        result
    }

    async fn connect_and_probe(&self, kubeconfig: &str) -> Status {
        let result = match connect::client_from_kubeconfig(kubeconfig, self.probe_timeout).await {
            Ok(client) => connect::probe(&client, self.probe_timeout).await,
            Err(err) => Err(err),
        };
        Status::from_probe(result)
    }

    /// Every cluster with its cached status, by name; answers from memory (the store is read
    /// once), never contacting a cluster nor waiting on a probe round.
    pub async fn list(&self) -> Result<Vec<ClusterView>, RegistryError> {
        let board = self.board().await?.read();
        Ok(board
            .iter()
            .map(|(name, registered)| self.view(name, registered))
            .collect())
    }

    /// Why declarations were not applied at each source's last reading (empty: all were, or
    /// nothing is declared).
    pub fn declaration_problems(&self) -> Vec<String> {
        self.declaration_problems
            .read()
            .values()
            .flatten()
            .cloned()
            .collect()
    }

    /// One cluster with its cached status. The registration is read from the store, not the
    /// board: another replica may have registered, changed or removed it since this one's last
    /// refresh, and a client that did so there and asks here by name must see its change.
    pub async fn get(&self, name: &str) -> Result<ClusterView, RegistryError> {
        match self.store.get_cluster(name).await? {
            Some(record) => {
                Ok(self.view(name, &Registered::of(&record, self.insecure_of(&record))))
            }
            None => Err(RegistryError::NotFound(name.to_string())),
        }
    }

    /// The unsealed registration of `name`, for the internal endpoint and local resolution.
    pub async fn resolve(&self, name: &str) -> Result<ResolvedCluster, RegistryError> {
        let record = self
            .store
            .get_cluster(name)
            .await?
            .ok_or_else(|| RegistryError::NotFound(name.to_string()))?;
        Ok(ResolvedCluster {
            kubeconfig: self.sealer.open(&record.kubeconfig_sealed)?,
            name: record.name,
            server_url: record.server_url,
            namespaces: record.namespaces,
        })
    }

    /// Rewrites every sealed kubeconfig under the current key (audited as `cluster.reseal`).
    pub async fn reseal(&self, actor: &str) -> Result<usize, RegistryError> {
        let result = match self
            .store
            .reseal_clusters(|blob| self.sealer.reseal(blob))
            .await
        {
            Ok(Ok(count)) => Ok(count),
            Ok(Err(err)) => Err(err.into()),
            Err(err) => Err(err.into()),
        };
        self.store
            .audited(actor, "cluster.reseal", "*", result)
            .await
    }

    /// A cached client for a registered cluster, built on first use.
    pub async fn cached_cluster(&self, name: &str) -> Result<CachedCluster, ResolveFailure> {
        if let Some(entry) = self.clients.get(name) {
            return Ok(entry);
        }
        let entry = self.build_client(name).await?;
        self.clients.insert(name, entry.clone());
        Ok(entry)
    }

    /// A fresh client for a registered cluster, not cached.
    pub(super) async fn build_client(&self, name: &str) -> Result<CachedCluster, ResolveFailure> {
        let resolved = self.resolve(name).await.map_err(ResolveFailure::Registry)?;
        let client = connect::throttled_client_from_kubeconfig(
            &resolved.kubeconfig,
            self.probe_timeout,
            &self.throttles.layer(name),
        )
        .await
        .map_err(ResolveFailure::Connect)?;
        Ok(CachedCluster::new(
            client,
            resolved.namespaces,
            resolved.server_url,
            &resolved.kubeconfig,
        ))
    }

    /// Runs the access reviews of `request` on `name` with its stored credentials (audited as
    /// `cluster.check`). An unreachable cluster is a report, an unknown one an error.
    pub async fn check_access(
        &self,
        actor: &str,
        name: &str,
        request: CheckRequest,
    ) -> Result<CheckReport, RegistryError> {
        let result = match request.validate() {
            Err(err) => Err(err.into()),
            Ok(()) => match self.cached_cluster(name).await {
                Ok(entry) => {
                    Ok(access::check(name, &entry.client, &request, self.probe_timeout).await)
                }
                Err(ResolveFailure::Connect(err)) => Ok(CheckReport::disconnected(name, &err)),
                Err(ResolveFailure::Registry(err)) => Err(err),
            },
        };
        let outcome = match &result {
            Ok(report) => match &report.error {
                Some(error) => format!("success: disconnected: {error}"),
                None => format!(
                    "success: {} of {} allowed",
                    report.checks.len() - report.denied().count(),
                    report.checks.len()
                ),
            },
            Err(err) => format!("failure: {err}"),
        };
        self.audit(actor, "cluster.check", name, &outcome).await;
        result
    }
}

/// Why a cached client could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ResolveFailure {
    /// Unknown cluster, or the registration cannot be read.
    #[error(transparent)]
    Registry(RegistryError),
    /// The kubeconfig does not yield a client.
    #[error(transparent)]
    Connect(ConnectError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_over_long_audit_target_is_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        store
            .init_audit(crate::store::audit::tests::test_keys())
            .await
            .unwrap();
        let registry = Registry::new(
            store.clone(),
            Sealer::new(&[7; 32], None),
            Duration::from_secs(1),
        );
        let name = "c".repeat(400);
        let removed = registry.remove("admin", &name).await;
        assert!(
            matches!(removed, Err(RegistryError::NotFound(_))),
            "{removed:?}"
        );
        let (entries, _) = store.audit_log().await.unwrap();
        assert_eq!(entries[0].action, "cluster.remove");
        assert_eq!(entries[0].target, crate::store::audit::bounded(&name));
        assert_eq!(
            entries[0].target.chars().count(),
            crate::store::audit::MAX_FIELD_CHARS
        );
        store.close().await;
    }
}
