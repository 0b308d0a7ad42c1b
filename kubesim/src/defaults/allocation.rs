//! Service allocation: node ports in the default 30000-32767 range and cluster IPs, and
//! assigning them to a Service.

use serde_json::{Value, json};

use super::fields::array_objects;

/// The node port for the `seq`-th allocation in the default 30000-32767 range (wrapping).
pub fn allocate_node_port(seq: u32) -> u16 {
    const FIRST: u32 = 30000;
    const SIZE: u32 = 32767 - 30000 + 1;
    u16::try_from(FIRST + seq % SIZE).unwrap_or(30000)
}

/// Fills `nodePort` on the ports of a new NodePort or LoadBalancer Service (unless
/// `allocateLoadBalancerNodePorts` is false) that have none, taking each from `next_port`
/// (e.g. [`allocate_node_port`] over a counter). Returns how many ports were assigned.
pub fn assign_node_ports(service: &mut Value, mut next_port: impl FnMut() -> u16) -> usize {
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return 0;
    };
    let needs_ports = match spec.get("type").and_then(Value::as_str) {
        Some("NodePort") => true,
        Some("LoadBalancer") => {
            spec.get("allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                != Some(false)
        }
        _ => false,
    };
    if !needs_ports {
        return 0;
    }
    let mut assigned = 0;
    for port in array_objects(spec, "ports") {
        if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) == 0 {
            port.insert("nodePort".into(), json!(next_port()));
            assigned += 1;
        }
    }
    assigned
}

/// The cluster IP for the `seq`-th allocation in the 10.96.0.0/12 service range (the kubeadm
/// and kind default). `seq` 0 is 10.96.0.1, the address of the `kubernetes` Service; the
/// network and broadcast addresses are never returned, and the range wraps around.
pub fn allocate_cluster_ip(seq: u32) -> String {
    const BASE: u32 = (10 << 24) | (96 << 16);
    const USABLE: u32 = (1 << 20) - 2;
    let address = BASE + 1 + seq % USABLE;
    std::net::Ipv4Addr::from(address).to_string()
}

/// Fills `spec.clusterIP` and `spec.clusterIPs` of a Service being created with `ip` (from
/// [`allocate_cluster_ip`]) when it needs one: not ExternalName, not headless, and no address
/// requested by the user. Returns whether `ip` was used, so the server only consumes an
/// allocation when it is.
pub fn assign_cluster_ip(service: &mut Value, ip: &str) -> bool {
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return false;
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return false;
    }
    let requested = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty());
    if requested.is_some() {
        return false;
    }
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    true
}
