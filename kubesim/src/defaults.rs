//! The API server's defaulting for the common built-in kinds, as kube-apiserver v1.32 applies
//! it when it decodes an object (so that `kubectl diff`, server-side apply and
//! `kubectl get -o yaml` see the same fields they would see on a real cluster).
//!
//! Each default names its source in kubernetes v1.32:
//!
//! | kind | fields | source |
//! |------|--------|--------|
//! | Deployment | replicas 1, strategy RollingUpdate 25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds 600 | `pkg/apis/apps/v1/defaults.go` `SetDefaults_Deployment` |
//! | StatefulSet | podManagementPolicy OrderedReady, updateStrategy RollingUpdate {partition 0}, persistentVolumeClaimRetentionPolicy Retain/Retain (StatefulSetAutoDeletePVC, beta, on), replicas 1, revisionHistoryLimit 10 | `SetDefaults_StatefulSet` |
//! | StatefulSet volumeClaimTemplates | apiVersion v1, kind PersistentVolumeClaim, status.phase Pending, spec.volumeMode Filesystem | `pkg/apis/apps/v1/conversion.go`, core `SetDefaults_PersistentVolumeClaim(Spec)` |
//! | DaemonSet | updateStrategy RollingUpdate {maxUnavailable 1, maxSurge 0}, revisionHistoryLimit 10 | `SetDefaults_DaemonSet` |
//! | ReplicaSet | replicas 1 | `SetDefaults_ReplicaSet` |
//! | Job | completions/parallelism 1 (both unset) or parallelism 1, backoffLimit 6 (MaxInt32 with backoffLimitPerIndex), completionMode NonIndexed, suspend false, podReplacementPolicy TerminatingOrFailed (Failed with a podFailurePolicy; JobPodReplacementPolicy, beta, on), podFailurePolicy onPodConditions status True, metadata.labels from the template when empty | `pkg/apis/batch/v1/defaults.go` `SetDefaults_Job` |
//! | CronJob | concurrencyPolicy Allow, suspend false, successfulJobsHistoryLimit 3, failedJobsHistoryLimit 1 | `SetDefaults_CronJob` |
//! | PodSpec (Pods and templates) | dnsPolicy ClusterFirst, restartPolicy Always, securityContext {}, terminationGracePeriodSeconds 30, schedulerName default-scheduler | `pkg/apis/core/v1/defaults.go` `SetDefaults_PodSpec` |
//! | Pod only | enableServiceLinks true, requests from limits, hostPort = containerPort with hostNetwork | `SetDefaults_Pod` |
//! | containers, initContainers, ephemeralContainers | imagePullPolicy (Always for `:latest` or no tag, else IfNotPresent), terminationMessagePath /dev/termination-log, terminationMessagePolicy File, ports protocol TCP, resources {} | `SetDefaults_Container`, `SetDefaults_ContainerPort` (declarative), zero-value struct serialization |
//! | probes and lifecycle handlers | timeoutSeconds 1, periodSeconds 10, successThreshold 1, failureThreshold 3; httpGet path / and scheme HTTP; grpc service "" | `SetDefaults_Probe`, `SetDefaults_HTTPGetAction`, `+default=""` on `GRPCAction.Service` |
//! | env / volumes | fieldRef apiVersion v1, resourceFieldRef divisor "0", secret/configMap/projected/downwardAPI defaultMode 420, hostPath type "", serviceAccountToken expirationSeconds 3600, a volume without source gets emptyDir {} | `SetDefaults_ObjectFieldSelector`, `SetDefaults_*VolumeSource`, `SetDefaults_ServiceAccountTokenProjection`, `SetDefaults_Volume` |
//! | deprecated serviceAccount | mirrors serviceAccountName both ways | `Convert_core_PodSpec_To_v1_PodSpec` |
//! | templates | metadata.creationTimestamp null | how v1.32 serializes the zero `metav1.Time` |
//! | Service | type ClusterIP, sessionAffinity None (ClientIP: timeoutSeconds 10800), ports protocol TCP and targetPort = port, externalTrafficPolicy Cluster when externally accessible, internalTrafficPolicy Cluster, allocateLoadBalancerNodePorts true | `SetDefaults_Service` |
//! | Service IP families | ipFamilyPolicy SingleStack (RequireDualStack for a headless Service without selector), ipFamilies `[IPv4]`, clusterIPs mirrors clusterIP | `pkg/registry/core/service/storage` (single-stack IPv4 cluster) |
//! | Secret | type Opaque | `SetDefaults_Secret` |
//! | Namespace | label kubernetes.io/metadata.name, status.phase Active (the `kubernetes` finalizer is added on create, see [`prepare_for_create`]) | `SetDefaults_Namespace`, `SetDefaults_NamespaceStatus`, `pkg/registry/core/namespace` strategy |
//! | PersistentVolumeClaim | spec.volumeMode Filesystem, status.phase Pending | `SetDefaults_PersistentVolumeClaim(Spec)` |
//! | HorizontalPodAutoscaler v2 | minReplicas 1, metrics cpu Utilization 80 when empty, behavior rules filled when behavior is given (scaleUp: 0s window, Max, Pods 4/15s + Percent 100/15s; scaleDown: Max, Percent 100/15s, no window) | `pkg/apis/autoscaling/v2/defaults.go` |
//! | HorizontalPodAutoscaler v1 | minReplicas 1 | `pkg/apis/autoscaling/v1/defaults.go` |
//! | CustomResourceDefinition | names.singular (lowercase kind), names.listKind (kind + List), conversion {strategy None} | apiextensions `v1/defaults.go` |
//! | statuses | the zero status a fresh object serializes to (e.g. Deployment `{}`, Service `{loadBalancer: {}}`, DaemonSet counters 0) | the status structs' non-omitempty fields |
//!
//! PodDisruptionBudget, Ingress (apart from its status shape), ConfigMap, ServiceAccount,
//! RBAC kinds, Lease and Event have no defaults. Work that needs server state is left to the
//! server, with helpers here: the create-time strategy steps ([`prepare_for_create`]),
//! cluster IP and node port allocation ([`allocate_cluster_ip`], [`assign_cluster_ip`],
//! [`allocate_node_port`], [`assign_node_ports`]), the Job selector
//! ([`generate_job_selector`]) and the Pod admission plugins ([`admit_pod`]).

