//! The kwok-like controllers of a cluster: a background task that reacts to workload changes
//! and ready delays, creating ReplicaSets and Pods and writing workload statuses with the pure
//! functions of the `kwok` module.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::kwok;
use crate::state::State;
use crate::store::{EventType, Store, ns_name};
use crate::util::{new_uid, now_rfc3339};

const DEPLOYMENTS: &str = "apps/deployments";
const REPLICA_SETS: &str = "apps/replicasets";
const PODS: &str = "/pods";
const SERVICES: &str = "/services";
const ENDPOINTS: &str = "/endpoints";
const ENDPOINT_SLICES: &str = "discovery.k8s.io/endpointslices";
/// Resources whose objects the simulated controllers act on.
const WORKLOADS: &[&str] = &[
    DEPLOYMENTS,
    REPLICA_SETS,
    "apps/statefulsets",
    "apps/daemonsets",
    "batch/jobs",
];

type Key = (String, String, String);

/// The controllers of Pods, by kind, with the store key of their objects.
const OWNER_KINDS: &[(&str, &str)] = &[
    ("ReplicaSet", REPLICA_SETS),
    ("StatefulSet", "apps/statefulsets"),
    ("DaemonSet", "apps/daemonsets"),
    ("Job", "batch/jobs"),
];

/// Creates the cluster's Nodes.
pub fn create_nodes(store: &mut Store, count: usize) {
    let now = now_rfc3339();
    for mut node in kwok::nodes(count, &now) {
        node["metadata"]["uid"] = json!(new_uid());
        node["metadata"]["creationTimestamp"] = json!(now);
        store.put("/nodes", node, EventType::Added);
    }
}

/// Starts the simulated controllers.
pub fn spawn(state: Arc<State>) -> JoinHandle<()> {
    tokio::spawn(run(state))
}

/// When each workload (by uid) becomes ready: its generation, the deadline, and whether a
/// reconcile has seen the deadline pass (until then the loop must wake for it).
type ReadyAt = HashMap<String, (i64, Instant, bool)>;

/// Pods being deleted gracefully, by (namespace, name): their uid and when the simulated
/// kubelet has stopped their containers (the Pod is then removed).
type Stopping = HashMap<(String, String), (String, Instant)>;

/// Notes a Pod whose graceful deletion started: it goes after the configured container stop
/// time, or its grace period when shorter.
fn note_stopping(state: &State, pod: &Value, stopping: &mut Stopping) {
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if pod.pointer("/metadata/deletionTimestamp").is_none() || grace <= 0 {
        return;
    }
    let (ns, name) = ns_name(pod);
    let stop = state
        .config
        .pod_termination
        .min(std::time::Duration::from_secs(grace.unsigned_abs()));
    stopping
        .entry((ns, name))
        .or_insert_with(|| (uid_of(pod).to_string(), Instant::now() + stop));
}

/// The Services of `pod`'s namespace whose endpoints a change to `pod` may change: those that
/// select it now and those whose Endpoints list it (it was relabelled or deleted). Only they
/// are brought up to date: syncing every Service of the namespace at each Pod event made a
/// namespace of S Services and P Pods cost S × P per event.
fn services_touched_by(store: &Store, pod: &Value) -> Vec<(String, String)> {
    let (namespace, pod_name) = ns_name(pod);
    store
        .list(SERVICES, Some(&namespace))
        .filter(|service| {
            kwok::service_selects(service, pod) || endpoints_list(store, service, &pod_name)
        })
        .map(|service| ns_name(service))
        .collect()
}

/// Whether the Endpoints of `service` list Pod `pod` (ready or not).
fn endpoints_list(store: &Store, service: &Value, pod: &str) -> bool {
    let (namespace, name) = ns_name(service);
    store
        .get(ENDPOINTS, &namespace, &name)
        .is_some_and(|endpoints| {
            endpoints
                .get("subsets")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|subset| {
                    ["addresses", "notReadyAddresses"]
                        .into_iter()
                        .filter_map(|field| subset.get(field).and_then(Value::as_array))
                        .flatten()
                })
                .any(|address| {
                    address.pointer("/targetRef/name").and_then(Value::as_str) == Some(pod)
                })
        })
}

