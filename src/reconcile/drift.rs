//! Drift watches: per destination cluster, a watch on every kind (and namespace) present in
//! the Apps' inventories. A change to an inventoried object that wardn did not make (its
//! managedFields show another manager writing at or after wardn's last apply), or its deletion,
//! calls the drift callback with the owning App, which the runner turns into a debounced
//! reconcile (selfHeal re-applies, otherwise the App reports OutOfSync). The set of watches
//! follows the inventories; the runtime watcher re-lists after dropped watches or restarts, so
//! changes made meanwhile are seen too.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, DynamicObject, GroupVersionKind};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use super::live::{ClusterLive, LiveCache, WatchKey};
use crate::object::ObjectRef;
use crate::object::owner::FIELD_MANAGER;

/// How long to wait before retrying discovery of a watched kind.
const DISCOVERY_RETRY: Duration = Duration::from_secs(30);

/// Called with the key of an App whose inventory drifted.
pub type OnDrift = Arc<dyn Fn(&str) + Send + Sync>;

/// The client the watches of one cluster use, and the identity of its credentials
/// ([`crate::clusters::cache::credentials_identity`]): when a pass comes with other
/// credentials (the cluster's kubeconfig was rotated), the cluster's watches are restarted
/// with the new client instead of failing on revoked credentials.
#[derive(Clone, Copy)]
pub struct WatchClient<'a> {
    /// A client of the cluster.
    pub client: &'a kube::Client,
    /// Which credentials it uses.
    pub credentials: u64,
}

/// What is tracked of one App.
struct Tracked {
    cluster: Arc<str>,
    /// Sorted and deduplicated; each object shared with its key in [`Index::owners`].
    inventory: Box<[Arc<ObjectRef>]>,
}

/// The Apps owning one object: almost always exactly one.
type Owners = Vec<Arc<str>>;

/// The tracked inventories and what follows from them, kept up to date one App at a time: a
/// pass changes one App's inventory, and rebuilding the owners of every App's objects after
/// each would make a cold start of N Apps cost O(N²).
///
/// Held for every object of every App a process passes (10 per App is common, a replica
/// holds thousands of Apps), so each object is stored once, shared between its App's
/// inventory and the owners index, and cluster names and App keys are shared too: about a
/// third of the memory of keeping them apart.
#[derive(Default)]
struct Index {
    apps: HashMap<Arc<str>, Tracked>,
    /// App keys by cluster, then object.
    owners: HashMap<Arc<str>, HashMap<Arc<ObjectRef>, Owners>>,
    /// The watches the owned objects need, with how many owned objects need each.
    wanted: BTreeMap<WatchKey, usize>,
    watches: BTreeMap<WatchKey, JoinHandle<()>>,
    /// The credentials each cluster's watches use.
    credentials: BTreeMap<String, u64>,
}

impl Index {
    /// Whether App `app` is tracked on `cluster` with exactly the objects of `inventory`.
    fn tracks(&self, app: &str, cluster: &str, inventory: &[&ObjectRef]) -> bool {
        self.apps.get(app).is_some_and(|tracked| {
            &*tracked.cluster == cluster
                && tracked.inventory.len() == inventory.len()
                && tracked
                    .inventory
                    .iter()
                    .zip(inventory)
                    .all(|(held, given)| **held == **given)
        })
    }

