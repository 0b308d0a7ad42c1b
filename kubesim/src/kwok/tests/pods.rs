//! Tests of owned Pods (ReplicaSets, StatefulSets, DaemonSets, Jobs), their status, and malformed or
//! unsimulated workloads.

use serde_json::json;

use crate::defaults;

use super::*;

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

#[test]
fn bare_pods_are_scheduled_and_run_until_ready() {
    let now = "2026-12-01T16:00:00Z";
    let nodes = nodes(3, now);
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stray", "namespace": "staging", "uid": "u-1"},
        "spec": {"containers": [{"name": "web", "image": "ghcr.io/acme/web:0.1"}]}});
    let pending = bare_pod(&pod, false, &nodes, now).expect("a status");
    let node = pending["spec"]["nodeName"].as_str().unwrap().to_string();
    assert!(node.starts_with("kwok-node-"), "{pending}");
    assert_eq!(pending["status"]["containerStatuses"][0]["imageID"], "");
    assert_eq!(
        bare_pod(&pending, false, &nodes, now),
        None,
        "nothing new until ready"
    );
    let running = bare_pod(&pending, true, &nodes, now).expect("ready");
    assert_eq!(
        running["spec"]["nodeName"],
        node.as_str(),
        "stays on its node"
    );
    assert_eq!(running["status"]["phase"], "Running");
    assert_eq!(
        running["status"]["containerStatuses"][0]["imageID"],
        image_id("ghcr.io/acme/web:0.1")
    );
    assert_eq!(bare_pod(&running, true, &nodes, now), None, "settled");
    // Owned Pods are their controller's; a Pod naming its node keeps it.
    let mut owned = pod.clone();
    owned["metadata"]["ownerReferences"] =
        json!([{"kind": "ReplicaSet", "name": "rs", "uid": "x"}]);
    assert_eq!(bare_pod(&owned, true, &nodes, now), None);
    let mut pinned = pod.clone();
    pinned["spec"]["nodeName"] = json!("kwok-node-2");
    let placed = bare_pod(&pinned, true, &nodes, now).unwrap();
    assert_eq!(placed["spec"]["nodeName"], "kwok-node-2");
    // Without nodes it stays Pending, unschedulable.
    let unscheduled = bare_pod(&pod, true, &[], now).unwrap();
    assert_eq!(unscheduled["status"]["phase"], "Pending");
}
