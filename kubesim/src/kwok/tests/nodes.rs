//! Tests of the fake Nodes.

use super::*;

#[test]
fn nodes_are_ready_kubelets_of_v1_32() {
    let nodes = nodes(3, NOW);
    assert_eq!(nodes.len(), 3);
    let node = &nodes[2];
    assert_eq!(node["metadata"]["name"], "kwok-node-2");
    assert_eq!(
        node["metadata"]["labels"]["kubernetes.io/hostname"],
        "kwok-node-2"
    );
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.32.0");
    assert_eq!(node["status"]["capacity"]["pods"], "110");
    assert_eq!(node["status"]["allocatable"], node["status"]["capacity"]);
    assert_eq!(node["spec"]["podCIDR"], "10.244.2.0/24");
    assert_eq!(node["status"]["addresses"][0]["address"], "10.0.0.12");
    let ready = node["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["reason"], "KubeletReady");
}
