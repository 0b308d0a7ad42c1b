//! Membership through Kubernetes Leases (`coordination.k8s.io/v1`): each replica holds the
//! Lease `wardn-shard-<replica id>` in the management cluster, labelled
//! [`LEASE_LABEL`]`=true`, and renews it every `renew_every`. The live replicas are the
//! labelled Leases whose `renewTime + leaseDurationSeconds` lies ahead. Which replica owns a
//! destination cluster follows by [`rendezvous`](super::rendezvous) hashing over them.
//!
//! Two replicas must never write to one cluster at once, so both directions of a move are
//! conservative. A replica counts its own Lease as held only until `lease_duration −
//! renew_every` after the start of its last successful renewal: a replica that cannot renew
//! (partitioned, paused, overloaded) stops writing before the others may see its Lease expire.
//! A replica that joins takes clusters only after it has held its Lease for two renewal
//! periods, by when every other replica has listed the Leases again and let them go. The
//! Lease's `renewTime` is compared with each reader's wall clock, so the replicas' clocks must
//! agree within `renew_every` (NTP does much better).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use parking_lot::Mutex;
use tokio::sync::{oneshot, watch};

use super::rendezvous;

/// The label every shard Lease carries (value `true`), to list them.
pub const LEASE_LABEL: &str = "cd.wardn.space/shard-lease";
/// The annotation naming the process holding a Lease: a replica id started twice is refused.
const INSTANCE_ANNOTATION: &str = "cd.wardn.space/instance";
/// The prefix of every shard Lease's name.
pub const LEASE_PREFIX: &str = "wardn-shard-";

/// How a replica takes part in the fleet.
#[derive(Debug, Clone)]
pub struct ShardConfig {
    /// This replica's id (`--replica-id`, else `POD_NAME`, else `<hostname>-<pid>`).
    pub replica_id: String,
    /// The namespace of the Leases in the management cluster (`--lease-namespace`).
    pub namespace: String,
    /// How long a Lease lasts without renewal (`--lease-duration`, 15 s by default).
    pub lease_duration: Duration,
    /// How often the Lease is renewed and the others listed (a third of the duration).
    pub renew_every: Duration,
}

impl ShardConfig {
    /// Settings for `replica_id` in `namespace` with a Lease of `lease_duration`, renewed every
    /// third of it. Refuses an id that cannot name a Lease, and a duration under 3 s.
    pub fn new(
        replica_id: &str,
        namespace: &str,
        lease_duration: Duration,
    ) -> Result<ShardConfig, ShardError> {
        check_replica_id(replica_id)?;
        if lease_duration < Duration::from_secs(3) {
            return Err(ShardError::Config(format!(
                "--lease-duration {}s: must be at least 3s (renewed every third of it)",
                lease_duration.as_secs_f64()
            )));
        }
        Ok(ShardConfig {
            replica_id: replica_id.to_string(),
            namespace: namespace.to_string(),
            lease_duration,
            renew_every: lease_duration / 3,
        })
    }

    /// The name of this replica's Lease.
    pub fn lease_name(&self) -> String {
        format!("{LEASE_PREFIX}{}", self.replica_id)
    }
}

