//! `POST /api/v1/clusters/{name}/check`: what wardn's stored credentials may do on a cluster.
//! The server connects with the registered kubeconfig (the CLI never holds it), reads the
//! version, asks one SelfSubjectAccessReview per resource, namespace and verb, and looks the
//! requested custom kinds up in the cluster's discovery (are their CRDs installed?).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::api::{Api, PostParams};
use serde::{Deserialize, Serialize};

use super::connect::{ConnectError, Connectivity, classify};
use super::kubeconfig::ValidationError;
use super::rbac::Grant;

/// Most access reviews one check request may ask for (resources × verbs).
pub const MAX_REVIEWS: usize = 2000;

/// One resource to review, for each of `verbs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceCheck {
    /// API group (`""` for core).
    #[serde(default)]
    pub group: String,
    /// Resource plural, e.g. `deployments`.
    pub resource: String,
    /// Namespace to review in; absent for cluster-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Verbs to review, e.g. `get`, `patch`.
    pub verbs: Vec<String>,
}

impl ResourceCheck {
    /// A review of `grant` with `verbs`, in `namespace` for namespaced grants.
    pub fn of(grant: &Grant, namespace: Option<&str>, verbs: &[&str]) -> ResourceCheck {
        ResourceCheck {
            group: grant.group.clone(),
            resource: grant.resource.clone(),
            namespace: namespace.map(str::to_string),
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
        }
    }
}

/// A kind some App renders that the cluster must already serve (a custom resource whose CRD
/// no App installs): looked up in the cluster's discovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KindCheck {
    /// `group/version`, e.g. `example.com/v1`.
    pub api_version: String,
    /// The kind, e.g. `Widget`.
    pub kind: String,
}

/// Whether the cluster serves a [`KindCheck`]'s kind, and as which resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindResult {
    /// `group/version`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// Whether the cluster's discovery lists it.
    pub served: bool,
    /// The resource plural, when served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Whether its objects live in namespaces, when served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaced: Option<bool>,
    /// Why it is not served (or why discovery failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `POST /api/v1/clusters/{name}/check` body.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// The resources to review (none: only connect and read the version).
    #[serde(default)]
    pub resources: Vec<ResourceCheck>,
    /// Kinds to find in the cluster's discovery (CRDs that must be installed).
    #[serde(default)]
    pub kinds: Vec<KindCheck>,
}

impl CheckRequest {
    /// Refuses empty names, empty verb lists and oversized requests, naming the field.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let invalid = |field: String, reason: &str| ValidationError {
            field,
            reason: reason.to_string(),
        };
        let total: usize =
            self.resources.iter().map(|r| r.verbs.len()).sum::<usize>() + self.kinds.len();
        if total > MAX_REVIEWS {
            return Err(invalid(
                "resources".into(),
                &format!("asks for {total} reviews; at most {MAX_REVIEWS} per request"),
            ));
        }
        for (i, check) in self.kinds.iter().enumerate() {
            let (group, version) = check.api_version.split_once('/').unwrap_or(("", ""));
            if group.is_empty() || version.is_empty() || version.contains('/') {
                return Err(invalid(
                    format!("kinds[{i}].apiVersion"),
                    "must be group/version (core kinds need no check)",
                ));
            }
            if check.kind.trim().is_empty() {
                return Err(invalid(format!("kinds[{i}].kind"), "must not be empty"));
            }
        }
        for (i, check) in self.resources.iter().enumerate() {
            if check.resource.trim().is_empty() {
                return Err(invalid(
                    format!("resources[{i}].resource"),
                    "must not be empty",
                ));
            }
            if check.verbs.is_empty() || check.verbs.iter().any(|v| v.trim().is_empty()) {
                return Err(invalid(
                    format!("resources[{i}].verbs"),
                    "must list at least one non-empty verb",
                ));
            }
        }
        Ok(())
    }
}

/// The outcome of one access review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// API group.
    pub group: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace reviewed in; absent for cluster-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The verb.
    pub verb: String,
    /// Whether the credentials may do it.
    pub allowed: bool,
    /// The authorizer's reason, or why the review failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The answer of a check: connectivity, version and every review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckReport {
    /// The cluster.
    pub name: String,
    /// Whether the cluster answered.
    pub status: Connectivity,
    /// API server version, when connected.
    #[serde(default)]
    pub version: Option<String>,
    /// Why the cluster could not be reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// One entry per resource and verb (empty when disconnected).
    #[serde(default)]
    pub checks: Vec<CheckResult>,
    /// One entry per requested kind (empty when disconnected).
    #[serde(default)]
    pub kinds: Vec<KindResult>,
}

impl CheckReport {
    /// A report for a cluster that could not be reached.
    pub fn disconnected(name: &str, error: &ConnectError) -> CheckReport {
        CheckReport {
            name: name.to_string(),
            status: Connectivity::Disconnected,
            version: None,
            error: Some(error.to_string()),
            checks: Vec::new(),
            kinds: Vec::new(),
        }
    }

