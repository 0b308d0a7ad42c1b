//! kwok-like simulation of the controllers, kubelets and scheduler of a cluster, as pure
//! functions the server calls when objects change or a workload's ready delay elapses:
//!
//! * [`nodes`]: the N fake Nodes (`kwok-node-0` …), Ready, with capacity and `nodeInfo`
//!   reporting kubelet v1.32.
//! * [`replica_set_for`]: the ReplicaSet the deployment controller creates for a
//!   Deployment's current template (name `DEPLOYMENT-HASH`, `pod-template-hash` label,
//!   revision annotations, ownerReference); [`revision`] and [`mark_revision`] read and
//!   write the revision annotation.
//! * [`stateful_set_claims`]: the PersistentVolumeClaims of a StatefulSet's
//!   volumeClaimTemplates, Bound.
//! * [`owned_pods`]: the Pods a ReplicaSet, StatefulSet, DaemonSet or Job owns, named and
//!   labelled like the real controllers name them, spec copied from the template (with the
//!   Pod defaults and admission changes), scheduled round-robin on the nodes, and a status
//!   that is Running and Ready once the ready delay has elapsed (ContainerCreating before),
//!   with `containerStatuses[].imageID` as containerd reports it.
//! * [`workload_status`]: the status the real controllers write for Deployments,
//!   StatefulSets, DaemonSets, ReplicaSets and Jobs, including the Deployment conditions
//!   Available and Progressing with their real reasons and messages.
//!
//! Hashes (pod-template-hash, controller-revision-hash, pod name suffixes, container IDs) have
//! the real format and alphabet and are stable for the same input, but are not bit-identical
//! to the Go controllers' (which hash Go struct dumps).

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::defaults;

/// The kubelet version the fake Nodes report.
pub const KUBELET_VERSION: &str = "v1.32.0";

/// The characters Kubernetes uses for generated names (`k8s.io/apimachinery/pkg/util/rand`):
/// no vowels, no confusable digits.
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `rand.SafeEncodeString`: maps each byte to the generated-name alphabet.
fn safe_encode(text: &str) -> String {
    text.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// FNV-1a 32-bit, the hash the controllers use for template hashes.
fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

/// Serializes with object keys sorted, so equal objects hash equally whatever their key order.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|key| format!("{}:{}", Value::from(key.as_str()), canonical(&map[key])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The hash the controllers label Pods with (`controller.ComputeHash`): FNV-32a of the pod
/// template (and the collision count, when non-zero), as decimal text in the generated-name
/// alphabet, e.g. `5d8f6b7c9`. Used as `pod-template-hash` and (with the owner's name) as
/// `controller-revision-hash`.
pub fn template_hash(template: &Value, collision_count: u32) -> String {
    let mut text = canonical(template);
    if collision_count > 0 {
        text.push_str(&collision_count.to_string());
    }
    safe_encode(&fnv32a(text.as_bytes()).to_string())
}

/// A stable 5-character generated-name suffix for `seed` (what `generateName` appends).
fn name_suffix(seed: &str) -> String {
    Sha256::digest(seed.as_bytes())
        .iter()
        .take(5)
        .map(|b| ALPHANUMS[usize::from(*b) % ALPHANUMS.len()] as char)
        .collect()
}

fn str_at<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn int_at(value: &Value, pointer: &str, default: i64) -> i64 {
    value
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

fn generation(object: &Value) -> i64 {
    int_at(object, "/metadata/generation", 1)
}

/// The ownerReference a controller puts on the objects it creates.
fn owner_reference(owner: &Value) -> Value {
    json!({
        "apiVersion": str_at(owner, "/apiVersion"),
        "kind": str_at(owner, "/kind"),
        "name": str_at(owner, "/metadata/name"),
        "uid": str_at(owner, "/metadata/uid"),
        "controller": true,
        "blockOwnerDeletion": true
    })
}

// ---- images --------------------------------------------------------------------------------

/// An image reference normalized as containerd reports it in `containerStatuses[].image`:
/// Docker Hub names gain `docker.io/` (and `library/` for official images), and a reference
/// with neither tag nor digest gains `:latest`.
pub fn normalize_image(image: &str) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let (first, rest) = match name.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (name, None),
    };
    let has_domain =
        rest.is_some() && (first.contains('.') || first.contains(':') || first == "localhost");
    let full = match (has_domain, rest) {
        (true, _) => name.to_string(),
        (false, Some(_)) => format!("docker.io/{name}"),
        (false, None) => format!("docker.io/library/{name}"),
    };
    let last_segment = full.rsplit('/').next().unwrap_or_default();
    let tagged = last_segment.contains(':');
    match digest {
        Some(digest) => format!("{full}@{digest}"),
        None if tagged => full,
        None => format!("{full}:latest"),
    }
}

/// `containerStatuses[].imageID` as containerd reports it: `REPOSITORY@sha256:DIGEST`. When
/// the image names its digest (`repo@sha256:…`, with or without a tag) that digest is used;
/// otherwise the digest is a stable sha256 of the image string (no registry to ask).
pub fn image_id(image: &str) -> String {
    let normalized = normalize_image(image);
    let (name, digest) = match normalized.split_once('@') {
        Some((name, digest)) => (name.to_string(), digest.to_string()),
        None => (normalized.clone(), format!("sha256:{}", sha256_hex(image))),
    };
    let last_slash = name.rfind('/').map_or(0, |index| index + 1);
    let repository = match name[last_slash..].find(':') {
        Some(colon) => &name[..last_slash + colon],
        None => name.as_str(),
    };
    format!("{repository}@{digest}")
}

// ---- nodes ---------------------------------------------------------------------------------

/// The name of the `index`-th fake node.
pub fn node_name(index: usize) -> String {
    format!("kwok-node-{index}")
}

/// The `count` fake Nodes, Ready since `now`: kwok's labels and annotations, a pod CIDR
/// `10.244.I.0/24`, InternalIP `10.0.0.(10+I)` (wrapping into the next octet), 32 CPUs,
/// 256Gi memory, 110 pods, and `nodeInfo` with kubelet v1.32.
pub fn nodes(count: usize, now: &str) -> Vec<Value> {
    (0..count).map(|index| node(index, now)).collect()
}

fn node_ip(index: usize) -> String {
    let host = index + 10;
    format!("10.0.{}.{}", host / 256, host % 256)
}

fn node(index: usize, now: &str) -> Value {
    let name = node_name(index);
    let cidr = format!("10.244.{}.0/24", index % 256);
    let resources =
        json!({"cpu": "32", "ephemeral-storage": "1Ti", "memory": "256Gi", "pods": "110"});
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message})
    };
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok"
            }
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {
            "addresses": [
                {"address": node_ip(index), "type": "InternalIP"},
                {"address": name, "type": "Hostname"}
            ],
            "allocatable": resources,
            "capacity": resources,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kernelVersion": "6.1.0-kwok",
                "kubeletVersion": KUBELET_VERSION,
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "systemUUID": ""
            }
        }
    })
}

// ---- deployments and replica sets ----------------------------------------------------------

/// The `deployment.kubernetes.io/revision` of a Deployment or ReplicaSet (0 when absent).
/// The server gives a new ReplicaSet the highest revision among the Deployment's
/// ReplicaSets plus one, and copies it to the Deployment.
pub fn revision(object: &Value) -> u64 {
    str_at(
        object,
        "/metadata/annotations/deployment.kubernetes.io~1revision",
    )
    .parse()
    .unwrap_or(0)
}