/// Refuses a replica id that cannot be part of a Lease name (a DNS subdomain: lowercase
/// letters, digits, `-` and `.`, starting and ending alphanumeric, at most 200 characters).
pub fn check_replica_id(id: &str) -> Result<(), ShardError> {
    let bad = |reason: &str| Err(ShardError::Config(format!("--replica-id {id:?}: {reason}")));
    if id.is_empty() {
        return bad("must not be empty");
    }
    if id.len() > 200 {
        return bad("longer than 200 characters");
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    {
        return bad("only lowercase letters, digits, '-' and '.' are allowed");
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(id.chars().next()) || !alnum(id.chars().last()) {
        return bad("must start and end with a letter or digit");
    }
    Ok(())
}

/// The default replica id: `POD_NAME` when set, else `<hostname>-<pid>` (lowercased, other
/// characters turned into `-`).
pub fn default_replica_id() -> String {
    if let Some(pod) = std::env::var("POD_NAME").ok().filter(|p| !p.is_empty()) {
        return pod;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "wardn".to_string());
    let host: String = host
        .trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let host = host.trim_matches('-');
    let host = if host.is_empty() { "wardn" } else { host };
    format!("{host}-{}", std::process::id())
}

/// Why membership failed.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    /// A setting is unusable.
    #[error("{0}")]
    Config(String),
    /// The management cluster refused or failed a Lease request.
    #[error("Lease {lease} in namespace {namespace}: {message}")]
    Lease {
        /// The Lease's name.
        lease: String,
        /// Its namespace.
        namespace: String,
        /// What failed.
        message: String,
    },
    /// Another live process holds this replica id.
    #[error(
        "replica id {replica}: Lease {lease} is held by another running process (instance {holder}); give each replica its own --replica-id"
    )]
    Duplicate {
        /// The replica id.
        replica: String,
        /// The Lease's name.
        lease: String,
        /// The other process's instance.
        holder: String,
    },
}

/// Why a write was fenced off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fenced {
    /// This replica's Lease is no longer known to be held.
    #[error("replica {0} no longer holds its Lease; the pass stops before writing")]
    LeaseLost(String),
    /// Another replica owns the cluster now.
    #[error(
        "cluster {cluster} is owned by replica {owner} now, not {replica}; the pass stops before writing"
    )]
    NotOwner {
        /// The cluster.
        cluster: String,
        /// This replica.
        replica: String,
        /// The owner (`none` when no replica is live).
        owner: String,
    },
}

/// One live replica as its Lease shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Replica {
    /// The replica id.
    pub id: String,
    /// When its Lease expires unless renewed.
    pub expires_at: Timestamp,
}

/// What a replica knows of the fleet at one moment.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The live replicas (this one included once its Lease is listed), sorted by id.
    pub replicas: Vec<Replica>,
    /// Until when this replica may write: its last renewal's start + duration − renew period.
    held_until: Option<Instant>,
    /// Whether this replica has held its Lease long enough to take clusters.
    settled: bool,
}

impl View {
    /// The replica among the live ones that owns `cluster`.
    pub fn owner(&self, cluster: &str) -> Option<&str> {
        rendezvous::owner(self.replicas.iter().map(|r| r.id.as_str()), cluster)
    }
}

/// This replica's membership: its Lease, renewed in the background, and the live replicas.
///
/// The Lease is renewed on a thread of its own with its own runtime and its own connection to
/// the management cluster, so a process whose main runtime is saturated (a cold start of
/// thousands of Apps, a burst of renders) still renews on time instead of fencing itself off
/// and losing its clusters to the others.
pub struct Membership {
    config: ShardConfig,
    /// Leases in the management cluster, through the renewal thread's client.
    api: Api<Lease>,
    /// A random id of this process, written into the Lease.
    instance: String,
    view: watch::Sender<View>,
    /// When this process first held its Lease.
    joined: Instant,
    /// Set by [`Membership::leave`]: the renewal thread deletes the Lease and ends.
    stop: watch::Sender<bool>,
    /// Resolves (with an error, its sender dropped) once the renewal thread has ended.
    stopped: Mutex<Option<oneshot::Receiver<()>>>,
}

