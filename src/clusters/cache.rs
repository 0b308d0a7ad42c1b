//! The per-cluster `kube::Client` cache, shared by probing and resolution. Entries are dropped
//! when a cluster is updated or removed, and optionally expire (for clients built from
//! kubeconfigs fetched over the internal endpoint, which cannot see updates).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A cached client with the namespace allowlist it was registered with.
#[derive(Clone)]
pub struct CachedCluster {
    /// The client for the cluster.
    pub client: kube::Client,
    /// The namespace allowlist; empty means every namespace.
    pub namespaces: Vec<String>,
    /// The API server's URL (for messages).
    pub server: String,
    /// [`credentials_identity`] of the kubeconfig the client was built from.
    pub credentials: u64,
    built: Instant,
}

impl CachedCluster {
    /// A fresh cache entry for a client of `server` built from `kubeconfig`.
    pub fn new(
        client: kube::Client,
        namespaces: Vec<String>,
        server: String,
        kubeconfig: &str,
    ) -> CachedCluster {
        CachedCluster {
            client,
            namespaces,
            server,
            credentials: credentials_identity(kubeconfig),
            built: Instant::now(),
        }
    }
}

/// An identity of the credentials in `kubeconfig` (the first 8 bytes of its sha256): equal
/// for rebuilt clients of the same kubeconfig, different after a rotation, so long-lived
/// users of a client (the drift watches) know when to reconnect. Not a secret: the digest of a
/// whole kubeconfig reveals nothing of it.
pub fn credentials_identity(kubeconfig: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(kubeconfig.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// Clients by cluster name.
#[derive(Default)]
pub struct ClientCache {
    entries: Mutex<HashMap<String, CachedCluster>>,
    ttl: Option<Duration>,
}

impl ClientCache {
    /// A cache whose entries live until invalidated.
    pub fn new() -> ClientCache {
        ClientCache::default()
    }

    /// A cache whose entries also expire `ttl` after they were built.
    pub fn with_ttl(ttl: Duration) -> ClientCache {
        ClientCache {
            entries: Mutex::default(),
            ttl: Some(ttl),
        }
    }

    /// The cached entry for `name`, unless missing or expired.
    pub fn get(&self, name: &str) -> Option<CachedCluster> {
        let entries = self.entries.lock();
        let entry = entries.get(name)?;
        match self.ttl {
            Some(ttl) if entry.built.elapsed() >= ttl => None,
            _ => Some(entry.clone()),
        }
    }

    /// Stores the entry for `name`.
    pub fn insert(&self, name: &str, entry: CachedCluster) {
        self.entries.lock().insert(name.to_string(), entry);
    }

    /// Drops the entry for `name` (after an update or removal).
    pub fn invalidate(&self, name: &str) {
        self.entries.lock().remove(name);
    }

    /// How many clients are cached and not expired (for metrics).
    pub fn len(&self) -> usize {
        let entries = self.entries.lock();
        match self.ttl {
            Some(ttl) => entries.values().filter(|e| e.built.elapsed() < ttl).count(),
            None => entries.len(),
        }
    }

    /// Whether no client is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether an entry for `name` is cached (for tests and metrics).
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_identity_follows_the_kubeconfig() {
        let a = "apiVersion: v1\nusers:\n- user: {token: one}\n";
        let b = "apiVersion: v1\nusers:\n- user: {token: two}\n";
        assert_eq!(credentials_identity(a), credentials_identity(a));
        assert_ne!(credentials_identity(a), credentials_identity(b));
    }
}
