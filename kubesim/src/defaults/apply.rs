//! The entry point of defaulting: [`apply_defaults`] dispatches on apiVersion and kind to the
//! defaults of each kind family (and fills the few one-line kinds itself).

use serde_json::{Value, json};

use super::admin_kinds::{admission_policy, csi_driver, replication_controller_labels, webhooks};
use super::fields::{child, default};
use super::other_kinds::{
    crd, hpa_v2, namespace, network_policy, persistent_volume_claim, role_binding, secret,
};
use super::pod_spec::{pod, pod_template};
use super::service::service;
use super::workloads::{cron_job, daemon_set, deployment, job, replica_set, stateful_set};

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
            replication_controller_labels(root);
            if let Some(spec) = child(root, "spec") {
                default(spec, "replicas", json!(1));
                if let Some(template) = child(spec, "template") {
                    pod_template(template);
                }
            }
        }
        ("v1", "Service") => service(root),
        ("v1", "Secret") => secret(root),
        ("networking.k8s.io/v1", "NetworkPolicy") => network_policy(root),
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
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            webhooks(root, true);
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            webhooks(root, false);
        }
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => {
            admission_policy(root);
        }
        ("storage.k8s.io/v1", "CSIDriver") => csi_driver(root),
        ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema") => {
            if let Some(spec) = child(root, "spec") {
                default(spec, "matchingPrecedence", json!(1000));
            }
        }
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => {
            role_binding(root);
        }
        _ => {}
    }
}
