//! The live states the drift watches see: per watch ([`WatchKey`]: cluster, kind, namespace),
//! each object's resourceVersion and [`digest::live`], kept from the watch's events. A watch's view is
//! complete once its (re)list is done, and stops being trusted when the watch is interrupted
//! until its next event arrives (the watcher resumes from the last resourceVersion, or
//! re-lists). Passes read it through [`ClusterLive`] to skip dry-runs of objects that still
//! agree with what an earlier pass verified (see [`crate::diff::known`]). Only digests are
//! kept, not objects: about 100 bytes per watched object.

use std::collections::HashMap;
use std::sync::Arc;

use kube::api::DynamicObject;
use kube::runtime::watcher::Event;
use parking_lot::Mutex;

use crate::diff::digest::{self, Digest};
use crate::diff::known::{LiveState, LiveStates};
use crate::object::ObjectRef;

/// One watch: a kind on a cluster, in one namespace (`None`: cluster-scoped kinds).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WatchKey {
    /// The destination cluster (as the resolver names it).
    pub cluster: String,
    /// `group/version` or `v1`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// The namespace watched; `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
}

impl WatchKey {
    /// The watch that covers `object` on `cluster`.
    pub fn of(cluster: &str, object: &ObjectRef) -> WatchKey {
        WatchKey {
            cluster: cluster.to_string(),
            api_version: object.api_version.clone(),
            kind: object.kind.clone(),
            namespace: object.namespace.clone(),
        }
    }
}

/// One object as last seen.
#[derive(Debug, Clone)]
struct Seen {
    resource_version: String,
    digest: Digest,
}

/// What one watch has seen.
#[derive(Debug, Default)]
struct View {
    /// Whether `objects` is the watch's complete, current view.
    complete: bool,
    objects: HashMap<String, Seen>,
    /// Objects of a (re)list in progress; they replace `objects` when it is done.
    listing: Option<HashMap<String, Seen>>,
}

/// The live states of every drift watch (clones share them).
#[derive(Clone, Default)]
pub struct LiveCache {
    views: Arc<Mutex<HashMap<WatchKey, View>>>,
}

fn seen(object: &DynamicObject) -> Option<(String, Seen)> {
    let name = object.metadata.name.clone()?;
    let value = serde_json::to_value(object).ok()?;
    Some((
        name,
        Seen {
            resource_version: object.metadata.resource_version.clone().unwrap_or_default(),
            digest: digest::live(&value),
        },
    ))
}

impl LiveCache {
    /// Takes in one event of the watch `key`.
    pub fn record(&self, key: &WatchKey, event: &Event<DynamicObject>) {
        let mut views = self.views.lock();
        let view = views.entry(key.clone()).or_default();
        match event {
            Event::Init => {
                view.complete = false;
                view.listing = Some(HashMap::new());
            }
            Event::InitApply(object) => {
                if let (Some(listing), Some((name, s))) = (view.listing.as_mut(), seen(object)) {
                    listing.insert(name, s);
                }
            }
            Event::InitDone => {
                if let Some(listing) = view.listing.take() {
                    view.objects = listing;
                    view.complete = true;
                }
            }
            Event::Apply(object) => {
                if let Some((name, s)) = seen(object) {
                    view.objects.insert(name, s);
                }
                view.complete = view.listing.is_none();
            }
            Event::Delete(object) => {
                if let Some(name) = &object.metadata.name {
                    view.objects.remove(name);
                }
                view.complete = view.listing.is_none();
            }
        }
    }

    /// The watch `key` failed: its view is not trusted until it delivers again.
    pub fn interrupted(&self, key: &WatchKey) {
        if let Some(view) = self.views.lock().get_mut(key) {
            view.complete = false;
        }
    }

    /// The watch `key` stopped: its view is dropped.
    pub fn forget(&self, key: &WatchKey) {
        self.views.lock().remove(key);
    }

