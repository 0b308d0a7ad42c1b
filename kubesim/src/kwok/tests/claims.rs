//! Tests of StatefulSet PersistentVolumeClaims and the Pod volumes that use them.

use serde_json::json;

use crate::defaults;

use super::*;

#[test]
fn stateful_set_claims_and_pod_volumes() {
    let mut s = stateful_set();
    s["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data", "labels": {"tier": "db"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
    s["spec"]["template"]["spec"]["volumes"] = json!([{"name": "cfg", "configMap": {"name": "c"}}]);
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