    /// Records App `app`'s inventory on `cluster` (`None`: the App is gone), updating the
    /// owners and the wanted watches of the objects it gained and lost only.
    fn set(&mut self, app: &str, tracked: Option<(&str, &[&ObjectRef])>) {
        let key = match self.apps.remove_entry(app) {
            Some((key, old)) => {
                for object in old.inventory.iter() {
                    self.disown(&key, &old.cluster, object);
                }
                key
            }
            None => Arc::from(app),
        };
        let Some((cluster, inventory)) = tracked else {
            return;
        };
        let cluster = match self.owners.get_key_value(cluster) {
            Some((shared, _)) => Arc::clone(shared),
            None => Arc::from(cluster),
        };
        let objects = self.owners.entry(Arc::clone(&cluster)).or_default();
        let mut shared = Vec::with_capacity(inventory.len());
        for &object in inventory {
            let object = match objects.get_key_value(object) {
                Some((shared, _)) => Arc::clone(shared),
                None => Arc::new(object.clone()),
            };
            let owners = objects.entry(Arc::clone(&object)).or_default();
            if owners.is_empty() {
                *self
                    .wanted
                    .entry(WatchKey::of(&cluster, &object))
                    .or_default() += 1;
            }
            owners.push(Arc::clone(&key));
            shared.push(object);
        }
        self.apps.insert(
            key,
            Tracked {
                cluster,
                inventory: shared.into_boxed_slice(),
            },
        );
    }

    /// Removes `app` from the owners of `object` on `cluster`; the object's watch is wanted
    /// one object less when no App owns it any more.
    fn disown(&mut self, app: &str, cluster: &str, object: &ObjectRef) {
        let Some(objects) = self.owners.get_mut(cluster) else {
            return;
        };
        let Some(owners) = objects.get_mut(object) else {
            return;
        };
        owners.retain(|owner| &**owner != app);
        if !owners.is_empty() {
            return;
        }
        objects.remove(object);
        if objects.is_empty() {
            self.owners.remove(cluster);
        }
        let watch = WatchKey::of(cluster, object);
        if let Some(count) = self.wanted.get_mut(&watch) {
            *count -= 1;
            if *count == 0 {
                self.wanted.remove(&watch);
            }
        }
    }
}

/// The drift watches of every destination cluster.
pub struct DriftWatches {
    index: Arc<Mutex<Index>>,
    on_drift: OnDrift,
    live: LiveCache,
}

impl DriftWatches {
    /// No watches yet; `on_drift` is called (from watch tasks) with the drifted App's key.
    pub fn new(on_drift: OnDrift) -> DriftWatches {
        DriftWatches {
            index: Arc::default(),
            on_drift,
            live: LiveCache::default(),
        }
    }

    /// What the watches see of destination `cluster`'s objects.
    pub fn live(&self, cluster: &str) -> ClusterLive {
        self.live.cluster(cluster)
    }

    /// Records App `app`'s inventory on `cluster` (after a pass) and starts the watches it
    /// needs through `client`; watches no App needs any more are stopped, and the cluster's
    /// watches restart when `client` uses other credentials than they do.
    pub fn track(
        &self,
        app: &str,
        cluster: &str,
        client: WatchClient<'_>,
        inventory: &[ObjectRef],
    ) {
        let mut index = self.index.lock();
        let rotated = index
            .credentials
            .insert(cluster.to_string(), client.credentials)
            .is_some_and(|used| used != client.credentials);
        if rotated {
            tracing::info!(cluster = %cluster, "cluster credentials changed: restarting its drift watches");
            self.stop_watches(&mut index, |key, _| key.cluster != cluster);
        }
        // Most passes change nothing: then the watches are already right (unless one ended),
        // and rebuilding the whole index after every pass would cost O(all inventories).
        let inventory = sorted(inventory);
        let unchanged = index.tracks(app, cluster, &inventory);
        if !rotated && unchanged && index.watches.values().all(|task| !task.is_finished()) {
            return;
        }
        index.set(app, Some((cluster, &inventory)));
        self.reconcile_watches(&mut index, Some((cluster, client)));
    }

    /// Stops tracking App `app` (removed), stopping the watches only it needed.
    pub fn forget(&self, app: &str) {
        let mut index = self.index.lock();
        if index.apps.contains_key(app) {
            index.set(app, None);
            self.reconcile_watches(&mut index, None);
        }
    }

    /// The watches running now.
    pub fn watches(&self) -> Vec<WatchKey> {
        self.index.lock().watches.keys().cloned().collect()
    }

