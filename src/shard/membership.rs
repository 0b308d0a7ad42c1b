//! Membership through Kubernetes Leases (`coordination.k8s.io/v1`): each replica holds the
//! Lease `wardn-shard-<replica id>` in the management cluster, labelled
//! [`LEASE_LABEL`]`=true`, and renews it every `renew_every` (P). The live replicas are the
//! labelled Leases whose `renewTime + leaseDurationSeconds` (D) lies ahead.
//!
//! **Shares.** Each replica learns the destination clusters of its Apps from the runner
//! ([`Membership::set_clusters`]), publishes them in its Lease ([`CLUSTERS_ANNOTATION`]), and
//! computes the balanced assignment of them and those the other live Leases list to the live
//! replicas and itself ([`balance::assign`]): its *desired share*, which it loads, renders and
//! plans ([`Membership::routes_here`]). Replicas may see different replica sets for a moment
//! and different cluster sets for longer (each reads its own Apps, and the others' lists are
//! a listing old), so desired shares may overlap or leave a cluster out for a while; who may
//! *write* is decided by claims, published in the Leases.
//!
//! **Claims.** At every tick a replica lists the Leases (the others' claims with them), then
//! updates its own claims and publishes them in its Lease ([`CLAIMS_ANNOTATION`]) as it
//! renews it: it drops, locally and at once, every claim no longer in its desired share or
//! beaten by an earlier claim of another live replica; it adds a desired cluster only when
//! that listing shows no other live replica claiming it, with the current time as the claim
//! time, kept unchanged while it holds the claim. Claims order by (claim time, replica id)
//! ([`Claim`]). A Lease without the annotation (a replica of an earlier release) counts as
//! claiming its plain rendezvous share, earliest of all; so does one whose annotation is
//! malformed (logged), which blocks only that share.
//!
//! **Writing** ([`Membership::fence`], before every apply and prune) needs, at local time t,
//! with W = D − P (two renewal periods by default):
//! 1. *held*: t < s + W, s the start of the last successful renewal (the Lease expires at
//!    s + D for everyone, so a replica that cannot renew stops P before the others may see
//!    it expired);
//! 2. *fresh*: t < l + W, l the start of the last successful listing;
//! 3. *effective*: the cluster is in this replica's claims, first published by a renewal
//!    that ended at e with t ≥ e + W, and published without a break since (a renewal after
//!    the held window lapsed, or one that finds its Lease's claims not as last published,
//!    publishes every claim anew);
//! 4. *first*: that listing shows no other live replica claiming the cluster with an
//!    earlier claim.
//!
//! Why no two replicas A and B write to cluster c at one moment t: both claims are effective,
//! so A's claim has been visible in A's Lease since e_A ≤ t − W, and B's since e_B ≤ t − W,
//! both Leases live throughout (rule 3's break resets). B's listing started after t − W
//! (rule 2), so after e_A: it shows A's claim; likewise A's listing shows B's. Both compare
//! the same two published (time, id) pairs, so one of them sees an earlier claim and does not
//! write (rule 4). A dropped claim stops writes locally before it is unpublished, so a claim
//! a replica writes under is always in its Lease. Nothing here depends on the replicas seeing
//! the same replica set or cluster set: those only decide what is claimed, not who writes.
//! A dead replica's claims vanish with its Lease (expiry, or deletion by
//! [`Membership::leave`]). Assumptions: a write checked by the fence lands well within W;
//! replicas' clocks agree within P (NTP does much better), and run at the same rate.
//!
//! **Settling.** A joining replica claims and routes nothing until it has held its Lease for
//! two renewal periods, by when it has listed the replicas starting with it: otherwise the
//! first replica of a fleet starting together would load every App and claim every cluster,
//! only to drop them moments later.
//!
//! How long a cluster goes without a writer when it moves: a dead replica's Lease expires
//! within D of its death, the others list the Leases again just after the expiry they last
//! listed, claim at once, and write W later (D + W, 25 s by default). When a replica leaves
//! (its Lease deleted) or the shares change, the new owner claims at its next tick and writes
//! W later (at most P + W). The runner hears of a claim taking effect at that moment (the view
//! changes), not only at renewals.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use parking_lot::Mutex;
use tokio::sync::{oneshot, watch};

