//! The essentials of the kinds cluster administrators write, as their groups' validation
//! packages check them: admission webhook configurations and ValidatingAdmissionPolicies
//! (`admissionregistration/validation`), APIServices (`kube-aggregator` validation),
//! RuntimeClasses (`node/validation`), VolumeAttachments (`storage/validation`),
//! CertificateSigningRequests (`certificates/validation`) and FlowSchemas
//! (`flowcontrol/validation`).

use serde_json::Value;

use super::field::{Errors, invalid, invalid_str, not_supported, required};
use super::{arr, int, s};
use crate::names;

/// Mutating or validating webhook configurations: each webhook named with a fully qualified
/// name, unique, with exactly one of `clientConfig.url`/`service`, `sideEffects` and
/// `admissionReviewVersions`.
pub fn webhook_configuration(obj: &Value, mutating: bool, errs: &mut Errors) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, hook) in arr(obj, "webhooks").iter().enumerate() {
        let p = format!("webhooks[{i}]");
        let name = s(hook, "name");
        if name.is_empty() {
            errs.push(required(&format!("{p}.name"), ""));
        } else {
            for m in names::dns1123_subdomain(name) {
                errs.push(invalid_str(&format!("{p}.name"), name, &m));
            }
            if name.split('.').count() < 3 {
                errs.push(invalid_str(
                    &format!("{p}.name"),
                    name,
                    "should be a domain with at least three segments separated by dots",
                ));
            }
            if !seen.insert(name.to_string()) {
                errs.push(super::field::duplicate(&format!("{p}.name"), name));
            }
        }
        let config = hook.get("clientConfig").unwrap_or(&Value::Null);
        let has = |k: &str| config.get(k).is_some_and(|v| !v.is_null());
        if has("url") == has("service") {
            errs.push(required(
                &format!("{p}.clientConfig"),
                "exactly one of url or service is required",
            ));
        }
        let side_effects = ["None", "NoneOnDryRun"];
        match hook.get("sideEffects").and_then(Value::as_str) {
            None => errs.push(required(
                &format!("{p}.sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some(v) if !side_effects.contains(&v) => {
                errs.push(not_supported(&format!("{p}.sideEffects"), v, &side_effects));
            }
            Some(_) => {}
        }
        if arr(hook, "admissionReviewVersions").is_empty() {
            errs.push(required(
                &format!("{p}.admissionReviewVersions"),
                "must specify one of v1, v1beta1",
            ));
        }
        if let Some(t) = int(hook, "timeoutSeconds").filter(|t| !(1..=30).contains(t)) {
            errs.push(invalid(
                &format!("{p}.timeoutSeconds"),
                t.to_string(),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        if mutating
            && let Some(r) = hook.get("reinvocationPolicy").and_then(Value::as_str)
            && !["Never", "IfNeeded"].contains(&r)
        {
            errs.push(not_supported(
                &format!("{p}.reinvocationPolicy"),
                r,
                &["IfNeeded", "Never"],
            ));
        }
    }
}

/// A ValidatingAdmissionPolicy: at least one validation or audit annotation.
pub fn admission_policy(obj: &Value, errs: &mut Errors) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if arr(spec, "validations").is_empty() && arr(spec, "auditAnnotations").is_empty() {
        errs.push(required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    for (i, v) in arr(spec, "validations").iter().enumerate() {
        if s(v, "expression").is_empty() {
            errs.push(required(&format!("spec.validations[{i}].expression"), ""));
        }
    }
}

/// A ValidatingAdmissionPolicyBinding: the policy it binds and at least one action.
pub fn admission_policy_binding(obj: &Value, errs: &mut Errors) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if s(spec, "policyName").is_empty() {
        errs.push(required("spec.policyName", ""));
    }
    let actions = arr(spec, "validationActions");
    if actions.is_empty() {
        errs.push(required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    for (i, a) in actions.iter().enumerate() {
        let a = a.as_str().unwrap_or_default();
        if !["Deny", "Warn", "Audit"].contains(&a) {
            errs.push(not_supported(
                &format!("spec.validationActions[{i}]"),
                a,
                &["Audit", "Deny", "Warn"],
            ));
        }
    }
}

/// An APIService: named `version.group`, priorities in range, a local one without TLS
/// settings.
pub fn api_service(obj: &Value, errs: &mut Errors) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let (group, version) = (s(spec, "group"), s(spec, "version"));
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if version.is_empty() {
        errs.push(required("spec.version", ""));
    }
    let expected = format!("{version}.{group}");
    if !name.is_empty() && name != expected {
        errs.push(invalid_str(
            "metadata.name",
            name,
            "must be `spec.version+\".\"+spec.group`",
        ));
    }
    let range = |key: &str, max: i64, errs: &mut Errors| {
        let v = int(spec, key).unwrap_or(0);
        if !(1..=max).contains(&v) {
            errs.push(invalid(
                &format!("spec.{key}"),
                v.to_string(),
                &format!("must be positive and less than {max}"),
            ));
        }
    };
    range("groupPriorityMinimum", 20000, errs);
    range("versionPriority", 1000, errs);
    if spec.get("service").is_none_or(Value::is_null) {
        if spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true) {
            errs.push(invalid(
                "spec.insecureSkipTLSVerify",
                "true".to_string(),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        if !s(spec, "caBundle").is_empty() {
            errs.push(invalid(
                "spec.caBundle",
                "[]byte(nil)".to_string(),
                "local APIServices may not have a caBundle",
            ));
        }
    }
}

/// A RuntimeClass: a DNS-label `handler`.
pub fn runtime_class(obj: &Value, errs: &mut Errors) {
    let handler = s(obj, "handler");
    if handler.is_empty() {
        errs.push(required("handler", ""));
    }
    for m in names::dns1123_label(handler)
        .into_iter()
        .filter(|_| !handler.is_empty())
    {
        errs.push(invalid_str("handler", handler, &m));
    }
}

/// A VolumeAttachment: its attacher, node and exactly one source.
pub fn volume_attachment(obj: &Value, errs: &mut Errors) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if s(spec, "attacher").is_empty() {
        errs.push(required("spec.attacher", ""));
    }
    if s(spec, "nodeName").is_empty() {
        errs.push(required("spec.nodeName", ""));
    }
    let source = spec.get("source").unwrap_or(&Value::Null);
    let pv = !s(source, "persistentVolumeName").is_empty();
    let inline = source.get("inlineVolumeSpec").is_some_and(|v| !v.is_null());
    if pv == inline {
        errs.push(required(
            "spec.source",
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        ));
    }
}

/// A VolumeAttachment's spec cannot change.
pub fn volume_attachment_update(old: &Value, new: &Value, errs: &mut Errors) {
    if old.get("spec") != new.get("spec") {
        errs.push(invalid("spec", String::new(), "field is immutable"));
    }
}

/// A CertificateSigningRequest: a PEM `CERTIFICATE REQUEST`, a qualified signer name and
/// at least one usage.
pub fn certificate_signing_request(obj: &Value, errs: &mut Errors) {
    use base64::Engine;
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let pem = base64::engine::general_purpose::STANDARD
        .decode(s(spec, "request"))
        .unwrap_or_default();
    if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE REQUEST-----") {
        errs.push(invalid(
            "spec.request",
            "[]byte{...}".to_string(),
            "PEM block type must be CERTIFICATE REQUEST",
        ));
    }
    let signer = s(spec, "signerName");
    if signer.is_empty() {
        errs.push(required("spec.signerName", ""));
    } else if !signer.contains('/') {
        errs.push(invalid_str(
            "spec.signerName",
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
    }
    if arr(spec, "usages").is_empty() {
        errs.push(required("spec.usages", "usages must be provided"));
    }
}

/// A FlowSchema: the priority level it names and a matching precedence in range.
pub fn flow_schema(obj: &Value, errs: &mut Errors) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if spec
        .pointer("/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        errs.push(required(
            "spec.priorityLevelConfiguration.name",
            "must reference a priority level",
        ));
    }
    if let Some(p) = int(spec, "matchingPrecedence").filter(|p| !(1..=10000).contains(p)) {
        errs.push(invalid(
            "spec.matchingPrecedence",
            p.to_string(),
            "must be between 1 and 10000",
        ));
    }
}
