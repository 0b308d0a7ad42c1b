//! The N fake Nodes (`kwok-node-0` …): Ready, with capacity, addresses and `nodeInfo`
//! reporting kubelet v1.32.

use serde_json::{Value, json};

/// The kubelet version the fake Nodes report.
pub const KUBELET_VERSION: &str = "v1.32.0";

/// The name of the `index`-th fake node.
pub fn node_name(index: usize) -> String {
    format!("kwok-node-{index}")
}

/// The `count` fake Nodes, Ready since `now`: kwok's labels and annotations, a pod CIDR
/// `10.244.I.0/24`, InternalIP `10.0.0.(10+I)` (wrapping into the next octet), 32 CPUs,
/// 256Gi memory, 110 pods, and `nodeInfo` with kubelet v1.32.
pub fn nodes(count: usize, now: &str) -> Vec<Value> {
    (0..count).map(|index| node(index, now)).collect()
}

fn node_ip(index: usize) -> String {
    let host = index + 10;
    format!("10.0.{}.{}", host / 256, host % 256)
}

fn node(index: usize, now: &str) -> Value {
    let name = node_name(index);
    let cidr = format!("10.244.{}.0/24", index % 256);
    let resources =
        json!({"cpu": "32", "ephemeral-storage": "1Ti", "memory": "256Gi", "pods": "110"});
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message})
    };
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok"
            }
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {
            "addresses": [
                {"address": node_ip(index), "type": "InternalIP"},
                {"address": name, "type": "Hostname"}
            ],
            "allocatable": resources,
            "capacity": resources,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kernelVersion": "6.1.0-kwok",
                "kubeletVersion": KUBELET_VERSION,
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "systemUUID": ""
            }
        }
    })
}
