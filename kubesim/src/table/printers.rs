//! kube-apiserver's printers for built-in kinds (`pkg/printers/internalversion`): the
//! columns `kubectl get` shows (priority 1: only with `-o wide`) and each object's cells.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::human_duration;
use crate::resources::ResourceInfo;

/// A column: header, OpenAPI type, priority.
type Column = (&'static str, &'static str, i64);

const AGE: Column = ("Age", "string", 0);
const CONTAINERS: Column = ("Containers", "string", 1);
const IMAGES: Column = ("Images", "string", 1);
const SELECTOR: Column = ("Selector", "string", 1);

/// The columns of a built-in kind after Name (None: kinds without a printer here).
pub fn columns(info: &ResourceInfo) -> Option<Vec<Column>> {
    Some(match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => vec![
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            AGE,
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        ("apps", "Deployment") => vec![
            ("Ready", "string", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("apps", "ReplicaSet") => vec![
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("apps", "StatefulSet") => vec![("Ready", "string", 0), AGE, CONTAINERS, IMAGES],
        ("apps", "DaemonSet") => vec![
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            ("Node Selector", "string", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("", "Service") => vec![
            ("Type", "string", 0),
            ("Cluster-IP", "string", 0),
            ("External-IP", "string", 0),
            ("Port(s)", "string", 0),
            AGE,
            SELECTOR,
        ],
        ("", "Node") => vec![
            ("Status", "string", 0),
            ("Roles", "string", 0),
            AGE,
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ],
        ("", "Namespace") => vec![("Status", "string", 0), AGE],
        ("", "Endpoints") => vec![("Endpoints", "string", 0), AGE],
        ("", "ConfigMap") => vec![("Data", "integer", 0), AGE],
        ("", "Secret") => vec![("Type", "string", 0), ("Data", "integer", 0), AGE],
        ("", "ServiceAccount") => vec![("Secrets", "integer", 0), AGE],
        ("batch", "Job") => vec![
            ("Status", "string", 0),
            ("Completions", "string", 0),
            ("Duration", "string", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("batch", "CronJob") => vec![
            ("Schedule", "string", 0),
            ("Timezone", "string", 0),
            ("Suspend", "boolean", 0),
            ("Active", "integer", 0),
            ("Last Schedule", "string", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        ("networking.k8s.io", "Ingress") => vec![
            ("Class", "string", 0),
            ("Hosts", "string", 0),
            ("Address", "string", 0),
            ("Ports", "string", 0),
            AGE,
        ],
        _ => return super::more_kinds::columns(info),
    })
}

fn s<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn i(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn arr<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn or_none(text: String) -> String {
    if text.is_empty() {
        "<none>".into()
    } else {
        text
    }
}

/// The age of a timestamp field as the printers show it.
fn age_of(obj: &Value, pointer: &str, now: DateTime<Utc>) -> String {
    match DateTime::parse_from_rfc3339(s(obj, pointer)) {
        Ok(t) => human_duration(
            now.signed_duration_since(t.with_timezone(&Utc))
                .num_seconds(),
        ),
        Err(_) => "<unknown>".into(),
    }
}

/// `k=v,k2=v2` of a string map, keys sorted (labels.FormatLabels).
fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// A label selector as metav1.FormatLabelSelector prints it.
fn format_selector(selector: Option<&Value>) -> String {
    let Some(sel) = selector.filter(|s| s.is_object()) else {
        return "<none>".into();
    };
    let mut parts: Vec<String> = Vec::new();
    let labels = format_labels(sel.get("matchLabels"));
    if !labels.is_empty() {
        parts.extend(labels.split(',').map(String::from));
    }
    for e in arr(sel, "/matchExpressions") {
        let values: Vec<&str> = arr(e, "/values").iter().filter_map(Value::as_str).collect();
        let key = s(e, "/key");
        parts.push(match s(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other}"),
        });
    }
    parts.sort();
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// Container names and images of a pod template.
fn containers_and_images(template_spec: &Value) -> (String, String) {
    let containers = arr(template_spec, "/containers");
    let names: Vec<&str> = containers.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// The cells of one object, in [`columns`] order after its name.
pub fn cells(info: &ResourceInfo, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let age = json!(age_of(obj, "/metadata/creationTimestamp", now));
    let template = obj
        .pointer("/spec/template/spec")
        .cloned()
        .unwrap_or(json!({}));
    let (names, images) = containers_and_images(&template);
    let selector = json!(format_selector(obj.pointer("/spec/selector")));
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => pod(obj, age, now),
        ("apps", "Deployment") => vec![
            json!(format!(
                "{}/{}",
                i(obj, "/status/readyReplicas"),
                replicas(obj)
            )),
            json!(i(obj, "/status/updatedReplicas")),
            json!(i(obj, "/status/availableReplicas")),
            age,
            json!(names),
            json!(images),
            selector,
        ],
        ("apps", "ReplicaSet") => vec![
            json!(replicas(obj)),
            json!(i(obj, "/status/replicas")),
            json!(i(obj, "/status/readyReplicas")),
            age,
            json!(names),
            json!(images),
            selector,
        ],
        ("apps", "StatefulSet") => vec![
            json!(format!(
                "{}/{}",
                i(obj, "/status/readyReplicas"),
                replicas(obj)
            )),
            age,
            json!(names),
            json!(images),
        ],
        ("apps", "DaemonSet") => vec![
            json!(i(obj, "/status/desiredNumberScheduled")),
            json!(i(obj, "/status/currentNumberScheduled")),
            json!(i(obj, "/status/numberReady")),
            json!(i(obj, "/status/updatedNumberScheduled")),
            json!(i(obj, "/status/numberAvailable")),
            json!(or_none(format_labels(template.get("nodeSelector")))),
            age,
            json!(names),
            json!(images),
            selector,
        ],
        ("", "Service") => service(obj, age),
        ("", "Node") => node(obj, age),
        ("", "Namespace") => vec![json!(s(obj, "/status/phase")), age],
        ("", "Endpoints") => vec![json!(endpoints(obj)), age],
        ("", "ConfigMap") => {
            let count = |f: &str| obj.get(f).and_then(Value::as_object).map_or(0, |m| m.len());
            vec![json!(count("data") + count("binaryData")), age]
        }
        ("", "Secret") => {
            let data = obj
                .get("data")
                .and_then(Value::as_object)
                .map_or(0, |m| m.len());
            vec![json!(s(obj, "/type")), json!(data), age]
        }
        ("", "ServiceAccount") => vec![json!(arr(obj, "/secrets").len()), age],
        ("batch", "Job") => job(obj, age, names, images, selector, now),
        ("batch", "CronJob") => {
            let jt = obj
                .pointer("/spec/jobTemplate/spec/template/spec")
                .cloned()
                .unwrap_or(json!({}));
            let (names, images) = containers_and_images(&jt);
            let last = match obj.pointer("/status/lastScheduleTime") {
                Some(_) => age_of(obj, "/status/lastScheduleTime", now),
                None => "<none>".into(),
            };
            vec![
                json!(s(obj, "/spec/schedule")),
                json!(or_none(s(obj, "/spec/timeZone").to_string())),
                json!(
                    obj.pointer("/spec/suspend")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                ),
                json!(arr(obj, "/status/active").len()),
                json!(last),
                age,
                json!(names),
                json!(images),
                json!(format_selector(
                    obj.pointer("/spec/jobTemplate/spec/selector")
                )),
            ]
        }
        ("networking.k8s.io", "Ingress") => ingress(obj, age),
        ("autoscaling", "HorizontalPodAutoscaler")
        | ("discovery.k8s.io", "EndpointSlice")
        | ("apiregistration.k8s.io", "APIService")
        | ("" | "events.k8s.io", "Event") => super::more_kinds::cells(info, obj, age, now),
        _ => vec![age],
    }
}

fn replicas(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// A Pod's Ready, Status, Restarts, Age and wide columns (printPod).
fn pod(obj: &Value, age: Value, now: DateTime<Utc>) -> Vec<Value> {
    let statuses = arr(obj, "/status/containerStatuses");
    let total = arr(obj, "/spec/containers").len();
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts: i64 = statuses.iter().map(|c| i(c, "/restartCount")).sum();
    let mut reason = s(obj, "/status/phase").to_string();
    if !s(obj, "/status/reason").is_empty() {
        reason = s(obj, "/status/reason").to_string();
    }
    let mut running = false;
    for c in statuses.iter().rev() {
        if !s(c, "/state/waiting/reason").is_empty() {
            reason = s(c, "/state/waiting/reason").to_string();
        } else if !s(c, "/state/terminated/reason").is_empty() {
            reason = s(c, "/state/terminated/reason").to_string();
        } else if c.pointer("/state/terminated").is_some() {
            reason = format!("ExitCode:{}", i(c, "/state/terminated/exitCode"));
        } else if c.get("ready").and_then(Value::as_bool) == Some(true)
            && c.pointer("/state/running").is_some()
        {
            running = true;
        }
    }
    if reason == "Completed" && running {
        reason = "Running".into();
    }
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        reason = if s(obj, "/status/reason") == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    let restarts_text = match statuses
        .iter()
        .filter_map(|c| {
            c.pointer("/lastState/terminated/finishedAt")
                .and_then(Value::as_str)
        })
        .filter_map(|t| DateTime::parse_from_rfc3339(t).ok())
        .max()
    {
        Some(last) if restarts > 0 => format!(
            "{restarts} ({} ago)",
            human_duration(
                now.signed_duration_since(last.with_timezone(&Utc))
                    .num_seconds()
            )
        ),
        _ => restarts.to_string(),
    };
    let gates = arr(obj, "/spec/readinessGates");
    let gates_text = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let passed = gates
            .iter()
            .filter(|g| {
                arr(obj, "/status/conditions")
                    .iter()
                    .any(|c| s(c, "/type") == s(g, "/conditionType") && s(c, "/status") == "True")
            })
            .count();
        format!("{passed}/{}", gates.len())
    };
    vec![
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_text),
        age,
        json!(or_none(s(obj, "/status/podIP").to_string())),
        json!(or_none(s(obj, "/spec/nodeName").to_string())),
        json!(or_none(s(obj, "/status/nominatedNodeName").to_string())),
        json!(gates_text),
    ]
}

/// A Service's Type, Cluster-IP, External-IP, Port(s), Age, Selector (printService).
fn service(obj: &Value, age: Value) -> Vec<Value> {
    let ty = match s(obj, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    let external: Vec<String> = match ty {
        "LoadBalancer" => {
            let ingress: Vec<String> = arr(obj, "/status/loadBalancer/ingress")
                .iter()
                .map(|i| {
                    let ip = s(i, "/ip");
                    if ip.is_empty() {
                        s(i, "/hostname").to_string()
                    } else {
                        ip.to_string()
                    }
                })
                .chain(
                    arr(obj, "/spec/externalIPs")
                        .iter()
                        .filter_map(Value::as_str)
                        .map(String::from),
                )
                .collect();
            if ingress.is_empty() {
                vec!["<pending>".into()]
            } else {
                ingress
            }
        }
        "ExternalName" => vec![s(obj, "/spec/externalName").to_string()],
        _ => arr(obj, "/spec/externalIPs")
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
    };
    let ports: Vec<String> = arr(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = match s(p, "/protocol") {
                "" => "TCP",
                other => other,
            };
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node) if node != 0 => format!("{}:{node}/{protocol}", i(p, "/port")),
                _ => format!("{}/{protocol}", i(p, "/port")),
            }
        })
        .collect();
    vec![
        json!(ty),
        json!(or_none(s(obj, "/spec/clusterIP").to_string())),
        json!(or_none(external.join(","))),
        json!(or_none(ports.join(","))),
        age,
        json!(or_none(format_labels(obj.pointer("/spec/selector")))),
    ]
}

/// A Node's Status, Roles, Age, Version and wide columns (printNode).
fn node(obj: &Value, age: Value) -> Vec<Value> {
    let ready = arr(obj, "/status/conditions")
        .iter()
        .find(|c| s(c, "/type") == "Ready");
    let mut status = match ready.map(|c| s(c, "/status")) {
        Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/").map(String::from))
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort();
    let address = |ty: &str| {
        arr(obj, "/status/addresses")
            .iter()
            .find(|a| s(a, "/type") == ty)
            .map(|a| s(a, "/address").to_string())
            .unwrap_or_default()
    };
    vec![
        json!(status),
        json!(or_none(roles.join(","))),
        age,
        json!(s(obj, "/status/nodeInfo/kubeletVersion")),
        json!(or_none(address("InternalIP"))),
        json!(or_none(address("ExternalIP"))),
        json!(s(obj, "/status/nodeInfo/osImage")),
        json!(s(obj, "/status/nodeInfo/kernelVersion")),
        json!(s(obj, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}

/// A Job's Status, Completions, Duration, Age and wide columns (printJob, 1.32).
fn job(
    obj: &Value,
    age: Value,
    names: String,
    images: String,
    selector: Value,
    now: DateTime<Utc>,
) -> Vec<Value> {
    let condition = |ty: &str| {
        arr(obj, "/status/conditions")
            .iter()
            .any(|c| s(c, "/type") == ty && s(c, "/status") == "True")
    };
    let status = if condition("Complete") {
        "Complete"
    } else if condition("Failed") {
        "Failed"
    } else if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if condition("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else if condition("FailureTarget") {
        "FailureTarget"
    } else if condition("Suspended") {
        "Suspended"
    } else {
        "Running"
    };
    let succeeded = i(obj, "/status/succeeded");
    let completions = match (
        obj.pointer("/spec/completions").and_then(Value::as_i64),
        obj.pointer("/spec/parallelism").and_then(Value::as_i64),
    ) {
        (Some(c), _) => format!("{succeeded}/{c}"),
        (None, Some(p)) if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    };
    let time = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
    };
    let duration = match (time("/status/startTime"), time("/status/completionTime")) {
        (Some(start), Some(end)) => human_duration(end.signed_duration_since(start).num_seconds()),
        (Some(start), None) => human_duration(now.signed_duration_since(start).num_seconds()),
        _ => String::new(),
    };
    vec![
        json!(status),
        json!(completions),
        json!(duration),
        age,
        json!(names),
        json!(images),
        selector,
    ]
}

/// An Ingress's Class, Hosts, Address, Ports, Age (printIngress).
fn ingress(obj: &Value, age: Value) -> Vec<Value> {
    let hosts: Vec<&str> = arr(obj, "/spec/rules")
        .iter()
        .map(|r| s(r, "/host"))
        .filter(|h| !h.is_empty())
        .collect();
    let address: Vec<String> = arr(obj, "/status/loadBalancer/ingress")
        .iter()
        .map(|i| {
            let ip = s(i, "/ip");
            if ip.is_empty() {
                s(i, "/hostname").to_string()
            } else {
                ip.to_string()
            }
        })
        .collect();
    let ports = if arr(obj, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        json!(or_none(s(obj, "/spec/ingressClassName").to_string())),
        json!(if hosts.is_empty() {
            "*".to_string()
        } else {
            hosts.join(",")
        }),
        json!(address.join(",")),
        json!(ports),
        age,
    ]
}

/// `ip:port` of the first three ready addresses, then `+ N more...` (formatEndpoints).
fn endpoints(obj: &Value) -> String {
    let mut all = Vec::new();
    for subset in arr(obj, "/subsets") {
        let ports = arr(subset, "/ports");
        for address in arr(subset, "/addresses") {
            if ports.is_empty() {
                all.push(s(address, "/ip").to_string());
            }
            for port in ports {
                all.push(format!("{}:{}", s(address, "/ip"), i(port, "/port")));
            }
        }
    }
    match all.len() {
        0 => "<none>".into(),
        n if n > 3 => format!("{} + {} more...", all[..3].join(","), n - 3),
        _ => all.join(","),
    }
}