    /// Stops the watches `keep` refuses, dropping their live views.
    fn stop_watches(&self, index: &mut Index, keep: impl Fn(&WatchKey, &JoinHandle<()>) -> bool) {
        index.watches.retain(|key, task| {
            let kept = keep(key, task);
            if !kept {
                task.abort();
                self.live.forget(key);
            }
            kept
        });
    }

    fn reconcile_watches(&self, index: &mut Index, client: Option<(&str, WatchClient<'_>)>) {
        let wanted = std::mem::take(&mut index.wanted);
        self.stop_watches(index, |key, task| {
            wanted.contains_key(key) && !task.is_finished()
        });
        index.wanted = wanted;
        let Some((cluster, client)) = client else {
            return;
        };
        let client = client.client;
        let missing: Vec<WatchKey> = index
            .wanted
            .keys()
            .filter(|key| key.cluster == cluster && !index.watches.contains_key(*key))
            .cloned()
            .collect();
        for key in missing {
            let task = tokio::spawn(watch(
                key.clone(),
                client.clone(),
                Arc::downgrade(&self.index),
                Arc::clone(&self.on_drift),
                self.live.clone(),
            ));
            index.watches.insert(key, task);
        }
    }
}

impl Drop for DriftWatches {
    fn drop(&mut self) {
        for (_, task) in std::mem::take(&mut self.index.lock().watches) {
            task.abort();
        }
    }
}

/// `inventory` sorted, without repeats: the form [`Index`] keeps.
fn sorted(inventory: &[ObjectRef]) -> Vec<&ObjectRef> {
    let mut sorted: Vec<&ObjectRef> = inventory.iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    sorted
}

/// Whether the latest write to `object` was not wardn's: no apply by wardn is recorded, or
/// another manager wrote it (outside the status subresource, which controllers own) at or
/// after wardn's last apply. Ties count as drift: at worst one extra, no-op pass.
pub fn drifted(object: &DynamicObject) -> bool {
    let entries: &[ManagedFieldsEntry] = object.metadata.managed_fields.as_deref().unwrap_or(&[]);
    let ours = entries
        .iter()
        .filter(|e| e.manager.as_deref() == Some(FIELD_MANAGER))
        .filter_map(|e| e.time.as_ref())
        .max();
    let Some(ours) = ours else {
        return true;
    };
    entries.iter().any(|e| {
        e.manager.as_deref() != Some(FIELD_MANAGER)
            && e.subresource.as_deref().is_none_or(str::is_empty)
            && e.time.as_ref().is_some_and(|t| t >= ours)
    })
}

/// The inventory entry an event is about.
fn object_ref(key: &WatchKey, object: &DynamicObject) -> Option<ObjectRef> {
    Some(ObjectRef {
        api_version: key.api_version.clone(),
        kind: key.kind.clone(),
        namespace: object.metadata.namespace.clone(),
        name: object.metadata.name.clone()?,
    })
}

/// The Apps owning the object, if any.
fn owners(index: &Weak<Mutex<Index>>, cluster: &str, object: ObjectRef) -> Owners {
    let Some(index) = index.upgrade() else {
        return Vec::new();
    };
    let index = index.lock();
    index
        .owners
        .get(cluster)
        .and_then(|objects| objects.get(&object))
        .cloned()
        .unwrap_or_default()
}

fn gvk(key: &WatchKey) -> GroupVersionKind {
    let (group, version) = key
        .api_version
        .split_once('/')
        .unwrap_or(("", key.api_version.as_str()));
    GroupVersionKind::gvk(group, version, &key.kind)
}

/// Watches one kind until aborted, keeping `live` current and reporting drifted inventory
/// objects.
async fn watch(
    key: WatchKey,
    client: kube::Client,
    index: Weak<Mutex<Index>>,
    on_drift: OnDrift,
    live: LiveCache,
) {
    let resource = loop {
        match kube::discovery::pinned_kind(&client, &gvk(&key)).await {
            Ok((resource, _)) => break resource,
            Err(e) => {
                tracing::warn!(cluster = %key.cluster, kind = %key.kind, error = %e,
                    "drift watch: cannot discover the kind; retrying");
                tokio::time::sleep(DISCOVERY_RETRY).await;
            }
        }
    };
    let api: Api<DynamicObject> = match &key.namespace {
        Some(ns) => Api::namespaced_with(client, ns, &resource),
        None => Api::all_with(client, &resource),
    };
    let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures_util::pin_mut!(events);
    while let Some(event) = events.next().await {
        // The live view is updated first, so a pass the drift starts sees the change.
        let event = match event {
            Ok(event) => {
                live.record(&key, &event);
                event
            }
            Err(e) => {
                live.interrupted(&key);
                tracing::debug!(cluster = %key.cluster, kind = %key.kind, error = %e,
                    "drift watch interrupted; it restarts with backoff");
                continue;
            }
        };
        let (object, deleted) = match event {
            // InitApply: objects seen by a (re-)list, which may have changed while the
            // watch was down.
            Event::Apply(o) | Event::InitApply(o) => (o, false),
            Event::Delete(o) => (o, true),
            Event::Init | Event::InitDone => continue,
        };
        let Some(object_ref) = object_ref(&key, &object) else {
            continue;
        };
        if !deleted && !drifted(&object) {
            continue;
        }
        for app in owners(&index, &key.cluster, object_ref) {
            tracing::debug!(app = %app, kind = %key.kind, name = ?object.metadata.name,
                deleted, "drift detected");
            on_drift(&app);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;
    use serde_json::json;
    use std::collections::BTreeSet;

    fn object(fields: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "n", "managedFields": fields}
        }))
        .unwrap()
    }

    #[test]
    fn drift_is_a_write_by_another_manager_at_or_after_our_apply() {
        let ours =
            json!({"manager": "wardn", "operation": "Apply", "time": "2026-11-30T10:00:00Z"});
        assert!(!drifted(&object(json!([ours]))), "only wardn wrote it");
        assert!(
            !drifted(&object(json!([
                {"manager": "kubectl-create", "operation": "Update", "time": "2026-11-30T09:00:00Z"},
                ours,
            ]))),
            "an older write by someone else is not drift"
        );
        assert!(drifted(&object(json!([
            ours,
            {"manager": "kubectl-patch", "operation": "Update", "time": "2026-11-30T10:05:00Z"},
        ]))));
        assert!(
            drifted(&object(json!([
                ours,
                {"manager": "kubectl-edit", "operation": "Update", "time": "2026-11-30T10:00:00Z"},
            ]))),
            "same second: drift"
        );
        assert!(
            !drifted(&object(json!([
                ours,
                {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status",
                 "time": "2026-11-30T10:05:00Z"},
            ]))),
            "status written by a controller"
        );
        assert!(
            drifted(&object(json!([
                {"manager": "kubectl-edit", "operation": "Update", "time": "2026-11-30T10:00:00Z"},
            ]))),
            "wardn's fields taken over entirely"
        );
    }

    /// App keys by (cluster, object), in one canonical form.
    type Owned = BTreeMap<(String, ObjectRef), BTreeSet<String>>;

    /// The owners [`Index`] keeps, in the canonical form.
    fn kept(index: &Index) -> Owned {
        let mut owned = Owned::new();
        for (cluster, objects) in &index.owners {
            for (object, apps) in objects {
                assert!(!apps.is_empty(), "an object without owners is dropped");
                let set: BTreeSet<String> = apps.iter().map(|app| app.to_string()).collect();
                assert_eq!(set.len(), apps.len(), "an App owns an object once");
                owned.insert((cluster.to_string(), (**object).clone()), set);
            }
        }
        owned
    }

    /// The owners and wanted watches as a rebuild from every tracked inventory gives them.
    fn rebuilt(index: &Index) -> (Owned, BTreeMap<WatchKey, usize>) {
        let mut owners = Owned::new();
        for (app, t) in &index.apps {
            for object in t.inventory.iter() {
                owners
                    .entry((t.cluster.to_string(), (**object).clone()))
                    .or_default()
                    .insert(app.to_string());
            }
        }
        let mut wanted: BTreeMap<WatchKey, usize> = BTreeMap::new();
        for (cluster, object) in owners.keys() {
            *wanted.entry(WatchKey::of(cluster, object)).or_default() += 1;
        }
        (owners, wanted)
    }

    #[test]
    fn a_thousand_inventory_changes_keep_owners_and_watches_as_a_rebuild_gives_them() {
        // Pseudo-random but repeatable: Apps gain, lose, share, move and drop objects, and
        // list some twice.
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| rng.below(n);
        let kinds = [
            ("v1", "ConfigMap"),
            ("apps/v1", "Deployment"),
            ("v1", "Namespace"),
        ];
        let mut index = Index::default();
        for step in 0..1000 {
            let app = format!("fleet/a{}", next(12));
            let cluster = format!("c{}", next(3));
            let inventory: Vec<ObjectRef> = (0..next(6))
                .map(|_| {
                    let (api_version, kind) = kinds[next(3) as usize];
                    ObjectRef {
                        api_version: api_version.into(),
                        kind: kind.into(),
                        namespace: (kind != "Namespace").then(|| format!("n{}", next(2))),
                        name: format!("o{}", next(4)),
                    }
                })
                .collect();
            let inventory = sorted(&inventory);
            if next(10) != 0 {
                index.set(&app, Some((&cluster, &inventory)));
                assert!(index.tracks(&app, &cluster, &inventory), "step {step}");
            } else {
                index.set(&app, None);
                assert!(!index.apps.contains_key(app.as_str()), "step {step}");
            }
            let (owners, wanted) = rebuilt(&index);
            assert_eq!(kept(&index), owners, "owners after step {step}");
            assert_eq!(index.wanted, wanted, "wanted watches after step {step}");
            // Each tracked object is the very one the owners index holds.
            for t in index.apps.values() {
                for object in t.inventory.iter() {
                    let (held, _) = index.owners[&t.cluster]
                        .get_key_value(&**object)
                        .expect("tracked objects are owned");
                    assert!(
                        Arc::ptr_eq(held, object),
                        "step {step}: {object} is stored twice"
                    );
                }
            }
        }
        for app in index.apps.keys().cloned().collect::<Vec<_>>() {
            index.set(&app, None);
        }
        assert!(index.owners.is_empty() && index.wanted.is_empty());
    }

    #[test]
    fn an_inventory_is_unchanged_whatever_its_order_or_repeats() {
        let object = |name: &str| ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: name.into(),
        };
        let mut index = Index::default();
        let first = [object("b"), object("a")];
        index.set("fleet/x", Some(("c", &sorted(&first))));
        let again = [object("a"), object("b"), object("a")];
        assert!(index.tracks("fleet/x", "c", &sorted(&again)));
        assert!(
            !index.tracks("fleet/x", "d", &sorted(&again)),
            "another cluster"
        );
        assert!(
            !index.tracks("fleet/x", "c", &sorted(&first[..1])),
            "fewer objects"
        );
        assert!(
            !index.tracks("fleet/y", "c", &sorted(&first)),
            "another App"
        );
        assert_eq!(
            index.owners["c"][&object("a")].len(),
            1,
            "a repeated object is owned once"
        );
    }

    #[test]
    fn group_version_kind_of_core_and_grouped_kinds() {
        let key = |av: &str, kind: &str| WatchKey {
            cluster: "c".into(),
            api_version: av.into(),
            kind: kind.into(),
            namespace: None,
        };
        let g = gvk(&key("v1", "ConfigMap"));
        assert_eq!((g.group.as_str(), g.version.as_str()), ("", "v1"));
        let g = gvk(&key("apps/v1", "Deployment"));
        assert_eq!(
            (g.group.as_str(), g.version.as_str(), g.kind.as_str()),
            ("apps", "v1", "Deployment")
        );
    }
}
