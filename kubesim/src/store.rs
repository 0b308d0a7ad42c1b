//! The object store: every object by resource, namespace and name, a global resourceVersion
//! counter, and a bounded history of changes that watches resume from.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Updated (including marked for deletion).
    Modified,
    /// Removed.
    Deleted,
}

impl EventType {
    /// The watch event `type` string.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change, as recorded in the history and sent to watchers.
#[derive(Debug)]
pub struct Event {
    /// The resourceVersion the change produced.
    pub rv: u64,
    /// The store key of the resource (`apps/deployments`).
    pub key: String,
    /// The object's namespace ("" for cluster-scoped).
    pub namespace: String,
    /// Added, modified or deleted.
    pub event_type: EventType,
    /// The object after the change (before removal for deletes).
    pub object: Arc<Value>,
    /// The object before a modification or deletion (None for additions), so watches with
    /// selectors can turn an object leaving or entering the selection into DELETED or ADDED,
    /// as the API server does, and lists can be served at an older resourceVersion.
    pub previous: Option<Arc<Value>>,
}

/// A receiver of every change from some point on.
pub type Subscription = broadcast::Receiver<Arc<Event>>;

/// Objects of one resource, ordered by (namespace, name) so lists and continue tokens are stable.
pub type Table = BTreeMap<(String, String), Arc<Value>>;

/// The in-memory store of one cluster.
pub struct Store {
    rv: u64,
    tables: HashMap<String, Table>,
    history: VecDeque<Arc<Event>>,
    history_cap: usize,
    tx: broadcast::Sender<Arc<Event>>,
}

/// Why a watch cannot start from the requested resourceVersion.
#[derive(Debug, Clone, Copy)]
pub struct TooOld {
    /// The oldest resourceVersion still in the history.
    pub oldest: u64,
}

/// The namespace and name of an object.
pub fn ns_name(obj: &Value) -> (String, String) {
    let meta = obj.get("metadata");
    let field = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    (field("namespace"), field("name"))
}

impl Store {
    /// An empty store keeping `history_cap` changes for watches to resume from.
    pub fn new(history_cap: usize) -> Store {
        let (tx, _) = broadcast::channel(4096);
        Store {
            rv: 1,
            tables: HashMap::new(),
            history: VecDeque::new(),
            history_cap,
            tx,
        }
    }

    /// The latest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    /// One object.
    pub fn get(&self, key: &str, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.tables
            .get(key)?
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// The objects of a resource, in one namespace or all (`None`).
    pub fn list<'a>(
        &'a self,
        key: &str,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<Value>> + 'a {
        self.tables
            .get(key)
            .into_iter()
            .flat_map(|t| t.iter())
            .filter(move |((ns, _), _)| namespace.is_none_or(|want| want == ns))
            .map(|(_, v)| v)
    }

    /// The (store key, object) of every namespaced object in a namespace.
    pub fn in_namespace(&self, namespace: &str) -> Vec<(String, Arc<Value>)> {
        self.tables
            .iter()
            .flat_map(|(k, t)| {
                t.iter()
                    .filter(|((ns, _), _)| ns == namespace)
                    .map(|(_, v)| (k.clone(), v.clone()))
            })
            .collect()
    }

    /// Every object of every resource (for garbage collection by owner).
    pub fn all(&self) -> Vec<(String, Arc<Value>)> {
        self.tables
            .iter()
            .flat_map(|(k, t)| t.values().map(|v| (k.clone(), v.clone())))
            .collect()
    }

    fn record(
        &mut self,
        key: &str,
        event_type: EventType,
        object: Arc<Value>,
        previous: Option<Arc<Value>>,
    ) {
        let (namespace, _) = ns_name(&object);
        let event = Arc::new(Event {
            rv: self.rv,
            key: key.to_string(),
            namespace,
            event_type,
            object,
            previous,
        });
        if self.history.len() >= self.history_cap {
            self.history.pop_front();
        }
        self.history.push_back(event.clone());
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(event);
    }

