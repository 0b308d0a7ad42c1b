//! Tests of the Pod admission plugins.

use serde_json::json;

use super::*;

#[test]
fn pod_admission() {
    let mut p = defaulted(
        "v1",
        "Pod",
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    );
    admit_pod(&mut p, "abcde");
    let spec = &p["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(spec["tolerations"].as_array().unwrap().len(), 2);
    assert_eq!(
        spec["tolerations"][0]["key"],
        "node.kubernetes.io/not-ready"
    );
    assert_eq!(spec["tolerations"][1]["tolerationSeconds"], 300);
    assert_eq!(spec["volumes"][0]["name"], "kube-api-access-abcde");
    assert_eq!(
        spec["containers"][0]["volumeMounts"][0],
        json!({"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access-abcde", "readOnly": true})
    );

    let mut no_token = json!({"spec": {"automountServiceAccountToken": false, "priorityClassName": "high", "containers": [{"name": "c"}]}});
    admit_pod(&mut no_token, "x");
    assert!(no_token["spec"].get("volumes").is_none());
    assert!(no_token["spec"].get("priority").is_none());
}