use super::claims::{
    self, CLAIMS_ANNOTATION, CLUSTERS_ANNOTATION, Claim, Claims, MAX_CLAIMS_BYTES,
};
use super::{balance, rendezvous};

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
    /// The management cluster refused or failed the listing of the shard Leases.
    #[error("the shard Leases (label {LEASE_LABEL}) in namespace {namespace}: {message}")]
    List {
        /// The Leases' namespace.
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
    /// This replica's Lease is no longer known to be held, or its last listing of the fleet
    /// is too old to tell who claims what.
    #[error(
        "replica {0} no longer holds its Lease (or has not listed the fleet recently); the pass stops before writing"
    )]
    LeaseLost(String),
    /// This replica claims the cluster, but the claim is not effective yet: published too
    /// recently for every other replica to have listed it, or contested by another claim.
    #[error(
        "cluster {cluster}: the claim of replica {replica} is not effective yet; the pass stops before writing"
    )]
    Pending {
        /// The cluster.
        cluster: String,
        /// This replica.
        replica: String,
    },
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
    /// The clusters it claims as its Lease publishes them; `None` when the Lease has no
    /// claims annotation (a replica of an earlier release) or a malformed one: it then counts
    /// as claiming its rendezvous share, earliest of all.
    #[serde(skip)]
    pub claims: Option<Arc<Claims>>,
    /// The destination clusters of its Apps as its Lease publishes them (empty when it
    /// publishes none, or an unreadable list).
    #[serde(skip)]
    pub clusters: Arc<BTreeSet<String>>,
}

/// One of this replica's own claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OwnClaim {
    /// The claim time published (unix seconds).
    since: i64,
    /// When the renewal that first published it (without a break since) ended.
    published: Option<Instant>,
}

/// What a replica knows of the fleet at one moment.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The live replicas (this one included once its Lease is listed), sorted by id.
    pub replicas: Vec<Replica>,
    /// This replica's id.
    me: String,
    /// Until when this replica may write: its last renewal's start + duration − renew period.
    held_until: Option<Instant>,
    /// Until when its last listing is fresh enough to write: the listing's start + duration −
    /// renew period.
    listed_until: Option<Instant>,
    /// How long a claim must have been published before it is effective (duration − renew
    /// period).
    claim_wait: Duration,
    /// Whether this replica has held its Lease long enough to take clusters.
    settled: bool,
    /// The balanced assignment of this replica's clusters to the live replicas and itself.
    assignment: Arc<BTreeMap<String, String>>,
    /// This replica's claims.
    mine: BTreeMap<String, OwnClaim>,
}

impl View {
    /// Who writes to `cluster`, or will: the live replica with the earliest claim on it (the
    /// one whose claim is, or is about to be, effective), else while no one claims it (in
    /// transit) the replica the balanced assignment gives it, else (a cluster this replica
    /// has no App for) its rendezvous owner among the live replicas.
    pub fn owner(&self, cluster: &str) -> Option<&str> {
        self.claimant(cluster, None)
            .map(|claim| claim.replica)
            .or_else(|| self.assignment.get(cluster).map(String::as_str))
            .or_else(|| self.hashed_owner(cluster))
    }

    /// The rendezvous owner of `cluster` among the live replicas: the share of a replica that
    /// publishes no (readable) claims, and the owner of a cluster no one has an App for.
    fn hashed_owner(&self, cluster: &str) -> Option<&str> {
        rendezvous::owner(self.replicas.iter().map(|r| r.id.as_str()), cluster)
    }