    /// Stores an object (create or update) under a new resourceVersion, which is written into
    /// its metadata; returns the stored object.
    pub fn put(&mut self, key: &str, mut obj: Value, event_type: EventType) -> Arc<Value> {
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let (ns, name) = ns_name(&obj);
        let obj = Arc::new(obj);
        let previous = self
            .tables
            .entry(key.to_string())
            .or_default()
            .insert((ns, name), obj.clone());
        let previous = previous.filter(|_| event_type == EventType::Modified);
        self.record(key, event_type, obj.clone(), previous);
        obj
    }

    /// Removes an object; the DELETED event carries a new resourceVersion.
    pub fn remove(&mut self, key: &str, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let old = self
            .tables
            .get_mut(key)?
            .remove(&(namespace.to_string(), name.to_string()))?;
        self.rv += 1;
        let mut obj = (*old).clone();
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let obj = Arc::new(obj);
        self.record(key, EventType::Deleted, obj.clone(), Some(old));
        Some(obj)
    }

    /// The objects of a resource as they were at resourceVersion `rv` (a list with
    /// `resourceVersionMatch=Exact`), rebuilt from the current ones by undoing the changes
    /// after it; `Err` when the history no longer reaches back to `rv`.
    pub fn list_at(
        &self,
        key: &str,
        namespace: Option<&str>,
        rv: u64,
    ) -> Result<Vec<Arc<Value>>, TooOld> {
        let oldest = self.history.front().map(|e| e.rv).unwrap_or(self.rv + 1);
        if rv < self.rv && rv + 1 < oldest {
            return Err(TooOld { oldest });
        }
        let mut snapshot: Table = self
            .list(key, namespace)
            .map(|o| (ns_name(o), o.clone()))
            .collect();
        for ev in self.history.iter().rev().take_while(|e| e.rv > rv) {
            if ev.key != key || namespace.is_some_and(|ns| ns != ev.namespace) {
                continue;
            }
            let id = ns_name(&ev.object);
            match (&ev.event_type, &ev.previous) {
                (EventType::Added, _) => {
                    snapshot.remove(&id);
                }
                (_, Some(before)) => {
                    snapshot.insert(id, before.clone());
                }
                (_, None) => {}
            }
        }
        Ok(snapshot.into_values().collect())
    }

    /// Drops a whole resource table (a deleted CRD's objects), recording their deletion.
    pub fn drop_table(&mut self, key: &str) {
        let Some(table) = self.tables.remove(key) else {
            return;
        };
        for ((_, _), obj) in table {
            self.rv += 1;
            let mut o = (*obj).clone();
            o["metadata"]["resourceVersion"] = json!(self.rv.to_string());
            self.record(key, EventType::Deleted, Arc::new(o), Some(obj));
        }
    }

    /// The changes after `rv` and a receiver for later ones, taken together so no change is
    /// missed; `Err` when `rv` is older than the history.
    pub fn watch_from(&self, rv: u64) -> Result<(Vec<Arc<Event>>, Subscription), TooOld> {
        let oldest = self.history.front().map(|e| e.rv).unwrap_or(self.rv + 1);
        if rv + 1 < oldest && rv < self.rv {
            return Err(TooOld { oldest });
        }
        let past = self.history.iter().filter(|e| e.rv > rv).cloned().collect();
        Ok((past, self.tx.subscribe()))
    }

    /// A receiver of changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
    }

    #[test]
    fn put_bumps_resource_version_and_history_bounds_watches() {
        let mut s = Store::new(3);
        let a = s.put("/configmaps", cm("a"), EventType::Added);
        assert_eq!(a["metadata"]["resourceVersion"], "2");
        for n in ["b", "c", "d", "e"] {
            s.put("/configmaps", cm(n), EventType::Added);
        }
        assert_eq!(s.current_rv(), 6);
        assert!(s.watch_from(2).is_err(), "compacted");
        let (past, _) = s.watch_from(4).ok().unwrap();
        assert_eq!(past.len(), 2);
        let (past, _) = s.watch_from(6).ok().unwrap();
        assert!(past.is_empty());
        let gone = s.remove("/configmaps", "default", "a").unwrap();
        assert_eq!(gone["metadata"]["resourceVersion"], "7");
        assert_eq!(s.list("/configmaps", Some("default")).count(), 4);
    }
}