/// Keeps the Endpoints and EndpointSlices of Service `name` in `namespace` in step with its
/// Pods (the endpoints controllers); nothing for a Service that is gone (its Endpoints are
/// removed with it).
fn sync_endpoints(state: &State, namespace: &str, name: &str) {
    let mut store = state.store();
    let Some(service) = store.get(SERVICES, namespace, name) else {
        return;
    };
    let pods: Vec<Arc<Value>> = store.list(PODS, Some(namespace)).cloned().collect();
    let pods: Vec<&Value> = pods.iter().map(|p| &**p).collect();
    sync_endpoint_slices(&mut store, &service, &pods);
    let Some(mut wanted) = kwok::endpoints_for(&service, &pods) else {
        return;
    };
    match store.get(ENDPOINTS, namespace, name) {
        Some(current) => {
            let mut next = (*current).clone();
            for field in ["subsets", "metadata"] {
                if field == "metadata" {
                    match wanted.pointer("/metadata/labels") {
                        Some(l) => next["metadata"]["labels"] = l.clone(),
                        None => {
                            if let Some(m) = next["metadata"].as_object_mut() {
                                m.remove("labels");
                            }
                        }
                    }
                } else {
                    match wanted.get_mut(field).map(Value::take) {
                        Some(v) => next[field] = v,
                        None => {
                            if let Some(m) = next.as_object_mut() {
                                m.remove(field);
                            }
                        }
                    }
                }
            }
            if next != *current {
                store.put(ENDPOINTS, next, EventType::Modified);
            }
        }
        None => {
            wanted["metadata"]["uid"] = json!(new_uid());
            wanted["metadata"]["creationTimestamp"] = json!(now_rfc3339());
            store.put(ENDPOINTS, wanted, EventType::Added);
        }
    }
}

/// Keeps the EndpointSlices of `service` in step with its Pods (the EndpointSlice
/// controller): existing slices of the Service are updated in name order, new ones get a
/// generated name, and surplus ones are removed.
fn sync_endpoint_slices(store: &mut Store, service: &Value, pods: &[&Value]) {
    let Some(wanted) = kwok::endpoint_slices_for(service, pods) else {
        return;
    };
    let (namespace, name) = ns_name(service);
    let label = |s: &Value, key: &str| {
        s.pointer("/metadata/labels")
            .and_then(|l| l.get(key))
            .and_then(Value::as_str)
            .map(String::from)
    };
    let mut existing: Vec<Arc<Value>> = store
        .list(ENDPOINT_SLICES, Some(&namespace))
        .filter(|s| label(s, kwok::SERVICE_NAME_LABEL).as_deref() == Some(name.as_str()))
        .filter(|s| {
            label(s, kwok::MANAGED_BY_LABEL).as_deref() == Some(kwok::ENDPOINT_SLICE_CONTROLLER)
        })
        .cloned()
        .collect();
    existing.sort_by_key(|s| ns_name(s).1);
    let wanted_count = wanted.len();
    for (i, mut slice) in wanted.into_iter().enumerate() {
        match existing.get(i) {
            Some(current) => {
                let mut next = (**current).clone();
                for field in ["addressType", "endpoints", "ports"] {
                    match slice.get_mut(field).map(Value::take) {
                        Some(v) => next[field] = v,
                        None => {
                            if let Some(m) = next.as_object_mut() {
                                m.remove(field);
                            }
                        }
                    }
                }
                next["metadata"]["labels"] = slice["metadata"]["labels"].take();
                if next != **current {
                    let generation = current
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64)
                        .unwrap_or(1);
                    next["metadata"]["generation"] = json!(generation + 1);
                    store.put(ENDPOINT_SLICES, next, EventType::Modified);
                }
            }
            None => {
                let slice_name = loop {
                    let candidate = format!("{name}-{}", crate::util::name_suffix());
                    if store.get(ENDPOINT_SLICES, &namespace, &candidate).is_none() {
                        break candidate;
                    }
                };
                slice["metadata"]["name"] = json!(slice_name);
                slice["metadata"]["uid"] = json!(new_uid());
                slice["metadata"]["generation"] = json!(1);
                slice["metadata"]["creationTimestamp"] = json!(now_rfc3339());
                store.put(ENDPOINT_SLICES, slice, EventType::Added);
            }
        }
    }
    for surplus in existing.iter().skip(wanted_count) {
        store.remove(ENDPOINT_SLICES, &namespace, &ns_name(surplus).1);
    }
}