impl Membership {
    /// Takes this replica's Lease in the management cluster (`kube_config`) and starts renewing
    /// it and listing the others on the renewal thread. Fails when the Lease cannot be written,
    /// or another live process holds the same replica id.
    pub async fn start(
        kube_config: kube::Config,
        config: ShardConfig,
    ) -> Result<Arc<Membership>, ShardError> {
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(|e| ShardError::Config(e.to_string()))?;
        let (ready_tx, ready_rx) = oneshot::channel();
        let (stopped_tx, stopped_rx) = oneshot::channel::<()>();
        let thread_error = |e: &dyn std::fmt::Display| {
            ShardError::Config(format!("cannot start the Lease renewal thread: {e}"))
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| thread_error(&e))?;
        std::thread::Builder::new()
            .name("wardn-lease".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let client = match kube::Client::try_from(kube_config) {
                        Ok(client) => client,
                        Err(e) => {
                            let _ = ready_tx.send(Err(ShardError::Config(format!(
                                "the management cluster's client for Leases: {e}"
                            ))));
                            return;
                        }
                    };
                    let (stop, stop_rx) = watch::channel(false);
                    let membership = Arc::new(Membership {
                        api: Api::namespaced(client, &config.namespace),
                        config,
                        instance: hex::encode(nonce),
                        view: watch::Sender::new(View::default()),
                        joined: Instant::now(),
                        stop,
                        stopped: Mutex::new(Some(stopped_rx)),
                    });
                    if let Err(e) = membership.tick(true).await {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                    let weak = Arc::downgrade(&membership);
                    if ready_tx.send(Ok(membership)).is_ok() {
                        renew_until_stopped(weak, stop_rx).await;
                    }
                });
                drop(stopped_tx);
            })
            .map_err(|e| thread_error(&e))?;
        let membership = ready_rx.await.map_err(|e| thread_error(&e))??;
        tracing::info!(
            replica = %membership.config.replica_id,
            lease = %membership.config.lease_name(),
            namespace = %membership.config.namespace,
            "joined the fleet"
        );
        Ok(membership)
    }

    /// This replica's id.
    pub fn replica_id(&self) -> &str {
        &self.config.replica_id
    }

    /// The settings.
    pub fn config(&self) -> &ShardConfig {
        &self.config
    }

    /// The current view of the fleet.
    pub fn view(&self) -> View {
        self.view.borrow().clone()
    }

    /// Changes of the view (every renewal publishes one).
    pub fn subscribe(&self) -> watch::Receiver<View> {
        self.view.subscribe()
    }

    /// Whether the live replicas and this one route `cluster` here (rendezvous hashing over
    /// the current view, with this replica counted live even while its own Lease shows
    /// expired), whether or not it may write there: the Apps of such clusters are the ones
    /// this replica loads, renders and plans. Unlike [`Membership::owns`], a renewal that came
    /// late (an overloaded or paused process) does not unload and reload every App; fencing
    /// alone keeps such a replica from writing. Nothing is routed here before this replica has
    /// settled (two renewal periods, by when it has listed the replicas that started with it):
    /// otherwise the first replica of a fleet starting together would load and render every
    /// App, only to drop most of them moments later, and the memory of that peak stays with
    /// the process.
    pub fn routes_here(&self, cluster: &str) -> bool {
        let me = self.config.replica_id.as_str();
        let view = self.view.borrow();
        if !view.settled {
            return false;
        }
        let others = view
            .replicas
            .iter()
            .map(|r| r.id.as_str())
            .filter(|id| *id != me);
        rendezvous::owner(others.chain([me]), cluster) == Some(me)
    }

    /// Whether this replica may write to `cluster` now; see [`Membership::fence`].
    pub fn owns(&self, cluster: &str) -> bool {
        self.fence(cluster).is_ok()
    }

    /// `Ok` when this replica holds its Lease (renewed recently enough), has settled, and is
    /// the owner of `cluster` among the live replicas; checked before every apply and prune.
    pub fn fence(&self, cluster: &str) -> Result<(), Fenced> {
        let view = self.view.borrow();
        let me = &self.config.replica_id;
        let held = view.held_until.is_some_and(|until| Instant::now() < until);
        if !held || !view.settled {
            return Err(Fenced::LeaseLost(me.clone()));
        }
        match view.owner(cluster) {
            Some(owner) if owner == me => Ok(()),
            other => Err(Fenced::NotOwner {
                cluster: cluster.to_string(),
                replica: me.clone(),
                owner: other.unwrap_or("none").to_string(),
            }),
        }
    }

    /// Stops renewing and deletes this replica's Lease, so the others take its clusters at
    /// once instead of after the Lease expires. Call after the last write.
    pub async fn leave(&self) {
        self.stop.send_replace(true);
        self.view.send_modify(|v| v.held_until = None);
        let stopped = self.stopped.lock().take();
        if let Some(stopped) = stopped {
            let _ = stopped.await;
        }
    }

    /// Deletes this replica's Lease (leaving the fleet).
    async fn delete_lease(&self) {
        let name = self.config.lease_name();
        match self.api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(lease = %name, "left the fleet: Lease deleted"),
            Err(e) => tracing::warn!(lease = %name, error = %e, "leaving: Lease not deleted"),
        }
    }

    /// Renews this replica's Lease, then lists the fleet and publishes the view.
    async fn tick(&self, first: bool) -> Result<(), ShardError> {
        let started = Instant::now();
        let renewed = self.renew(first).await;
        let held_until = match &renewed {
            Ok(()) => Some(started + self.config.lease_duration - self.config.renew_every),
            Err(ShardError::Duplicate { .. }) => None,
            Err(_) => self.view.borrow().held_until,
        };
        let listed = self.list().await;
        let settled = self.joined.elapsed() >= self.config.renew_every * 2;
        self.view.send_modify(|view| {
            // A renewal that ends after `leave` does not make the Lease held again.
            view.held_until = held_until.filter(|_| !*self.stop.borrow());
            view.settled = settled;
            if let Ok(replicas) = &listed {
                view.replicas = replicas.clone();
            }
        });
        renewed?;
        listed.map(|_| ())
    }

    fn error(&self, e: impl std::fmt::Display) -> ShardError {
        ShardError::Lease {
            lease: self.config.lease_name(),
            namespace: self.config.namespace.clone(),
            message: e.to_string(),
        }
    }

    /// Creates or renews this replica's Lease. Another process's live Lease under the same
    /// name is [`ShardError::Duplicate`].
    async fn renew(&self, first: bool) -> Result<(), ShardError> {
        let name = self.config.lease_name();
        let now = Timestamp::now();
        let existing = self.api.get_opt(&name).await.map_err(|e| self.error(e))?;
        let Some(mut lease) = existing else {
            let lease = self.lease(now, None);
            self.api
                .create(&PostParams::default(), &lease)
                .await
                .map_err(|e| self.error(e))?;
            return Ok(());
        };
        let holder = lease
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(INSTANCE_ANNOTATION))
            .cloned()
            .unwrap_or_default();
        if holder != self.instance && (!first || expires_at(&lease).is_some_and(|t| t > now)) {
            return Err(ShardError::Duplicate {
                replica: self.config.replica_id.clone(),
                lease: name,
                holder,
            });
        }
        let fresh = self.lease(now, lease.spec.as_ref());
        lease.spec = fresh.spec;
        lease.metadata.labels = fresh.metadata.labels;
        lease.metadata.annotations = fresh.metadata.annotations;
        self.api
            .replace(&name, &PostParams::default(), &lease)
            .await
            .map_err(|e| self.error(e))?;
        Ok(())
    }

    /// This replica's Lease renewed at `now` (keeping the acquire time of `previous` when it
    /// was this process's).
    fn lease(&self, now: Timestamp, previous: Option<&LeaseSpec>) -> Lease {
        let acquired = previous
            .and_then(|s| s.acquire_time.clone())
            .unwrap_or(MicroTime(now));
        let seconds = i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX);
        Lease {
            metadata: ObjectMeta {
                name: Some(self.config.lease_name()),
                namespace: Some(self.config.namespace.clone()),
                labels: Some([(LEASE_LABEL.to_string(), "true".to_string())].into()),
                annotations: Some(
                    [(INSTANCE_ANNOTATION.to_string(), self.instance.clone())].into(),
                ),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.config.replica_id.clone()),
                lease_duration_seconds: Some(seconds),
                acquire_time: Some(acquired),
                renew_time: Some(MicroTime(now)),
                ..Default::default()
            }),
        }
    }

    /// The live replicas: labelled Leases not expired, sorted by id. Leases expired for more
    /// than ten durations (replicas gone for good, such as replaced Pods) are deleted.
    async fn list(&self) -> Result<Vec<Replica>, ShardError> {
        let params = ListParams::default().labels(&format!("{LEASE_LABEL}=true"));
        let leases = self.api.list(&params).await.map_err(|e| self.error(e))?;
        let now = Timestamp::now();
        let stale = jiff::SignedDuration::try_from(self.config.lease_duration * 10)
            .unwrap_or(jiff::SignedDuration::MAX);
        let mut live = Vec::new();
        for lease in leases.items {
            let Some(expires) = expires_at(&lease) else {
                continue;
            };
            let id = lease.spec.as_ref().and_then(|s| s.holder_identity.clone());
            let name = lease.metadata.name.clone().unwrap_or_default();
            match id {
                Some(id) if expires > now && name == format!("{LEASE_PREFIX}{id}") => {
                    live.push(Replica {
                        id,
                        expires_at: expires,
                    })
                }
                _ if expires.checked_add(stale).is_ok_and(|t| t < now) => {
                    if let Err(e) = self.api.delete(&name, &DeleteParams::default()).await {
                        tracing::debug!(lease = %name, error = %e, "stale Lease not deleted");
                    }
                }
                _ => {}
            }
        }
        live.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(live)
    }
}

