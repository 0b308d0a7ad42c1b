//! Resolution of an App destination to a client: an empty cluster name means the management
//! cluster (in-cluster config, or the daemon's kubeconfig and context); any other name is a
//! registered cluster, looked up in the local registry (`--role all|server`) or through the
//! server's internal endpoint (`--role operator`), with the namespace allowlist enforced
//! before any request reaches the cluster.

use std::sync::Arc;
use std::time::Duration;

use super::cache::{CachedCluster, ClientCache};
use super::connect::{self, ConnectError};
use super::registry::{Registry, RegistryError, ResolveFailure, ResolvedCluster};
use super::throttle::Throttles;
use crate::server_link::ServerLink;

/// Why a destination cannot be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The namespace is outside the cluster's allowlist (403).
    #[error("namespace {namespace:?} is not in the namespaces allowlist of cluster {cluster:?}")]
    NamespaceNotAllowed {
        /// The destination namespace.
        namespace: String,
        /// The destination cluster.
        cluster: String,
    },
    /// No cluster of that name is registered (404).
    #[error("cluster {0:?} is not registered")]
    UnknownCluster(String),
    /// The registry or internal endpoint failed.
    #[error("cannot look up cluster {cluster:?}: {reason}")]
    Lookup {
        /// The cluster.
        cluster: String,
        /// What failed.
        reason: String,
    },
    /// The App deploys to the management cluster, but none was found at start-up.
    #[error(
        "no management cluster: give wardn serve --kubeconfig, set KUBECONFIG, run it in a cluster, or create ~/.kube/config"
    )]
    NoManagementCluster,
    /// A client could not be built.
    #[error("cannot connect to cluster {cluster:?}: {source}")]
    Connect {
        /// The cluster (empty: the management cluster).
        cluster: String,
        /// The cause.
        source: ConnectError,
    },
}

/// Refuses `namespace` unless the allowlist is empty or contains it.
pub fn check_namespace(
    cluster: &str,
    allowlist: &[String],
    namespace: &str,
) -> Result<(), ResolveError> {
    if allowlist.is_empty() || allowlist.iter().any(|n| n == namespace) {
        Ok(())
    } else {
        Err(ResolveError::NamespaceNotAllowed {
            namespace: namespace.to_string(),
            cluster: cluster.to_string(),
        })
    }
}

/// A resolved destination cluster.
#[derive(Clone)]
pub struct Destination {
    /// A cached client for the cluster.
    pub client: kube::Client,
    /// The namespaces Apps may deploy to; `None` means unrestricted (the management cluster,
    /// or a cluster registered without a list).
    pub namespaces: Option<Vec<String>>,
    /// The API server's URL, for messages naming an unreachable cluster.
    pub server: String,
    /// Which credentials the client uses (see [`super::cache::credentials_identity`]; 0 for
    /// the management cluster, whose client is built once).
    pub credentials: u64,
}

/// Where registered clusters are looked up.
pub enum ClusterSource {
    /// This process's registry (roles `all` and `server`).
    Local(Arc<Registry>),
    /// A wardn server's `GET /internal/clusters/{name}/kubeconfig` (role `operator`).
    Remote {
        /// The server, reached with the internal token.
        server: ServerLink,
        /// Clients built from fetched kubeconfigs; entries expire so updates are seen.
        cache: ClientCache,
    },
}

/// Resolves destinations to cached clients.
pub struct Resolver {
    source: ClusterSource,
    /// The management cluster's client and server URL, found at start-up (see
    /// the daemon's `management` module).
    management: Option<(kube::Client, String)>,
    timeout: Duration,
    throttles: Arc<Throttles>,
}

impl Resolver {
    /// A resolver over `source`; clients time out after `timeout`.
    pub fn new(source: ClusterSource, timeout: Duration) -> Resolver {
        Resolver {
            source,
            management: None,
            timeout,
            throttles: Arc::default(),
        }
    }

    /// Rate-limits the management cluster's client and the clients built from fetched
    /// kubeconfigs through `throttles` (the local registry's clients use the registry's).
    pub fn with_throttles(self, throttles: Arc<Throttles>) -> Resolver {
        Resolver { throttles, ..self }
    }

    /// The throttles of the clusters this resolver hands out clients for.
    pub fn throttles(&self) -> &Arc<Throttles> {
        &self.throttles
    }

    /// Uses `client` for the management cluster (`destination.cluster: ""`); without it such
    /// destinations fail with [`ResolveError::NoManagementCluster`]. Call after
    /// [`Resolver::with_throttles`]: the client is wrapped in the management cluster's throttle.
    pub fn with_management(self, client: kube::Client, server: String) -> Resolver {
        let management = Some((self.throttles.wrap("", client), server));
        Resolver { management, ..self }
    }

