//! Tests of the create-time steps: the Job selector, status reset and QoS classes.

use serde_json::json;

use super::*;

#[test]
fn job_selector_generation() {
    let mut j = defaulted(
        "batch/v1",
        "Job",
        json!({"metadata": {"name": "pi"}, "spec": {"template": {"metadata": {"labels": {"app": "pi"}}, "spec": {}}}}),
    );
    generate_job_selector(&mut j, "u-1");
    assert_eq!(
        j["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
    );
    let labels = &j["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/job-name"], "pi");
    assert_eq!(labels["job-name"], "pi");
    assert_eq!(labels["controller-uid"], "u-1");
    assert_eq!(
        j["metadata"]["labels"], *labels,
        "the Job shares its template's labels"
    );

    let mut own_labels = defaulted(
        "batch/v1",
        "Job",
        json!({"metadata": {"name": "pi", "labels": {"team": "a"}}, "spec": {"template": {"spec": {}}}}),
    );
    generate_job_selector(&mut own_labels, "u-2");
    assert_eq!(own_labels["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(
        own_labels["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"],
        "u-2"
    );

    let mut manual =
        json!({"metadata": {"name": "m"}, "spec": {"manualSelector": true, "template": {}}});
    generate_job_selector(&mut manual, "u-3");
    assert!(manual["spec"].get("selector").is_none());
}

#[test]
fn create_resets_status_and_adds_create_time_fields() {
    let mut d = json!({"spec": {"template": {"spec": {}}}, "status": {"replicas": 9}});
    prepare_for_create("apps/v1", "Deployment", &mut d);
    assert_eq!(d["status"], json!({}));
    assert_eq!(d["spec"]["replicas"], 1);

    let mut pvc = json!({"spec": {}, "status": {"phase": "Bound"}});
    prepare_for_create("v1", "PersistentVolumeClaim", &mut pvc);
    assert_eq!(pvc["status"], json!({"phase": "Pending"}));

    let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "x",
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}, "status": {"phase": "Running"}});
    prepare_for_create("v1", "Pod", &mut pod);
    assert_eq!(
        pod["status"],
        json!({"phase": "Pending", "qosClass": "Guaranteed"})
    );

    let mut ns = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["example.com/x"]}, "status": {"phase": "Terminating"}});
    prepare_for_create("v1", "Namespace", &mut ns);
    assert_eq!(
        ns["spec"]["finalizers"],
        json!(["example.com/x", "kubernetes"])
    );
    assert_eq!(ns["status"]["phase"], "Active");
    let mut bare = json!({"metadata": {"name": "b"}});
    prepare_for_create("v1", "Namespace", &mut bare);
    assert_eq!(bare["spec"]["finalizers"], json!(["kubernetes"]));

    let mut cm = json!({"data": {"a": "b"}});
    prepare_for_create("v1", "ConfigMap", &mut cm);
    assert_eq!(cm, json!({"data": {"a": "b"}}));
}

#[test]
fn qos_classes() {
    assert_eq!(
        qos_class(&json!({"containers": [{"name": "a"}]})),
        "BestEffort"
    );
    assert_eq!(
        qos_class(
            &json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]})
        ),
        "Guaranteed"
    );
    assert_eq!(
        qos_class(
            &json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]})
        ),
        "Burstable"
    );
    assert_eq!(
        qos_class(
            &json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}, {"name": "b"}]})
        ),
        "Burstable"
    );
}
