//! The runner in a sharded fleet (`--shards auto`): it passes only the Apps whose destination
//! cluster this replica owns, fences every write of a pass ([`Membership::fence`]), publishes
//! statuses only of owned Apps, and follows the fleet's changes. It holds the statuses of the
//! Apps of the clusters it owns or loads; the others' are read from the store, where their
//! owner writes them, when the API asks. When it takes a cluster over, it first reloads its
//! Apps' statuses from the store (a Held plan stays Held with its hash) and then passes them.

use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::Timestamp;
use serde_json::value::RawValue;

use super::Runner;
use super::status_cell::StatusCell;
use crate::reconcile::status;
use crate::shard::Membership;

/// Every how many steps of following the fleet all statuses are reloaded, not only the
/// recently written ones.
const FULL_RELOAD_EVERY: u64 = 12;

/// One live replica and the destination clusters of the managed Apps it owns.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ShardEntry {
    /// The replica id.
    pub replica: String,
    /// When its Lease expires unless renewed.
    pub lease_expires_at: Timestamp,
    /// The clusters it owns: claims, or is taking over (segments; `local`: the management
    /// cluster), sorted.
    pub clusters: Vec<String>,
    /// How many Apps deploy to them.
    pub apps: usize,
}

impl Runner {
    /// Makes this runner one replica of a sharded fleet with `membership`; only the first call
    /// counts. Starts following the fleet's changes.
    pub fn set_sharding(self: &Arc<Self>, membership: Arc<Membership>) {
        let mut changes = membership.subscribe();
        if self.sharding.set(membership).is_err() {
            return;
        }
        if let (Some(store), Some(membership)) = (&self.store, self.sharding.get()) {
            let handovers = tokio::spawn(
                Arc::clone(self)
                    .serve_handovers(Arc::new(store.clone()), membership.replica_id().to_string()),
            );
            self.tasks.lock().push(handovers);
        }
        let this = Arc::clone(self);
        let follow = tokio::spawn(async move {
            let mut owned = BTreeSet::new();
            let mut since = None;
            for step in 0u64.. {
                // A full reload now and then catches Apps added after their owner last wrote.
                if step % FULL_RELOAD_EVERY == 0 {
                    since = None;
                }
                (owned, since) = this.follow(owned, since).await;
                if changes.changed().await.is_err() {
                    return;
                }
            }
        });
        self.tasks.lock().push(follow);
    }

    /// The fleet membership, when sharded.
    pub fn sharding(&self) -> Option<&Arc<Membership>> {
        self.sharding.get()
    }

    /// Whether this process passes Apps deploying to `cluster` (a segment): always unless
    /// sharded.
    pub(super) fn owns_cluster(&self, cluster: &str) -> bool {
        self.sharding.get().is_none_or(|m| m.owns(cluster))
    }

    /// Whether this process holds the statuses of the Apps deploying to `cluster` in memory:
    /// always unless sharded, else when it owned or loaded the cluster at the last step of
    /// following the fleet (the statuses are reloaded before a cluster counts as held).
    pub(super) fn status_held(&self, cluster: &str) -> bool {
        self.sharding.get().is_none() || self.held.lock().contains(cluster)
    }

    /// The clusters whose statuses this process holds, copied under one lock for many
    /// lookups ([`Runner::status_held`] for each); `None` when not sharded (all of them).
    pub(super) fn held_clusters(&self) -> Option<BTreeSet<String>> {
        self.sharding.get().map(|_| self.held.lock().clone())
    }

    /// Whether this process loads (follows the source of, renders and plans) the Apps
    /// deploying to `cluster`: always unless sharded, else when the live replicas route the
    /// cluster here ([`Membership::routes_here`]).
    pub(super) fn routes_here(&self, cluster: &str) -> bool {
        self.sharding.get().is_none_or(|m| m.routes_here(cluster))
    }

    /// Loads the Apps now routed here that are not loaded yet, and unloads the loaded ones
    /// now routed to another replica, so a replica holds the rendered manifests, source
    /// subscriptions and drift watches of its share only. Called at every step of following
    /// the fleet, so an App added while ownership moved is caught at the next renewal.
    async fn rebalance(&self) {
        let (load, unload): (Vec<String>, Vec<String>) = {
            let apps = self.apps.lock();
            let mut load = Vec::new();
            let mut unload = Vec::new();
            for (key, record) in apps.iter() {
                let routed = self.routes_here(record.app.spec.destination.cluster_segment());
                match (routed, record.loaded) {
                    (true, false) => load.push(key.clone()),
                    (false, true) => unload.push(key.clone()),
                    _ => {}
                }
            }
            (load, unload)
        };
        if !load.is_empty() || !unload.is_empty() {
            tracing::info!(
                load = load.len(),
                unload = unload.len(),
                "following the fleet: loading the Apps routed here, unloading the others"
            );
        }
        for key in &unload {
            self.unload(key);
        }
        for key in &load {
            self.load(key).await;
        }
    }

