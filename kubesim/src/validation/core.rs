//! The core group's rules (`pkg/apis/core/validation/validation.go`): Pod specs and
//! templates, Services, ConfigMaps, Secrets and PersistentVolumeClaims, with their
//! immutable fields.

use serde_json::Value;

use super::field::{
    Errors, duplicate, forbidden, go_string_list, invalid, invalid_str, not_found, not_supported,
    quote, required,
};
use super::{arr, int, meta, s};
use crate::names;
use crate::quantity::Quantity;

/// Pod templates in workloads (`ValidatePodTemplateSpec`): template labels and
/// annotations (reported as `spec.template.labels`, as kube-apiserver names them), then the
/// Pod spec.
pub fn pod_template(template: Option<&Value>, path: &str, errs: &mut Errors) {
    let meta = template.and_then(|t| t.get("metadata"));
    meta::labels(
        meta.and_then(|m| m.get("labels")),
        &format!("{path}.labels"),
        errs,
    );
    meta::annotations(
        meta.and_then(|m| m.get("annotations")),
        &format!("{path}.annotations"),
        errs,
    );
    let empty = Value::Null;
    pod_spec(
        template.and_then(|t| t.get("spec")).unwrap_or(&empty),
        &format!("{path}.spec"),
        errs,
    );
}

/// A Pod spec (`ValidatePodSpec`): volumes, containers and init containers (names unique
/// across both), restart policy.
pub fn pod_spec(spec: &Value, path: &str, errs: &mut Errors) {
    let mut volumes: Vec<&str> = Vec::new();
    for (i, v) in arr(spec, "volumes").iter().enumerate() {
        let p = format!("{path}.volumes[{i}].name");
        let name = s(v, "name");
        if name.is_empty() {
            errs.push(required(&p, ""));
        } else {
            for m in names::dns1123_label(name) {
                errs.push(invalid_str(&p, name, &m));
            }
        }
        if volumes.contains(&name) {
            errs.push(duplicate(&p, name));
        } else {
            volumes.push(name);
        }
    }
    let containers = arr(spec, "containers");
    if containers.is_empty() {
        errs.push(required(&format!("{path}.containers"), ""));
    }
    let mut all_names: Vec<&str> = Vec::new();
    for list in ["containers", "initContainers"] {
        for (i, c) in arr(spec, list).iter().enumerate() {
            container(
                c,
                &format!("{path}.{list}[{i}]"),
                &volumes,
                &mut all_names,
                errs,
            );
        }
    }
    if let Some(policy) = spec.get("restartPolicy").and_then(Value::as_str) {
        match policy {
            "Always" | "OnFailure" | "Never" => {}
            "" => errs.push(required(&format!("{path}.restartPolicy"), "")),
            other => errs.push(not_supported(
                &format!("{path}.restartPolicy"),
                other,
                &["Always", "OnFailure", "Never"],
            )),
        }
    }
}