use serde_json::{Map, Value, json};

/// Applies kube-apiserver v1.32's defaults for `api_version`/`kind` to `object` in place.
/// Unknown kinds (custom resources) are left unchanged; parts of the object that do not have
/// the expected JSON type are skipped (validation reports them, not defaulting).
pub fn apply_defaults(api_version: &str, kind: &str, object: &mut Value) {
    let Some(root) = object.as_object_mut() else {
        return;
    };
    match (api_version, kind) {
        ("apps/v1", "Deployment") => deployment(root),
        ("apps/v1", "StatefulSet") => stateful_set(root),
        ("apps/v1", "DaemonSet") => daemon_set(root),
        ("apps/v1", "ReplicaSet") => replica_set(root),
        ("batch/v1", "Job") => job(root),
        ("batch/v1", "CronJob") => cron_job(root),
        ("v1", "Pod") => pod(root),
        ("v1", "PodTemplate") => {
            if let Some(template) = child(root, "template") {
                pod_template(template);
            }
        }
        ("v1", "ReplicationController") => {
            if let Some(spec) = child(root, "spec") {
                default(spec, "replicas", json!(1));
                if let Some(template) = child(spec, "template") {
                    pod_template(template);
                }
            }
        }
        ("v1", "Service") => service(root),
        ("v1", "Secret") => default_str(root, "type", "Opaque"),
        ("v1", "Namespace") => namespace(root),
        ("v1", "PersistentVolumeClaim") => persistent_volume_claim(root),
        ("autoscaling/v2", "HorizontalPodAutoscaler") => hpa_v2(root),
        ("autoscaling/v1", "HorizontalPodAutoscaler") => {
            if let Some(spec) = child(root, "spec") {
                default(spec, "minReplicas", json!(1));
            }
            default(
                root,
                "status",
                json!({"currentReplicas": 0, "desiredReplicas": 0}),
            );
        }
        ("networking.k8s.io/v1", "Ingress") => {
            default(root, "status", json!({"loadBalancer": {}}));
        }
        ("policy/v1", "PodDisruptionBudget") => {
            default(
                root,
                "status",
                json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}),
            );
        }
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => crd(root),
        _ => {}
    }
}

/// What kube-apiserver does to a new object, in order: [`apply_defaults`], then the registry
/// strategy's `PrepareForCreate`, then defaulting again as the stored object is read back:
/// * the status of workloads, Services, Ingresses, PVCs, HPAs and PDBs is reset to its zero
///   shape (a client cannot create an object with a status);
/// * a Pod starts `Pending` with its QoS class ([`qos_class`]);
/// * a Namespace starts `Active` with the `kubernetes` finalizer appended to
///   `spec.finalizers` (create-only: later updates may remove it through `/finalize`).
///
/// Steps that need server state stay with the server: uid, generation and timestamps,
/// [`assign_cluster_ip`], [`assign_node_ports`], [`generate_job_selector`], [`admit_pod`].
pub fn prepare_for_create(api_version: &str, kind: &str, object: &mut Value) {
    apply_defaults(api_version, kind, object);
    let Some(root) = object.as_object_mut() else {
        return;
    };
    match (api_version, kind) {
        ("apps/v1", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch/v1", "Job" | "CronJob")
        | ("v1", "Service" | "PersistentVolumeClaim")
        | ("networking.k8s.io/v1", "Ingress")
        | ("autoscaling/v1" | "autoscaling/v2", "HorizontalPodAutoscaler")
        | ("policy/v1", "PodDisruptionBudget") => {
            root.remove("status");
        }
        ("v1", "Pod") => {
            let qos = root.get("spec").map_or("BestEffort", qos_class);
            root.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos}),
            );
        }
        ("v1", "Namespace") => {
            root.insert("status".into(), json!({"phase": "Active"}));
            if let Some(spec) = child(root, "spec") {
                let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
                if !finalizers.is_array() {
                    *finalizers = json!([]);
                }
                if let Some(finalizers) = finalizers.as_array_mut()
                    && !finalizers.iter().any(|f| f == "kubernetes")
                {
                    finalizers.push(json!("kubernetes"));
                }
            }
        }
        _ => {}
    }
    apply_defaults(api_version, kind, object);
}

