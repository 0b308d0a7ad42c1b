//! Tests of cluster IP and node port allocation.

use serde_json::json;

use super::*;

#[test]
fn cluster_ip_allocation() {
    assert_eq!(allocate_cluster_ip(0), "10.96.0.1");
    assert_eq!(allocate_cluster_ip(1), "10.96.0.2");
    assert_eq!(allocate_cluster_ip(255), "10.96.1.0");
    assert_eq!(allocate_cluster_ip((1 << 20) - 3), "10.111.255.254");
    assert_eq!(
        allocate_cluster_ip((1 << 20) - 2),
        "10.96.0.1",
        "wraps around"
    );

    let mut s = defaulted("v1", "Service", json!({"spec": {"ports": [{"port": 80}]}}));
    assert!(assign_cluster_ip(&mut s, "10.96.0.10"));
    assert_eq!(s["spec"]["clusterIP"], "10.96.0.10");
    assert_eq!(s["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    let mut headless = defaulted("v1", "Service", json!({"spec": {"clusterIP": "None"}}));
    assert!(!assign_cluster_ip(&mut headless, "10.96.0.11"));
    let mut external = json!({"spec": {"type": "ExternalName"}});
    assert!(!assign_cluster_ip(&mut external, "10.96.0.11"));
}

#[test]
fn node_port_allocation() {
    assert_eq!(allocate_node_port(0), 30000);
    assert_eq!(allocate_node_port(2767), 32767);
    assert_eq!(allocate_node_port(2768), 30000);
    let mut seq = 0;
    let mut next = || {
        seq += 1;
        allocate_node_port(seq - 1)
    };
    let mut s = defaulted(
        "v1",
        "Service",
        json!({"spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 443, "nodePort": 31000}]}}),
    );
    assert_eq!(assign_node_ports(&mut s, &mut next), 1);
    assert_eq!(s["spec"]["ports"][0]["nodePort"], 30000);
    assert_eq!(s["spec"]["ports"][1]["nodePort"], 31000);
    let mut no_ports = defaulted(
        "v1",
        "Service",
        json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}]}}),
    );
    assert_eq!(assign_node_ports(&mut no_ports, &mut next), 0);
    let mut cluster_ip = defaulted("v1", "Service", json!({"spec": {"ports": [{"port": 80}]}}));
    assert_eq!(assign_node_ports(&mut cluster_ip, &mut next), 0);
}
