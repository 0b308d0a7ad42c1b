//! The shared state of one running cluster: configuration, tokens, store, served resources
//! and faults. Outlives restarts of the listener.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard, RwLock};
use tokio::sync::watch;

use crate::config::ClusterConfig;
use crate::faults::Faults;
use crate::resources::Registry;
use crate::store::Store;
use crate::tokens::Tokens;

/// Everything the request handlers share.
pub struct State {
    /// The configuration the cluster was started with.
    pub config: ClusterConfig,
    /// Bearer tokens.
    pub tokens: Tokens,
    /// PEM of the cluster CA, filled into service-account token Secrets.
    pub ca_pem: String,
    /// The key bound ServiceAccount tokens are signed with (see [`crate::sa_tokens`]).
    pub sa_key: [u8; 32],
    store: Mutex<Store>,
    registry: RwLock<Arc<Registry>>,
    faults: Mutex<Faults>,
    /// Writes served since the faults were last set (for [`Faults::fail_writes_after`]).
    writes: AtomicUsize,
    /// Bumped whenever watch streams must be dropped (fault injection, stop).
    pub drop_watches: watch::Sender<u64>,
    /// Service cluster IPs allocated so far.
    pub ip_seq: AtomicU32,
    /// Service node ports allocated so far.
    pub port_seq: AtomicU32,
    /// Every write served (see [`crate::write_log`]).
    pub write_log: crate::write_log::WriteLog,
    /// The connections accepted (see [`crate::connections`]).
    pub connections: crate::connections::ConnectionCounts,
}

impl State {
    /// Fresh state with an empty store.
    pub fn new(config: ClusterConfig, tokens: Tokens, ca_pem: String) -> State {
        State {
            store: Mutex::new(Store::new(config.watch_history.max(1))),
            config,
            tokens,
            ca_pem,
            sa_key: crate::util::random_bytes(),
            registry: RwLock::new(Arc::new(Registry::new(&[]))),
            faults: Mutex::new(Faults::default()),
            writes: AtomicUsize::new(0),
            drop_watches: watch::channel(0).0,
            ip_seq: AtomicU32::new(0),
            port_seq: AtomicU32::new(0),
            write_log: Default::default(),
            connections: Default::default(),
        }
    }

    /// Locks the store. Never held across an await.
    pub fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock()
    }

    /// The resources served right now.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.read().clone()
    }

    /// Recomputes the served resources from the stored CRDs (after a CRD write).
    pub fn refresh_registry(&self, store: &Store) {
        let crds: Vec<_> = store
            .list("apiextensions.k8s.io/customresourcedefinitions", None)
            .filter(|c| c.pointer("/metadata/deletionTimestamp").is_none())
            .cloned()
            .collect();
        *self.registry.write() = Arc::new(Registry::new(&crds));
    }

    /// The current faults.
    pub fn faults(&self) -> Faults {
        self.faults.lock().clone()
    }

    /// Counts one write against [`Faults::fail_writes_after`]: whether it is over the budget
    /// (and must fail).
    pub fn write_over_budget(&self, budget: usize) -> bool {
        self.writes.fetch_add(1, Ordering::SeqCst) >= budget
    }

    /// Replaces the faults; turning on `drop_watches` closes every open watch.
    pub fn set_faults(&self, faults: Faults) {
        let drop = faults.drop_watches;
        *self.faults.lock() = faults;
        self.writes.store(0, Ordering::SeqCst);
        if drop {
            self.drop_watches.send_modify(|n| *n += 1);
        }
    }
}