/// Removes the Pods whose containers have stopped (those without finalizers left), as the
/// kubelet's final deletion does.
fn finish_stopped(state: &State, stopping: &mut Stopping) {
    let now = Instant::now();
    let due: Vec<(String, String)> = stopping
        .iter()
        .filter(|(_, (_, at))| *at <= now)
        .map(|(k, _)| k.clone())
        .collect();
    if due.is_empty() {
        return;
    }
    let mut store = state.store();
    let registry = state.registry();
    let Some(info) = registry.by_plural("", "v1", "pods") else {
        return;
    };
    for (ns, name) in due {
        let Some((uid, _)) = stopping.remove(&(ns.clone(), name.clone())) else {
            continue;
        };
        let Some(pod) = store.get(PODS, &ns, &name) else {
            continue;
        };
        let held = pod
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if uid_of(&pod) == uid && !held {
            crate::handlers::remove_now(state, &mut store, &info, &ns, &name, false);
        }
    }
}

async fn run(state: Arc<State>) {
    let mut rx = state.store().subscribe();
    let mut dirty: BTreeSet<Key> = all_workloads(&state.store());
    let mut ready_at = ReadyAt::new();
    let mut stopping = Stopping::new();
    // Services (namespace, name) whose Endpoints may be out of date: changed, or one of
    // their Pods changed
    let mut endpoints_dirty: BTreeSet<(String, String)> = state
        .store()
        .list(SERVICES, None)
        .map(|s| ns_name(s))
        .collect();
    // Whether `dirty` holds every workload (the start, a lagged event stream, a deadline).
    let mut full = true;
    loop {
        let full_pass = std::mem::take(&mut full);
        let pass_start = Instant::now();
        for key in std::mem::take(&mut dirty) {
            // The kwok functions are pure; a panic on an odd object must not stop the
            // simulation of every other workload.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                reconcile(&state, &key, &mut ready_at)
            }));
            if outcome.is_err() {
                tracing::warn!(resource = %key.0, namespace = %key.1, name = %key.2, "simulation skipped an object it cannot handle");
            }
        }
        // A deadline not yet seen to pass must wake the loop, even when it has passed by now:
        // its workload was last reconciled before it (waking only for future deadlines lost
        // those, and Pods stayed ContainerCreating until some other event came). After a pass
        // over every workload, a deadline that passed before it began and is still unseen
        // belongs to an object that is gone (every existing one was reconciled after it).
        if full_pass {
            ready_at.retain(|_, (_, at, seen)| *seen || *at > pass_start);
        }
        finish_stopped(&state, &mut stopping);
        for (namespace, name) in std::mem::take(&mut endpoints_dirty) {
            sync_endpoints(&state, &namespace, &name);
        }
        let next = ready_at
            .values()
            .filter(|(_, _, seen)| !*seen)
            .map(|(_, at, _)| *at)
            .chain(stopping.values().map(|(_, at)| *at))
            .min();
        let wake = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ev = rx.recv() => match ev {
                Ok(ev) => {
                    if ev.key == SERVICES {
                        endpoints_dirty.insert(ns_name(&ev.object));
                    } else if ev.key == PODS {
                        endpoints_dirty.extend(services_touched_by(&state.store(), &ev.object));
                    }
                    if ev.key == SERVICES && ev.event_type == EventType::Deleted {
                        let (ns, name) = ns_name(&ev.object);
                        let mut store = state.store();
                        if ev.object.pointer("/spec/selector").is_some_and(|s| s.as_object().is_some_and(|m| !m.is_empty())) {
                            store.remove(ENDPOINTS, &ns, &name);
                        }
                    }
                    if ev.key == PODS {
                        match ev.event_type {
                            EventType::Deleted => {
                                // a controller replaces the Pods it loses
                                let (ns, _) = ns_name(&ev.object);
                                for (kind, key) in OWNER_KINDS {
                                    if let Some(owner) = controller_named(&ev.object, kind) {
                                        dirty.insert((key.to_string(), ns.clone(), owner));
                                    }
                                }
                            }
                            _ => note_stopping(&state, &ev.object, &mut stopping),
                        }
                    }
                    if ev.key == PODS && ev.event_type != EventType::Deleted && is_bare(&ev.object) {
                        let (ns, name) = ns_name(&ev.object);
                        dirty.insert((PODS.to_string(), ns, name));
                    } else if WORKLOADS.contains(&ev.key.as_str()) && ev.event_type != EventType::Deleted {
                        let (ns, name) = ns_name(&ev.object);
                        // A ReplicaSet's status feeds its Deployment's, as in the deployment
                        // controller.
                        if ev.key == REPLICA_SETS
                            && let Some(owner) = controller_named(&ev.object, "Deployment")
                        {
                            dirty.insert((DEPLOYMENTS.to_string(), ns.clone(), owner));
                        }
                        dirty.insert((ev.key.clone(), ns, name));
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    dirty = all_workloads(&state.store());
                    endpoints_dirty = state.store().list(SERVICES, None).map(|s| ns_name(s)).collect();
                    full = true;
                }
                Err(RecvError::Closed) => return,
            },
            _ = wake => {
                dirty = all_workloads(&state.store());
                full = true;
            }
        }
    }
}