/// Records `revision` in the `deployment.kubernetes.io/revision` annotation, as the deployment
/// controller does on a Deployment when its new ReplicaSet becomes current.
pub fn mark_revision(object: &mut Value, revision: u64) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations["deployment.kubernetes.io/revision"] = json!(revision.to_string());
}

/// `intstr.GetScaledValueFromIntOrPercent`: an int, or a percentage of `total` rounded up or
/// down.
fn scaled(value: Option<&Value>, total: i64, round_up: bool) -> i64 {
    match value {
        Some(Value::Number(number)) => number.as_i64().unwrap_or(0),
        Some(Value::String(text)) => {
            let percent = text
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .or_else(|| text.parse::<i64>().ok())
                .unwrap_or(0);
            let product = percent.saturating_mul(total);
            if round_up {
                product.saturating_add(99) / 100
            } else {
                product / 100
            }
        }
        _ => 0,
    }
}

/// `(maxSurge, maxUnavailable)` of a Deployment for `replicas` (`deploymentutil.ResolveFenceposts`).
fn fenceposts(deployment: &Value, replicas: i64) -> (i64, i64) {
    if str_at(deployment, "/spec/strategy/type") == "Recreate" {
        return (0, 0);
    }
    let rolling = deployment.pointer("/spec/strategy/rollingUpdate");
    let surge = scaled(rolling.and_then(|r| r.get("maxSurge")), replicas, true);
    let unavailable = scaled(
        rolling.and_then(|r| r.get("maxUnavailable")),
        replicas,
        false,
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

/// The pod-template-hash of a Deployment's current template (`status.collisionCount` included).
fn deployment_hash(deployment: &Value) -> String {
    let template = deployment
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let collisions = u32::try_from(int_at(deployment, "/status/collisionCount", 0)).unwrap_or(0);
    template_hash(&template, collisions)
}

/// The name of the ReplicaSet a Deployment's current template runs in (`NAME-HASH`).
pub fn replica_set_name(deployment: &Value) -> String {
    format!(
        "{}-{}",
        str_at(deployment, "/metadata/name"),
        deployment_hash(deployment)
    )
}

/// Adds `pod-template-hash: hash` to the labels map at `pointer` (created if absent).
fn add_hash_label(object: &mut Value, pointer: &str, hash: &str) {
    if let Some(map) = object.pointer_mut(pointer).and_then(Value::as_object_mut) {
        let labels = map.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            labels.insert("pod-template-hash".into(), json!(hash));
        }
    }
}

/// The ReplicaSet the deployment controller creates for a Deployment's current template, at
/// `revision`: named [`replica_set_name`], labelled and selecting with `pod-template-hash`,
/// annotated with desired/max replicas and the revision, owned by the Deployment, with the
/// Deployment's replica count. Its status comes from [`workload_status`].
pub fn replica_set_for(deployment: &Value, revision: u64) -> Value {
    let hash = deployment_hash(deployment);
    let replicas = int_at(deployment, "/spec/replicas", 1);
    let (surge, _) = fenceposts(deployment, replicas);
    let mut template = deployment
        .pointer("/spec/template")
        .filter(|template| template.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(map) = template.as_object_mut()
        && map.get("metadata").is_none_or(|m| !m.is_object())
    {
        map.insert("metadata".into(), json!({}));
    }
    add_hash_label(&mut template, "/metadata", &hash);
    let mut selector = deployment
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if selector.is_object() {
        let match_labels = selector
            .as_object_mut()
            .map(|s| s.entry("matchLabels").or_insert_with(|| json!({})));
        if let Some(Value::Object(labels)) = match_labels {
            labels.insert("pod-template-hash".into(), json!(hash));
        }
    }
    let labels = template
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut annotations = deployment
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.retain(|key, _| {
        key != "kubectl.kubernetes.io/last-applied-configuration"
            && !key.starts_with("deployment.kubernetes.io/")
    });
    annotations.insert(
        "deployment.kubernetes.io/desired-replicas".into(),
        json!(replicas.to_string()),
    );
    annotations.insert(
        "deployment.kubernetes.io/max-replicas".into(),
        json!(replicas.saturating_add(surge).to_string()),
    );
    annotations.insert(
        "deployment.kubernetes.io/revision".into(),
        json!(revision.to_string()),
    );
    let mut replica_set = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": replica_set_name(deployment),
            "namespace": str_at(deployment, "/metadata/namespace"),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(deployment)]
        },
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": template
        }
    });
    if let Some(min_ready) = deployment.pointer("/spec/minReadySeconds") {
        replica_set["spec"]["minReadySeconds"] = min_ready.clone();
    }
    replica_set
}

// ---- status --------------------------------------------------------------------------------

/// A condition that keeps its previous `lastTransitionTime` when its status did not change
/// (and, with `update_time`, its `lastUpdateTime` when nothing changed), as controllers do.
fn condition(
    previous: &Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
    update_time: bool,
) -> Value {
    let old = previous
        .pointer("/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        });
    let same_status = old.is_some_and(|c| str_at(c, "/status") == status);
    let unchanged = same_status
        && old.is_some_and(|c| str_at(c, "/reason") == reason && str_at(c, "/message") == message);
    let keep = |field: &str, keep: bool| {
        old.filter(|_| keep)
            .and_then(|c| c.get(field))
            .filter(|t| t.is_string())
            .cloned()
            .unwrap_or_else(|| json!(now))
    };
    let mut condition = Map::new();
    if update_time {
        condition.insert(
            "lastTransitionTime".into(),
            keep("lastTransitionTime", same_status),
        );
        condition.insert("lastUpdateTime".into(), keep("lastUpdateTime", unchanged));
    } else {
        condition.insert(
            "lastTransitionTime".into(),
            keep("lastTransitionTime", same_status),
        );
    }
    condition.insert("message".into(), json!(message));
    condition.insert("reason".into(), json!(reason));
    condition.insert("status".into(), json!(status));
    condition.insert("type".into(), json!(kind));
    Value::Object(condition)
}

/// Inserts `key: value` unless the value is 0 (the controllers' omitempty counters).
fn counter(status: &mut Map<String, Value>, key: &str, value: i64) {
    if value != 0 {
        status.insert(key.into(), json!(value));
    }
}

/// The status the real controller writes for a workload, given whether its ready delay has
/// elapsed since its last generation change (`ready`), the number of nodes (DaemonSets run
/// one Pod per node) and the current time (RFC 3339, for conditions). The previous status
/// (in `object`) keeps unchanged conditions' times. Kinds other than Deployment,
/// StatefulSet, DaemonSet, ReplicaSet and Job get None.
pub fn workload_status(object: &Value, ready: bool, node_count: usize, now: &str) -> Option<Value> {
    let kind = str_at(object, "/kind");
    let previous = object.get("status").cloned().unwrap_or_else(|| json!({}));
    let generation = generation(object);
    let replicas = int_at(object, "/spec/replicas", 1);
    let ready_count = if ready { replicas } else { 0 };
    let mut status = Map::new();
    match kind {
        "Deployment" => {
            let (_, max_unavailable) = fenceposts(object, replicas);
            counter(&mut status, "availableReplicas", ready_count);
            let available = ready_count >= replicas.saturating_sub(max_unavailable);
            let rs = replica_set_name(object);
            let available_condition = if available {
                condition(
                    &previous,
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "Deployment has minimum availability.",
                    now,
                    true,
                )
            } else {
                condition(
                    &previous,
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                    now,
                    true,
                )
            };
            let progressing =
                if object.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
                    condition(
                        &previous,
                        "Progressing",
                        "Unknown",
                        "DeploymentPaused",
                        "Deployment is paused",
                        now,
                        true,
                    )
                } else if ready {
                    condition(
                        &previous,
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &format!("ReplicaSet {rs:?} has successfully progressed."),
                        now,
                        true,
                    )
                } else {
                    condition(
                        &previous,
                        "Progressing",
                        "True",
                        "ReplicaSetUpdated",
                        &format!("ReplicaSet {rs:?} is progressing."),
                        now,
                        true,
                    )
                };
            status.insert(
                "conditions".into(),
                json!([available_condition, progressing]),
            );
            status.insert("observedGeneration".into(), json!(generation));
            counter(&mut status, "readyReplicas", ready_count);
            counter(&mut status, "replicas", replicas);
            counter(&mut status, "unavailableReplicas", replicas - ready_count);
            counter(&mut status, "updatedReplicas", replicas);
            if let Some(collisions) = previous.get("collisionCount") {
                status.insert("collisionCount".into(), collisions.clone());
            }
        }
        "StatefulSet" => {
            let revision = format!(
                "{}-{}",
                str_at(object, "/metadata/name"),
                template_hash(object.pointer("/spec/template").unwrap_or(&Value::Null), 0)
            );
            status.insert("availableReplicas".into(), json!(ready_count));
            status.insert(
                "collisionCount".into(),
                json!(int_at(&previous, "/collisionCount", 0)),
            );
            counter(&mut status, "currentReplicas", replicas);
            status.insert("currentRevision".into(), json!(revision));
            status.insert("observedGeneration".into(), json!(generation));
            counter(&mut status, "readyReplicas", ready_count);
            status.insert("replicas".into(), json!(replicas));
            status.insert("updateRevision".into(), json!(revision));
            counter(&mut status, "updatedReplicas", replicas);
        }
        "DaemonSet" => {
            let desired = i64::try_from(node_count).unwrap_or(i64::MAX);
            let ready_pods = if ready { desired } else { 0 };
            status.insert("currentNumberScheduled".into(), json!(desired));
            status.insert("desiredNumberScheduled".into(), json!(desired));
            counter(&mut status, "numberAvailable", ready_pods);
            status.insert("numberMisscheduled".into(), json!(0));
            status.insert("numberReady".into(), json!(ready_pods));
            counter(&mut status, "numberUnavailable", desired - ready_pods);
            status.insert("observedGeneration".into(), json!(generation));
            counter(&mut status, "updatedNumberScheduled", desired);
        }
        "ReplicaSet" => {
            counter(&mut status, "availableReplicas", ready_count);
            counter(&mut status, "fullyLabeledReplicas", replicas);
            status.insert("observedGeneration".into(), json!(generation));
            counter(&mut status, "readyReplicas", ready_count);
            status.insert("replicas".into(), json!(replicas));
        }
        "Job" => return Some(job_status(object, &previous, ready, now)),
        _ => return None,
    }
    Some(Value::Object(status))
}

