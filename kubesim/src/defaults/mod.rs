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
//! | Secret | type Opaque; stringData folded into data (base64) and dropped | `SetDefaults_Secret`, `Convert_v1_Secret_To_core_Secret` |
//! | NetworkPolicy | ports protocol TCP, policyTypes `[Ingress]` (+ `Egress` with egress rules) | `pkg/apis/networking/v1/defaults.go` |
//! | RoleBinding, ClusterRoleBinding | roleRef.apiGroup and User/Group subjects' apiGroup `rbac.authorization.k8s.io` | `pkg/apis/rbac/v1/defaults.go` |
//! | Namespace | label kubernetes.io/metadata.name, status.phase Active (the `kubernetes` finalizer is added on create, see [`prepare_for_create`]) | `SetDefaults_Namespace`, `SetDefaults_NamespaceStatus`, `pkg/registry/core/namespace` strategy |
//! | PersistentVolumeClaim | spec.volumeMode Filesystem, status.phase Pending | `SetDefaults_PersistentVolumeClaim(Spec)` |
//! | HorizontalPodAutoscaler v2 | minReplicas 1, metrics cpu Utilization 80 when empty, behavior rules filled when behavior is given (scaleUp: 0s window, Max, Pods 4/15s + Percent 100/15s; scaleDown: Max, Percent 100/15s, no window) | `pkg/apis/autoscaling/v2/defaults.go` |
//! | HorizontalPodAutoscaler v1 | minReplicas 1 | `pkg/apis/autoscaling/v1/defaults.go` |
//! | ReplicationController | spec.selector and metadata.labels from the template's labels when empty, replicas 1 | `SetDefaults_ReplicationController` |
//! | Mutating/ValidatingWebhookConfiguration | failurePolicy Fail, matchPolicy Equivalent, namespaceSelector and objectSelector {}, timeoutSeconds 10, rules[].scope `*`, service.port 443 (mutating: reinvocationPolicy Never) | `admissionregistration/v1/defaults.go` |
//! | ValidatingAdmissionPolicy | failurePolicy Fail, matchConstraints matchPolicy Equivalent, namespaceSelector and objectSelector {}, resourceRules[].scope `*` | `admissionregistration/v1/defaults.go` |
//! | CSIDriver | attachRequired true, podInfoOnMount false, storageCapacity false, fsGroupPolicy ReadWriteOnceWithFSType, volumeLifecycleModes [Persistent], requiresRepublish false, seLinuxMount false | `storage/v1/defaults.go` |
//! | FlowSchema | matchingPrecedence 1000 | `flowcontrol/v1/defaults.go` |
//! | CustomResourceDefinition | names.singular (lowercase kind), names.listKind (kind + List), conversion {strategy None} | apiextensions `v1/defaults.go` |
//! | statuses | the zero status a fresh object serializes to (e.g. Deployment `{}`, Service `{loadBalancer: {}}`, DaemonSet counters 0) | the status structs' non-omitempty fields |
//!
//! PodDisruptionBudget, Ingress (apart from its status shape), ConfigMap, ServiceAccount,
//! Roles, Lease and Event have no defaults. Quantities are put in canonical form while the
//! object is decoded (see the `validation` module), before defaulting. Work that needs server state is left to the
//! server, with helpers here: the create-time strategy steps ([`prepare_for_create`]),
//! cluster IP and node port allocation ([`allocate_cluster_ip`], [`assign_cluster_ip`],
//! [`allocate_node_port`], [`assign_node_ports`]), the Job selector
//! ([`generate_job_selector`]) and the Pod admission plugins ([`admit_pod`]).
//!
//! The modules: `apply` ([`apply_defaults`], per kind), `workloads`, `pod_spec`, `service`
//! and `other_kinds` (the defaults per kind family), `fields` (the Go-style field defaulting
//! they share), `create` (create-time steps), `allocation` (cluster IPs and node ports) and
//! `admission` (the Pod admission plugins).

mod admin_kinds;
mod admission;
mod allocation;
mod apply;
mod create;
mod fields;
mod other_kinds;
mod pod_spec;
mod service;
#[cfg(test)]
mod tests;
mod workloads;

pub use admission::admit_pod;
pub use allocation::{
    allocate_cluster_ip, allocate_node_port, assign_cluster_ip, assign_node_ports,
};
pub use apply::apply_defaults;
pub use create::{generate_job_selector, prepare_for_create, qos_class};
pub use pod_spec::default_pull_policy;
