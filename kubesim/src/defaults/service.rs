//! Defaults of Services: type, session affinity, ports, traffic policies and IP families.

use serde_json::{Map, Value, json};

use super::fields::{array_objects, child, default, default_str};

pub(super) fn service(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default_str(spec, "sessionAffinity", "None");
        match spec.get("sessionAffinity").and_then(Value::as_str) {
            Some("None") => {
                spec.remove("sessionAffinityConfig");
            }
            Some("ClientIP") => {
                let timeout = spec
                    .get("sessionAffinityConfig")
                    .and_then(|config| config.pointer("/clientIP/timeoutSeconds"));
                if timeout.is_none_or(Value::is_null) {
                    spec.insert(
                        "sessionAffinityConfig".into(),
                        json!({"clientIP": {"timeoutSeconds": 10800}}),
                    );
                }
            }
            _ => {}
        }
        default_str(spec, "type", "ClusterIP");
        for port in array_objects(spec, "ports") {
            default_str(port, "protocol", "TCP");
            let target_unset = match port.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                Some(_) => false,
            };
            if target_unset && let Some(number) = port.get("port").cloned() {
                port.insert("targetPort".into(), number);
            }
        }
        let service_type = spec
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let has_external_ips = spec
            .get("externalIPs")
            .and_then(Value::as_array)
            .is_some_and(|ips| !ips.is_empty());
        let externally_accessible = service_type == "LoadBalancer"
            || service_type == "NodePort"
            || (service_type == "ClusterIP" && has_external_ips);
        if externally_accessible {
            default_str(spec, "externalTrafficPolicy", "Cluster");
        }
        if matches!(
            service_type.as_str(),
            "ClusterIP" | "NodePort" | "LoadBalancer"
        ) {
            default(spec, "internalTrafficPolicy", json!("Cluster"));
        }
        if service_type == "LoadBalancer" {
            default(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
        if service_type != "ExternalName" {
            ip_families(spec);
        }
    }
    default(root, "status", json!({"loadBalancer": {}}));
}

/// The Service registry's IP family fields on a single-stack IPv4 cluster.
fn ip_families(spec: &mut Map<String, Value>) {
    let cluster_ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .map(str::to_string);
    let headless = cluster_ip.as_deref() == Some("None");
    let has_selector = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|selector| !selector.is_empty());
    let policy = if headless && !has_selector {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    default(spec, "ipFamilyPolicy", json!(policy));
    default(spec, "ipFamilies", json!(["IPv4"]));
    if let Some(ip) = cluster_ip {
        default(spec, "clusterIPs", json!([ip]));
    }
}
