//! Tests of the Service defaults.

use serde_json::json;

use super::*;

#[test]
fn service_defaults() {
    let s = defaulted(
        "v1",
        "Service",
        json!({"spec": {"selector": {"app": "web"}, "ports": [{"port": 80}, {"port": 443, "targetPort": "https", "protocol": "TCP"}]}}),
    );
    let spec = &s["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(
        spec["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    assert_eq!(spec["ports"][1]["targetPort"], "https");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert!(spec.get("externalTrafficPolicy").is_none());
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(s["status"], json!({"loadBalancer": {}}));

    let lb = defaulted(
        "v1",
        "Service",
        json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]}}),
    );
    assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    assert_eq!(
        lb["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );

    let headless = defaulted("v1", "Service", json!({"spec": {"clusterIP": "None"}}));
    assert_eq!(headless["spec"]["ipFamilyPolicy"], "RequireDualStack");
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));

    let external = defaulted(
        "v1",
        "Service",
        json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
    );
    assert!(external["spec"].get("ipFamilies").is_none());
    assert!(external["spec"].get("internalTrafficPolicy").is_none());
}