/// The QoS class of a Pod spec (`qos.GetPodQOS`): BestEffort without any cpu/memory request
/// or limit, Guaranteed when every container limits cpu and memory with equal requests,
/// else Burstable. Quantities are compared as written.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| spec.get(*list).and_then(Value::as_array))
        .flatten()
        .collect();
    let compute = ["cpu", "memory"];
    let has_any = containers.iter().any(|c| {
        ["requests", "limits"].iter().any(|kind| {
            compute.iter().any(|resource| {
                c.pointer(&format!("/resources/{kind}/{resource}"))
                    .is_some_and(|q| q.as_str() != Some("0") && q.as_i64() != Some(0))
            })
        })
    });
    if !has_any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        compute.iter().all(|resource| {
            let limit = c.pointer(&format!("/resources/limits/{resource}"));
            let request = c.pointer(&format!("/resources/requests/{resource}"));
            limit.is_some() && request.is_none_or(|r| Some(r) == limit)
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

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

/// The Job registry's create step (`pkg/registry/batch/job/strategy.go` `generateSelector`),
/// which needs the new object's uid: unless `spec.manualSelector` is true, adds the
/// `batch.kubernetes.io/controller-uid`, `batch.kubernetes.io/job-name`, `controller-uid` and
/// `job-name` labels to the pod template and selects on `batch.kubernetes.io/controller-uid`.
/// When the Job's labels equal its template's (as [`apply_defaults`] copies them: the real
/// server shares one map between the two), the Job's own labels gain the same entries.
pub fn generate_job_selector(job: &mut Value, uid: &str) {
    let name = job
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(root) = job.as_object_mut() else {
        return;
    };
    let Some(spec) = child(root, "spec") else {
        return;
    };
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let generated = [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name.as_str()),
        ("controller-uid", uid),
        ("job-name", name.as_str()),
    ];
    let Some(template_labels) = child(spec, "template")
        .and_then(|template| child(template, "metadata"))
        .and_then(|metadata| child(metadata, "labels"))
    else {
        return;
    };
    let shared_with_job = template_labels.clone();
    for (key, value) in generated {
        default(template_labels, key, json!(value));
    }
    if let Some(selector) = child(spec, "selector")
        && let Some(match_labels) = child(selector, "matchLabels")
    {
        default(
            match_labels,
            "batch.kubernetes.io/controller-uid",
            json!(uid),
        );
    }
    if let Some(labels) = child(root, "metadata")
        .and_then(|metadata| metadata.get_mut("labels"))
        .and_then(Value::as_object_mut)
        && *labels == shared_with_job
    {
        for (key, value) in generated {
            default(labels, key, json!(value));
        }
    }
}

/// The Pod admission plugins' changes to a new Pod, as a v1.32 cluster with the default
/// plugins makes them:
/// * ServiceAccount: `serviceAccountName`/`serviceAccount` default to `default`; unless
///   `automountServiceAccountToken` is false, a projected `kube-api-access-SUFFIX` volume
///   (token, `kube-root-ca.crt`, namespace) mounted read-only at
///   `/var/run/secrets/kubernetes.io/serviceaccount` in every container. The real suffix is
///   random: the server passes one (e.g. derived from the pod name).
/// * DefaultTolerationSeconds: NoExecute tolerations of `node.kubernetes.io/not-ready` and
///   `node.kubernetes.io/unreachable` for 300 s.
/// * Priority: `priority` 0 and `preemptionPolicy` PreemptLowerPriority when no class is named.
pub fn admit_pod(pod: &mut Value, token_volume_suffix: &str) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default_str(spec, "serviceAccountName", "default");
    let account = spec
        .get("serviceAccountName")
        .cloned()
        .unwrap_or_else(|| json!("default"));
    spec.insert("serviceAccount".into(), account);
    if spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        != Some(false)
    {
        mount_service_account_token(spec, token_volume_suffix);
    }
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    if let Some(tolerations) = tolerations.as_array_mut() {
        for taint in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let present = tolerations.iter().any(|t| {
                t.get("key").and_then(Value::as_str) == Some(taint)
                    && t.get("effect")
                        .and_then(Value::as_str)
                        .is_none_or(|e| e == "NoExecute")
            });
            if !present {
                tolerations.push(json!({
                    "effect": "NoExecute",
                    "key": taint,
                    "operator": "Exists",
                    "tolerationSeconds": 300
                }));
            }
        }
    }
    if spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        default(spec, "priority", json!(0));
    }
    default_str(spec, "preemptionPolicy", "PreemptLowerPriority");
}

/// The ServiceAccount admission plugin's projected token volume and its mounts.
fn mount_service_account_token(spec: &mut Map<String, Value>, suffix: &str) {
    const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
    let volume_name = format!("kube-api-access-{suffix}");
    let mut already_mounted = false;
    for list in ["containers", "initContainers"] {
        for container in array_objects(spec, list) {
            let mounts = container.get("volumeMounts").and_then(Value::as_array);
            if mounts.is_some_and(|mounts| {
                mounts
                    .iter()
                    .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH))
            }) {
                already_mounted = true;
            }
        }
    }
    if already_mounted {
        return;
    }
    for list in ["containers", "initContainers"] {
        for container in array_objects(spec, list) {
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            if let Some(mounts) = mounts.as_array_mut() {
                mounts.push(json!({
                    "mountPath": MOUNT_PATH,
                    "name": volume_name,
                    "readOnly": true
                }));
            }
        }
    }
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if let Some(volumes) = volumes.as_array_mut() {
        volumes.push(json!({
            "name": volume_name,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                    {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}
                ]
            }
        }));
    }
}

// ---- helpers -------------------------------------------------------------------------------

/// Whether a field counts as unset for a Go pointer field: absent or null.
fn is_unset(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).is_none_or(Value::is_null)
}

/// Sets `key` to `value` when unset (absent or null): the rule for pointer fields.
fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if is_unset(map, key) {
        map.insert(key.to_string(), value);
    }
}

/// Sets a string field when unset or empty: the rule for Go string fields (`== ""`).
fn default_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    if is_unset(map, key) || map.get(key).and_then(Value::as_str) == Some("") {
        map.insert(key.to_string(), json!(value));
    }
}

