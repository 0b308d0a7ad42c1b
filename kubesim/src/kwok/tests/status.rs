//! Tests of workload status: Deployments and ReplicaSets.

use serde_json::json;

use super::*;

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