/// Every workload, and every bare Pod (one no controller owns) not Ready yet.
fn all_workloads(store: &Store) -> BTreeSet<Key> {
    let workloads = WORKLOADS.iter().flat_map(|key| {
        store.list(key, None).map(move |o| {
            let (ns, name) = ns_name(o);
            (key.to_string(), ns, name)
        })
    });
    let bare = store.list(PODS, None).filter(|p| is_bare(p)).map(|p| {
        let (ns, name) = ns_name(p);
        (PODS.to_string(), ns, name)
    });
    workloads.chain(bare).collect()
}

/// Whether `pod` is a bare Pod (no controller owns it) that is not Ready yet.
fn is_bare(pod: &Value) -> bool {
    let owned = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| !refs.is_empty());
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True")));
    !owned && !ready
}

/// The name of `obj`'s controlling owner when it is a `kind`.
fn controller_named(obj: &Value, kind: &str) -> Option<String> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("kind").and_then(Value::as_str) == Some(kind))
        .and_then(|r| r.get("name").and_then(Value::as_str))
        .map(str::to_string)
}

/// Whether a ReplicaSet has all its replicas ready (its Pods Running and Ready).
fn replica_set_ready(rs: &Value) -> bool {
    let wanted = rs
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let ready = rs
        .pointer("/status/readyReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    ready >= wanted
}

fn uid_of(obj: &Value) -> &str {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn owned_by<'a>(store: &'a Store, key: &str, ns: &'a str, uid: &'a str) -> Vec<Arc<Value>> {
    store
        .list(key, Some(ns))
        .filter(|o| {
            o.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
                })
        })
        .cloned()
        .collect()
}

/// Creates `desired` or updates the existing object with its fields (metadata labels,
/// annotations and ownerReferences; everything else wholesale). Writes only on change.
/// Gives `pod` an IP no other Pod on its node holds, as the node's IPAM does: a Pod keeps the
/// IP it was given (`existing`); a new one takes its name's hash on the node's CIDR, or the
/// next free address when another Pod holds that (two Pods of one node never share an IP;
/// `hostNetwork` Pods share the node's).
fn keep_pod_ip_unique(store: &Store, existing: Option<&Value>, pod: &mut Value) {
    let host_network = pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true);
    let Some(candidate) = pod.pointer("/status/podIP").and_then(Value::as_str) else {
        return;
    };
    if host_network {
        return;
    }
    let kept = existing
        .and_then(|p| p.pointer("/status/podIP"))
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty());
    let ip = match kept {
        Some(ip) => ip.to_string(),
        None => {
            // The stored copy of this Pod has no IP yet (else `kept`), so it is not counted.
            let node = pod.pointer("/spec/nodeName").and_then(Value::as_str);
            let in_use: BTreeSet<&str> = store
                .list(PODS, None)
                .filter(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == node)
                .filter(|p| p.pointer("/spec/hostNetwork").and_then(Value::as_bool) != Some(true))
                .filter_map(|p| p.pointer("/status/podIP").and_then(Value::as_str))
                .collect();
            free_ip(candidate, &in_use)
        }
    };
    pod["status"]["podIP"] = json!(ip);
    pod["status"]["podIPs"] = json!([{"ip": ip}]);
}

