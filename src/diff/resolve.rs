//! Resolution of `apiVersion`/`kind` to an API resource (URL path, scope) through the cluster's
//! discovery, cached for one reconcile pass.

use std::collections::HashMap;

use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use kube::{Client, Error};

/// A resolved kind: where it is served and whether it is namespaced.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The API resource (group, version, plural) for requests.
    pub resource: ApiResource,
    /// Whether objects of this kind live in a namespace.
    pub namespaced: bool,
}

/// Resolves kinds through discovery, remembering what it found (unknown kinds are asked again,
/// since a CRD applied in the meantime can make them known).
pub struct Resolver {
    client: Client,
    cache: HashMap<(String, String), Resolved>,
}

impl Resolver {
    /// A resolver for one cluster.
    pub fn new(client: Client) -> Resolver {
        Resolver {
            client,
            cache: HashMap::new(),
        }
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
            return Ok(Some(r.clone()));
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

    /// The dynamic API for objects of a resolved kind in `namespace` (ignored when
    /// cluster-scoped).
    pub fn api(&self, resolved: &Resolved, namespace: Option<&str>) -> Api<DynamicObject> {
        match (resolved.namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &resolved.resource),
            _ => Api::all_with(self.client.clone(), &resolved.resource),
        }
    }
}
