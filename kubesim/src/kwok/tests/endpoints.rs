use super::*;

fn pod(name: &str, ip: &str, ready: bool, labels: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "labels": labels},
        "spec": {"nodeName": "kwok-node-0", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
}

#[test]
fn endpoints_list_the_selected_pods_by_readiness_with_resolved_ports() {
    let service = json!({"metadata": {"name": "web", "namespace": "ns", "labels": {"tier": "front"}},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}});
    let a = pod("a", "10.0.0.2", true, json!({"app": "web"}));
    let b = pod("b", "10.0.0.1", false, json!({"app": "web"}));
    let other = pod("c", "10.0.0.3", true, json!({"app": "db"}));
    let mut gone = pod("d", "10.0.0.4", true, json!({"app": "web"}));
    gone["metadata"]["deletionTimestamp"] = json!(NOW);
    let ep = endpoints_for(&service, &[&a, &b, &other, &gone]).unwrap();
    assert_eq!(ep["metadata"]["labels"], json!({"tier": "front"}));
    let subset = &ep["subsets"][0];
    assert_eq!(subset["addresses"][0]["ip"], "10.0.0.2");
    assert_eq!(subset["addresses"][0]["targetRef"]["name"], "a");
    assert_eq!(subset["notReadyAddresses"][0]["ip"], "10.0.0.1");
    assert_eq!(
        subset["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
    );
    assert_eq!(ep["subsets"].as_array().unwrap().len(), 1);
    let none = endpoints_for(&service, &[&other]).unwrap();
    assert!(none.get("subsets").is_none());
    let headless_selectorless =
        json!({"metadata": {"name": "x", "namespace": "ns"}, "spec": {"ports": [{"port": 1}]}});
    assert!(endpoints_for(&headless_selectorless, &[&a]).is_none());
}