    /// The earliest claim on `cluster` in the last listing, leaving out replica `except`.
    fn claimant(&self, cluster: &str, except: Option<&str>) -> Option<Claim<'_>> {
        // A replica publishing no (readable) claims writes to its rendezvous share.
        let legacy = || self.hashed_owner(cluster);
        self.replicas
            .iter()
            .filter(|r| Some(r.id.as_str()) != except)
            .filter_map(|r| {
                let since = match &r.claims {
                    Some(claims) => *claims.get(cluster)?,
                    None if legacy() == Some(r.id.as_str()) => i64::MIN,
                    None => return None,
                };
                Some(Claim {
                    since,
                    replica: &r.id,
                })
            })
            .min()
    }

    /// Whether another live replica's claim on `cluster` comes before this replica's claim
    /// made at `since`.
    fn beaten(&self, cluster: &str, since: i64) -> bool {
        let mine = Claim {
            since,
            replica: &self.me,
        };
        self.claimant(cluster, Some(&self.me))
            .is_some_and(|other| other < mine)
    }

    /// Recomputes the balanced assignment over the live replicas and this one (counted live
    /// even while its own Lease shows expired) of `clusters` (this replica's) and those the
    /// other live replicas publish: every replica divides the same clusters once the Leases
    /// are listed, even while their Apps differ. Whether it changed.
    fn assign(&mut self, clusters: &BTreeSet<String>) -> bool {
        let replicas = self
            .replicas
            .iter()
            .map(|r| r.id.as_str())
            .chain([self.me.as_str()]);
        let theirs = self
            .replicas
            .iter()
            .filter(|r| r.id != self.me)
            .flat_map(|r| r.clusters.iter());
        let all = clusters.iter().chain(theirs).map(String::as_str);
        let assignment = balance::assign(replicas, all);
        let changed = *self.assignment != assignment;
        if changed {
            self.assignment = Arc::new(assignment);
        }
        changed
    }

    /// Whether the balanced assignment gives `cluster` to this replica.
    fn desired(&self, cluster: &str) -> bool {
        self.assignment.get(cluster) == Some(&self.me)
    }

    /// Updates this replica's claims from its desired share and the last listing: drops
    /// (at once, locally) every claim no longer desired or beaten by an earlier claim; when
    /// `may_add` (settled, and the listing just succeeded), claims every desired cluster no
    /// other live replica claims, at `now` (unix seconds), as long as the claims' text stays
    /// within [`MAX_CLAIMS_BYTES`].
    fn update_claims(&mut self, may_add: bool, now: i64) {
        let mine = std::mem::take(&mut self.mine);
        self.mine = mine
            .into_iter()
            .filter(|(cluster, claim)| self.desired(cluster) && !self.beaten(cluster, claim.since))
            .collect();
        if !may_add {
            return;
        }
        let mut size = claims::print(&self.published_claims()).len();
        let wanted: Vec<String> = self
            .assignment
            .iter()
            .filter(|(cluster, owner)| **owner == self.me && !self.mine.contains_key(*cluster))
            .filter(|(cluster, _)| self.claimant(cluster, Some(&self.me)).is_none())
            .map(|(cluster, _)| cluster.clone())
            .collect();
        for cluster in wanted {
            // `,cluster=<seconds>`: at most 1 + 63 + 1 + 19 bytes.
            let entry = cluster.len() + 2 + now.to_string().len();
            if !crate::object::is_dns_label(&cluster) {
                tracing::warn!(%cluster, "not claimed: a cluster name must be a DNS label");
                continue;
            }
            if size + entry > MAX_CLAIMS_BYTES {
                tracing::warn!(%cluster, claims = self.mine.len(), bytes = size,
                    "not claimed: the claims annotation would exceed {MAX_CLAIMS_BYTES} bytes");
                break;
            }
            size += entry;
            self.mine.insert(
                cluster,
                OwnClaim {
                    since: now,
                    published: None,
                },
            );
        }
    }

    /// This replica's claims as its Lease publishes them.
    fn published_claims(&self) -> Claims {
        self.mine
            .iter()
            .map(|(cluster, claim)| (cluster.clone(), claim.since))
            .collect()
    }

    /// Whether this replica may write at all at `now`: it holds its Lease, has listed the
    /// fleet recently and has settled.
    fn writable(&self, now: Instant) -> bool {
        self.held_until.is_some_and(|until| now < until)
            && self.listed_until.is_some_and(|until| now < until)
            && self.settled
    }

    /// Whether this replica's claim on `cluster` is effective at `now`: published, without a
    /// break, at least `claim_wait` ago, and first among the claims of the last listing.
    fn effective(&self, cluster: &str, now: Instant) -> bool {
        self.mine.get(cluster).is_some_and(|claim| {
            claim
                .published
                .is_some_and(|at| now >= at + self.claim_wait)
                && !self.beaten(cluster, claim.since)
        })
    }

    /// When the next of this replica's published claims becomes effective, if one is pending.
    fn next_effective(&self, now: Instant) -> Option<Instant> {
        self.mine
            .values()
            .filter_map(|claim| claim.published.map(|at| at + self.claim_wait))
            .filter(|at| *at > now)
            .min()
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
    /// The destination clusters of this replica's Apps ([`Membership::set_clusters`]).
    clusters: Mutex<BTreeSet<String>>,
    /// The claims text of the last successful renewal, to tell whether the Lease still shows it.
    published: Mutex<Option<String>>,
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
                    let view = View {
                        me: config.replica_id.clone(),
                        claim_wait: window(&config),
                        ..View::default()
                    };
                    let membership = Arc::new(Membership {
                        api: Api::namespaced(client, &config.namespace),
                        config,
                        instance: hex::encode(nonce),
                        view: watch::Sender::new(view),
                        joined: Instant::now(),
                        clusters: Mutex::default(),
                        published: Mutex::default(),
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

    /// Tells membership the destination clusters of this replica's Apps (segments; `local`:
    /// the management cluster); the runner calls it at every step of following the fleet.
    /// The desired share is recomputed at once; claims follow at the next renewal.
    pub fn set_clusters(&self, clusters: BTreeSet<String>) {
        let mut known = self.clusters.lock();
        if *known == clusters {
            return;
        }
        *known = clusters;
        self.view.send_if_modified(|view| view.assign(&known));
    }

    /// Whether `cluster` is in this replica's desired share (the balanced assignment of the
    /// clusters of its Apps over the live replicas and itself, counted live even while its
    /// own Lease shows expired), whether or not it may write there: the Apps of such clusters
    /// are the ones this replica loads, renders and plans, possibly a little before its claim
    /// is effective (fencing alone guards writes). A renewal that came late (an overloaded or
    /// paused process) does not unload and reload every App. Nothing is routed here before
    /// this replica has settled (two renewal periods, by when it has listed the replicas that
    /// started with it): otherwise the first replica of a fleet starting together would load
    /// and render every App, only to drop most of them moments later, and the memory of that
    /// peak stays with the process. A cluster not yet passed to
    /// [`Membership::set_clusters`] is routed nowhere.
    pub fn routes_here(&self, cluster: &str) -> bool {
        let view = self.view.borrow();
        view.settled && view.desired(cluster)
    }

    /// Whether this replica is, or is about to be, the one working on `cluster`
    /// ([`View::owner`]: its claimant, else its assignment, else for a cluster no App deploys
    /// to its rendezvous owner among the live replicas). Unlike [`Membership::owns`] it is not
    /// a licence to write: it picks the replica that probes the cluster.
    pub fn is_owner(&self, cluster: &str) -> bool {
        self.view.borrow().owner(cluster) == Some(self.config.replica_id.as_str())
    }

    /// Whether this replica may write to `cluster` now; see [`Membership::fence`]. Asked for
    /// every App by the periodic scans (auto-promotion, status routing), so it builds no
    /// error: most clusters of a large fleet are another replica's.
    pub fn owns(&self, cluster: &str) -> bool {
        let view = self.view.borrow();
        let now = Instant::now();
        view.writable(now) && view.effective(cluster, now)
    }

    /// `Ok` when this replica may write to `cluster` now (checked before every apply and
    /// prune): it holds its Lease, has settled, has listed the fleet recently, and its claim
    /// on `cluster` is effective (see the module's rules).
    pub fn fence(&self, cluster: &str) -> Result<(), Fenced> {
        let view = self.view.borrow();
        let me = &self.config.replica_id;
        let now = Instant::now();
        if !view.writable(now) {
            return Err(Fenced::LeaseLost(me.clone()));
        }
        if view.effective(cluster, now) {
            return Ok(());
        }
        match view.owner(cluster) {
            Some(owner) if owner != me => Err(Fenced::NotOwner {
                cluster: cluster.to_string(),
                replica: me.clone(),
                owner: owner.to_string(),
            }),
            None => Err(Fenced::NotOwner {
                cluster: cluster.to_string(),
                replica: me.clone(),
                owner: "none".to_string(),
            }),
            Some(_) => Err(Fenced::Pending {
                cluster: cluster.to_string(),
                replica: me.clone(),
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

    /// One tick: lists the fleet, updates this replica's claims (drops take effect at once),
    /// then renews its Lease with them and publishes the view.
    async fn tick(&self, first: bool) -> Result<(), ShardError> {
        let window = window(&self.config);
        let list_started = Instant::now();
        let listed = self.list().await;
        let settled = self.joined.elapsed() >= self.config.renew_every * 2;
        let now = Timestamp::now().as_second();
        let (text, clusters_text) = {
            let clusters = self.clusters.lock();
            let clusters_text = claims::print_clusters(&clusters).unwrap_or_else(|| {
                tracing::warn!(clusters = clusters.len(),
                    "the clusters of this replica's Apps exceed {MAX_CLAIMS_BYTES} bytes: not published");
                String::new()
            });
            let mut text = String::new();
            self.view.send_modify(|view| {
                view.settled = settled;
                if let Ok(replicas) = &listed {
                    view.replicas = replicas.clone();
                    view.listed_until = Some(list_started + window);
                }
                view.assign(&clusters);
                view.update_claims(settled && listed.is_ok(), now);
                text = claims::print(&view.published_claims());
            });
            (text, clusters_text)
        };
        let renew_started = Instant::now();
        let renewed = self.renew(first, &text, &clusters_text).await;
        let renewed_at = Instant::now();
        self.view.send_modify(|view| {
            match &renewed {
                Ok(continuous) => {
                    // After a break (the held window lapsed, or the Lease lost its claims),
                    // others may have seen no claim: every claim waits anew.
                    let lapsed = !continuous || view.held_until.is_none_or(|u| renew_started >= u);
                    for claim in view.mine.values_mut() {
                        if lapsed || claim.published.is_none() {
                            claim.published = Some(renewed_at);
                        }
                    }
                    view.held_until = Some(renew_started + window);
                }
                Err(ShardError::Duplicate { .. }) => view.held_until = None,
                Err(_) => {}
            }
            // A renewal that ends after `leave` does not make the Lease held again.
            if *self.stop.borrow() {
                view.held_until = None;
            }
        });
        if renewed.is_ok() {
            *self.published.lock() = Some(text);
        }
        renewed?;
        listed.map(|_| ())
    }

    /// When the next of this replica's claims becomes effective, if one is pending.
    fn next_effective(&self) -> Option<Instant> {
        self.view.borrow().next_effective(Instant::now())
    }

    /// Just after the earliest expiry of another live replica's Lease (as last listed), and
    /// no sooner than a tenth of a renewal period from now.
    fn next_expiry(&self) -> Option<Instant> {
        let view = self.view.borrow();
        let now = Timestamp::now();
        let earliest = view
            .replicas
            .iter()
            .filter(|r| r.id != self.config.replica_id)
            .map(|r| r.expires_at)
            .min()?;
        let left = Duration::try_from(earliest.duration_since(now)).unwrap_or(Duration::ZERO);
        let wait = (left + Duration::from_millis(50)).max(self.config.renew_every / 10);
        Some(Instant::now() + wait)
    }

    fn error(&self, e: impl std::fmt::Display) -> ShardError {
        ShardError::Lease {
            lease: self.config.lease_name(),
            namespace: self.config.namespace.clone(),
            message: e.to_string(),
        }
    }

    /// Creates or renews this replica's Lease, publishing `claims` and `clusters` (the
    /// annotations' texts).
    /// Answers whether the Lease showed the claims of the last successful renewal until now
    /// (`false` when it was missing or changed by someone else). Another process's live Lease
    /// under the same name is [`ShardError::Duplicate`].
    async fn renew(&self, first: bool, claims: &str, clusters: &str) -> Result<bool, ShardError> {
        let name = self.config.lease_name();
        let now = Timestamp::now();
        let existing = self.api.get_opt(&name).await.map_err(|e| self.error(e))?;
        let Some(mut lease) = existing else {
            if !first {
                tracing::warn!(lease = %name, "this replica's Lease was gone: created again, its claims wait anew");
            }
            let lease = self.lease(now, None, claims, clusters);
            self.api
                .create(&PostParams::default(), &lease)
                .await
                .map_err(|e| self.error(e))?;
            return Ok(false);
        };
        let annotation = |key: &str| {
            lease
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .cloned()
        };
        let holder = annotation(INSTANCE_ANNOTATION).unwrap_or_default();
        let continuous = annotation(CLAIMS_ANNOTATION) == *self.published.lock();
        if holder != self.instance && (!first || expires_at(&lease).is_some_and(|t| t > now)) {
            return Err(ShardError::Duplicate {
                replica: self.config.replica_id.clone(),
                lease: name,
                holder,
            });
        }
        let fresh = self.lease(now, lease.spec.as_ref(), claims, clusters);
        lease.spec = fresh.spec;
        lease.metadata.labels = fresh.metadata.labels;
        lease.metadata.annotations = fresh.metadata.annotations;
        self.api
            .replace(&name, &PostParams::default(), &lease)
            .await
            .map_err(|e| self.error(e))?;
        Ok(continuous)
    }

    /// This replica's Lease renewed at `now` with `claims` and `clusters` (keeping the
    /// acquire time of `previous` when it was this process's).
    fn lease(
        &self,
        now: Timestamp,
        previous: Option<&LeaseSpec>,
        claims: &str,
        clusters: &str,
    ) -> Lease {
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
                    [
                        (INSTANCE_ANNOTATION.to_string(), self.instance.clone()),
                        (CLAIMS_ANNOTATION.to_string(), claims.to_string()),
                        (CLUSTERS_ANNOTATION.to_string(), clusters.to_string()),
                    ]
                    .into(),
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
        let leases = self
            .api
            .list(&shard_leases())
            .await
            .map_err(|e| self.error(e))?;
        let stale_after = jiff::SignedDuration::try_from(self.config.lease_duration * 10)
            .unwrap_or(jiff::SignedDuration::MAX);
        let (live, stale) = live_replicas(leases.items, Timestamp::now(), stale_after);
        for name in stale {
            if let Err(e) = self.api.delete(&name, &DeleteParams::default()).await {
                tracing::debug!(lease = %name, error = %e, "stale Lease not deleted");
            }
        }
        Ok(live)
    }
}

/// The listing of the shard Leases: those labelled [`LEASE_LABEL`]`=true`.
pub fn shard_leases() -> ListParams {
    ListParams::default().labels(&format!("{LEASE_LABEL}=true"))
}

/// The live replicas among the shard Leases `leases` at `now`: those named after their holder
/// (`wardn-shard-<id>`) whose `renewTime + leaseDurationSeconds` lies ahead, with the claims
/// and clusters they publish (an unreadable annotation is logged and counts as none), sorted
/// by id; and the names of the Leases expired for more than `stale_after` (replicas gone for
/// good, such as replaced Pods), for their deletion.
pub fn live_replicas(
    leases: Vec<Lease>,
    now: Timestamp,
    stale_after: jiff::SignedDuration,
) -> (Vec<Replica>, Vec<String>) {
    let mut live = Vec::new();
    let mut stale = Vec::new();
    for lease in leases {
        let Some(expires) = expires_at(&lease) else {
            continue;
        };
        let id = lease.spec.as_ref().and_then(|s| s.holder_identity.clone());
        let name = lease.metadata.name.clone().unwrap_or_default();
        match id {
            Some(id) if expires > now && name == format!("{LEASE_PREFIX}{id}") => {
                let annotation =
                    |key: &str| lease.metadata.annotations.as_ref().and_then(|a| a.get(key));
                let clusters = annotation(CLUSTERS_ANNOTATION)
                    .map(|text| {
                        claims::parse_clusters(text).unwrap_or_else(|e| {
                            tracing::warn!(lease = %name, error = %e, "clusters unreadable: ignored");
                            BTreeSet::new()
                        })
                    })
                    .unwrap_or_default();
                let claims = annotation(CLAIMS_ANNOTATION).and_then(|text| match claims::parse(text) {
                    Ok(claims) => Some(Arc::new(claims)),
                    Err(e) => {
                        tracing::warn!(lease = %name, error = %e,
                            "claims unreadable: the replica counts as claiming its rendezvous share");
                        None
                    }
                });
                live.push(Replica {
                    id,
                    expires_at: expires,
                    claims,
                    clusters: Arc::new(clusters),
                })
            }
            _ if expires.checked_add(stale_after).is_ok_and(|t| t < now) => stale.push(name),
            _ => {}
        }
    }
    live.sort_by(|a, b| a.id.cmp(&b.id));
    (live, stale)
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
        let (effective, expiry) = membership
            .upgrade()
            .map(|m| (m.next_effective(), m.next_expiry()))
            .unwrap_or_default();
        tokio::select! {
            _ = interval.tick() => {}
            // Another replica's Lease runs out: listing at once takes up its clusters a
            // renewal period sooner, if it has stopped renewing.
            _ = sleep_until(expiry) => {}
            // A claim taking effect is a change of the view: the runner takes the cluster over.
            _ = sleep_until(effective) => {
                if let Some(this) = membership.upgrade() {
                    this.view.send_modify(|_| {});
                }
                continue;
            }
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

/// Sleeps until `at`, or for ever without it.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// How long a renewal keeps the Lease held, a listing fresh, and how long a published claim
/// waits before it is effective: the Lease duration less one renewal period.
fn window(config: &ShardConfig) -> Duration {
    config.lease_duration.saturating_sub(config.renew_every)
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

    /// Claims as a test writes them: (cluster, claim time).
    type TestClaims<'a> = &'a [(&'a str, i64)];

    /// A view of replica `me` among `others` (id → claims; `None`: an earlier release).
    fn view(me: &str, others: &[(&str, Option<TestClaims>)], clusters: &[&str]) -> View {
        let replica = |id: &str, claims: Option<TestClaims>| Replica {
            id: id.to_string(),
            expires_at: Timestamp::now(),
            claims: claims.map(|c| Arc::new(c.iter().map(|(k, v)| (k.to_string(), *v)).collect())),
            clusters: Arc::default(),
        };
        let mut replicas: Vec<Replica> = others.iter().map(|(id, c)| replica(id, *c)).collect();
        replicas.push(replica(me, Some(&[])));
        let mut view = View {
            replicas,
            me: me.to_string(),
            claim_wait: Duration::from_secs(10),
            ..View::default()
        };
        view.assign(&clusters.iter().map(|c| c.to_string()).collect());
        view
    }

    fn desired(view: &View) -> BTreeSet<String> {
        let me = view.me.clone();
        view.assignment
            .iter()
            .filter(|(_, o)| **o == me)
            .map(|(c, _)| c.clone())
            .collect()
    }

    #[test]
    fn a_replica_claims_only_desired_clusters_no_one_else_claims() {
        let clusters: Vec<String> = (0..12).map(|i| format!("c{i}")).collect();
        let names: Vec<&str> = clusters.iter().map(String::as_str).collect();
        let mut view = view("a", &[("b", Some(&[])), ("c", Some(&[]))], &names);
        let share = desired(&view);
        assert_eq!(share.len(), 4, "{share:?}");
        // Not settled (or no fresh listing): nothing is added.
        view.update_claims(false, 100);
        assert!(view.mine.is_empty());
        view.update_claims(true, 100);
        assert_eq!(view.mine.keys().cloned().collect::<BTreeSet<_>>(), share);
        // Published now: not effective before the wait, effective after it.
        let now = Instant::now();
        for claim in view.mine.values_mut() {
            claim.published = Some(now);
        }
        let first = share.iter().next().unwrap().clone();
        assert!(!view.effective(&first, now + Duration::from_secs(9)));
        assert!(view.effective(&first, now + Duration::from_secs(10)));
        assert_eq!(
            view.next_effective(now),
            Some(now + Duration::from_secs(10))
        );
        // Another replica claims it earlier: beaten, not effective, dropped at the next update.
        view.replicas[0].claims = Some(Arc::new([(first.clone(), 99)].into()));
        assert!(!view.effective(&first, now + Duration::from_secs(60)));
        assert_eq!(view.owner(&first), Some("b"));
        view.update_claims(true, 200);
        assert!(!view.mine.contains_key(&first), "beaten claims are dropped");
        assert!(
            view.mine.len() == 3,
            "and not claimed again while b claims it"
        );
        // A later claim by another replica does not beat this one; a tie goes to the smaller id.
        let second = share.iter().nth(1).unwrap().clone();
        view.replicas[1].claims = Some(Arc::new([(second.clone(), 101)].into()));
        assert!(view.effective(&second, now + Duration::from_secs(10)));
        view.replicas[1].claims = Some(Arc::new([(second.clone(), 100)].into()));
        assert!(
            view.effective(&second, now + Duration::from_secs(10)),
            "a < c"
        );
        // Clusters leaving the set (or the share) are dropped at once.
        view.assign(&BTreeSet::new());
        view.update_claims(true, 300);
        assert!(view.mine.is_empty());
    }

    #[test]
    fn a_replica_without_readable_claims_holds_its_rendezvous_share() {
        let clusters: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
        let names: Vec<&str> = clusters.iter().map(String::as_str).collect();
        let mut view = view("a", &[("old", None)], &names);
        view.update_claims(true, 100);
        let ids = ["a", "old"];
        for cluster in &names {
            let legacy = rendezvous::owner(ids, cluster) == Some("old");
            if legacy {
                assert!(
                    !view.mine.contains_key(*cluster),
                    "{cluster}: claimed by old"
                );
                assert_eq!(view.owner(cluster), Some("old"));
            }
        }
        assert!(
            view.mine
                .keys()
                .all(|c| rendezvous::owner(ids, c) == Some("a"))
        );
    }

    #[test]
    fn clusters_another_replica_publishes_are_divided_too() {
        let mut view = view("a", &[("b", Some(&[]))], &["c0", "c1"]);
        assert_eq!(view.assignment.len(), 2);
        view.replicas[0].clusters = Arc::new(["c2".to_string(), "c3".to_string()].into());
        let mine: BTreeSet<String> = ["c0".to_string(), "c1".to_string()].into();
        assert!(view.assign(&mine), "the assignment changed");
        assert_eq!(view.assignment.len(), 4);
        assert_eq!(view.assignment.values().filter(|r| *r == "a").count(), 2);
        assert!(!view.assign(&mine), "unchanged");
    }

    /// A share too large for one annotation is claimed only up to its size limit, and what is
    /// published parses back.
    #[test]
    fn claims_stop_at_the_annotations_size_limit() {
        let clusters: Vec<String> = (0..2000).map(|i| format!("{i:0>63}")).collect();
        let names: Vec<&str> = clusters.iter().map(String::as_str).collect();
        let mut big = view("a", &[], &names);
        big.update_claims(true, 1_764_650_000);
        let text = claims::print(&big.published_claims());
        assert!(text.len() <= MAX_CLAIMS_BYTES, "{}", text.len());
        assert!(
            big.mine.len() > 800 && big.mine.len() < 2000,
            "{}",
            big.mine.len()
        );
        assert_eq!(claims::parse(&text).unwrap(), big.published_claims());
        // Clusters that are not DNS labels are never claimed (they cannot be published).
        let mut odd = view("a", &[], &["Bad_Name", "good"]);
        odd.update_claims(true, 1);
        assert_eq!(odd.mine.keys().collect::<Vec<_>>(), ["good"]);
    }

    #[test]
    fn a_lease_shorter_than_three_seconds_is_refused() {
        let err = ShardConfig::new("a", "wardn", Duration::from_secs(2)).unwrap_err();
        assert!(err.to_string().contains("--lease-duration"), "{err}");
        let ok = ShardConfig::new("a", "wardn", Duration::from_secs(15)).unwrap();
        assert_eq!(ok.renew_every, Duration::from_secs(5));
        assert_eq!(ok.lease_name(), "wardn-shard-a");
    }

    /// A shard Lease named `name`, held by `holder`, renewed `age` seconds ago for 15 s, with
    /// claims and clusters annotations when given.
    fn test_lease(
        name: &str,
        holder: Option<&str>,
        age: i64,
        claims: Option<&str>,
        clusters: Option<&str>,
    ) -> Lease {
        let renewed = Timestamp::now() - jiff::SignedDuration::from_secs(age);
        let mut annotations = BTreeMap::new();
        for (key, text) in [(CLAIMS_ANNOTATION, claims), (CLUSTERS_ANNOTATION, clusters)] {
            if let Some(text) = text {
                annotations.insert(key.to_string(), text.to_string());
            }
        }
        Lease {
            metadata: ObjectMeta {
                name: Some(name.into()),
                annotations: Some(annotations),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_string),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(renewed)),
                ..Default::default()
            }),
        }
    }

    /// What every replica and a server read from the Leases: live ones named after their
    /// holder, sorted, with their claims; hostile ones (another holder's name, no renewal, an
    /// unreadable annotation) never taken for a replica's claims; long-expired ones listed for
    /// deletion.
    #[test]
    fn live_replicas_are_the_unexpired_leases_named_after_their_holder() {
        let mut no_spec = test_lease("wardn-shard-x", Some("x"), 0, None, None);
        no_spec.spec = None;
        let leases = vec![
            test_lease("wardn-shard-f", Some("f"), 1, Some("garbage"), Some("y,x")),
            test_lease("wardn-shard-a", Some("a"), 2, Some("east-0=100"), None),
            test_lease("wardn-shard-b", Some("c"), 0, Some("east-1=1"), None),
            test_lease("wardn-shard-d", Some("d"), 1_000, None, None),
            test_lease("wardn-shard-e", Some("e"), 20, None, None),
            test_lease("wardn-shard-n", None, 0, None, None),
            no_spec,
        ];
        let (live, stale) = live_replicas(
            leases,
            Timestamp::now(),
            jiff::SignedDuration::from_secs(150),
        );
        let ids: Vec<&str> = live.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "f"]);
        assert_eq!(
            live[0].claims.as_deref(),
            Some(&Claims::from([("east-0".to_string(), 100)]))
        );
        assert_eq!(live[1].claims, None, "unreadable claims count as none");
        let clusters: Vec<&String> = live[1].clusters.iter().collect();
        assert_eq!(clusters, ["x", "y"]);
        assert!(live.iter().all(|r| r.expires_at > Timestamp::now()));
        assert_eq!(stale, ["wardn-shard-d"]);
    }
}
