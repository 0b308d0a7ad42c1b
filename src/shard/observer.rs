//! The fleet's shard Leases read from outside: a `--role server` process holds no Lease, but
//! lists its sharded operators' Leases (`GET /api/v1/shards`) to show when each expires and
//! which clusters each claims, as the replicas themselves see them ([`live_replicas`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

use super::membership::{Replica, ShardError, live_replicas, shard_leases};

/// How long one listing answers for: a page polled by many viewers lists the Leases at most
/// once a second.
const FRESH_FOR: Duration = Duration::from_secs(1);

/// Reads the live shard Leases of one namespace, without holding or deleting any.
pub struct LeaseObserver {
    api: Api<Lease>,
    namespace: String,
    /// The last listing and when it was taken; its lock makes concurrent readers wait for one
    /// listing instead of each sending its own.
    last: tokio::sync::Mutex<Option<(Instant, Arc<Vec<Replica>>)>>,
}

impl LeaseObserver {
    /// An observer of the shard Leases in `namespace` of the cluster of `client`.
    pub fn new(client: kube::Client, namespace: &str) -> LeaseObserver {
        LeaseObserver {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            last: tokio::sync::Mutex::new(None),
        }
    }

    /// The live replicas, sorted by id (listed at most once per [`FRESH_FOR`]). Fails naming
    /// the namespace when the management cluster refuses or does not answer the listing.
    pub async fn replicas(&self) -> Result<Arc<Vec<Replica>>, ShardError> {
        let mut last = self.last.lock().await;
        if let Some((at, replicas)) = last.as_ref()
            && at.elapsed() < FRESH_FOR
        {
            return Ok(Arc::clone(replicas));
        }
        let leases = self
            .api
            .list(&shard_leases())
            .await
            .map_err(|e| ShardError::List {
                namespace: self.namespace.clone(),
                message: e.to_string(),
            })?;
        // Stale Leases are the replicas' own to delete.
        let (live, _) = live_replicas(leases.items, Timestamp::now(), jiff::SignedDuration::MAX);
        let live = Arc::new(live);
        *last = Some((Instant::now(), Arc::clone(&live)));
        Ok(live)
    }
}
