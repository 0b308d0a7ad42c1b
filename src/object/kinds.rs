//! Resolution of `apiVersion`/`kind` to an API resource (URL path, scope) through the cluster's
//! discovery, cached per cluster for [`KIND_TTL`] and shared by the passes of every App that
//! deploys there (one discovery request per group-version and cluster, not per pass).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use kube::{Client, Error};
use parking_lot::Mutex;

/// A resolved kind: where it is served and whether it is namespaced.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The API resource (group, version, plural) for requests.
    pub resource: ApiResource,
    /// Whether objects of this kind live in a namespace.
    pub namespaced: bool,
}

/// How long a resolved kind is trusted before discovery is asked again (a CRD may change its
/// served versions or be removed).
pub const KIND_TTL: Duration = Duration::from_secs(300);

/// `(apiVersion, kind)`.
type KindKey = (String, String);

/// The kinds resolved on one cluster, with when they were resolved. Clones share the cache.
#[derive(Clone, Default)]
pub struct KindCache {
    entries: Arc<Mutex<HashMap<KindKey, (Resolved, Instant)>>>,
    /// `(group, kind)` → namespaced, for kinds found served in some version of their group.
    served: Arc<Mutex<HashMap<KindKey, (bool, Instant)>>>,
}

impl KindCache {
    fn get(&self, key: &KindKey) -> Option<Resolved> {
        let entries = self.entries.lock();
        entries
            .get(key)
            .filter(|(_, at)| at.elapsed() < KIND_TTL)
            .map(|(r, _)| r.clone())
    }

    fn insert(&self, key: KindKey, resolved: Resolved) {
        let mut entries = self.entries.lock();
        entries.insert(key, (resolved, Instant::now()));
    }

    fn served(&self, key: &KindKey) -> Option<bool> {
        let served = self.served.lock();
        served
            .get(key)
            .filter(|(_, at)| at.elapsed() < KIND_TTL)
            .map(|(namespaced, _)| *namespaced)
    }

    fn insert_served(&self, key: KindKey, namespaced: bool) {
        let mut served = self.served.lock();
        served.insert(key, (namespaced, Instant::now()));
    }
}

/// Resolves kinds through discovery, remembering what it found (unknown kinds are asked again,
/// since a CRD applied in the meantime can make them known).
pub struct Resolver {
    client: Client,
    cache: KindCache,
}

impl Resolver {
    /// A resolver for one cluster with a cache of its own.
    pub fn new(client: Client) -> Resolver {
        Resolver::shared(client, KindCache::default())
    }

    /// A resolver for one cluster using `cache`, shared with the cluster's other resolvers.
    pub fn shared(client: Client, cache: KindCache) -> Resolver {
        Resolver { client, cache }
    }

    /// The client requests go through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Resolves a kind; `Ok(None)` when the cluster does not serve it (yet).
    pub async fn resolve(
        &mut self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<Resolved>, Error> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(r) = self.cache.get(&key) {
            return Ok(Some(r));
        }
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        match discovery::pinned_kind(&self.client, &gvk).await {
            Ok((resource, caps)) => {
                let r = Resolved {
                    resource,
                    namespaced: caps.scope == Scope::Namespaced,
                };
                self.cache.insert(key, r.clone());
                Ok(Some(r))
            }
            Err(Error::Api(status)) if status.code == 404 => Ok(None),
            Err(Error::Discovery(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the cluster serves `kind` of `group` in any version, and with which scope
    /// (`Some(namespaced)`); `None` when it does not serve it (yet). Asks the group's discovery
    /// (all its versions) and remembers kinds found, like [`Resolver::resolve`].
    pub async fn served_scope(&mut self, group: &str, kind: &str) -> Result<Option<bool>, Error> {
        let key = (group.to_string(), kind.to_string());
        if let Some(namespaced) = self.cache.served(&key) {
            return Ok(Some(namespaced));
        }
        let api_group = match discovery::group(&self.client, group).await {
            Ok(g) => g,
            Err(Error::Api(status)) if status.code == 404 => return Ok(None),
            Err(Error::Discovery(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let found = api_group
            .versions()
            .flat_map(|v| api_group.versioned_resources(v))
            .find(|(resource, _)| resource.kind == kind)
            .map(|(_, caps)| caps.scope == Scope::Namespaced);
        if let Some(namespaced) = found {
            self.cache.insert_served(key, namespaced);
        }
        Ok(found)
    }

    /// The dynamic API for objects of a resolved kind in `namespace` (ignored when
    /// cluster-scoped).
    pub fn api(&self, resolved: &Resolved, namespace: Option<&str>) -> Api<DynamicObject> {
        match (resolved.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &resolved.resource),
            _ => Api::all_with(self.client.clone(), &resolved.resource),
        }
    }
}