fn container<'a>(
    c: &'a Value,
    path: &str,
    volumes: &[&str],
    all_names: &mut Vec<&'a str>,
    errs: &mut Errors,
) {
    let name = s(c, "name");
    let name_path = format!("{path}.name");
    if name.is_empty() {
        errs.push(required(&name_path, ""));
    } else {
        for m in names::dns1123_label(name) {
            errs.push(invalid_str(&name_path, name, &m));
        }
    }
    container_ports(c, path, errs);
    for (j, e) in arr(c, "env").iter().enumerate() {
        let p = format!("{path}.env[{j}].name");
        let env = s(e, "name");
        if env.is_empty() {
            errs.push(required(&p, ""));
        } else if env
            .chars()
            .any(|ch| !ch.is_ascii_graphic() && ch != ' ' || ch == '=')
        {
            errs.push(invalid_str(
                &p,
                env,
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
    }
    let mut mount_paths: Vec<&str> = Vec::new();
    for (j, m) in arr(c, "volumeMounts").iter().enumerate() {
        let p = format!("{path}.volumeMounts[{j}]");
        let volume = s(m, "name");
        if volume.is_empty() {
            errs.push(required(&format!("{p}.name"), ""));
        }
        if !volumes.contains(&volume) {
            errs.push(not_found(&format!("{p}.name"), volume));
        }
        let mount_path = s(m, "mountPath");
        if mount_path.is_empty() {
            errs.push(required(&format!("{p}.mountPath"), ""));
        }
        if mount_paths.contains(&mount_path) {
            errs.push(invalid_str(
                &format!("{p}.mountPath"),
                mount_path,
                "must be unique",
            ));
        }
        mount_paths.push(mount_path);
    }
    container_resources(c, path, errs);
    if !name.is_empty() {
        if all_names.contains(&name) {
            errs.push(duplicate(&name_path, name));
        } else {
            all_names.push(name);
        }
    }
    if s(c, "image").is_empty() {
        errs.push(required(&format!("{path}.image"), ""));
    }
}

/// Resource requests and limits (`ValidateResourceRequirements`): non-negative, and a
/// request no larger than its limit.
fn container_resources(c: &Value, path: &str, errs: &mut Errors) {
    let p = format!("{path}.resources");
    let map = |kind: &str| {
        let mut entries: Vec<(String, Quantity)> = c
            .pointer(&format!("/resources/{kind}"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?)?)))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    };
    let (limits, requests) = (map("limits"), map("requests"));
    for (kind, entries) in [("limits", &limits), ("requests", &requests)] {
        for (name, q) in entries {
            if *q < Quantity::zero() {
                errs.push(invalid(
                    &format!("{p}.{kind}[{name}]"),
                    quote(&q.canonical()),
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    for (name, request) in &requests {
        if let Some((_, limit)) = limits.iter().find(|(n, _)| n == name)
            && request > limit
        {
            errs.push(invalid(
                &format!("{p}.requests"),
                quote(&request.canonical()),
                &format!(
                    "must be less than or equal to {name} limit of {}",
                    limit.canonical()
                ),
            ));
        }
    }
}

fn container_ports(c: &Value, path: &str, errs: &mut Errors) {
    let mut seen: Vec<&str> = Vec::new();
    for (j, port) in arr(c, "ports").iter().enumerate() {
        let p = format!("{path}.ports[{j}]");
        let name = s(port, "name");
        if !name.is_empty() {
            let msgs = names::port_name(name);
            if !msgs.is_empty() {
                for m in msgs {
                    errs.push(invalid_str(&format!("{p}.name"), name, &m));
                }
            } else if seen.contains(&name) {
                errs.push(duplicate(&format!("{p}.name"), name));
            } else {
                seen.push(name);
            }
        }
        match int(port, "containerPort") {
            None | Some(0) => errs.push(required(&format!("{p}.containerPort"), "")),
            Some(n) => {
                for m in names::port_number(n) {
                    errs.push(invalid(&format!("{p}.containerPort"), n.to_string(), &m));
                }
            }
        }
        if let Some(n) = int(port, "hostPort").filter(|n| *n != 0) {
            for m in names::port_number(n) {
                errs.push(invalid(&format!("{p}.hostPort"), n.to_string(), &m));
            }
        }
        protocol(port, &p, errs);
    }
}

fn protocol(port: &Value, path: &str, errs: &mut Errors) {
    match s(port, "protocol") {
        "" => errs.push(required(&format!("{path}.protocol"), "")),
        "TCP" | "UDP" | "SCTP" => {}
        other => errs.push(not_supported(
            &format!("{path}.protocol"),
            other,
            &["SCTP", "TCP", "UDP"],
        )),
    }
}

/// A Pod: its spec.
pub fn pod(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    pod_spec(obj.get("spec").unwrap_or(&empty), "spec", errs);
}

fn is_headless(spec: &Value) -> bool {
    s(spec, "clusterIP") == "None"
}

/// A Service (`ValidateService`): type, ports (named when several, unique, in range),
/// selector labels, externalName.
pub fn service(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let ty = s(spec, "type");
    match ty {
        "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName" => {}
        "" => errs.push(required("spec.type", "")),
        other => errs.push(not_supported(
            "spec.type",
            other,
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        )),
    }
    if ty == "ExternalName" {
        let external = s(spec, "externalName");
        if external.is_empty() {
            errs.push(required("spec.externalName", ""));
        }
    }
    let ports = arr(spec, "ports");
    if ports.is_empty() && !is_headless(spec) && ty != "ExternalName" {
        errs.push(required("spec.ports", ""));
    }
    let mut port_names: Vec<&str> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let p = format!("spec.ports[{i}]");
        let name = s(port, "name");
        if ports.len() > 1 && name.is_empty() {
            errs.push(required(&format!("{p}.name"), ""));
        } else if !name.is_empty() {
            for m in names::dns1123_label(name) {
                errs.push(invalid_str(&format!("{p}.name"), name, &m));
            }
            if port_names.contains(&name) {
                errs.push(duplicate(&format!("{p}.name"), name));
            } else {
                port_names.push(name);
            }
        }
        let number = int(port, "port").unwrap_or(0);
        for m in names::port_number(number) {
            errs.push(invalid(&format!("{p}.port"), number.to_string(), &m));
        }
        protocol(port, &p, errs);
        match port.get("targetPort") {
            Some(Value::String(t)) => {
                for m in names::port_name(t) {
                    errs.push(invalid_str(&format!("{p}.targetPort"), t, &m));
                }
            }
            Some(Value::Number(n)) => {
                let n = n.as_i64().unwrap_or(0);
                for m in names::port_number(n) {
                    errs.push(invalid(&format!("{p}.targetPort"), n.to_string(), &m));
                }
            }
            _ => {}
        }
        if let Some(node_port) = int(port, "nodePort").filter(|n| *n != 0) {
            if ty == "ClusterIP" {
                errs.push(forbidden(
                    &format!("{p}.nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
            for m in names::port_number(node_port) {
                errs.push(invalid(&format!("{p}.nodePort"), node_port.to_string(), &m));
            }
        }
    }
    meta::labels(spec.get("selector"), "spec.selector", errs);
}

/// A Service update: the cluster IPs may not change once set (unless the Service is or
/// becomes ExternalName, or stays headless).
pub fn service_update(old: &Value, new: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let (o, n) = (
        old.get("spec").unwrap_or(&empty),
        new.get("spec").unwrap_or(&empty),
    );
    if s(o, "type") == "ExternalName" || s(n, "type") == "ExternalName" {
        return;
    }
    if is_headless(o) && is_headless(n) {
        return;
    }
    let ips = |v: &Value| -> Vec<String> {
        arr(v, "clusterIPs")
            .iter()
            .filter_map(|ip| ip.as_str().map(String::from))
            .collect()
    };
    let (before, after) = (ips(o), ips(n));
    if before.len() == after.len() {
        for (i, ip) in before.iter().enumerate() {
            if *ip != after[i] {
                errs.push(invalid(
                    &format!("spec.clusterIPs[{i}]"),
                    go_string_list(n.get("clusterIPs")),
                    "may not change once set",
                ));
            }
        }
    }
}

/// ConfigMap and Secret keys (`IsConfigMapKey`), no key in both maps, and the 1 MiB limit.
fn data_keys(obj: &Value, maps: &[&str], limit: usize, errs: &mut Errors) {
    let mut total = 0;
    for (i, field) in maps.iter().enumerate() {
        let Some(map) = obj.get(*field).and_then(Value::as_object) else {
            continue;
        };
        let other_name = if maps.len() == 2 { maps[1 - i] } else { "" };
        let other = obj.get(other_name).and_then(Value::as_object);
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        for k in keys {
            let p = format!("{field}[{k}]");
            for m in names::config_map_key(k) {
                errs.push(invalid_str(&p, k, &m));
            }
            if other.is_some_and(|o| o.contains_key(k.as_str())) {
                errs.push(invalid_str(
                    &p,
                    k,
                    &format!("duplicate of key present in {other_name}"),
                ));
            }
            total += map[k].as_str().map_or(0, str::len);
        }
    }
    if total > limit {
        errs.push(super::field::too_long("", limit));
    }
}

/// A ConfigMap's keys.
pub fn config_map(obj: &Value, errs: &mut Errors) {
    data_keys(obj, &["data", "binaryData"], 1024 * 1024, errs);
}

/// A map field, None when absent or empty (an empty map and no map are the same data).
fn non_empty(v: Option<&Value>) -> Option<&Value> {
    v.filter(|d| d.as_object().is_some_and(|o| !o.is_empty()))
}

/// An `immutable: true` ConfigMap or Secret keeps its flag and its data.
pub fn immutable_data(old: &Value, new: &Value, maps: &[&str], errs: &mut Errors) {
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    const WHY: &str = "field is immutable when `immutable` is set";
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(forbidden("immutable", WHY));
    }
    for m in maps {
        if non_empty(old.get(*m)) != non_empty(new.get(*m)) {
            errs.push(forbidden(m, WHY));
        }
    }
}

/// A Secret: keys, and the keys its type requires.
pub fn secret(obj: &Value, errs: &mut Errors) {
    data_keys(obj, &["data"], 1024 * 1024, errs);
    let has = |k: &str| obj.get("data").and_then(|d| d.get(k)).is_some();
    let require = |keys: &[&str], errs: &mut Errors| {
        for k in keys {
            if !has(k) {
                errs.push(required(&format!("data[{k}]"), ""));
            }
        }
    };
    match s(obj, "type") {
        "kubernetes.io/tls" => require(&["tls.crt", "tls.key"], errs),
        "kubernetes.io/dockerconfigjson" => require(&[".dockerconfigjson"], errs),
        "kubernetes.io/dockercfg" => require(&[".dockercfg"], errs),
        "kubernetes.io/ssh-auth" => require(&["ssh-privatekey"], errs),
        "kubernetes.io/service-account-token"
            if obj
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty) =>
        {
            errs.push(required(
                "metadata.annotations[kubernetes.io/service-account.name]",
                "",
            ));
        }
        _ => {}
    }
}

/// A Secret update: the type is immutable, and so is the data of an immutable Secret.
pub fn secret_update(old: &Value, new: &Value, errs: &mut Errors) {
    if s(old, "type") != s(new, "type") {
        errs.push(invalid_str("type", s(new, "type"), "field is immutable"));
    }
    immutable_data(old, new, &["data"], errs);
}

/// A PersistentVolumeClaim: accessModes required, storage request required.
pub fn pvc(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let modes = arr(spec, "accessModes");
    if modes.is_empty() {
        errs.push(required(
            "spec.accessModes",
            "at least 1 access mode is required",
        ));
    }
    let supported = [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    for m in modes.iter().filter_map(Value::as_str) {
        if !supported.contains(&m) {
            errs.push(not_supported("spec.accessModes", m, &supported));
        }
    }
    if spec.pointer("/resources/requests/storage").is_none() {
        errs.push(required("spec.resources[storage]", ""));
    }
}

/// A PersistentVolumeClaim update: the spec is immutable but for the storage request
/// (expansion) and volumeAttributesClassName.
pub fn pvc_update(old: &Value, new: &Value, errs: &mut Errors) {
    let strip = |v: &Value| {
        let mut spec = v.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(requests) = spec
            .get_mut("resources")
            .and_then(|r| r.get_mut("requests"))
            .and_then(Value::as_object_mut)
        {
            requests.remove("storage");
        }
        if let Some(m) = spec.as_object_mut() {
            m.remove("volumeAttributesClassName");
            // the binder sets volumeName on a bound claim
            if v.get("spec").and_then(|s| s.get("volumeName")).is_some() {
                m.remove("volumeName");
            }
        }
        spec
    };
    if strip(old) != strip(new) {
        errs.push(forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
}