/// `candidate` when free, else the next address after it on its /24 (hosts .2–.253) that is
/// not in `in_use`; `candidate` itself when all are taken (a full node).
fn free_ip(candidate: &str, in_use: &BTreeSet<&str>) -> String {
    let Some((prefix, host)) = candidate
        .rsplit_once('.')
        .and_then(|(prefix, host)| Some((prefix, host.parse::<u32>().ok()?)))
    else {
        return candidate.to_string();
    };
    (0..252)
        .map(|step| format!("{prefix}.{}", 2 + (host.saturating_sub(2) + step) % 252))
        .find(|ip| !in_use.contains(ip.as_str()))
        .unwrap_or_else(|| candidate.to_string())
}

fn upsert(
    store: &mut Store,
    key: &str,
    existing: Option<&Arc<Value>>,
    mut desired: Value,
    now: &str,
) {
    match existing {
        Some(old) => {
            let mut merged = (**old).clone();
            if let Some(fields) = desired.as_object() {
                for (k, v) in fields {
                    if k != "metadata" {
                        merged[k] = v.clone();
                    }
                }
            }
            for f in ["labels", "annotations", "ownerReferences"] {
                if let Some(v) = desired.pointer(&format!("/metadata/{f}")) {
                    merged["metadata"][f] = v.clone();
                }
            }
            if merged != **old {
                store.put(key, merged, EventType::Modified);
            }
        }
        None => {
            desired["metadata"]["uid"] = json!(new_uid());
            desired["metadata"]["creationTimestamp"] = json!(now);
            if desired.get("spec").is_some() && key != PODS {
                desired["metadata"]["generation"] = json!(1);
            }
            store.put(key, desired, EventType::Added);
        }
    }
}

fn write_status(store: &mut Store, key: &str, obj: &Value, status: Option<Value>) {
    if let Some(status) = status
        && obj.get("status") != Some(&status)
    {
        let mut updated = obj.clone();
        updated["status"] = status;
        store.put(key, updated, EventType::Modified);
    }
}