    /// The reviews that were denied.
    pub fn denied(&self) -> impl Iterator<Item = &CheckResult> {
        self.checks.iter().filter(|c| !c.allowed)
    }

    /// The kinds the cluster does not serve.
    pub fn missing_kinds(&self) -> impl Iterator<Item = &KindResult> {
        self.kinds.iter().filter(|k| !k.served)
    }
}

/// Looks `check`'s kind up in the discovery document of its group/version (`lists` caches one
/// answer per group/version for the request).
async fn discover(
    client: &kube::Client,
    check: &KindCheck,
    lists: &mut BTreeMap<String, Result<APIResourceList, String>>,
) -> KindResult {
    if !lists.contains_key(&check.api_version) {
        let answer = match client.list_api_group_resources(&check.api_version).await {
            Ok(list) => Ok(list),
            Err(kube::Error::Api(status)) if status.code == 404 => Err(format!(
                "{} is not served (is the CRD that defines {} installed?)",
                check.api_version, check.kind
            )),
            Err(err) => Err(format!("discovery failed: {}", classify(&err))),
        };
        lists.insert(check.api_version.clone(), answer);
    }
    let found = match lists.get(&check.api_version) {
        Some(Ok(list)) => list
            .resources
            .iter()
            .find(|r| r.kind == check.kind && !r.name.contains('/'))
            .map(|r| (r.name.clone(), r.namespaced))
            .ok_or_else(|| {
                format!(
                    "{} serves no kind {} (is its CRD installed?)",
                    check.api_version, check.kind
                )
            }),
        Some(Err(reason)) => Err(reason.clone()),
        None => Err("discovery answer missing".to_string()),
    };
    let (served, resource, namespaced, reason) = match found {
        Ok((resource, namespaced)) => (true, Some(resource), Some(namespaced), None),
        Err(reason) => (false, None, None, Some(reason)),
    };
    KindResult {
        api_version: check.api_version.clone(),
        kind: check.kind.clone(),
        served,
        resource,
        namespaced,
        reason,
    }
}

async fn review(client: &kube::Client, check: &ResourceCheck, verb: &str) -> CheckResult {
    let request = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(check.group.clone()),
                resource: Some(check.resource.clone()),
                namespace: check.namespace.clone(),
                verb: Some(verb.to_string()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        ..SelfSubjectAccessReview::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &request)
        .await;
    let (allowed, reason) = match answer {
        Ok(review) => match review.status {
            Some(status) => (
                status.allowed,
                status
                    .reason
                    .or(status.evaluation_error)
                    .filter(|r| !r.is_empty()),
            ),
            None => (false, Some("the review came back without a status".into())),
        },
        Err(err) => (false, Some(format!("review failed: {}", classify(&err)))),
    };
    CheckResult {
        group: check.group.clone(),
        resource: check.resource.clone(),
        namespace: check.namespace.clone(),
        verb: verb.to_string(),
        allowed,
        reason,
    }
}

/// Reads the version of the cluster behind `client`, then reviews every resource and verb of
/// `request`; the version read (bounded by `timeout`) decides whether the cluster is reachable.
pub async fn check(
    name: &str,
    client: &kube::Client,
    request: &CheckRequest,
    timeout: Duration,
) -> CheckReport {
    let version = match tokio::time::timeout(timeout, client.apiserver_version()).await {
        Ok(Ok(info)) => info.git_version,
        Ok(Err(err)) => return CheckReport::disconnected(name, &classify(&err)),
        Err(_) => {
            return CheckReport::disconnected(
                name,
                &ConnectError::Timeout(format!("no answer within {timeout:?}")),
            );
        }
    };
    let mut checks = Vec::new();
    for resource in &request.resources {
        for verb in &resource.verbs {
            checks.push(review(client, resource, verb).await);
        }
    }
    let mut lists = BTreeMap::new();
    let mut kinds = Vec::new();
    for kind in &request.kinds {
        kinds.push(discover(client, kind, &mut lists).await);
    }
    CheckReport {
        name: name.to_string(),
        status: Connectivity::Connected,
        version: Some(version),
        error: None,
        checks,
        kinds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_name_the_bad_field() {
        let request: CheckRequest = serde_json::from_value(serde_json::json!({
            "resources": [{"group": "apps", "resource": "deployments", "verbs": ["get"]},
                          {"resource": "configmaps", "namespace": "a", "verbs": []}]
        }))
        .unwrap();
        let err = request.validate().unwrap_err();
        assert_eq!(err.field, "resources[1].verbs");
        assert!(
            serde_json::from_value::<CheckRequest>(serde_json::json!({"resource": []})).is_err()
        );
        let huge = CheckRequest {
            resources: vec![
                ResourceCheck {
                    group: String::new(),
                    resource: "pods".into(),
                    namespace: None,
                    verbs: vec!["get".into(); 100],
                };
                21
            ],
            kinds: Vec::new(),
        };
        assert_eq!(huge.validate().unwrap_err().field, "resources");
    }
}