/// The renewal thread's loop: renews the Lease and lists the fleet every `renew_every` until
/// [`Membership::leave`] asks it to stop (then deletes the Lease) or the membership is dropped.
async fn renew_until_stopped(membership: Weak<Membership>, mut stop: watch::Receiver<bool>) {
    let Some(renew_every) = membership.upgrade().map(|m| m.config.renew_every) else {
        return;
    };
    let mut interval = tokio::time::interval(renew_every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval.tick().await;
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            changed = stop.changed() => {
                if let (Ok(()), Some(this)) = (changed, membership.upgrade()) {
                    this.delete_lease().await;
                }
                return;
            }
        }
        let Some(this) = membership.upgrade() else {
            return;
        };
        if let Err(e) = this.tick(false).await {
            tracing::warn!(replica = %this.config.replica_id, error = %e, "Lease renewal failed");
        }
    }
}

/// When `lease` expires: its renew time plus its duration; `None` without either.
fn expires_at(lease: &Lease) -> Option<Timestamp> {
    let spec = lease.spec.as_ref()?;
    let renewed = spec.renew_time.as_ref()?.0;
    let seconds = spec.lease_duration_seconds?;
    renewed
        .checked_add(jiff::SignedDuration::from_secs(i64::from(seconds)))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_ids_that_cannot_name_a_lease_are_refused_with_the_reason() {
        for (id, reason) in [
            ("", "empty"),
            ("Wardn-0", "lowercase"),
            ("wardn_0", "lowercase"),
            ("-wardn", "start and end"),
            ("wardn.", "start and end"),
            ("wardn/0", "lowercase"),
        ] {
            let err = check_replica_id(id).unwrap_err().to_string();
            assert!(
                err.contains("--replica-id") && err.contains(reason),
                "{id}: {err}"
            );
        }
        check_replica_id(&"a".repeat(201)).unwrap_err();
        check_replica_id("wardn-7f9c.ops-1").unwrap();
        check_replica_id(&default_replica_id()).unwrap();
    }

    #[test]
    fn a_lease_shorter_than_three_seconds_is_refused() {
        let err = ShardConfig::new("a", "wardn", Duration::from_secs(2)).unwrap_err();
        assert!(err.to_string().contains("--lease-duration"), "{err}");
        let ok = ShardConfig::new("a", "wardn", Duration::from_secs(15)).unwrap();
        assert_eq!(ok.renew_every, Duration::from_secs(5));
        assert_eq!(ok.lease_name(), "wardn-shard-a");
    }
}