/// The completions a Job waits for and the Pods it runs at once.
fn job_counts(job: &Value) -> (i64, i64) {
    let parallelism = int_at(job, "/spec/parallelism", 1);
    let completions = int_at(job, "/spec/completions", 1);
    (completions, parallelism.min(completions).max(0))
}

/// A Job's status: suspended, running (`active` Pods, ready once the delay elapsed) or, once
/// the delay elapsed, complete with the `SuccessCriteriaMet` and `Complete` conditions the
/// v1.32 job controller writes.
fn job_status(job: &Value, previous: &Value, ready: bool, now: &str) -> Value {
    let start = previous
        .get("startTime")
        .cloned()
        .unwrap_or_else(|| json!(now));
    let (completions, active) = job_counts(job);
    if job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        let suspended = condition(
            previous,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            now,
            false,
        );
        let mut suspended = suspended;
        suspended["lastProbeTime"] = json!(now);
        return json!({"conditions": [suspended], "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}});
    }
    if !ready {
        let mut status = Map::new();
        counter(&mut status, "active", active);
        status.insert("ready".into(), json!(0));
        status.insert("startTime".into(), start);
        status.insert("terminating".into(), json!(0));
        status.insert("uncountedTerminatedPods".into(), json!({}));
        return Value::Object(status);
    }
    let completed = |kind: &str| {
        let mut c = condition(
            previous,
            kind,
            "True",
            "CompletionsReached",
            "Reached expected number of succeeded pods",
            now,
            false,
        );
        c["lastProbeTime"] = json!(now);
        c
    };
    let completion_time = previous
        .get("completionTime")
        .cloned()
        .unwrap_or_else(|| json!(now));
    let mut status = json!({
        "completionTime": completion_time,
        "conditions": [completed("SuccessCriteriaMet"), completed("Complete")],
        "ready": 0,
        "startTime": start,
        "succeeded": completions,
        "terminating": 0,
        "uncountedTerminatedPods": {}
    });
    if str_at(job, "/spec/completionMode") == "Indexed" && completions >= 1 {
        let indexes = if completions == 1 {
            "0".to_string()
        } else {
            format!("0-{}", completions - 1)
        };
        status["completedIndexes"] = json!(indexes);
    }
    status
}

// ---- pods ----------------------------------------------------------------------------------

/// The most Pods (or claims) simulated for one workload: a test cluster asked for more
/// (a replica count is user input, up to 2^31-1) reports the requested counts in the
/// workload's status but materializes only this many objects.
pub const MAX_SIMULATED_PODS: usize = 1000;

/// How many objects to materialize for a requested count: negative counts are none, large
/// ones are capped at [`MAX_SIMULATED_PODS`].
fn pod_count(requested: i64) -> usize {
    usize::try_from(requested)
        .unwrap_or(0)
        .min(MAX_SIMULATED_PODS)
}

/// One Pod a controller would create: its name, extra labels and annotations.
struct PodPlan {
    name: String,
    generate_name: Option<String>,
    labels: Vec<(String, String)>,
    annotations: Vec<(String, String)>,
    node: Option<usize>,
    hostname: Option<(String, String)>,
    /// StatefulSet Pods: (volume name, claim name) for each volumeClaimTemplate.
    claims: Vec<(String, String)>,
}

/// The Pods `owner` (a ReplicaSet, StatefulSet, DaemonSet or Job) runs, as its controller,
/// the scheduler and the kubelets would make them: named like the real controllers
/// (`RS-xxxxx`, `STS-0…`, `DS-xxxxx` one per node, `JOB-xxxxx`), template labels plus the
/// controller's labels, ownerReference to `owner`, spec from the template with the Pod
/// defaults and admission changes, spread round-robin over `nodes` (Node objects), and a
/// status Running and Ready when `ready` (a Job's Pods Succeeded), else ContainerCreating.
/// Without nodes the Pods stay Pending and unschedulable. A Deployment's Pods are those of
/// its ReplicaSet ([`replica_set_for`]). Other kinds own no Pods.
pub fn owned_pods(owner: &Value, ready: bool, nodes: &[Value], now: &str) -> Vec<Value> {
    let name = str_at(owner, "/metadata/name");
    let template = owner
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let node_for = |index: usize| (!nodes.is_empty()).then(|| index % nodes.len());
    let random_named = |index: usize| {
        let generate_name = format!("{name}-");
        PodPlan {
            name: format!(
                "{generate_name}{}",
                name_suffix(&format!("{}/{index}", str_at(owner, "/metadata/uid")))
            ),
            generate_name: Some(generate_name),
            labels: Vec::new(),
            annotations: Vec::new(),
            node: node_for(index),
            hostname: None,
            claims: Vec::new(),
        }
    };
    let plans: Vec<PodPlan> = match str_at(owner, "/kind") {
        "ReplicaSet" => (0..pod_count(int_at(owner, "/spec/replicas", 1)))
            .map(random_named)
            .collect(),
        "StatefulSet" => {
            let replicas = pod_count(int_at(owner, "/spec/replicas", 1));
            let revision = format!("{name}-{}", template_hash(&template, 0));
            let service = str_at(owner, "/spec/serviceName").to_string();
            (0..replicas)
                .map(|ordinal| {
                    let pod_name = format!("{name}-{ordinal}");
                    PodPlan {
                        labels: vec![
                            ("apps.kubernetes.io/pod-index".into(), ordinal.to_string()),
                            ("controller-revision-hash".into(), revision.clone()),
                            (
                                "statefulset.kubernetes.io/pod-name".into(),
                                pod_name.clone(),
                            ),
                        ],
                        annotations: Vec::new(),
                        node: node_for(ordinal),
                        hostname: Some((pod_name.clone(), service.clone())),
                        claims: claim_names(owner, ordinal),
                        name: pod_name,
                        generate_name: None,
                    }
                })
                .collect()
        }
        "DaemonSet" => {
            let hash = template_hash(&template, 0);
            let generation = generation(owner).to_string();
            (0..nodes.len())
                .map(|index| {
                    let mut plan = random_named(index);
                    plan.labels = vec![
                        ("controller-revision-hash".into(), hash.clone()),
                        ("pod-template-generation".into(), generation.clone()),
                    ];
                    plan
                })
                .collect()
        }
        "Job" => {
            let (completions, active) = job_counts(owner);
            let count = if ready { completions } else { active };
            let indexed = str_at(owner, "/spec/completionMode") == "Indexed";
            (0..pod_count(count))
                .map(|index| {
                    let mut plan = random_named(index);
                    if indexed {
                        plan.name = format!(
                            "{name}-{index}-{}",
                            name_suffix(&format!("{}/{index}", str_at(owner, "/metadata/uid")))
                        );
                        plan.generate_name = Some(format!("{name}-{index}-"));
                        plan.labels.push((
                            "batch.kubernetes.io/job-completion-index".into(),
                            index.to_string(),
                        ));
                        plan.annotations.push((
                            "batch.kubernetes.io/job-completion-index".into(),
                            index.to_string(),
                        ));
                    }
                    plan
                })
                .collect()
        }
        _ => Vec::new(),
    };
    let succeeded = str_at(owner, "/kind") == "Job" && ready;
    plans
        .into_iter()
        .map(|plan| build_pod(owner, &template, plan, nodes, ready, succeeded, now))
        .collect()
}

fn build_pod(
    owner: &Value,
    template: &Value,
    plan: PodPlan,
    nodes: &[Value],
    ready: bool,
    succeeded: bool,
    now: &str,
) -> Value {
    let mut labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (key, value) in plan.labels {
        labels.insert(key, json!(value));
    }
    let mut metadata = json!({
        "name": plan.name,
        "namespace": str_at(owner, "/metadata/namespace"),
        "labels": labels,
        "ownerReferences": [owner_reference(owner)]
    });
    if let Some(generate_name) = plan.generate_name {
        metadata["generateName"] = json!(generate_name);
    }
    let mut annotations = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (key, value) in plan.annotations {
        annotations.insert(key, json!(value));
    }
    if !annotations.is_empty() {
        metadata["annotations"] = Value::Object(annotations);
    }
    if str_at(owner, "/kind") == "Job" {
        metadata["finalizers"] = json!(["batch.kubernetes.io/job-tracking"]);
    }
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))
    });
    let node = plan.node.and_then(|index| nodes.get(index));
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some((hostname, subdomain)) = plan.hostname {
            spec.insert("hostname".into(), json!(hostname));
            if !subdomain.is_empty() {
                spec.insert("subdomain".into(), json!(subdomain));
            }
        }
        if !plan.claims.is_empty() {
            // The StatefulSet controller's updateStorage: claim volumes first, then the
            // template's other volumes.
            let mut volumes: Vec<Value> = plan
                .claims
                .iter()
                .map(|(volume, claim)| {
                    json!({"name": volume, "persistentVolumeClaim": {"claimName": claim}})
                })
                .collect();
            let others = spec
                .get("volumes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|v| {
                    !plan
                        .claims
                        .iter()
                        .any(|(name, _)| str_at(v, "/name") == name)
                })
                .cloned();
            volumes.extend(others);
            spec.insert("volumes".into(), Value::Array(volumes));
        }
        if let Some(node) = node {
            let node_name = str_at(node, "/metadata/name");
            spec.insert("nodeName".into(), json!(node_name));
            if str_at(owner, "/kind") == "DaemonSet" {
                daemon_pod_scheduling(spec, node_name);
            }
        }
    }
    defaults::apply_defaults("v1", "Pod", &mut pod);
    let pod_name = str_at(&pod, "/metadata/name").to_string();
    defaults::admit_pod(&mut pod, &name_suffix(&format!("token/{pod_name}")));
    let status = pod_status(&pod, node, ready, succeeded, now);
    pod["status"] = status;
    pod
}