/// Sets an integer field when unset or zero: the rule for Go int fields (`== 0`).
fn default_nonzero(map: &mut Map<String, Value>, key: &str, value: i64) {
    if is_unset(map, key) || map.get(key).and_then(Value::as_i64) == Some(0) {
        map.insert(key.to_string(), json!(value));
    }
}

/// The object at `key`, created as `{}` when absent or null; None when it is another type.
fn child<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let value = map.entry(key).or_insert_with(|| json!({}));
    if value.is_null() {
        *value = json!({});
    }
    value.as_object_mut()
}

/// The object at `key` if present (never created).
fn existing<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// The object elements of the list at `key` (absent or non-list: none).
fn array_objects<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

// ---- workloads -----------------------------------------------------------------------------

fn deployment(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default(spec, "replicas", json!(1));
        if let Some(strategy) = child(spec, "strategy") {
            default_str(strategy, "type", "RollingUpdate");
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(rolling) = child(strategy, "rollingUpdate")
            {
                default(rolling, "maxUnavailable", json!("25%"));
                default(rolling, "maxSurge", json!("25%"));
            }
        }
        default(spec, "revisionHistoryLimit", json!(10));
        default(spec, "progressDeadlineSeconds", json!(600));
        if let Some(template) = child(spec, "template") {
            pod_template(template);
        }
    }
    default(root, "status", json!({}));
}

fn stateful_set(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default_str(spec, "podManagementPolicy", "OrderedReady");
        if let Some(strategy) = child(spec, "updateStrategy") {
            if strategy
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                strategy.insert("type".into(), json!("RollingUpdate"));
                default(strategy, "rollingUpdate", json!({}));
            }
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(rolling) = existing(strategy, "rollingUpdate")
            {
                default(rolling, "partition", json!(0));
            }
        }
        if let Some(policy) = child(spec, "persistentVolumeClaimRetentionPolicy") {
            default_str(policy, "whenDeleted", "Retain");
            default_str(policy, "whenScaled", "Retain");
        }
        default(spec, "replicas", json!(1));
        default(spec, "revisionHistoryLimit", json!(10));
        if let Some(template) = child(spec, "template") {
            pod_template(template);
        }
        for claim in array_objects(spec, "volumeClaimTemplates") {
            claim.insert("apiVersion".into(), json!("v1"));
            claim.insert("kind".into(), json!("PersistentVolumeClaim"));
            persistent_volume_claim(claim);
            if let Some(metadata) = child(claim, "metadata") {
                default(metadata, "creationTimestamp", Value::Null);
            }
        }
    }
    default(
        root,
        "status",
        json!({"availableReplicas": 0, "replicas": 0}),
    );
}

fn daemon_set(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        if let Some(strategy) = child(spec, "updateStrategy") {
            default_str(strategy, "type", "RollingUpdate");
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(rolling) = child(strategy, "rollingUpdate")
            {
                default(rolling, "maxUnavailable", json!(1));
                default(rolling, "maxSurge", json!(0));
            }
        }
        default(spec, "revisionHistoryLimit", json!(10));
        if let Some(template) = child(spec, "template") {
            pod_template(template);
        }
    }
    default(
        root,
        "status",
        json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}),
    );
}

fn replica_set(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default(spec, "replicas", json!(1));
        if let Some(template) = child(spec, "template") {
            pod_template(template);
        }
    }
    default(root, "status", json!({"replicas": 0}));
}

fn job(root: &mut Map<String, Value>) {
    let Some(spec) = child(root, "spec") else {
        return;
    };
    job_spec(spec);
    let template_labels = spec
        .get("template")
        .and_then(|template| template.pointer("/metadata/labels"))
        .filter(|labels| labels.is_object())
        .cloned();
    if let Some(labels) = template_labels
        && let Some(metadata) = child(root, "metadata")
        && metadata
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        metadata.insert("labels".into(), labels);
    }
    default(root, "status", json!({}));
}

/// `SetDefaults_Job`'s spec part (v1.32 feature gates: JobPodReplacementPolicy and
/// JobBackoffLimitPerIndex on).
fn job_spec(spec: &mut Map<String, Value>) {
    if is_unset(spec, "completions") && is_unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    default(spec, "parallelism", json!(1));
    if is_unset(spec, "backoffLimit") {
        let limit = if is_unset(spec, "backoffLimitPerIndex") {
            6
        } else {
            i64::from(i32::MAX)
        };
        spec.insert("backoffLimit".into(), json!(limit));
    }
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    let has_failure_policy = !is_unset(spec, "podFailurePolicy");
    if let Some(policy) = existing(spec, "podFailurePolicy") {
        for rule in array_objects(policy, "rules") {
            for pattern in array_objects(rule, "onPodConditions") {
                default_str(pattern, "status", "True");
            }
        }
    }
    let replacement = if has_failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default(spec, "podReplacementPolicy", json!(replacement));
    if let Some(template) = child(spec, "template") {
        pod_template(template);
    }
}

fn cron_job(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default_str(spec, "concurrencyPolicy", "Allow");
        default(spec, "suspend", json!(false));
        default(spec, "successfulJobsHistoryLimit", json!(3));
        default(spec, "failedJobsHistoryLimit", json!(1));
        if let Some(job_template) = child(spec, "jobTemplate") {
            if let Some(metadata) = child(job_template, "metadata") {
                default(metadata, "creationTimestamp", Value::Null);
            }
            if let Some(template) =
                child(job_template, "spec").and_then(|spec| child(spec, "template"))
            {
                pod_template(template);
            }
        }
    }
    default(root, "status", json!({}));
}

// ---- pods ----------------------------------------------------------------------------------

