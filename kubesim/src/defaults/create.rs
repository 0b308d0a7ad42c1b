//! The create-time registry strategy steps: `PrepareForCreate` (status reset, Pod phase and
//! QoS class, the Namespace finalizer) and the Job selector generated from the new uid.

use serde_json::{Value, json};

use super::apply::apply_defaults;
use super::fields::{child, default};

/// What kube-apiserver does to a new object, in order: [`apply_defaults`], then the registry
/// strategy's `PrepareForCreate`, then defaulting again as the stored object is read back:
/// * the status of workloads, Services, Ingresses, PVCs, HPAs and PDBs is reset to its zero
///   shape (a client cannot create an object with a status);
/// * a Pod starts `Pending` with its QoS class ([`qos_class`]);
/// * a Namespace starts `Active` with the `kubernetes` finalizer appended to
///   `spec.finalizers` (create-only: later updates may remove it through `/finalize`).
///
/// Steps that need server state stay with the server: uid, generation and timestamps,
/// [`assign_cluster_ip`](super::assign_cluster_ip),
/// [`assign_node_ports`](super::assign_node_ports), [`generate_job_selector`],
/// [`admit_pod`](super::admit_pod).
pub fn prepare_for_create(api_version: &str, kind: &str, object: &mut Value) {
    apply_defaults(api_version, kind, object);
    let Some(root) = object.as_object_mut() else {
        return;
    };
    match (api_version, kind) {
        ("apps/v1", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch/v1", "Job" | "CronJob")
        | ("v1", "Service" | "PersistentVolumeClaim")
        | ("networking.k8s.io/v1", "Ingress")
        | ("autoscaling/v1" | "autoscaling/v2", "HorizontalPodAutoscaler")
        | ("policy/v1", "PodDisruptionBudget") => {
            root.remove("status");
        }
        ("v1", "Pod") => {
            let qos = root.get("spec").map_or("BestEffort", qos_class);
            root.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos}),
            );
        }
        ("v1", "Namespace") => {
            root.insert("status".into(), json!({"phase": "Active"}));
            if let Some(spec) = child(root, "spec") {
                let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
                if !finalizers.is_array() {
                    *finalizers = json!([]);
                }
                if let Some(finalizers) = finalizers.as_array_mut()
                    && !finalizers.iter().any(|f| f == "kubernetes")
                {
                    finalizers.push(json!("kubernetes"));
                }
            }
        }
        _ => {}
    }
    apply_defaults(api_version, kind, object);
}

/// The QoS class of a Pod spec (`qos.GetPodQOS`): BestEffort without any cpu/memory request
/// or limit, Guaranteed when every container limits cpu and memory with equal requests,
/// else Burstable. Quantities are compared as written.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| spec.get(*list).and_then(Value::as_array))
        .flatten()
        .collect();
    let compute = ["cpu", "memory"];
    let has_any = containers.iter().any(|c| {
        ["requests", "limits"].iter().any(|kind| {
            compute.iter().any(|resource| {
                c.pointer(&format!("/resources/{kind}/{resource}"))
                    .is_some_and(|q| q.as_str() != Some("0") && q.as_i64() != Some(0))
            })
        })
    });
    if !has_any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        compute.iter().all(|resource| {
            let limit = c.pointer(&format!("/resources/limits/{resource}"));
            let request = c.pointer(&format!("/resources/requests/{resource}"));
            limit.is_some() && request.is_none_or(|r| Some(r) == limit)
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The Job registry's create step (`pkg/registry/batch/job/strategy.go` `generateSelector`),
/// which needs the new object's uid: unless `spec.manualSelector` is true, adds the
/// `batch.kubernetes.io/controller-uid`, `batch.kubernetes.io/job-name`, `controller-uid` and
/// `job-name` labels to the pod template and selects on `batch.kubernetes.io/controller-uid`.
/// When the Job's labels equal its template's (as [`apply_defaults`] copies them: the real
/// server shares one map between the two), the Job's own labels gain the same entries.
pub fn generate_job_selector(job: &mut Value, uid: &str) {
    let name = job
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(root) = job.as_object_mut() else {
        return;
    };
    let Some(spec) = child(root, "spec") else {
        return;
    };
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let generated = [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name.as_str()),
        ("controller-uid", uid),
        ("job-name", name.as_str()),
    ];
    let Some(template_labels) = child(spec, "template")
        .and_then(|template| child(template, "metadata"))
        .and_then(|metadata| child(metadata, "labels"))
    else {
        return;
    };
    let shared_with_job = template_labels.clone();
    for (key, value) in generated {
        default(template_labels, key, json!(value));
    }
    if let Some(selector) = child(spec, "selector")
        && let Some(match_labels) = child(selector, "matchLabels")
    {
        default(
            match_labels,
            "batch.kubernetes.io/controller-uid",
            json!(uid),
        );
    }
    if let Some(labels) = child(root, "metadata")
        .and_then(|metadata| metadata.get_mut("labels"))
        .and_then(Value::as_object_mut)
        && *labels == shared_with_job
    {
        for (key, value) in generated {
            default(labels, key, json!(value));
        }
    }
}