/// `(volume name, claim name)` of each volumeClaimTemplate for a StatefulSet ordinal: the
/// claim is named `TEMPLATE-STATEFULSET-ORDINAL`.
fn claim_names(stateful_set: &Value, ordinal: usize) -> Vec<(String, String)> {
    let set_name = str_at(stateful_set, "/metadata/name");
    stateful_set
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|template| str_at(template, "/metadata/name"))
        .filter(|name| !name.is_empty())
        .map(|name| (name.to_string(), format!("{name}-{set_name}-{ordinal}")))
        .collect()
}

/// A stable UUID-shaped identifier for `seed` (8-4-4-4-12 hex digits).
fn stable_uuid(seed: &str) -> String {
    let hex = sha256_hex(seed);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The PersistentVolumeClaims a StatefulSet's volumeClaimTemplates produce, one per
/// template and ordinal (`TEMPLATE-STATEFULSET-ORDINAL`), as its controller creates them
/// (template labels plus the selector's matchLabels; owned by the StatefulSet when
/// `persistentVolumeClaimRetentionPolicy.whenDeleted` is Delete), shown Bound to a volume as a
/// dynamic provisioner would leave them, with the requested storage as capacity.
pub fn stateful_set_claims(stateful_set: &Value) -> Vec<Value> {
    let replicas = pod_count(int_at(stateful_set, "/spec/replicas", 1));
    let templates: Vec<&Value> = stateful_set
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|template| !str_at(template, "/metadata/name").is_empty())
        .collect();
    let owned = str_at(
        stateful_set,
        "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted",
    ) == "Delete";
    let mut claims = Vec::new();
    for ordinal in 0..replicas {
        for (template, (_, claim_name)) in templates.iter().zip(claim_names(stateful_set, ordinal))
        {
            let mut labels = template
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if let Some(selector) = stateful_set
                .pointer("/spec/selector/matchLabels")
                .and_then(Value::as_object)
            {
                labels.extend(selector.clone());
            }
            let mut claim = json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name,
                    "namespace": str_at(stateful_set, "/metadata/namespace"),
                    "labels": labels,
                    "annotations": {
                        "pv.kubernetes.io/bind-completed": "yes",
                        "pv.kubernetes.io/bound-by-controller": "yes"
                    }
                },
                "spec": template
                    .get("spec")
                    .filter(|spec| spec.is_object())
                    .cloned()
                    .unwrap_or_else(|| json!({}))
            });
            if owned {
                claim["metadata"]["ownerReferences"] = json!([owner_reference(stateful_set)]);
            }
            defaults::apply_defaults("v1", "PersistentVolumeClaim", &mut claim);
            let volume = format!(
                "pvc-{}",
                stable_uuid(&format!(
                    "{}/{claim_name}",
                    str_at(stateful_set, "/metadata/uid")
                ))
            );
            claim["spec"]["volumeName"] = json!(volume);
            let access_modes = claim["spec"]
                .get("accessModes")
                .cloned()
                .unwrap_or_else(|| json!([]));
            let mut status = json!({"accessModes": access_modes, "phase": "Bound"});
            if let Some(storage) = claim.pointer("/spec/resources/requests/storage") {
                status["capacity"] = json!({"storage": storage});
            }
            claim["status"] = status;
            claims.push(claim);
        }
    }
    claims
}

