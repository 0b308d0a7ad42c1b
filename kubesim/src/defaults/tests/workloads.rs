//! Tests of the workload defaults: Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and
//! CronJobs.

use serde_json::{Value, json};

use super::*;

#[test]
fn deployment_defaults_match_v1_32() {
    let d = defaulted(
        "apps/v1",
        "Deployment",
        json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": web_template()}}),
    );
    let spec = &d["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(
        spec["template"]["metadata"]["creationTimestamp"],
        Value::Null
    );
    assert!(
        spec["template"]["metadata"]
            .as_object()
            .unwrap()
            .contains_key("creationTimestamp")
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Always");
    assert_eq!(pod["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["schedulerName"], "default-scheduler");
    assert_eq!(pod["securityContext"], json!({}));
    assert_eq!(pod["terminationGracePeriodSeconds"], 30);
    assert!(
        pod.get("enableServiceLinks").is_none(),
        "only Pods get enableServiceLinks"
    );
    let c = &pod["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["resources"], json!({}));
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(d["status"], json!({}));
}

#[test]
fn user_values_are_kept() {
    let d = defaulted(
        "apps/v1",
        "Deployment",
        json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 2,
            "template": {"spec": {"restartPolicy": "Always", "terminationGracePeriodSeconds": 5,
            "containers": [{"name": "a", "image": "x", "imagePullPolicy": "Never"}]}}}}),
    );
    assert_eq!(d["spec"]["replicas"], 0);
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    assert_eq!(d["spec"]["revisionHistoryLimit"], 2);
    assert_eq!(
        d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
        5
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Never"
    );
}

#[test]
fn partial_rolling_update_is_completed() {
    let d = defaulted(
        "apps/v1",
        "Deployment",
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}),
    );
    assert_eq!(
        d["spec"]["strategy"]["rollingUpdate"],
        json!({"maxSurge": 1, "maxUnavailable": "25%"})
    );
}

#[test]
fn stateful_set_defaults() {
    let s = defaulted(
        "apps/v1",
        "StatefulSet",
        json!({"spec": {"serviceName": "db", "template": web_template(),
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}),
    );
    let spec = &s["spec"];
    assert_eq!(spec["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["revisionHistoryLimit"], 10);
    let claim = &spec["volumeClaimTemplates"][0];
    assert_eq!(claim["apiVersion"], "v1");
    assert_eq!(claim["kind"], "PersistentVolumeClaim");
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    assert_eq!(claim["status"], json!({"phase": "Pending"}));
    assert_eq!(s["status"], json!({"availableReplicas": 0, "replicas": 0}));
}

#[test]
fn stateful_set_explicit_rolling_update_without_block_stays_bare() {
    let s = defaulted(
        "apps/v1",
        "StatefulSet",
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
    );
    assert_eq!(
        s["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate"})
    );
    let s = defaulted(
        "apps/v1",
        "StatefulSet",
        json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
    );
    assert_eq!(s["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
}

#[test]
fn daemon_set_and_replica_set_defaults() {
    let d = defaulted(
        "apps/v1",
        "DaemonSet",
        json!({"spec": {"template": web_template()}}),
    );
    assert_eq!(
        d["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["status"]["numberReady"], 0);
    let r = defaulted(
        "apps/v1",
        "ReplicaSet",
        json!({"spec": {"template": web_template()}}),
    );
    assert_eq!(r["spec"]["replicas"], 1);
    assert_eq!(r["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
}

#[test]
fn job_defaults() {
    let j = defaulted(
        "batch/v1",
        "Job",
        json!({"metadata": {"name": "pi"}, "spec": {"template": {"metadata": {"labels": {"app": "pi"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34"}]}}}}),
    );
    let spec = &j["spec"];
    assert_eq!(spec["completions"], 1);
    assert_eq!(spec["parallelism"], 1);
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(j["metadata"]["labels"], json!({"app": "pi"}));
    let parallel = defaulted("batch/v1", "Job", json!({"spec": {"parallelism": 3}}));
    assert!(parallel["spec"].get("completions").is_none());
    let per_index = defaulted(
        "batch/v1",
        "Job",
        json!({"spec": {"backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 3,
            "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}}),
    );
    assert_eq!(per_index["spec"]["backoffLimit"], i32::MAX);
    assert_eq!(per_index["spec"]["podReplacementPolicy"], "Failed");
    assert_eq!(
        per_index["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
        "True"
    );
}

#[test]
fn cron_job_defaults() {
    let c = defaulted(
        "batch/v1",
        "CronJob",
        json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}}),
    );
    let spec = &c["spec"];
    assert_eq!(spec["concurrencyPolicy"], "Allow");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["successfulJobsHistoryLimit"], 3);
    assert_eq!(spec["failedJobsHistoryLimit"], 1);
    let job_spec = &spec["jobTemplate"]["spec"];
    assert!(
        job_spec.get("backoffLimit").is_none(),
        "Job defaults are not applied to templates"
    );
    assert_eq!(
        job_spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
}
