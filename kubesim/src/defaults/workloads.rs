//! Defaults of the workload kinds: Deployments, StatefulSets (with their volumeClaimTemplates),
//! DaemonSets, ReplicaSets, Jobs and CronJobs.

use serde_json::{Map, Value, json};

use super::fields::{array_objects, child, default, default_str, existing, is_unset};
use super::other_kinds::persistent_volume_claim;
use super::pod_spec::pod_template;

pub(super) fn deployment(root: &mut Map<String, Value>) {
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

pub(super) fn stateful_set(root: &mut Map<String, Value>) {
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

pub(super) fn daemon_set(root: &mut Map<String, Value>) {
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

pub(super) fn replica_set(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default(spec, "replicas", json!(1));
        if let Some(template) = child(spec, "template") {
            pod_template(template);
        }
    }
    default(root, "status", json!({"replicas": 0}));
}

pub(super) fn job(root: &mut Map<String, Value>) {
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

pub(super) fn cron_job(root: &mut Map<String, Value>) {
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