/// What the DaemonSet controller adds to its Pods: a node affinity pinning the Pod to its
/// node and tolerations of the node conditions a daemon must survive
/// (`pkg/controller/daemon/util` `AddOrUpdateDaemonPodTolerations`).
fn daemon_pod_scheduling(spec: &mut Map<String, Value>, node_name: &str) {
    let affinity = spec.entry("affinity").or_insert_with(|| json!({}));
    if let Some(affinity) = affinity.as_object_mut() {
        affinity.insert(
            "nodeAffinity".into(),
            json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}),
        );
    }
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if !tolerations.is_array() {
        *tolerations = json!([]);
    }
    if let Some(tolerations) = tolerations.as_array_mut() {
        let taints = [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ];
        for (key, effect) in taints {
            let toleration = json!({"effect": effect, "key": key, "operator": "Exists"});
            if !tolerations.contains(&toleration) {
                tolerations.push(toleration);
            }
        }
    }
}

/// A Pod IP on the node's pod CIDR, stable for the pod name.
fn pod_ip(node: &Value, pod_name: &str) -> String {
    let cidr = str_at(node, "/spec/podCIDR");
    let prefix = cidr.strip_suffix(".0/24").unwrap_or("10.244.0").to_string();
    let host = 2 + fnv32a(pod_name.as_bytes()) % 252;
    format!("{prefix}.{host}")
}