    /// Stops following App `key`'s source and drops its rendered manifests, render-cache
    /// entry and drift watches (another replica loads it); its spec stays, for the API, and
    /// its status until the cluster stops being held ([`Runner::status_held`]).
    pub(super) fn unload(&self, key: &str) {
        {
            let mut apps = self.apps.lock();
            let Some(record) = apps.get_mut(key) else {
                return;
            };
            record.loaded = false;
            record.watch = None;
            record.manifests = None;
            record.verified = None;
        }
        self.poller.unsubscribe(key);
        self.cache.remove(key);
        self.upkeep.forget(key);
    }

    /// Subscribes App `key` to its source (its first snapshot renders it and enqueues a pass);
    /// a source that cannot be started is the App's Failed status.
    async fn load(&self, key: &str) {
        // Loaded before subscribing: the source's first update may arrive meanwhile.
        let found = self
            .apps
            .lock()
            .get_mut(key)
            .filter(|r| !r.loaded)
            .map(|r| {
                r.loaded = true;
                (r.app.spec.source.validate(), r.source_key.clone())
            });
        let Some((source, source_key)) = found else {
            return;
        };
        let subscribed = match source {
            Ok(source) => self.subscribe(key, source).await,
            Err(source) => Err(super::RunnerError::Spec {
                app: key.to_string(),
                source,
            }),
        };
        match subscribed {
            Ok(watch) => {
                let mut apps = self.apps.lock();
                // Unless the App changed its source meanwhile (its upsert subscribes it).
                if let Some(record) = apps.get_mut(key).filter(|r| r.source_key == source_key) {
                    record.watch = watch;
                }
            }
            Err(e) => {
                if let Some(record) = self.apps.lock().get_mut(key) {
                    record.loaded = false;
                }
                tracing::warn!(app = %key, error = %e, "cannot load an App routed here");
                let previous = self.status(key).unwrap_or_default();
                let failed = status::failed(&previous, &e.to_string(), Timestamp::now());
                self.record(key, failed);
            }
        }
    }

    /// Drops the statuses of the Apps whose cluster is not in `held` (their owner stores
    /// them; the API reads them there).
    fn drop_statuses_not_held(&self, held: &BTreeSet<String>) {
        for record in self.apps.lock().values_mut() {
            if !held.contains(record.app.spec.destination.cluster_segment()) {
                record.status = StatusCell::default();
            }
        }
    }

    /// How many managed Apps this process loads, how many of those are rendered, and how many
    /// statuses it holds.
    fn loaded_counts(&self) -> (usize, usize, usize) {
        let apps = self.apps.lock();
        let loaded = apps.values().filter(|r| r.loaded).count();
        let rendered = apps.values().filter(|r| r.manifests.is_some()).count();
        let statuses = apps.values().filter(|r| r.status.is_held()).count();
        (loaded, rendered, statuses)
    }

    /// The destination cluster segment of App `key`.
    pub(super) fn cluster_of(&self, key: &str) -> Option<String> {
        self.apps
            .lock()
            .get(key)
            .map(|r| r.app.spec.destination.cluster_segment().to_string())
    }

    /// Whether this process may write for App `key` now (see [`Membership::fence`]).
    pub(super) fn fence_app(&self, key: &str) -> Result<(), String> {
        let (Some(membership), Some(cluster)) = (self.sharding.get(), self.cluster_of(key)) else {
            return Ok(());
        };
        membership.fence(&cluster).map_err(|e| e.to_string())
    }

    /// Remembers that App `key` needs a pass once this replica owns its cluster (again): its
    /// pass was skipped or fenced off, or a status it produced was dropped, while this replica
    /// did not own the cluster (or had let its Lease lapse).
    pub(super) fn park(&self, key: &str) {
        self.parked.lock().insert(key.to_string());
    }

