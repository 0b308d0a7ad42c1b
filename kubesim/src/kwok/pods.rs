//! The Pods a ReplicaSet, StatefulSet, DaemonSet or Job owns: how many, named and labelled
//! like the real controllers name them, spec copied from the template (with the Pod defaults
//! and admission changes), scheduled round-robin on the nodes (DaemonSet Pods pinned to
//! theirs), and the claims their volumes name (StatefulSet Pods).

use serde_json::{Map, Value, json};

use crate::defaults;

use super::fields::{generation, int_at, owner_reference, str_at};
use super::names::{name_suffix, template_hash};
use super::pod_status::pod_status;
use super::status::job_counts;

/// The most Pods (or claims) simulated for one workload: a test cluster asked for more
/// (a replica count is user input, up to 2^31-1) reports the requested counts in the
/// workload's status but materializes only this many objects.
pub const MAX_SIMULATED_PODS: usize = 1000;

/// How many objects to materialize for a requested count: negative counts are none, large
/// ones are capped at [`MAX_SIMULATED_PODS`].
pub(super) fn pod_count(requested: i64) -> usize {
    usize::try_from(requested)
        .unwrap_or(0)
        .min(MAX_SIMULATED_PODS)
}

/// `(volume name, claim name)` of each volumeClaimTemplate for a StatefulSet ordinal: the
/// claim is named `TEMPLATE-STATEFULSET-ORDINAL`.
pub(super) fn claim_names(stateful_set: &Value, ordinal: usize) -> Vec<(String, String)> {
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
/// its ReplicaSet ([`replica_set_for`](super::replica_set_for)). Other kinds own no Pods.
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

/// A bare Pod (one no controller owns) as the scheduler and the kubelet leave it: bound to a
/// node (`spec.nodeName`, kept when the Pod names one; else picked by a stable hash of its
/// name) and given a status, Running and Ready once `ready`. `None` for a Pod a controller
/// owns (its controller's simulation handles it) and when nothing would change: a Pod that
/// has a status is only updated to become Ready.
pub fn bare_pod(pod: &Value, ready: bool, nodes: &[Value], now: &str) -> Option<Value> {
    let owned = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| !refs.is_empty());
    if owned {
        return None;
    }
    let is_ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True");
    let has_status = pod.pointer("/status/phase").is_some();
    if is_ready || (has_status && !ready) {
        return None;
    }
    let mut pod = pod.clone();
    let named = str_at(&pod, "/spec/nodeName").to_string();
    let node = match named.as_str() {
        "" if nodes.is_empty() => None,
        "" => {
            let hash = name_suffix(str_at(&pod, "/metadata/name"));
            let index = hash.bytes().map(usize::from).sum::<usize>() % nodes.len();
            nodes.get(index)
        }
        name => nodes.iter().find(|n| str_at(n, "/metadata/name") == name),
    };
    if let (Some(node), Some(spec)) = (node, pod.get_mut("spec").and_then(Value::as_object_mut)) {
        spec.insert("nodeName".into(), json!(str_at(node, "/metadata/name")));
    }
    pod["status"] = pod_status(&pod, node, ready, false, now);
    Some(pod)
}