fn pod_status(pod: &Value, node: Option<&Value>, ready: bool, succeeded: bool, now: &str) -> Value {
    let spec = pod.get("spec").cloned().unwrap_or_else(|| json!({}));
    let qos = defaults::qos_class(&spec);
    let Some(node) = node else {
        return json!({
            "conditions": [{"lastProbeTime": null, "lastTransitionTime": now,
                "message": "no nodes available to schedule pods", "reason": "Unschedulable",
                "status": "False", "type": "PodScheduled"}],
            "phase": "Pending",
            "qosClass": qos
        });
    };
    let pod_name = str_at(pod, "/metadata/name");
    let names: Vec<String> = spec
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| str_at(c, "/name").to_string())
        .collect();
    let running = ready && !succeeded;
    let cond = |kind: &str, status: bool, reason: Option<&str>, message: Option<String>| {
        let mut c = json!({"lastProbeTime": null, "lastTransitionTime": now,
            "status": if status { "True" } else { "False" }, "type": kind});
        if let Some(reason) = reason {
            c["reason"] = json!(reason);
        }
        if let Some(message) = message {
            c["message"] = json!(message);
        }
        c
    };
    let not_ready_message = format!("containers with unready status: [{}]", names.join(" "));
    let conditions = if succeeded {
        json!([
            cond("PodReadyToStartContainers", false, None, None),
            cond("Initialized", true, Some("PodCompleted"), None),
            cond("Ready", false, Some("PodCompleted"), None),
            cond("ContainersReady", false, Some("PodCompleted"), None),
            cond("PodScheduled", true, None, None)
        ])
    } else if running {
        json!([
            cond("PodReadyToStartContainers", true, None, None),
            cond("Initialized", true, None, None),
            cond("Ready", true, None, None),
            cond("ContainersReady", true, None, None),
            cond("PodScheduled", true, None, None)
        ])
    } else {
        json!([
            cond("PodReadyToStartContainers", false, None, None),
            cond("Initialized", true, None, None),
            cond(
                "Ready",
                false,
                Some("ContainersNotReady"),
                Some(not_ready_message.clone())
            ),
            cond(
                "ContainersReady",
                false,
                Some("ContainersNotReady"),
                Some(not_ready_message)
            ),
            cond("PodScheduled", true, None, None)
        ])
    };
    let container_statuses: Vec<Value> = spec
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|container| {
            let name = str_at(container, "/name");
            let image = str_at(container, "/image");
            let container_id = format!("containerd://{}", sha256_hex(&format!("{pod_name}/{name}")));
            let (state, started) = if succeeded {
                (json!({"terminated": {"containerID": container_id, "exitCode": 0, "finishedAt": now,
                    "reason": "Completed", "startedAt": now}}), false)
            } else if running {
                (json!({"running": {"startedAt": now}}), true)
            } else {
                (json!({"waiting": {"reason": "ContainerCreating"}}), false)
            };
            let mut status = json!({
                "image": normalize_image(image),
                "imageID": if running || succeeded { image_id(image) } else { String::new() },
                "lastState": {},
                "name": name,
                "ready": running,
                "restartCount": 0,
                "started": started,
                "state": state
            });
            if running || succeeded {
                status["containerID"] = json!(container_id);
            }
            if let Some(mounts) = container.get("volumeMounts").and_then(Value::as_array) {
                let mounts: Vec<Value> = mounts
                    .iter()
                    .map(|m| {
                        let mut mount = json!({"mountPath": str_at(m, "/mountPath"), "name": str_at(m, "/name")});
                        if m.get("readOnly").and_then(Value::as_bool) == Some(true) {
                            mount["readOnly"] = json!(true);
                            mount["recursiveReadOnly"] = json!("Disabled");
                        }
                        mount
                    })
                    .collect();
                status["volumeMounts"] = json!(mounts);
            }
            status
        })
        .collect();
    let host_ip = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|addresses| {
            addresses
                .iter()
                .find(|a| str_at(a, "/type") == "InternalIP")
        })
        .map(|a| str_at(a, "/address").to_string())
        .unwrap_or_default();
    let ip = if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        host_ip.clone()
    } else {
        pod_ip(node, pod_name)
    };
    let phase = if succeeded {
        "Succeeded"
    } else if running {
        "Running"
    } else {
        "Pending"
    };
    let mut status = json!({
        "conditions": conditions,
        "containerStatuses": container_statuses,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "phase": phase,
        "qosClass": qos,
        "startTime": now
    });
    if running || succeeded {
        status["podIP"] = json!(ip);
        status["podIPs"] = json!([{"ip": ip}]);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";
    const LATER: &str = "2026-01-01T00:05:00Z";
    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn deployment(replicas: i64) -> Value {
        let mut d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "uid": "d-uid", "generation": 2,
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "a"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                    {"name": "web", "image": "nginx:1.27", "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": true}]},
                    {"name": "sidecar", "image": format!("ghcr.io/acme/proxy@{DIGEST}")}]}}}
        });
        defaults::apply_defaults("apps/v1", "Deployment", &mut d);
        d
    }

    #[test]
    fn image_normalization_and_ids() {
        assert_eq!(normalize_image("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(
            normalize_image("nginx:1.27"),
            "docker.io/library/nginx:1.27"
        );
        assert_eq!(
            normalize_image("bitnami/redis:7"),
            "docker.io/bitnami/redis:7"
        );
        assert_eq!(
            normalize_image("ghcr.io/acme/app:v1"),
            "ghcr.io/acme/app:v1"
        );
        assert_eq!(
            normalize_image("localhost:5000/app"),
            "localhost:5000/app:latest"
        );
        assert_eq!(
            image_id(&format!("nginx@{DIGEST}")),
            format!("docker.io/library/nginx@{DIGEST}")
        );
        assert_eq!(
            image_id(&format!("ghcr.io/acme/app:v1@{DIGEST}")),
            format!("ghcr.io/acme/app@{DIGEST}")
        );
        let tagged = image_id("nginx:1.27");
        assert!(tagged.starts_with("docker.io/library/nginx@sha256:"));
        assert_eq!(tagged.len(), "docker.io/library/nginx@sha256:".len() + 64);
        assert_eq!(tagged, image_id("nginx:1.27"), "stable");
        assert_ne!(tagged, image_id("nginx:1.28"));
        assert!(image_id("localhost:5000/app:v1").starts_with("localhost:5000/app@sha256:"));
    }

    #[test]
    fn template_hashes_are_stable_and_use_the_name_alphabet() {
        let a = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let b = json!({"metadata": {"labels": {"b": "2", "a": "1"}}});
        assert_eq!(template_hash(&a, 0), template_hash(&b, 0));
        assert_ne!(template_hash(&a, 0), template_hash(&a, 1));
        assert_ne!(template_hash(&a, 0), template_hash(&json!({}), 0));
        let hash = template_hash(&a, 0);
        assert!(!hash.is_empty() && hash.len() <= 10);
        assert!(hash.bytes().all(|c| ALPHANUMS.contains(&c)));
    }

    #[test]
    fn nodes_are_ready_kubelets_of_v1_32() {
        let nodes = nodes(3, NOW);
        assert_eq!(nodes.len(), 3);
        let node = &nodes[2];
        assert_eq!(node["metadata"]["name"], "kwok-node-2");
        assert_eq!(
            node["metadata"]["labels"]["kubernetes.io/hostname"],
            "kwok-node-2"
        );
        assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.32.0");
        assert_eq!(node["status"]["capacity"]["pods"], "110");
        assert_eq!(node["status"]["allocatable"], node["status"]["capacity"]);
        assert_eq!(node["spec"]["podCIDR"], "10.244.2.0/24");
        assert_eq!(node["status"]["addresses"][0]["address"], "10.0.0.12");
        let ready = node["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(ready["status"], "True");
        assert_eq!(ready["reason"], "KubeletReady");
    }

    #[test]
    fn deployment_replica_set() {
        let d = deployment(3);
        let rs = replica_set_for(&d, 4);
        let name = rs["metadata"]["name"].as_str().unwrap();
        let hash = rs["metadata"]["labels"]["pod-template-hash"]
            .as_str()
            .unwrap();
        assert_eq!(name, format!("web-{hash}"));
        assert_eq!(name, replica_set_name(&d));
        assert_eq!(rs["metadata"]["namespace"], "prod");
        assert_eq!(rs["spec"]["replicas"], 3);
        assert_eq!(
            rs["spec"]["selector"]["matchLabels"],
            json!({"app": "web", "pod-template-hash": hash})
        );
        assert_eq!(
            rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"],
            hash
        );
        let annotations = &rs["metadata"]["annotations"];
        assert_eq!(annotations["deployment.kubernetes.io/revision"], "4");
        assert_eq!(
            annotations["deployment.kubernetes.io/desired-replicas"],
            "3"
        );
        assert_eq!(annotations["deployment.kubernetes.io/max-replicas"], "4");
        assert_eq!(annotations["team"], "a");
        assert!(
            annotations
                .get("kubectl.kubernetes.io/last-applied-configuration")
                .is_none()
        );
        assert_eq!(
            rs["metadata"]["ownerReferences"][0],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-uid",
                "controller": true, "blockOwnerDeletion": true})
        );
        assert_eq!(revision(&rs), 4);
        let mut changed = d.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
        assert_ne!(replica_set_name(&changed), replica_set_name(&d));
    }

    #[test]
    fn deployment_status_before_and_after_the_ready_delay() {
        let d = deployment(3);
        let rs = replica_set_name(&d);
        let pending = workload_status(&d, false, 2, NOW).unwrap();
        assert_eq!(pending["observedGeneration"], 2);
        assert_eq!(pending["replicas"], 3);
        assert_eq!(pending["updatedReplicas"], 3);
        assert_eq!(pending["unavailableReplicas"], 3);
        assert!(pending.get("readyReplicas").is_none());
        assert_eq!(pending["conditions"][0]["type"], "Available");
        assert_eq!(pending["conditions"][0]["status"], "False");
        assert_eq!(
            pending["conditions"][0]["reason"],
            "MinimumReplicasUnavailable"
        );
        assert_eq!(
            pending["conditions"][0]["message"],
            "Deployment does not have minimum availability."
        );
        assert_eq!(pending["conditions"][1]["reason"], "ReplicaSetUpdated");
        assert_eq!(
            pending["conditions"][1]["message"],
            format!("ReplicaSet \"{rs}\" is progressing.")
        );

        let mut d2 = d.clone();
        d2["status"] = pending;
        let ready = workload_status(&d2, true, 2, LATER).unwrap();
        assert_eq!(ready["readyReplicas"], 3);
        assert_eq!(ready["availableReplicas"], 3);
        assert!(ready.get("unavailableReplicas").is_none());
        let available = &ready["conditions"][0];
        assert_eq!(available["status"], "True");
        assert_eq!(available["reason"], "MinimumReplicasAvailable");
        assert_eq!(available["message"], "Deployment has minimum availability.");
        assert_eq!(available["lastTransitionTime"], LATER);
        let progressing = &ready["conditions"][1];
        assert_eq!(progressing["status"], "True");
        assert_eq!(progressing["reason"], "NewReplicaSetAvailable");
        assert_eq!(
            progressing["message"],
            format!("ReplicaSet \"{rs}\" has successfully progressed.")
        );
        assert_eq!(progressing["lastTransitionTime"], NOW, "status stayed True");
        assert_eq!(progressing["lastUpdateTime"], LATER, "reason changed");
    }

    #[test]
    fn deployment_availability_tolerates_max_unavailable_and_pause() {
        let mut d = deployment(4);
        d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] = json!(4);
        let status = workload_status(&d, false, 1, NOW).unwrap();
        assert_eq!(status["conditions"][0]["status"], "True");
        let zero = workload_status(&deployment(0), false, 1, NOW).unwrap();
        assert_eq!(zero["conditions"][0]["status"], "True");
        assert!(zero.get("replicas").is_none());
        let mut paused = deployment(1);
        paused["spec"]["paused"] = json!(true);
        let status = workload_status(&paused, true, 1, NOW).unwrap();
        assert_eq!(status["conditions"][1]["reason"], "DeploymentPaused");
        assert_eq!(status["conditions"][1]["status"], "Unknown");
    }

    #[test]
    fn replica_set_pods_running() {
        let d = deployment(3);
        let mut rs = replica_set_for(&d, 1);
        rs["metadata"]["uid"] = json!("rs-uid");
        let nodes = nodes(2, NOW);
        let pods = owned_pods(&rs, true, &nodes, NOW);
        assert_eq!(pods.len(), 3);
        let rs_name = rs["metadata"]["name"].as_str().unwrap();
        let pod = &pods[0];
        let name = pod["metadata"]["name"].as_str().unwrap();
        assert_eq!(pod["metadata"]["generateName"], format!("{rs_name}-"));
        assert_eq!(name.len(), rs_name.len() + 6);
        assert_ne!(pods[0]["metadata"]["name"], pods[1]["metadata"]["name"]);
        assert_eq!(pod["metadata"]["labels"]["app"], "web");
        assert_eq!(
            pod["metadata"]["labels"]["pod-template-hash"],
            rs["metadata"]["labels"]["pod-template-hash"]
        );
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], "rs-uid");
        assert_eq!(pod["spec"]["nodeName"], "kwok-node-0");
        assert_eq!(pods[1]["spec"]["nodeName"], "kwok-node-1");
        assert_eq!(pods[2]["spec"]["nodeName"], "kwok-node-0");
        assert_eq!(pod["spec"]["enableServiceLinks"], true);
        assert_eq!(pod["spec"]["serviceAccountName"], "default");
        assert_eq!(
            pod["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        let status = &pod["status"];
        assert_eq!(status["phase"], "Running");
        assert_eq!(status["qosClass"], "BestEffort");
        assert_eq!(status["hostIP"], "10.0.0.10");
        assert!(status["podIP"].as_str().unwrap().starts_with("10.244.0."));
        let ready = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(ready["status"], "True");
        let web = &status["containerStatuses"][0];
        assert_eq!(web["image"], "docker.io/library/nginx:1.27");
        assert!(
            web["imageID"]
                .as_str()
                .unwrap()
                .starts_with("docker.io/library/nginx@sha256:")
        );
        assert_eq!(web["ready"], true);
        assert!(
            web["containerID"]
                .as_str()
                .unwrap()
                .starts_with("containerd://")
        );
        assert_eq!(web["state"]["running"]["startedAt"], NOW);
        assert_eq!(
            web["volumeMounts"][0],
            json!({"mountPath": "/etc/cfg", "name": "cfg", "readOnly": true, "recursiveReadOnly": "Disabled"})
        );
        let sidecar = &status["containerStatuses"][1];
        assert_eq!(sidecar["imageID"], format!("ghcr.io/acme/proxy@{DIGEST}"));
        assert_eq!(owned_pods(&rs, true, &nodes, NOW), pods, "deterministic");
    }

    #[test]
    fn pods_before_the_ready_delay_and_without_nodes() {
        let mut rs = replica_set_for(&deployment(1), 1);
        rs["metadata"]["uid"] = json!("rs-uid");
        let pods = owned_pods(&rs, false, &nodes(1, NOW), NOW);
        let status = &pods[0]["status"];
        assert_eq!(status["phase"], "Pending");
        assert_eq!(
            status["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ContainerCreating"
        );
        assert_eq!(status["containerStatuses"][0]["imageID"], "");
        let ready = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        assert_eq!(
            ready["message"],
            "containers with unready status: [web sidecar]"
        );
        let unscheduled = owned_pods(&rs, true, &[], NOW);
        assert_eq!(unscheduled[0]["status"]["phase"], "Pending");
        assert_eq!(
            unscheduled[0]["status"]["conditions"][0]["reason"],
            "Unschedulable"
        );
        assert!(unscheduled[0]["spec"].get("nodeName").is_none());
    }

    #[test]
    fn replica_set_status() {
        let mut rs = replica_set_for(&deployment(2), 1);
        rs["metadata"]["generation"] = json!(1);
        let status = workload_status(&rs, true, 1, NOW).unwrap();
        assert_eq!(
            status,
            json!({"availableReplicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1, "readyReplicas": 2, "replicas": 2})
        );
        let status = workload_status(&rs, false, 1, NOW).unwrap();
        assert_eq!(
            status,
            json!({"fullyLabeledReplicas": 2, "observedGeneration": 1, "replicas": 2})
        );
    }

    fn stateful_set() -> Value {
        let mut s = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "prod", "uid": "s-uid", "generation": 1},
            "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres:16",
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}}});
        defaults::apply_defaults("apps/v1", "StatefulSet", &mut s);
        s
    }

    #[test]
    fn stateful_set_pods_and_status() {
        let s = stateful_set();
        let pods = owned_pods(&s, true, &nodes(3, NOW), NOW);
        assert_eq!(pods.len(), 2);
        assert_eq!(pods[1]["metadata"]["name"], "db-1");
        assert!(pods[1]["metadata"].get("generateName").is_none());
        let labels = &pods[1]["metadata"]["labels"];
        assert_eq!(labels["apps.kubernetes.io/pod-index"], "1");
        assert_eq!(labels["statefulset.kubernetes.io/pod-name"], "db-1");
        let revision = labels["controller-revision-hash"].as_str().unwrap();
        assert!(revision.starts_with("db-"));
        assert_eq!(pods[1]["spec"]["hostname"], "db-1");
        assert_eq!(pods[1]["spec"]["subdomain"], "db");
        assert_eq!(pods[1]["status"]["qosClass"], "Guaranteed");
        let status = workload_status(&s, true, 3, NOW).unwrap();
        assert_eq!(status["replicas"], 2);
        assert_eq!(status["readyReplicas"], 2);
        assert_eq!(status["availableReplicas"], 2);
        assert_eq!(status["currentRevision"], revision);
        assert_eq!(status["updateRevision"], revision);
        assert_eq!(status["observedGeneration"], 1);
        let pending = workload_status(&s, false, 3, NOW).unwrap();
        assert_eq!(pending["availableReplicas"], 0);
        assert!(pending.get("readyReplicas").is_none());
    }

    #[test]
    fn stateful_set_claims_and_pod_volumes() {
        let mut s = stateful_set();
        s["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data", "labels": {"tier": "db"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
        s["spec"]["template"]["spec"]["volumes"] =
            json!([{"name": "cfg", "configMap": {"name": "c"}}]);
        defaults::apply_defaults("apps/v1", "StatefulSet", &mut s);
        let claims = stateful_set_claims(&s);
        assert_eq!(claims.len(), 2);
        let claim = &claims[1];
        assert_eq!(claim["metadata"]["name"], "data-db-1");
        assert_eq!(
            claim["metadata"]["labels"],
            json!({"tier": "db", "app": "db"})
        );
        assert!(
            claim["metadata"].get("ownerReferences").is_none(),
            "Retain keeps claims unowned"
        );
        assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
        assert!(
            claim["spec"]["volumeName"]
                .as_str()
                .unwrap()
                .starts_with("pvc-")
        );
        assert_eq!(claim["status"]["phase"], "Bound");
        assert_eq!(claim["status"]["capacity"]["storage"], "1Gi");
        let pods = owned_pods(&s, true, &nodes(1, NOW), NOW);
        let volumes = pods[1]["spec"]["volumes"].as_array().unwrap();
        assert_eq!(
            volumes[0],
            json!({"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}})
        );
        assert_eq!(volumes[1]["name"], "cfg");
        s["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] = json!("Delete");
        let owned = stateful_set_claims(&s);
        assert_eq!(
            owned[0]["metadata"]["ownerReferences"][0]["kind"],
            "StatefulSet"
        );
    }

    #[test]
    fn revision_annotation() {
        let mut d = deployment(1);
        assert_eq!(revision(&d), 0);
        mark_revision(&mut d, 3);
        assert_eq!(revision(&d), 3);
        assert_eq!(d["metadata"]["annotations"]["team"], "a");
    }

    #[test]
    fn daemon_set_pods_and_status() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system", "uid": "ds-uid", "generation": 3},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "agent:1",
                    "resources": {"requests": {"cpu": "100m"}}}]}}}});
        defaults::apply_defaults("apps/v1", "DaemonSet", &mut d);
        let nodes = nodes(3, NOW);
        let pods = owned_pods(&d, true, &nodes, NOW);
        assert_eq!(pods.len(), 3);
        let node_names: Vec<&str> = pods
            .iter()
            .map(|p| p["spec"]["nodeName"].as_str().unwrap())
            .collect();
        assert_eq!(node_names, ["kwok-node-0", "kwok-node-1", "kwok-node-2"]);
        assert_eq!(
            pods[0]["metadata"]["labels"]["pod-template-generation"],
            "3"
        );
        assert!(pods[0]["metadata"]["labels"]["controller-revision-hash"].is_string());
        assert_eq!(pods[0]["status"]["qosClass"], "Burstable");
        assert_eq!(
            pods[1]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchFields"][0]["values"],
            json!(["kwok-node-1"])
        );
        let tolerations = pods[1]["spec"]["tolerations"].as_array().unwrap();
        assert_eq!(
            tolerations.len(),
            6,
            "admission adds no duplicate not-ready/unreachable"
        );
        assert!(
            tolerations
                .iter()
                .all(|t| t.get("tolerationSeconds").is_none())
        );
        let status = workload_status(&d, true, 3, NOW).unwrap();
        assert_eq!(
            status,
            json!({"currentNumberScheduled": 3, "desiredNumberScheduled": 3, "numberAvailable": 3,
                "numberMisscheduled": 0, "numberReady": 3, "observedGeneration": 3, "updatedNumberScheduled": 3})
        );
        let pending = workload_status(&d, false, 3, NOW).unwrap();
        assert_eq!(pending["numberUnavailable"], 3);
        assert_eq!(pending["numberReady"], 0);
    }

    fn job(extra: Value) -> Value {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "prod", "uid": "j-uid"},
            "spec": {"template": {"metadata": {"labels": {"app": "pi"}}, "spec": {"restartPolicy": "Never",
                "containers": [{"name": "pi", "image": "perl:5.34"}]}}}});
        if let (Some(spec), Some(extra)) = (j["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        defaults::apply_defaults("batch/v1", "Job", &mut j);
        defaults::generate_job_selector(&mut j, "j-uid");
        j
    }

    #[test]
    fn job_running_and_complete() {
        let j = job(json!({}));
        let running = workload_status(&j, false, 1, NOW).unwrap();
        assert_eq!(running["active"], 1);
        assert_eq!(running["startTime"], NOW);
        assert!(running.get("conditions").is_none());
        let mut j2 = j.clone();
        j2["status"] = running;
        let complete = workload_status(&j2, true, 1, LATER).unwrap();
        assert_eq!(complete["succeeded"], 1);
        assert_eq!(complete["startTime"], NOW, "kept from the previous status");
        assert_eq!(complete["completionTime"], LATER);
        assert!(complete.get("active").is_none());
        let conditions = complete["conditions"].as_array().unwrap();
        assert_eq!(conditions[0]["type"], "SuccessCriteriaMet");
        assert_eq!(conditions[1]["type"], "Complete");
        assert_eq!(conditions[1]["reason"], "CompletionsReached");
        assert_eq!(
            conditions[1]["message"],
            "Reached expected number of succeeded pods"
        );

        let pods = owned_pods(&j, true, &nodes(1, NOW), NOW);
        assert_eq!(pods.len(), 1);
        assert_eq!(pods[0]["status"]["phase"], "Succeeded");
        assert_eq!(
            pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
            "Completed"
        );
        assert_eq!(
            pods[0]["metadata"]["labels"]["batch.kubernetes.io/job-name"],
            "pi"
        );
        assert_eq!(
            pods[0]["metadata"]["finalizers"],
            json!(["batch.kubernetes.io/job-tracking"])
        );
        assert_eq!(pods[0]["metadata"]["ownerReferences"][0]["kind"], "Job");
    }

    #[test]
    fn indexed_and_suspended_jobs() {
        let j = job(json!({"completions": 3, "parallelism": 2, "completionMode": "Indexed"}));
        let running = owned_pods(&j, false, &nodes(1, NOW), NOW);
        assert_eq!(running.len(), 2);
        assert!(
            running[1]["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("pi-1-")
        );
        assert_eq!(
            running[1]["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
            "1"
        );
        let complete = workload_status(&j, true, 1, NOW).unwrap();
        assert_eq!(complete["completedIndexes"], "0-2");
        assert_eq!(complete["succeeded"], 3);
        let suspended = job(json!({"suspend": true}));
        let status = workload_status(&suspended, true, 1, NOW).unwrap();
        assert_eq!(status["conditions"][0]["type"], "Suspended");
        assert_eq!(status["conditions"][0]["reason"], "JobSuspended");
    }

    #[test]
    fn malformed_workloads_do_not_panic() {
        let nodes = nodes(2, NOW);
        let odd_values = [
            json!(null),
            json!("x"),
            json!(7),
            json!([1, 2]),
            json!({"a": null}),
        ];
        for kind in [
            "Deployment",
            "StatefulSet",
            "DaemonSet",
            "ReplicaSet",
            "Job",
        ] {
            for odd in &odd_values {
                let objects = [
                    json!({"kind": kind, "metadata": odd, "spec": odd, "status": odd}),
                    json!({"kind": kind, "metadata": {"name": "w"}, "spec": {"replicas": 2, "template": odd,
                        "selector": odd, "strategy": odd, "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": odd}],
                        "completions": odd, "parallelism": odd}}),
                    json!({"kind": kind, "metadata": {"name": "w"}, "spec": {"replicas": 1, "template": {"metadata": odd,
                        "spec": {"containers": [odd, {"name": "c", "image": odd, "volumeMounts": odd}], "volumes": odd}}}}),
                ];
                for object in objects {
                    let _ = workload_status(&object, true, 2, NOW);
                    let _ = workload_status(&object, false, 2, NOW);
                    let _ = owned_pods(&object, true, &nodes, NOW);
                    let _ = owned_pods(&object, false, &[json!("not a node")], NOW);
                    let _ = replica_set_for(&object, 1);
                    let _ = stateful_set_claims(&object);
                    let mut copy = object.clone();
                    mark_revision(&mut copy, 2);
                }
            }
        }
        let mut huge = json!({"kind": "ReplicaSet", "metadata": {"name": "h"}, "spec": {"replicas": i32::MAX, "template": {}}});
        assert_eq!(
            owned_pods(&huge, true, &nodes, NOW).len(),
            MAX_SIMULATED_PODS
        );
        assert_eq!(
            workload_status(&huge, true, 2, NOW).unwrap()["replicas"],
            i32::MAX
        );
        let extreme = json!({"kind": "Deployment", "metadata": {"name": "e"}, "spec": {"replicas": i64::MAX,
            "strategy": {"rollingUpdate": {"maxSurge": "9223372036854775807%", "maxUnavailable": i64::MIN}}}});
        let _ = workload_status(&extreme, false, 1, NOW);
        let _ = replica_set_for(&extreme, 1);
        let indexed = json!({"kind": "Job", "metadata": {"name": "j"}, "spec": {"completionMode": "Indexed", "completions": i64::MIN}});
        assert!(
            workload_status(&indexed, true, 1, NOW)
                .unwrap()
                .get("completedIndexes")
                .is_none()
        );
        huge["spec"]["replicas"] = json!(-3);
        assert!(owned_pods(&huge, true, &nodes, NOW).is_empty());
        assert!(normalize_image("").ends_with(":latest"));
        assert!(image_id("@").contains('@'));
        assert!(image_id("a/b:c@").contains('@'));
    }

    #[test]
    fn other_kinds_have_no_simulation() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert!(workload_status(&cm, true, 1, NOW).is_none());
        assert!(owned_pods(&cm, true, &nodes(1, NOW), NOW).is_empty());
    }
}