    /// When this replica may not write for App `key` now, the owner of its cluster
    /// ([`crate::shard::View::owner`]: another replica, this one while its claim is not yet
    /// effective, or `none`) or, on a `--role server` process, the operator that reconciles
    /// it; `None` when it may.
    pub(super) fn elsewhere(&self, key: &str) -> Option<String> {
        if let Some(operator) = self.operator_of(key) {
            return Some(operator);
        }
        let membership = self.sharding.get()?;
        let cluster = self.cluster_of(key)?;
        if membership.owns(&cluster) {
            return None;
        }
        Some(
            membership
                .view()
                .owner(&cluster)
                .unwrap_or("none")
                .to_string(),
        )
    }

    /// One step of following the fleet: the owned clusters now, against `before`. The
    /// replica holds the statuses of the Apps of the clusters it owns or is routed (the held
    /// clusters) and drops the others' (the API reads them from the store). Statuses of held
    /// Apps it does not own yet are reloaded from the store (their owner writes them): those
    /// written since `since` (a minute earlier than the last step began, for clock skew and
    /// second precision), or all of them whenever a cluster was just taken over, whose Apps
    /// then pass, or just became held. Returns the owned clusters and the next `since`
    /// (unchanged when the store could not be read: the step is retried).
    async fn follow(
        &self,
        before: BTreeSet<String>,
        since: Option<String>,
    ) -> (BTreeSet<String>, Option<String>) {
        let clusters: BTreeSet<String> = self
            .apps
            .lock()
            .values()
            .map(|r| r.app.spec.destination.cluster_segment().to_string())
            .collect();
        // Membership divides these among the replicas (the desired share, then claims).
        if let Some(membership) = self.sharding.get() {
            membership.set_clusters(clusters.clone());
        }
        let owned: BTreeSet<String> = clusters
            .iter()
            .filter(|c| self.owns_cluster(c))
            .cloned()
            .collect();
        let taken: BTreeSet<&str> = owned.difference(&before).map(String::as_str).collect();
        for lost in before.difference(&owned) {
            tracing::info!(cluster = %lost, "cluster handed over to another replica");
        }
        let held: BTreeSet<String> = clusters
            .iter()
            .filter(|c| owned.contains(*c) || self.routes_here(c))
            .cloned()
            .collect();
        // Clusters no longer held stop counting as held before their statuses go; new ones
        // count once their statuses are reloaded (below), so a read never finds a gap.
        let (fresh, left): (BTreeSet<String>, BTreeSet<String>) = {
            let mut still = self.held.lock();
            let left = still
                .iter()
                .filter(|c| !held.contains(*c))
                .cloned()
                .collect();
            still.retain(|c| held.contains(c));
            (held.difference(&still).cloned().collect(), left)
        };
        self.drop_statuses_not_held(&held);
        // Nothing here deploys to a cluster no longer held: its client (and connections) go;
        // the prober builds one per probe, and a new owner its own.
        for cluster in &left {
            self.resolver.invalidate(cluster);
        }
        let next = crate::time::rfc3339(
            Timestamp::now()
                .checked_sub(jiff::SignedDuration::from_secs(60))
                .unwrap_or(Timestamp::UNIX_EPOCH),
        );
        if let Some(store) = &self.store {
            // Row by row, each App's text taken as it comes (parsed only when read).
            let from = since
                .as_deref()
                .filter(|_| taken.is_empty() && fresh.is_empty());
            let reloaded = store
                .each_app_status::<Box<RawValue>>(from, |record| {
                    let mut apps = self.apps.lock();
                    let Some(app) = apps.get_mut(&record.key) else {
                        return;
                    };
                    let cluster = app.app.spec.destination.cluster_segment();
                    let reload = !owned.contains(cluster)
                        || taken.contains(cluster)
                        || fresh.contains(cluster);
                    if held.contains(cluster) && reload {
                        app.status.store_text(record.status);
                    }
                })
                .await;
            if let Err(e) = reloaded {
                tracing::warn!(error = %e, "cannot reload App statuses; clusters taken over wait");
                return (before, since);
            }
        } else {
            // An operator: the statuses of the clusters it takes over are its server's.
            let reload: BTreeSet<String> = owned
                .iter()
                .filter(|c| taken.contains(c.as_str()) || fresh.contains(*c))
                .cloned()
                .collect();
            if let Err(e) = self.reload_from_server(&reload).await {
                tracing::warn!(error = %e, "cannot read App statuses back from the server; clusters taken over wait");
                return (before, since);
            }
        }
        *self.held.lock() = held;
        // The Apps of the clusters just taken over, and the parked ones whose cluster this
        // replica owns now.
        let keys: BTreeSet<String> = {
            let apps = self.apps.lock();
            let mut keys = BTreeSet::new();
            self.parked.lock().retain(|key| match apps.get(key) {
                None => false,
                Some(r) if owned.contains(r.app.spec.destination.cluster_segment()) => {
                    if r.manifests.is_some() {
                        keys.insert(key.clone());
                    }
                    false
                }
                Some(_) => true,
            });
            for (key, r) in apps.iter() {
                let cluster = r.app.spec.destination.cluster_segment();
                if r.manifests.is_some() && taken.contains(cluster) {
                    keys.insert(key.clone());
                }
            }
            keys
        };
        for cluster in &taken {
            tracing::info!(cluster = %cluster, "cluster taken over");
        }
        for key in keys {
            self.scheduler.enqueue(key);
        }
        self.rebalance().await;
        (owned, Some(next))
    }