fn reconcile(state: &State, (key, ns, name): &Key, ready_at: &mut ReadyAt) {
    let now = now_rfc3339();
    let mut store = state.store();
    let Some(obj) = store.get(key, ns, name) else {
        return;
    };
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let uid = uid_of(&obj).to_string();
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let delay = state.config.ready_delay;
    let entry = ready_at
        .entry(uid.clone())
        .or_insert((generation, Instant::now() + delay, false));
    if entry.0 != generation {
        *entry = (generation, Instant::now() + delay, false);
    }
    let ready = Instant::now() >= entry.1;
    entry.2 |= ready;
    let nodes: Vec<Value> = store.list("/nodes", None).map(|n| (**n).clone()).collect();
    if key == PODS {
        if let Some(mut pod) = kwok::bare_pod(&obj, ready, &nodes, &now) {
            keep_pod_ip_unique(&store, Some(&obj), &mut pod);
            store.put(key, pod, EventType::Modified);
        }
        return;
    }
    if key == DEPLOYMENTS {
        let owned = owned_by(&store, REPLICA_SETS, ns, &uid);
        let rs_name = kwok::replica_set_name(&obj);
        let current = owned.iter().find(|rs| ns_name(rs).1 == rs_name).cloned();
        // The current ReplicaSet keeps its revision while it is the newest; an older one that
        // becomes current again (`kubectl rollout undo`, a reverted template) gets the next
        // revision, its old one appended to `revision-history`, as the controller does.
        let newest_old = owned
            .iter()
            .filter(|rs| ns_name(rs).1 != rs_name)
            .map(|rs| kwok::revision(rs))
            .max()
            .unwrap_or(0);
        let kept = current
            .as_deref()
            .map(kwok::revision)
            .filter(|r| *r > newest_old);
        let revision = kept.unwrap_or(newest_old + 1);
        let mut wanted_rs = kwok::replica_set_for(&obj, revision);
        if let Some(rs) = current.as_deref() {
            let history_key = "deployment.kubernetes.io/revision-history";
            let existing = rs
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(history_key))
                .and_then(Value::as_str)
                .filter(|h| !h.is_empty());
            let history = match (existing, kept) {
                (h, Some(_)) => h.map(String::from),
                (Some(h), None) => Some(format!("{h},{}", kwok::revision(rs))),
                (None, None) => Some(kwok::revision(rs).to_string()),
            };
            if let Some(history) = history {
                wanted_rs["metadata"]["annotations"][history_key] = json!(history);
            }
        }
        let replicas = |rs: &Value| rs.pointer("/spec/replicas").and_then(Value::as_i64);
        let scaled_from = current.as_deref().map_or(Some(0), replicas).unwrap_or(1);
        let scaled_to = replicas(&wanted_rs).unwrap_or(1);
        upsert(&mut store, REPLICA_SETS, current.as_ref(), wanted_rs, &now);
        crate::controller_events::scaled_replica_set(
            &mut store,
            &obj,
            &rs_name,
            scaled_from,
            scaled_to,
        );
        for old in owned.iter().filter(|rs| ns_name(rs).1 != rs_name) {
            if old.get("spec").is_some_and(Value::is_object)
                && old.pointer("/spec/replicas").and_then(Value::as_i64) != Some(0)
            {
                let mut scaled = (**old).clone();
                let from = replicas(old).unwrap_or(1);
                scaled["spec"]["replicas"] = json!(0);
                upsert(&mut store, REPLICA_SETS, Some(old), scaled, &now);
                crate::controller_events::scaled_replica_set(
                    &mut store,
                    &obj,
                    &ns_name(old).1,
                    from,
                    0,
                );
            }
        }
        let mut deployment = (*obj).clone();
        let rev = revision.to_string();
        if deployment
            .pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
            .and_then(Value::as_str)
            != Some(rev.as_str())
        {
            if !deployment["metadata"]
                .get("annotations")
                .is_some_and(Value::is_object)
            {
                deployment["metadata"]["annotations"] = json!({});
            }
            deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!(rev);
        }
        // Available only once the current ReplicaSet's Pods are: the controller counts them.
        let rs_ready = current.as_deref().is_some_and(replica_set_ready);
        let status = kwok::workload_status(&deployment, ready && rs_ready, nodes.len(), &now);
        if let Some(s) = status {
            deployment["status"] = s;
        }
        if deployment != *obj {
            store.put(key, deployment, EventType::Modified);
        }
        return;
    }
    let desired = kwok::owned_pods(&obj, ready, &nodes, &now);
    let existing = owned_by(&store, PODS, ns, &uid);
    let wanted: BTreeSet<String> = desired.iter().map(|p| ns_name(p).1).collect();
    for mut pod in desired {
        let pod_name = ns_name(&pod).1;
        let current = existing.iter().find(|p| ns_name(p).1 == pod_name).cloned();
        // a Pod being deleted is left to finish; its replacement comes once it is gone
        if current
            .as_deref()
            .is_some_and(|p| p.pointer("/metadata/deletionTimestamp").is_some())
        {
            continue;
        }
        let created = current.is_none();
        keep_pod_ip_unique(&store, current.as_deref(), &mut pod);
        upsert(&mut store, PODS, current.as_ref(), pod, &now);
        if created {
            crate::controller_events::pod_changed(&mut store, &obj, &pod_name, true);
        }
    }
    for pod in existing.iter().filter(|p| !wanted.contains(&ns_name(p).1)) {
        store.remove(PODS, ns, &ns_name(pod).1);
        crate::controller_events::pod_changed(&mut store, &obj, &ns_name(pod).1, false);
    }
    write_status(
        &mut store,
        key,
        &obj,
        kwok::workload_status(&obj, ready, nodes.len(), &now),
    );
}