    /// The live states of destination `cluster` (as the drift watches name it).
    pub fn cluster(&self, cluster: &str) -> ClusterLive {
        ClusterLive {
            cache: self.clone(),
            cluster: cluster.to_string(),
        }
    }
}

/// The live states of one destination cluster.
#[derive(Clone)]
pub struct ClusterLive {
    cache: LiveCache,
    cluster: String,
}

impl LiveStates for ClusterLive {
    fn state(&self, object: &ObjectRef) -> LiveState {
        let views = self.cache.views.lock();
        let Some(view) = views
            .get(&WatchKey::of(&self.cluster, object))
            .filter(|v| v.complete)
        else {
            return LiveState::Unknown;
        };
        match view.objects.get(&object.name) {
            Some(s) => LiveState::Present {
                resource_version: s.resource_version.clone(),
                digest: s.digest,
            },
            None => LiveState::Absent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(name: &str, rv: &str, data: &str) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "n", "resourceVersion": rv},
            "data": {"k": data}
        }))
        .unwrap()
    }

    fn id(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: name.into(),
        }
    }

    fn key() -> WatchKey {
        WatchKey::of("c1", &id("any"))
    }

    fn rv(state: LiveState) -> Option<String> {
        match state {
            LiveState::Present {
                resource_version, ..
            } => Some(resource_version),
            _ => None,
        }
    }

    #[test]
    fn a_view_is_trusted_only_while_complete() {
        let cache = LiveCache::default();
        let live = cache.cluster("c1");
        assert_eq!(live.state(&id("a")), LiveState::Unknown, "no watch");
        cache.record(&key(), &Event::Init);
        cache.record(&key(), &Event::InitApply(cm("a", "1", "x")));
        assert_eq!(live.state(&id("a")), LiveState::Unknown, "still listing");
        cache.record(&key(), &Event::InitDone);
        assert_eq!(rv(live.state(&id("a"))).as_deref(), Some("1"));
        assert_eq!(live.state(&id("b")), LiveState::Absent);
        assert_eq!(
            cache.cluster("c2").state(&id("a")),
            LiveState::Unknown,
            "another cluster"
        );

        cache.record(&key(), &Event::Apply(cm("b", "2", "y")));
        cache.record(&key(), &Event::Delete(cm("a", "1", "x")));
        assert_eq!(live.state(&id("a")), LiveState::Absent);
        assert_eq!(rv(live.state(&id("b"))).as_deref(), Some("2"));

        cache.interrupted(&key());
        assert_eq!(live.state(&id("b")), LiveState::Unknown, "interrupted");
        cache.record(&key(), &Event::Apply(cm("b", "3", "z")));
        assert_eq!(rv(live.state(&id("b"))).as_deref(), Some("3"), "resumed");

        // A re-list replaces the view: objects deleted meanwhile disappear.
        cache.record(&key(), &Event::Init);
        cache.record(&key(), &Event::InitApply(cm("c", "4", "w")));
        cache.record(&key(), &Event::InitDone);
        assert_eq!(live.state(&id("b")), LiveState::Absent);
        assert_eq!(rv(live.state(&id("c"))).as_deref(), Some("4"));

        cache.forget(&key());
        assert_eq!(live.state(&id("c")), LiveState::Unknown);
    }

    #[test]
    fn digests_follow_the_desired_state() {
        let cache = LiveCache::default();
        let live = cache.cluster("c1");
        let digest_of = |state: LiveState| match state {
            LiveState::Present { digest, .. } => digest,
            other => panic!("{other:?}"),
        };
        cache.record(&key(), &Event::Init);
        cache.record(&key(), &Event::InitApply(cm("a", "1", "x")));
        cache.record(&key(), &Event::InitDone);
        let first = digest_of(live.state(&id("a")));
        cache.record(&key(), &Event::Apply(cm("a", "2", "x")));
        assert_eq!(digest_of(live.state(&id("a"))), first, "only rv changed");
        cache.record(&key(), &Event::Apply(cm("a", "3", "edited")));
        assert_ne!(digest_of(live.state(&id("a"))), first);
    }
}