/// A pod template (workloads, PodTemplate): metadata serialization and PodSpec defaults.
fn pod_template(template: &mut Map<String, Value>) {
    if let Some(metadata) = child(template, "metadata") {
        default(metadata, "creationTimestamp", Value::Null);
    }
    if let Some(spec) = child(template, "spec") {
        pod_spec(spec, false);
    }
}

fn pod(root: &mut Map<String, Value>) {
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

// ---- core kinds ----------------------------------------------------------------------------

fn service(root: &mut Map<String, Value>) {
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

fn namespace(root: &mut Map<String, Value>) {
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .map(str::to_string);
    if let Some(name) = name
        && let Some(labels) = child(root, "metadata").and_then(|m| child(m, "labels"))
    {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
    default(root, "spec", json!({}));
    if let Some(status) = child(root, "status") {
        default_str(status, "phase", "Active");
    }
}

fn persistent_volume_claim(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default(spec, "volumeMode", json!("Filesystem"));
    }
    if let Some(status) = child(root, "status") {
        default_str(status, "phase", "Pending");
    }
}

fn hpa_v2(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default(spec, "minReplicas", json!(1));
        let no_metrics = spec
            .get("metrics")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if no_metrics {
            spec.insert(
                "metrics".into(),
                json!([{
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}
                }]),
            );
        }
        if let Some(behavior) = existing(spec, "behavior") {
            scaling_rules(
                behavior,
                "scaleUp",
                Some(0),
                json!([
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}
                ]),
            );
            scaling_rules(
                behavior,
                "scaleDown",
                None,
                json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
            );
        }
    }
    default(root, "status", json!({"desiredReplicas": 0}));
}

/// `GenerateHPAScale{Up,Down}Rules`: fills the unset fields of one direction's rules.
fn scaling_rules(
    behavior: &mut Map<String, Value>,
    key: &str,
    window: Option<i64>,
    policies: Value,
) {
    if let Some(rules) = child(behavior, key) {
        default(rules, "selectPolicy", json!("Max"));
        if let Some(window) = window {
            default(rules, "stabilizationWindowSeconds", json!(window));
        }
        default(rules, "policies", policies);
    }
}

