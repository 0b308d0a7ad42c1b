//! Defaults of Pods and pod templates: the PodSpec, Pod-only defaults, containers, probes and
//! lifecycle handlers, env sources and volumes.

use serde_json::{Map, Value, json};

use super::fields::{array_objects, child, default, default_nonzero, default_str, existing};

/// A pod template (workloads, PodTemplate): metadata serialization and PodSpec defaults.
pub(super) fn pod_template(template: &mut Map<String, Value>) {
    if let Some(metadata) = child(template, "metadata") {
        default(metadata, "creationTimestamp", Value::Null);
    }
    if let Some(spec) = child(template, "spec") {
        pod_spec(spec, false);
    }
}

pub(super) fn pod(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        pod_spec(spec, true);
    }
}

/// `SetDefaults_PodSpec` and, for Pods (`is_pod`), `SetDefaults_Pod`, plus the defaults of
/// everything a PodSpec contains.
fn pod_spec(spec: &mut Map<String, Value>, is_pod: bool) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default(spec, "securityContext", json!({}));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    // The deprecated `serviceAccount` mirrors `serviceAccountName` (v1 conversion).
    let account = [spec.get("serviceAccountName"), spec.get("serviceAccount")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|name| !name.is_empty())
        .map(str::to_string);
    if let Some(account) = account {
        spec.insert("serviceAccountName".into(), json!(account));
        spec.insert("serviceAccount".into(), json!(account));
    }
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in array_objects(spec, list) {
            self::container(container);
            if is_pod && list != "ephemeralContainers" {
                requests_from_limits(container);
                if host_network {
                    for port in array_objects(container, "ports") {
                        if port.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                            && let Some(container_port) = port.get("containerPort").cloned()
                        {
                            port.insert("hostPort".into(), container_port);
                        }
                    }
                }
            }
        }
    }
    for volume in array_objects(spec, "volumes") {
        self::volume(volume);
    }
    if is_pod {
        default(spec, "enableServiceLinks", json!(true));
    }
}

/// `SetDefaults_Pod`: a container's requests default to its limits.
fn requests_from_limits(container: &mut Map<String, Value>) {
    let Some(resources) = existing(container, "resources") else {
        return;
    };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if let Some(requests) = child(resources, "requests") {
        for (name, quantity) in limits {
            requests.entry(name).or_insert(quantity);
        }
    }
}

/// The pull policy v1.32 defaults for an image: Always when the tag is `latest` or when the
/// reference has neither tag nor digest, else IfNotPresent (`SetDefaults_Container` with
/// `parsers.ParseImageName`).
pub fn default_pull_policy(image: &str) -> &'static str {
    if image.is_empty() {
        return "IfNotPresent";
    }
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last_segment = name.rsplit('/').next().unwrap_or(name);
    let tag = last_segment.split_once(':').map(|(_, tag)| tag);
    match (tag, digest) {
        (Some("latest"), _) | (None, None) => "Always",
        _ => "IfNotPresent",
    }
}

/// `SetDefaults_Container` and the defaults of a container's ports, probes, env and lifecycle.
fn container(container: &mut Map<String, Value>) {
    if container
        .get("imagePullPolicy")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let image = container
            .get("image")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let policy = default_pull_policy(image);
        container.insert("imagePullPolicy".into(), json!(policy));
    }
    default_str(container, "terminationMessagePath", "/dev/termination-log");
    default_str(container, "terminationMessagePolicy", "File");
    default(container, "resources", json!({}));
    for port in array_objects(container, "ports") {
        default_str(port, "protocol", "TCP");
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = existing(container, probe) {
            default_nonzero(probe, "timeoutSeconds", 1);
            default_nonzero(probe, "periodSeconds", 10);
            default_nonzero(probe, "successThreshold", 1);
            default_nonzero(probe, "failureThreshold", 3);
            handler(probe);
        }
    }
    if let Some(lifecycle) = existing(container, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(hook) = existing(lifecycle, hook) {
                handler(hook);
            }
        }
    }
    for env in array_objects(container, "env") {
        if let Some(source) = existing(env, "valueFrom") {
            env_source(source);
        }
    }
}

/// Defaults inside a probe or lifecycle handler: httpGet path and scheme, grpc service.
fn handler(handler: &mut Map<String, Value>) {
    if let Some(http) = existing(handler, "httpGet") {
        default_str(http, "path", "/");
        default_str(http, "scheme", "HTTP");
    }
    if let Some(grpc) = existing(handler, "grpc") {
        default(grpc, "service", json!(""));
    }
}

/// `fieldRef.apiVersion` v1 and `resourceFieldRef.divisor` "0" (a zero Quantity serializes).
fn env_source(source: &mut Map<String, Value>) {
    if let Some(field_ref) = existing(source, "fieldRef") {
        default_str(field_ref, "apiVersion", "v1");
    }
    if let Some(resource_ref) = existing(source, "resourceFieldRef") {
        default(resource_ref, "divisor", json!("0"));
    }
}

/// Volume source defaults (`SetDefaults_Volume` and the `*VolumeSource` functions).
fn volume(volume: &mut Map<String, Value>) {
    let has_source = volume
        .iter()
        .any(|(key, value)| key != "name" && !value.is_null());
    if !has_source {
        volume.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = existing(volume, source) {
            default(source, "defaultMode", json!(420));
        }
    }
    if let Some(host_path) = existing(volume, "hostPath") {
        default(host_path, "type", json!(""));
    }
    if let Some(downward) = existing(volume, "downwardAPI") {
        for item in array_objects(downward, "items") {
            env_source(item);
        }
    }
    if let Some(projected) = existing(volume, "projected") {
        for source in array_objects(projected, "sources") {
            if let Some(token) = existing(source, "serviceAccountToken") {
                default(token, "expirationSeconds", json!(3600));
            }
            if let Some(downward) = existing(source, "downwardAPI") {
                for item in array_objects(downward, "items") {
                    env_source(item);
                }
            }
        }
    }
    if let Some(ephemeral) = existing(volume, "ephemeral")
        && let Some(spec) = existing(ephemeral, "volumeClaimTemplate")
            .and_then(|template| existing(template, "spec"))
    {
        default(spec, "volumeMode", json!("Filesystem"));
    }
}