    /// A resolver fetching kubeconfigs from a wardn server through `server`, caching clients
    /// for `ttl`; `timeout` bounds connecting to each cluster.
    pub fn remote(server: ServerLink, ttl: Duration, timeout: Duration) -> Resolver {
        Resolver::new(
            ClusterSource::Remote {
                server,
                cache: ClientCache::with_ttl(ttl),
            },
            timeout,
        )
    }

    /// The client for `cluster` after checking `namespace` against its allowlist; an empty
    /// `cluster` is the management cluster.
    pub async fn resolve(
        &self,
        cluster: &str,
        namespace: &str,
    ) -> Result<kube::Client, ResolveError> {
        let destination = self.destination(cluster).await?;
        if let Some(allowlist) = &destination.namespaces {
            check_namespace(cluster, allowlist, namespace)?;
        }
        Ok(destination.client)
    }

    /// The client and namespace allowlist of `cluster` (empty: the management cluster), for
    /// callers that check every object's namespace themselves before applying.
    pub async fn destination(&self, cluster: &str) -> Result<Destination, ResolveError> {
        if cluster.is_empty() {
            let (client, server) = self.management()?;
            return Ok(Destination {
                client,
                namespaces: None,
                server,
                credentials: 0,
            });
        }
        let entry = self.cached(cluster).await?;
        Ok(Destination {
            client: entry.client,
            namespaces: (!entry.namespaces.is_empty()).then_some(entry.namespaces),
            server: entry.server,
            credentials: entry.credentials,
        })
    }

    fn management(&self) -> Result<(kube::Client, String), ResolveError> {
        self.management
            .clone()
            .ok_or(ResolveError::NoManagementCluster)
    }

    async fn cached(&self, cluster: &str) -> Result<CachedCluster, ResolveError> {
        match &self.source {
            ClusterSource::Local(registry) => {
                registry
                    .cached_cluster(cluster)
                    .await
                    .map_err(|err| match err {
                        ResolveFailure::Registry(RegistryError::NotFound(name)) => {
                            ResolveError::UnknownCluster(name)
                        }
                        ResolveFailure::Registry(err) => ResolveError::Lookup {
                            cluster: cluster.to_string(),
                            reason: err.to_string(),
                        },
                        ResolveFailure::Connect(source) => ResolveError::Connect {
                            cluster: cluster.to_string(),
                            source,
                        },
                    })
            }
            ClusterSource::Remote { server, cache } => {
                if let Some(entry) = cache.get(cluster) {
                    return Ok(entry);
                }
                let resolved = fetch(server, cluster).await?;
                let client = connect::throttled_client_from_kubeconfig(
                    &resolved.kubeconfig,
                    self.timeout,
                    &self.throttles.layer(cluster),
                )
                .await
                .map_err(|source| ResolveError::Connect {
                    cluster: cluster.to_string(),
                    source,
                })?;
                let entry = CachedCluster::new(
                    client,
                    resolved.namespaces,
                    resolved.server_url,
                    &resolved.kubeconfig,
                );
                cache.insert(cluster, entry.clone());
                Ok(entry)
            }
        }
    }

    /// How many destination clusters this resolver keeps a client for (the management
    /// cluster's aside).
    pub fn cached_clients(&self) -> usize {
        match &self.source {
            ClusterSource::Local(registry) => registry.clients().len(),
            ClusterSource::Remote { cache, .. } => cache.len(),
        }
    }

    /// Drops the cached client of `cluster` (after the cluster was updated or removed, or when
    /// this replica stops working on it).
    pub fn invalidate(&self, cluster: &str) {
        match &self.source {
            ClusterSource::Local(registry) => registry.clients().invalidate(cluster),
            ClusterSource::Remote { cache, .. } => cache.invalidate(cluster),
        }
    }
}

async fn fetch(server: &ServerLink, cluster: &str) -> Result<ResolvedCluster, ResolveError> {
    let lookup = |reason: String| ResolveError::Lookup {
        cluster: cluster.to_string(),
        reason,
    };
    let response = server
        .get(&format!("/internal/clusters/{cluster}/kubeconfig"))
        .await
        .map_err(|err| lookup(err.to_string()))?;
    match response.status() {
        reqwest::StatusCode::NOT_FOUND => Err(ResolveError::UnknownCluster(cluster.to_string())),
        status if !status.is_success() => Err(lookup(format!("server answered {status}"))),
        _ => response
            .json::<ResolvedCluster>()
            .await
            .map_err(|err| lookup(err.to_string())),
    }
}