fn crd(root: &mut Map<String, Value>) {
    let Some(spec) = child(root, "spec") else {
        return;
    };
    if let Some(names) = existing(spec, "names") {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !kind.is_empty() {
            default_str(names, "singular", &kind.to_lowercase());
            default_str(names, "listKind", &format!("{kind}List"));
        }
    }
    if let Some(conversion) = child(spec, "conversion") {
        default_str(conversion, "strategy", "None");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(api_version: &str, kind: &str, mut object: Value) -> Value {
        apply_defaults(api_version, kind, &mut object);
        object
    }

    fn web_template() -> Value {
        json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
        })
    }

    #[test]
    fn deployment_defaults_match_v1_32() {
        let d = defaulted(
            "apps/v1",
            "Deployment",
            json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": web_template()}}),
        );
        let spec = &d["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        assert_eq!(
            spec["template"]["metadata"]["creationTimestamp"],
            Value::Null
        );
        assert!(
            spec["template"]["metadata"]
                .as_object()
                .unwrap()
                .contains_key("creationTimestamp")
        );
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert_eq!(pod["securityContext"], json!({}));
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        assert!(
            pod.get("enableServiceLinks").is_none(),
            "only Pods get enableServiceLinks"
        );
        let c = &pod["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c["terminationMessagePolicy"], "File");
        assert_eq!(c["resources"], json!({}));
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(d["status"], json!({}));
    }

    #[test]
    fn user_values_are_kept() {
        let d = defaulted(
            "apps/v1",
            "Deployment",
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 2,
                "template": {"spec": {"restartPolicy": "Always", "terminationGracePeriodSeconds": 5,
                "containers": [{"name": "a", "image": "x", "imagePullPolicy": "Never"}]}}}}),
        );
        assert_eq!(d["spec"]["replicas"], 0);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(d["spec"]["revisionHistoryLimit"], 2);
        assert_eq!(
            d["spec"]["template"]["spec"]["terminationGracePeriodSeconds"],
            5
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Never"
        );
    }

    #[test]
    fn partial_rolling_update_is_completed() {
        let d = defaulted(
            "apps/v1",
            "Deployment",
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}),
        );
        assert_eq!(
            d["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": 1, "maxUnavailable": "25%"})
        );
    }

    #[test]
    fn pull_policy_follows_the_tag_rule() {
        assert_eq!(default_pull_policy("nginx"), "Always");
        assert_eq!(default_pull_policy("nginx:latest"), "Always");
        assert_eq!(default_pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(default_pull_policy("localhost:5000/nginx"), "Always");
        assert_eq!(
            default_pull_policy("localhost:5000/nginx:v1"),
            "IfNotPresent"
        );
        assert_eq!(
            default_pull_policy(
                "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            ),
            "IfNotPresent"
        );
        assert_eq!(
            default_pull_policy(
                "nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
            ),
            "Always"
        );
        assert_eq!(default_pull_policy(""), "IfNotPresent");
    }

    #[test]
    fn stateful_set_defaults() {
        let s = defaulted(
            "apps/v1",
            "StatefulSet",
            json!({"spec": {"serviceName": "db", "template": web_template(),
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}),
        );
        let spec = &s["spec"];
        assert_eq!(spec["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            spec["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(
            spec["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["revisionHistoryLimit"], 10);
        let claim = &spec["volumeClaimTemplates"][0];
        assert_eq!(claim["apiVersion"], "v1");
        assert_eq!(claim["kind"], "PersistentVolumeClaim");
        assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
        assert_eq!(claim["status"], json!({"phase": "Pending"}));
        assert_eq!(s["status"], json!({"availableReplicas": 0, "replicas": 0}));
    }

    #[test]
    fn stateful_set_explicit_rolling_update_without_block_stays_bare() {
        let s = defaulted(
            "apps/v1",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}),
        );
        assert_eq!(
            s["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"})
        );
        let s = defaulted(
            "apps/v1",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(s["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    }

    #[test]
    fn daemon_set_and_replica_set_defaults() {
        let d = defaulted(
            "apps/v1",
            "DaemonSet",
            json!({"spec": {"template": web_template()}}),
        );
        assert_eq!(
            d["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["status"]["numberReady"], 0);
        let r = defaulted(
            "apps/v1",
            "ReplicaSet",
            json!({"spec": {"template": web_template()}}),
        );
        assert_eq!(r["spec"]["replicas"], 1);
        assert_eq!(r["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    }

    #[test]
    fn job_defaults() {
        let j = defaulted(
            "batch/v1",
            "Job",
            json!({"metadata": {"name": "pi"}, "spec": {"template": {"metadata": {"labels": {"app": "pi"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34"}]}}}}),
        );
        let spec = &j["spec"];
        assert_eq!(spec["completions"], 1);
        assert_eq!(spec["parallelism"], 1);
        assert_eq!(spec["backoffLimit"], 6);
        assert_eq!(spec["completionMode"], "NonIndexed");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");
        assert_eq!(j["metadata"]["labels"], json!({"app": "pi"}));
        let parallel = defaulted("batch/v1", "Job", json!({"spec": {"parallelism": 3}}));
        assert!(parallel["spec"].get("completions").is_none());
        let per_index = defaulted(
            "batch/v1",
            "Job",
            json!({"spec": {"backoffLimitPerIndex": 1, "completionMode": "Indexed", "completions": 3,
                "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}}),
        );
        assert_eq!(per_index["spec"]["backoffLimit"], i32::MAX);
        assert_eq!(per_index["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(
            per_index["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
    }

    #[test]
    fn job_selector_generation() {
        let mut j = defaulted(
            "batch/v1",
            "Job",
            json!({"metadata": {"name": "pi"}, "spec": {"template": {"metadata": {"labels": {"app": "pi"}}, "spec": {}}}}),
        );
        generate_job_selector(&mut j, "u-1");
        assert_eq!(
            j["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        let labels = &j["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels["batch.kubernetes.io/job-name"], "pi");
        assert_eq!(labels["job-name"], "pi");
        assert_eq!(labels["controller-uid"], "u-1");
        assert_eq!(
            j["metadata"]["labels"], *labels,
            "the Job shares its template's labels"
        );

        let mut own_labels = defaulted(
            "batch/v1",
            "Job",
            json!({"metadata": {"name": "pi", "labels": {"team": "a"}}, "spec": {"template": {"spec": {}}}}),
        );
        generate_job_selector(&mut own_labels, "u-2");
        assert_eq!(own_labels["metadata"]["labels"], json!({"team": "a"}));
        assert_eq!(
            own_labels["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"],
            "u-2"
        );

        let mut manual =
            json!({"metadata": {"name": "m"}, "spec": {"manualSelector": true, "template": {}}});
        generate_job_selector(&mut manual, "u-3");
        assert!(manual["spec"].get("selector").is_none());
    }

    #[test]
    fn cron_job_defaults() {
        let c = defaulted(
            "batch/v1",
            "CronJob",
            json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        );
        let spec = &c["spec"];
        assert_eq!(spec["concurrencyPolicy"], "Allow");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["successfulJobsHistoryLimit"], 3);
        assert_eq!(spec["failedJobsHistoryLimit"], 1);
        let job_spec = &spec["jobTemplate"]["spec"];
        assert!(
            job_spec.get("backoffLimit").is_none(),
            "Job defaults are not applied to templates"
        );
        assert_eq!(
            job_spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
    }

    #[test]
    fn pod_only_defaults() {
        let p = defaulted(
            "v1",
            "Pod",
            json!({"spec": {"hostNetwork": true, "serviceAccount": "builder", "containers": [{"name": "c", "image": "busybox:1",
                "ports": [{"containerPort": 8080}],
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]}}),
        );
        let spec = &p["spec"];
        assert_eq!(spec["enableServiceLinks"], true);
        assert_eq!(spec["serviceAccountName"], "builder");
        let c = &spec["containers"][0];
        assert_eq!(
            c["resources"]["requests"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(c["ports"][0]["hostPort"], 8080);
    }

    #[test]
    fn probes_env_and_volumes() {
        let p = defaulted(
            "v1",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "app:v1",
                "livenessProbe": {"httpGet": {"port": 8080}},
                "readinessProbe": {"grpc": {"port": 9090}, "periodSeconds": 5},
                "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}],
                "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "cfg"}},
                    {"name": "s", "secret": {"secretName": "s", "defaultMode": 256}},
                    {"name": "h", "hostPath": {"path": "/tmp"}},
                    {"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]}}),
        );
        let c = &p["spec"]["containers"][0];
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], 5);
        assert_eq!(c["readinessProbe"]["grpc"]["service"], "");
        assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["path"], "/stop");
        assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["scheme"], "HTTP");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(c["env"][1]["valueFrom"]["resourceFieldRef"]["divisor"], "0");
        let volumes = &p["spec"]["volumes"];
        assert_eq!(volumes[0], json!({"name": "scratch", "emptyDir": {}}));
        assert_eq!(volumes[1]["configMap"]["defaultMode"], 420);
        assert_eq!(volumes[2]["secret"]["defaultMode"], 256);
        assert_eq!(volumes[3]["hostPath"]["type"], "");
        assert_eq!(volumes[4]["projected"]["defaultMode"], 420);
        assert_eq!(
            volumes[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
    }

    #[test]
    fn pod_admission() {
        let mut p = defaulted(
            "v1",
            "Pod",
            json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
        );
        admit_pod(&mut p, "abcde");
        let spec = &p["spec"];
        assert_eq!(spec["serviceAccountName"], "default");
        assert_eq!(spec["serviceAccount"], "default");
        assert_eq!(spec["priority"], 0);
        assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
        assert_eq!(spec["tolerations"].as_array().unwrap().len(), 2);
        assert_eq!(
            spec["tolerations"][0]["key"],
            "node.kubernetes.io/not-ready"
        );
        assert_eq!(spec["tolerations"][1]["tolerationSeconds"], 300);
        assert_eq!(spec["volumes"][0]["name"], "kube-api-access-abcde");
        assert_eq!(
            spec["containers"][0]["volumeMounts"][0],
            json!({"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access-abcde", "readOnly": true})
        );

        let mut no_token = json!({"spec": {"automountServiceAccountToken": false, "priorityClassName": "high", "containers": [{"name": "c"}]}});
        admit_pod(&mut no_token, "x");
        assert!(no_token["spec"].get("volumes").is_none());
        assert!(no_token["spec"].get("priority").is_none());
    }

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
    fn core_kind_defaults() {
        assert_eq!(
            defaulted("v1", "Secret", json!({"data": {}}))["type"],
            "Opaque"
        );
        assert_eq!(
            defaulted("v1", "Secret", json!({"type": "kubernetes.io/tls"}))["type"],
            "kubernetes.io/tls"
        );
        let ns = defaulted("v1", "Namespace", json!({"metadata": {"name": "prod"}}));
        assert_eq!(
            ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "prod"
        );
        assert_eq!(ns["spec"], json!({}), "finalizers are added on create only");
        assert_eq!(ns["status"]["phase"], "Active");
        let pvc = defaulted(
            "v1",
            "PersistentVolumeClaim",
            json!({"spec": {"accessModes": ["ReadWriteOnce"]}}),
        );
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"]["phase"], "Pending");
        let cm = json!({"data": {"a": "b"}});
        assert_eq!(defaulted("v1", "ConfigMap", cm.clone()), cm);
        let pdb = json!({"spec": {"minAvailable": 1}});
        assert_eq!(
            defaulted("policy/v1", "PodDisruptionBudget", pdb)["spec"],
            json!({"minAvailable": 1})
        );
    }

    #[test]
    fn create_resets_status_and_adds_create_time_fields() {
        let mut d = json!({"spec": {"template": {"spec": {}}}, "status": {"replicas": 9}});
        prepare_for_create("apps/v1", "Deployment", &mut d);
        assert_eq!(d["status"], json!({}));
        assert_eq!(d["spec"]["replicas"], 1);

        let mut pvc = json!({"spec": {}, "status": {"phase": "Bound"}});
        prepare_for_create("v1", "PersistentVolumeClaim", &mut pvc);
        assert_eq!(pvc["status"], json!({"phase": "Pending"}));

        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}, "status": {"phase": "Running"}});
        prepare_for_create("v1", "Pod", &mut pod);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "Guaranteed"})
        );

        let mut ns = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["example.com/x"]}, "status": {"phase": "Terminating"}});
        prepare_for_create("v1", "Namespace", &mut ns);
        assert_eq!(
            ns["spec"]["finalizers"],
            json!(["example.com/x", "kubernetes"])
        );
        assert_eq!(ns["status"]["phase"], "Active");
        let mut bare = json!({"metadata": {"name": "b"}});
        prepare_for_create("v1", "Namespace", &mut bare);
        assert_eq!(bare["spec"]["finalizers"], json!(["kubernetes"]));

        let mut cm = json!({"data": {"a": "b"}});
        prepare_for_create("v1", "ConfigMap", &mut cm);
        assert_eq!(cm, json!({"data": {"a": "b"}}));
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

    #[test]
    fn qos_classes() {
        assert_eq!(
            qos_class(&json!({"containers": [{"name": "a"}]})),
            "BestEffort"
        );
        assert_eq!(
            qos_class(
                &json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]})
            ),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(
                &json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]})
            ),
            "Burstable"
        );
        assert_eq!(
            qos_class(
                &json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}, {"name": "b"}]})
            ),
            "Burstable"
        );
    }

    #[test]
    fn hpa_defaults() {
        let h = defaulted(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            json!({"spec": {"maxReplicas": 5, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
        );
        let spec = &h["spec"];
        assert_eq!(spec["minReplicas"], 1);
        assert_eq!(
            spec["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert_eq!(
            spec["behavior"]["scaleUp"],
            json!({"selectPolicy": "Max", "stabilizationWindowSeconds": 0, "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}]})
        );
        assert_eq!(
            spec["behavior"]["scaleDown"],
            json!({"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                {"type": "Percent", "value": 100, "periodSeconds": 15}]})
        );
        let no_behavior = defaulted(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            json!({"spec": {"maxReplicas": 5}}),
        );
        assert!(no_behavior["spec"].get("behavior").is_none());
    }

    #[test]
    fn remaining_kinds() {
        let template = defaulted(
            "v1",
            "PodTemplate",
            json!({"template": {"spec": {"containers": [{"name": "c", "image": "x:1"}]}}}),
        );
        assert_eq!(template["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(
            template["template"]["metadata"]["creationTimestamp"],
            Value::Null
        );
        let rc = defaulted(
            "v1",
            "ReplicationController",
            json!({"spec": {"template": {"spec": {}}}}),
        );
        assert_eq!(rc["spec"]["replicas"], 1);
        assert_eq!(rc["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        let hpa = defaulted(
            "autoscaling/v1",
            "HorizontalPodAutoscaler",
            json!({"spec": {"maxReplicas": 3}}),
        );
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(
            hpa["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
        let ingress = defaulted(
            "networking.k8s.io/v1",
            "Ingress",
            json!({"spec": {"rules": []}}),
        );
        assert_eq!(ingress["status"], json!({"loadBalancer": {}}));
        assert_eq!(ingress["spec"], json!({"rules": []}));
        let pdb = defaulted(
            "policy/v1",
            "PodDisruptionBudget",
            json!({"spec": {"minAvailable": 1}}),
        );
        assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    }

    #[test]
    fn crd_defaults() {
        let c = defaulted(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            json!({"spec": {"group": "x.io", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced"}}),
        );
        assert_eq!(c["spec"]["names"]["singular"], "widget");
        assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
    }

    #[test]
    fn malformed_objects_and_unknown_kinds_are_left_alone() {
        let mut odd = json!({"spec": "not an object"});
        apply_defaults("apps/v1", "Deployment", &mut odd);
        assert_eq!(odd["spec"], "not an object");
        let mut containers = json!({"spec": {"containers": "x", "volumes": [1, null]}});
        apply_defaults("v1", "Pod", &mut containers);
        assert_eq!(containers["spec"]["containers"], "x");
        let mut scalar = json!(3);
        apply_defaults("v1", "Pod", &mut scalar);
        assert_eq!(scalar, json!(3));
        let custom = json!({"spec": {"size": 1}});
        assert_eq!(
            defaulted("example.com/v1", "Widget", custom.clone()),
            custom
        );
    }

    #[test]
    fn odd_json_anywhere_never_panics() {
        let kinds = [
            ("apps/v1", "Deployment"),
            ("apps/v1", "StatefulSet"),
            ("apps/v1", "DaemonSet"),
            ("apps/v1", "ReplicaSet"),
            ("batch/v1", "Job"),
            ("batch/v1", "CronJob"),
            ("v1", "Pod"),
            ("v1", "PodTemplate"),
            ("v1", "ReplicationController"),
            ("v1", "Service"),
            ("v1", "Secret"),
            ("v1", "Namespace"),
            ("v1", "PersistentVolumeClaim"),
            ("autoscaling/v2", "HorizontalPodAutoscaler"),
            ("autoscaling/v1", "HorizontalPodAutoscaler"),
            ("networking.k8s.io/v1", "Ingress"),
            ("policy/v1", "PodDisruptionBudget"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ];
        let odd_values = [
            json!(null),
            json!("x"),
            json!(-1),
            json!(true),
            json!([null, 1, "s"]),
            json!({"k": [{}]}),
        ];
        let full = json!({
            "metadata": {"name": "n", "labels": {}},
            "spec": {"template": {"metadata": {"labels": {}}, "spec": {
                "containers": [{"name": "c", "image": "i", "ports": [{}], "livenessProbe": {"httpGet": {}, "grpc": {}},
                    "lifecycle": {"preStop": {"httpGet": {}}}, "env": [{"valueFrom": {"fieldRef": {}, "resourceFieldRef": {}}}],
                    "resources": {"limits": {}}, "volumeMounts": [{}]}],
                "volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {}, "downwardAPI": {"items": [{}]}}]},
                    "downwardAPI": {"items": [{}]}, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}},
                "jobTemplate": {"spec": {"template": {}}}, "ports": [{"port": 80}], "strategy": {}, "updateStrategy": {},
                "volumeClaimTemplates": [{}], "behavior": {"scaleUp": {}}, "names": {"kind": "K"}, "podFailurePolicy": {"rules": [{}]},
                "selector": {}, "sessionAffinity": "ClientIP", "type": "LoadBalancer"}
        });
        let mut paths = Vec::new();
        fn collect(value: &Value, path: String, out: &mut Vec<String>) {
            out.push(path.clone());
            match value {
                Value::Object(map) => map
                    .iter()
                    .for_each(|(k, v)| collect(v, format!("{path}/{k}"), out)),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .for_each(|(i, v)| collect(v, format!("{path}/{i}"), out)),
                _ => {}
            }
        }
        collect(&full, String::new(), &mut paths);
        for (api_version, kind) in kinds {
            for path in &paths {
                for odd in &odd_values {
                    let mut object = full.clone();
                    match object.pointer_mut(path) {
                        Some(slot) => *slot = odd.clone(),
                        None => continue,
                    }
                    prepare_for_create(api_version, kind, &mut object);
                    apply_defaults(api_version, kind, &mut object);
                    generate_job_selector(&mut object, "uid");
                    admit_pod(&mut object, "x");
                    assign_cluster_ip(&mut object, "10.96.0.9");
                    assign_node_ports(&mut object, || 30001);
                    let _ = qos_class(&object);
                }
            }
        }
    }

    #[test]
    fn defaulting_is_idempotent() {
        let once = defaulted(
            "apps/v1",
            "StatefulSet",
            json!({"spec": {"template": web_template(), "volumeClaimTemplates": [{"metadata": {"name": "d"}}]}}),
        );
        assert_eq!(defaulted("apps/v1", "StatefulSet", once.clone()), once);
    }
}