    /// The live replicas with the clusters of the managed Apps each owns (empty unless
    /// sharded), for `GET /api/v1/shards`.
    pub fn shards(&self) -> Vec<ShardEntry> {
        let Some(membership) = self.sharding.get() else {
            return Vec::new();
        };
        let view = membership.view();
        let mut entries: Vec<ShardEntry> = view
            .replicas
            .iter()
            .map(|r| ShardEntry {
                replica: r.id.clone(),
                lease_expires_at: r.expires_at,
                clusters: Vec::new(),
                apps: 0,
            })
            .collect();
        for (cluster, apps) in self.apps_per_cluster() {
            let Some(owner) = view.owner(&cluster) else {
                continue;
            };
            if let Some(entry) = entries.iter_mut().find(|e| e.replica == owner) {
                entry.clusters.push(cluster);
                entry.apps += apps;
            }
        }
        entries
    }

    /// How many of the Apps this process knows deploy to each destination cluster (segments):
    /// its own, and on a `--role server` process those its operators report.
    pub fn apps_per_cluster(&self) -> std::collections::BTreeMap<String, usize> {
        let mut clusters: std::collections::BTreeMap<String, usize> = Default::default();
        for record in self.apps.lock().values() {
            let cluster = record.app.spec.destination.cluster_segment().to_string();
            *clusters.entry(cluster).or_default() += 1;
        }
        clusters
    }

    /// The Prometheus lines of this replica's share: owned clusters and Apps, what it loads
    /// and holds, and the clients it keeps (absent unless sharded).
    pub(super) fn shard_metrics(&self) -> String {
        let Some(membership) = self.sharding.get() else {
            return String::new();
        };
        let me = membership.replica_id();
        let (clusters, apps) = self
            .shards()
            .into_iter()
            .find(|e| e.replica == me)
            .map(|e| (e.clusters.len(), e.apps))
            .unwrap_or_default();
        let live = membership.view().replicas.len();
        let (loaded, rendered, statuses) = self.loaded_counts();
        let clients = self.resolver.cached_clients();
        format!(
            "# HELP wardn_shard_owned_clusters Destination clusters this replica owns.\n\
             # TYPE wardn_shard_owned_clusters gauge\n\
             wardn_shard_owned_clusters{{replica=\"{me}\"}} {clusters}\n\
             # HELP wardn_shard_owned_apps Apps deploying to the clusters this replica owns.\n\
             # TYPE wardn_shard_owned_apps gauge\n\
             wardn_shard_owned_apps{{replica=\"{me}\"}} {apps}\n\
             # HELP wardn_shard_live_replicas Replicas whose Lease this replica sees live.\n\
             # TYPE wardn_shard_live_replicas gauge\n\
             wardn_shard_live_replicas{{replica=\"{me}\"}} {live}\n\
             # HELP wardn_shard_loaded_apps Apps whose source this replica follows, renders and plans.\n\
             # TYPE wardn_shard_loaded_apps gauge\n\
             wardn_shard_loaded_apps{{replica=\"{me}\"}} {loaded}\n\
             # HELP wardn_shard_rendered_apps Apps whose rendered manifests this replica holds.\n\
             # TYPE wardn_shard_rendered_apps gauge\n\
             wardn_shard_rendered_apps{{replica=\"{me}\"}} {rendered}\n\
             # HELP wardn_shard_held_statuses App statuses this replica holds in memory (those of the clusters it owns or loads).\n\
             # TYPE wardn_shard_held_statuses gauge\n\
             wardn_shard_held_statuses{{replica=\"{me}\"}} {statuses}\n\
             # HELP wardn_shard_cluster_clients Destination clusters this replica keeps a client for (those it works on).\n\
             # TYPE wardn_shard_cluster_clients gauge\n\
             wardn_shard_cluster_clients{{replica=\"{me}\"}} {clients}\n"
        )
    }
}
