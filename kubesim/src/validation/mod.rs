//! Validation of written objects, as kube-apiserver's typed decoding and registry
//! strategies do it: [`decode`] (field types, quantities, base64, unknown fields; 400) and
//! [`check`] (the `Validate`/`ValidateUpdate` rules of each kind; 422 Invalid with one
//! cause per field error). One place for every write path: create, update, patch,
//! server-side apply and their dry runs.
//!
//! One file per API group: `core` (and `replication_controller`), `apps`, `autoscaling`,
//! `batch`, `networking`, `rbac`, `admin_kinds` (admission, aggregation, node, storage
//! attachments, certificates, flow control),
//! `apiextensions` (CRDs and their structural schemas); `meta` for ObjectMeta, `field` for the
//! field errors, `types` for decoding; `custom` holds custom resources to their CRD's schema
//! (pruning, defaulting, OpenAPI and CEL validation).

mod admin_kinds;
mod apiextensions;
mod apps;
mod autoscaling;
mod batch;
mod core;
mod custom;
mod field;
mod meta;
mod networking;
mod rbac;
mod replication_controller;
mod types;

use serde_json::Value;

pub use custom::apply_defaults as apply_custom_defaults;
pub use types::decode;

use crate::resources::ResourceInfo;
use crate::status::ApiError;
use field::Errors;

/// A string field of `v` ("" when absent or not a string).
fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// An integer field of `v`.
fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// A list field of `v` (empty when absent or not a list).
fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The kind rules of a new or updated object.
fn kind_rules(info: &ResourceInfo, obj: &Value, errs: &mut Errors) {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => core::pod(obj, errs),
        ("", "PodTemplate") => core::pod_template(obj.get("template"), "template", errs),
        ("", "Service") => core::service(obj, errs),
        ("", "ConfigMap") => core::config_map(obj, errs),
        ("", "Secret") => core::secret(obj, errs),
        ("", "PersistentVolumeClaim") => core::pvc(obj, errs),
        ("", "ReplicationController") => replication_controller::replication_controller(obj, errs),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            admin_kinds::webhook_configuration(obj, true, errs);
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            admin_kinds::webhook_configuration(obj, false, errs);
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            admin_kinds::admission_policy(obj, errs);
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            admin_kinds::admission_policy_binding(obj, errs);
        }
        ("apiregistration.k8s.io", "APIService") => admin_kinds::api_service(obj, errs),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            admin_kinds::certificate_signing_request(obj, errs);
        }
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => admin_kinds::flow_schema(obj, errs),
        ("node.k8s.io", "RuntimeClass") => admin_kinds::runtime_class(obj, errs),
        ("storage.k8s.io", "VolumeAttachment") => admin_kinds::volume_attachment(obj, errs),
        ("apps", "Deployment") => apps::deployment(obj, errs),
        ("apps", "ReplicaSet") => apps::replica_set(obj, errs),
        ("apps", "DaemonSet") => apps::daemon_set(obj, errs),
        ("apps", "StatefulSet") => apps::stateful_set(obj, errs),
        ("batch", "Job") => batch::job(obj, errs),
        ("batch", "CronJob") => batch::cron_job(obj, errs),
        ("networking.k8s.io", "Ingress") => networking::ingress(obj, errs),
        ("autoscaling", "HorizontalPodAutoscaler") => autoscaling::hpa(obj, errs),
        ("rbac.authorization.k8s.io", "Role") => rbac::role(obj, true, errs),
        ("rbac.authorization.k8s.io", "ClusterRole") => rbac::role(obj, false, errs),
        ("rbac.authorization.k8s.io", "RoleBinding") => rbac::binding(obj, true, errs),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => rbac::binding(obj, false, errs),
        _ => {}
    }
}

/// The fields a kind's `ValidateUpdate` refuses to change.
fn immutable_rules(info: &ResourceInfo, old: &Value, new: &Value, errs: &mut Errors) {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Service") => core::service_update(old, new, errs),
        ("", "ConfigMap") => core::immutable_data(old, new, &["data", "binaryData"], errs),
        ("", "Secret") => core::secret_update(old, new, errs),
        ("", "PersistentVolumeClaim") => core::pvc_update(old, new, errs),
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => {
            apps::selector_update(old, new, errs);
        }
        ("storage.k8s.io", "VolumeAttachment") => {
            admin_kinds::volume_attachment_update(old, new, errs);
        }
        ("apps", "StatefulSet") => apps::stateful_set_update(old, new, errs),
        ("batch", "Job") => batch::job_update(old, new, errs),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            rbac::binding_update(old, new, errs);
        }
        _ => {}
    }
}

/// Validates an object about to be stored (`old` is the stored one on update): 422 Invalid
/// naming every field error, as kube-apiserver's strategies answer.
pub fn check(info: &ResourceInfo, old: Option<&Value>, new: &Value) -> Result<(), ApiError> {
    let mut errs = Errors::new();
    match old {
        None => meta::create(info, new, &mut errs),
        Some(old) => meta::update(old, new, &mut errs),
    }
    match &info.schema {
        None => {
            kind_rules(info, new, &mut errs);
            if info.group == "apiextensions.k8s.io" && info.kind == "CustomResourceDefinition" {
                apiextensions::crd(old, new, &mut errs);
            }
            if let Some(old) = old {
                immutable_rules(info, old, new, &mut errs);
            }
        }
        Some(schema) => custom::check(schema, old, new, &mut errs),
    }
    let name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match field::into_error(&info.group, &info.kind, name, &errs) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
