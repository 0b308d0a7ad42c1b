//! Promotion: which digests a source App's workloads run (each rendered workload's Pods,
//! found through its selector; digest-pinned images count as resolved), and the checks that
//! refuse a promotion (source not Synced and Healthy, a mixed rollout, an image no Pod
//! reports, a target that renders none of the promoted images). The resolution is pure
//! ([`resolve`]); [`running_images`] reads the Pods.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};
use serde_json::Value;

use crate::app::promotion::{PinnedImage, PolicyError};
use crate::app::{AppStatus, HealthState, Phase};
use crate::kube_error::describe;
use crate::render::split_image;

/// Why a promotion was refused.
#[derive(Debug, thiserror::Error)]
pub enum PromoteError {
    /// The source App is not Synced and Healthy (409).
    #[error("source App {app} is not Synced and Healthy (phase {phase}, health {health})")]
    SourceNotReady {
        /// The source App.
        app: String,
        /// Its phase.
        phase: String,
        /// Its health.
        health: String,
    },
    /// The source has not been Synced and Healthy for `requireHealthyFor` yet (409).
    #[error(
        "source App {app} has been Synced and Healthy at {revision} for {healthy_for}s; the target requires {required}s ({left}s left)"
    )]
    Soaking {
        /// The source App.
        app: String,
        /// The revision it runs.
        revision: String,
        /// Seconds it has been Synced and Healthy.
        healthy_for: u64,
        /// Seconds the target requires.
        required: u64,
        /// Seconds left.
        left: u64,
    },
    /// The target's `spec.promotion.from` names another App (409).
    #[error("App {target} takes promotions from {from} only (spec.promotion.from)")]
    NotUpstream {
        /// The target App.
        target: String,
        /// Its `spec.promotion.from`.
        from: String,
    },
    /// The target's `spec.promotion` is invalid (422).
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// A workload's Pods run several digests of one image (422).
    #[error(
        "{workload}: container {container} runs {image} as several digests ({}); wait for the rollout to finish",
        digests.join(", ")
    )]
    Mixed {
        /// The workload (`Kind namespace/name`).
        workload: String,
        /// The container.
        container: String,
        /// The image reference.
        image: String,
        /// The digests seen.
        digests: Vec<String>,
    },
    /// One repository runs as different digests in different workloads (422).
    #[error("image repository {repository} runs as several digests ({})", digests.join(", "))]
    MixedRepository {
        /// The repository.
        repository: String,
        /// The digests seen.
        digests: Vec<String>,
    },
    /// No Pod of a workload reports a digest for one of its containers (422).
    #[error("{workload}: no running Pod reports the digest of container {container} ({image})")]
    Unresolved {
        /// The workload.
        workload: String,
        /// The container.
        container: String,
        /// The image reference.
        image: String,
    },
    /// The source renders no workload with a container image (422).
    #[error("source App {0} runs no container images to promote")]
    NothingRunning(String),
    /// The target renders none of the promoted repositories (422).
    #[error("target App {target} renders none of the promoted images ({})", repositories.join(", "))]
    NotRendered {
        /// The target App.
        target: String,
        /// The promoted repositories.
        repositories: Vec<String>,
    },
    /// The source's Pods could not be listed.
    #[error("cannot list the Pods of {workload}: {message}")]
    Cluster {
        /// The workload.
        workload: String,
        /// The client error.
        message: String,
    },
}

/// Refuses a source that is not Synced and Healthy.
pub fn check_source(app: &str, status: &AppStatus) -> Result<(), PromoteError> {
    if status.phase == Some(Phase::Synced) && status.health == Some(HealthState::Healthy) {
        return Ok(());
    }
    let word = |v: Option<String>| v.unwrap_or_else(|| "unknown".to_string());
    Err(PromoteError::SourceNotReady {
        app: app.to_string(),
        phase: word(status.phase.map(|p| format!("{p:?}"))),
        health: word(status.health.map(|h| format!("{h:?}"))),
    })
}

/// When the source App became Synced and Healthy at what it runs now: the later of its
/// `Ready=True` transition and its last apply (a re-apply restarts the soak).
pub fn healthy_since(status: &AppStatus) -> Option<Timestamp> {
    if status.phase != Some(Phase::Synced) || status.health != Some(HealthState::Healthy) {
        return None;
    }
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")
        .and_then(|c| c.last_transition_time.parse::<Timestamp>().ok());
    let applied = status
        .last_synced_at
        .as_deref()
        .and_then(|t| t.parse::<Timestamp>().ok());
    ready.into_iter().chain(applied).max()
}

/// Refuses a source that has not been Synced and Healthy for `soak` at `now` (the error
/// says how long is left).
pub fn check_soak(
    app: &str,
    status: &AppStatus,
    soak: Duration,
    now: Timestamp,
) -> Result<(), PromoteError> {
    if soak.is_zero() {
        return Ok(());
    }
    let healthy_for = healthy_since(status)
        .and_then(|since| Duration::try_from(now.duration_since(since)).ok())
        .unwrap_or_default();
    if healthy_for >= soak {
        return Ok(());
    }
    Err(PromoteError::Soaking {
        app: app.to_string(),
        revision: status.synced_revision.clone().unwrap_or_default(),
        healthy_for: healthy_for.as_secs(),
        required: soak.as_secs(),
        left: (soak - healthy_for).as_secs().max(1),
    })
}

/// A rendered workload that runs Pods: where its Pods are and what they run.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// `Kind namespace/name`, for messages.
    pub name: String,
    /// The namespace of its Pods.
    pub namespace: String,
    /// The label selector of its Pods (`a=b,c in (d)`); `None` for a bare Pod.
    pub selector: Option<String>,
    /// A bare Pod's own name.
    pub pod: Option<String>,
    /// `(container name, image)` of its init containers and containers.
    pub containers: Vec<(String, String)>,
}

/// The kinds whose objects run Pods, and so images a promotion can pin.
pub const WORKLOAD_KINDS: [&str; 6] = [
    "Pod",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
];

/// The workloads among `objects`, rendered or as a cluster runs them (the kinds of
/// [`WORKLOAD_KINDS`]); objects without a namespace are in `namespace`.
pub fn workloads(objects: &[Value], namespace: &str) -> Vec<Workload> {
    objects
        .iter()
        .filter_map(|object| workload(object, namespace))
        .collect()
}

fn workload(object: &Value, default_namespace: &str) -> Option<Workload> {
    let kind = object.get("kind")?.as_str()?;
    let name = object.pointer("/metadata/name")?.as_str()?;
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or(default_namespace)
        .to_string();
    let (pod_spec, selector, pod) = match kind {
        "Pod" => (object.get("spec")?, None, Some(name.to_string())),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" => (
            object.pointer("/spec/template/spec")?,
            Some(selector(object.pointer("/spec/selector")?)?),
            None,
        ),
        "Job" => (
            object.pointer("/spec/template/spec")?,
            Some(format!("job-name={name}")),
            None,
        ),
        _ => return None,
    };
    let containers = ["initContainers", "containers"]
        .iter()
        .filter_map(|list| pod_spec.get(list)?.as_array())
        .flatten()
        .filter_map(|c| {
            Some((
                c.get("name")?.as_str()?.to_string(),
                c.get("image")?.as_str()?.to_string(),
            ))
        })
        .collect();
    Some(Workload {
        name: format!("{kind} {namespace}/{name}"),
        namespace,
        selector,
        pod,
        containers,
    })
}

/// A `LabelSelector` as the `labelSelector` query parameter spells it; `None` when it is
/// malformed or selects everything.
fn selector(selector: &Value) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            terms.push(format!("{k}={}", v.as_str()?));
        }
    }
    for expr in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expr.get("key")?.as_str()?;
        let values: Vec<&str> = expr
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        terms.push(match expr.get("operator")?.as_str()? {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        });
    }
    (!terms.is_empty()).then(|| terms.join(","))
}

/// The `sha256:…` digest of an image reference or an `imageID`
/// (`repo@sha256:…`, `docker-pullable://repo@sha256:…`, `sha256:…`); `None` without one.
pub fn digest_of(reference: &str) -> Option<String> {
    let digest = reference.rsplit('@').next()?;
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| format!("sha256:{}", hex.to_ascii_lowercase()))
}

/// The digests the Pods run for container `container`.
fn pod_digests(pods: &[Pod], container: &str) -> BTreeSet<String> {
    pods.iter()
        .filter_map(|pod| pod.status.as_ref())
        .flat_map(|status| {
            let init = status.init_container_statuses.iter().flatten();
            init.chain(status.container_statuses.iter().flatten())
        })
        .filter(|s| s.name == container)
        .filter_map(|s| digest_of(&s.image_id))
        .collect()
}

/// The image each repository resolves to, from the workloads and the Pods each selects: a
/// digest-pinned image is its own digest; otherwise every Pod must report the same digest for
/// the container. Refuses mixed rollouts, unresolved images and a source without images.
pub fn resolve(
    app: &str,
    found: &[(Workload, Vec<Pod>)],
) -> Result<Vec<PinnedImage>, PromoteError> {
    let mut by_repository: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    for (workload, pods) in found {
        for (container, image) in &workload.containers {
            let digest = match digest_of(image) {
                Some(digest) => digest,
                None => {
                    let digests = pod_digests(pods, container);
                    let mut iter = digests.iter();
                    match (iter.next(), iter.next()) {
                        (Some(one), None) => one.clone(),
                        (None, _) => {
                            return Err(PromoteError::Unresolved {
                                workload: workload.name.clone(),
                                container: container.clone(),
                                image: image.clone(),
                            });
                        }
                        (Some(_), Some(_)) => {
                            return Err(PromoteError::Mixed {
                                workload: workload.name.clone(),
                                container: container.clone(),
                                image: image.clone(),
                                digests: digests.into_iter().collect(),
                            });
                        }
                    }
                }
            };
            let repository = split_image(image).0.to_string();
            let entry = by_repository
                .entry(repository)
                .or_insert_with(|| (image.clone(), BTreeSet::new()));
            entry.1.insert(digest);
        }
    }
    if by_repository.is_empty() {
        return Err(PromoteError::NothingRunning(app.to_string()));
    }
    by_repository
        .into_iter()
        .map(|(repository, (from, digests))| {
            if digests.len() > 1 {
                return Err(PromoteError::MixedRepository {
                    repository,
                    digests: digests.into_iter().collect(),
                });
            }
            let digest = digests.into_iter().next().unwrap_or_default();
            Ok(PinnedImage {
                repository,
                from,
                digest,
            })
        })
        .collect()
}

/// Lists the Pods of each of `workloads` through `client` and [`resolve`]s their images.
pub async fn running_images(
    client: &Client,
    app: &str,
    workloads: Vec<Workload>,
) -> Result<Vec<PinnedImage>, PromoteError> {
    let mut found = Vec::with_capacity(workloads.len());
    for workload in workloads {
        let needs_pods = workload
            .containers
            .iter()
            .any(|(_, image)| digest_of(image).is_none());
        let pods = if needs_pods {
            list_pods(client, &workload).await?
        } else {
            Vec::new()
        };
        found.push((workload, pods));
    }
    resolve(app, &found)
}

async fn list_pods(client: &Client, workload: &Workload) -> Result<Vec<Pod>, PromoteError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &workload.namespace);
    let failed = |e: kube::Error| PromoteError::Cluster {
        workload: workload.name.clone(),
        message: describe(&e),
    };
    match (&workload.pod, &workload.selector) {
        (Some(name), _) => Ok(api
            .get_opt(name)
            .await
            .map_err(failed)?
            .into_iter()
            .collect()),
        (None, Some(selector)) => {
            let list = api
                .list(&ListParams::default().labels(selector))
                .await
                .map_err(failed)?;
            Ok(list.items)
        }
        (None, None) => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};
    use serde_json::json;

    use super::*;

    const A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn deployment(name: &str, containers: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "selector": {
                    "matchLabels": {"app": name},
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]
                },
                "template": {"spec": {"containers": containers}}
            }
        })
    }

    fn pod(statuses: &[(&str, &str)]) -> Pod {
        Pod {
            status: Some(PodStatus {
                container_statuses: Some(
                    statuses
                        .iter()
                        .map(|(name, id)| ContainerStatus {
                            name: name.to_string(),
                            image_id: id.to_string(),
                            ..ContainerStatus::default()
                        })
                        .collect(),
                ),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn finds_workloads_with_their_selectors_and_namespaces() {
        let objects = vec![
            deployment(
                "web",
                json!([{"name": "web", "image": "ghcr.io/acme/web:1.4"}]),
            ),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ops"},
                   "spec": {"template": {"spec": {"initContainers": [{"name": "i", "image": "busybox"}]}}}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}),
            // Hostile: no selector, a selector value that is not a string, an unknown operator.
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "y"},
                   "spec": {"selector": {"matchLabels": {"a": 1}}, "template": {"spec": {}}}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "z"},
                   "spec": {"selector": {"matchExpressions": [{"key": "k", "operator": "Near"}]},
                            "template": {"spec": {}}}}),
        ];
        let found = workloads(&objects, "staging");
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0].name, "Deployment staging/web");
        assert_eq!(found[0].selector.as_deref(), Some("app=web,tier in (a,b)"));
        assert_eq!(found[1].selector.as_deref(), Some("job-name=j"));
        assert_eq!(found[1].namespace, "ops");
        assert_eq!(found[1].containers, vec![("i".into(), "busybox".into())]);
        assert_eq!(found[2].pod.as_deref(), Some("p"));
    }

    /// The kinds a replica reads from a cluster when it has not rendered the source are
    /// exactly those `workloads` finds workloads of.
    #[test]
    fn every_workload_kind_is_found_and_no_other() {
        let spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        let object = |kind: &str| {
            json!({"apiVersion": "x/v1", "kind": kind, "metadata": {"name": "w"},
                   "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": spec},
                            "containers": spec["containers"]}})
        };
        for kind in WORKLOAD_KINDS {
            assert_eq!(workloads(&[object(kind)], "ns").len(), 1, "{kind}");
        }
        for kind in [
            "ConfigMap",
            "CronJob",
            "ReplicationController",
            "deployment",
        ] {
            assert!(workloads(&[object(kind)], "ns").is_empty(), "{kind}");
        }
    }

    #[test]
    fn reads_digests_from_image_ids_in_every_spelling() {
        for id in [
            format!("docker.io/library/nginx@{A}"),
            format!("docker-pullable://nginx@{A}"),
            A.to_string(),
            A.to_uppercase().replace("SHA256", "sha256"),
        ] {
            assert_eq!(digest_of(&id).as_deref(), Some(A), "{id}");
        }
        for bad in [
            "",
            "nginx:1.2",
            "nginx@sha256:abc",
            "sha256:",
            "@",
            &A.replace('a', "g"),
        ] {
            assert_eq!(digest_of(bad), None, "{bad}");
        }
    }

    fn web(image: &str) -> Workload {
        Workload {
            name: "Deployment staging/web".into(),
            namespace: "staging".into(),
            selector: Some("app=web".into()),
            pod: None,
            containers: vec![("web".into(), image.into())],
        }
    }

    #[test]
    fn resolves_one_digest_per_repository() {
        let pods = vec![
            pod(&[("web", &format!("ghcr.io/acme/web@{A}"))]),
            pod(&[("web", &format!("ghcr.io/acme/web@{A}"))]),
        ];
        let pinned_spec = Workload {
            containers: vec![("side".into(), format!("ghcr.io/acme/side:2@{B}"))],
            ..web("")
        };
        let images = resolve(
            "s",
            &[(web("ghcr.io/acme/web:1.4"), pods), (pinned_spec, vec![])],
        )
        .unwrap();
        assert_eq!(
            images,
            vec![
                PinnedImage {
                    repository: "ghcr.io/acme/side".into(),
                    from: format!("ghcr.io/acme/side:2@{B}"),
                    digest: B.into()
                },
                PinnedImage {
                    repository: "ghcr.io/acme/web".into(),
                    from: "ghcr.io/acme/web:1.4".into(),
                    digest: A.into()
                },
            ]
        );
    }

    #[test]
    fn refuses_mixed_rollouts_unresolved_images_and_empty_sources() {
        let mixed = vec![pod(&[("web", A)]), pod(&[("web", B)])];
        let err = resolve("s", &[(web("web:1"), mixed)]).unwrap_err();
        assert!(matches!(err, PromoteError::Mixed { .. }), "{err}");
        assert!(
            err.to_string().contains(A) && err.to_string().contains(B),
            "{err}"
        );

        // A Pod still creating its container reports an empty imageID.
        let creating = vec![pod(&[("web", "")]), pod(&[("other", A)])];
        let err = resolve("s", &[(web("web:1"), creating)]).unwrap_err();
        assert!(matches!(err, PromoteError::Unresolved { .. }), "{err}");
        assert!(err.to_string().contains("container web (web:1)"), "{err}");

        let two = [
            (web("web:1"), vec![pod(&[("web", A)])]),
            (web("web:2"), vec![pod(&[("web", B)])]),
        ];
        let err = resolve("s", &two).unwrap_err();
        assert!(matches!(err, PromoteError::MixedRepository { .. }), "{err}");

        let err = resolve("s", &[]).unwrap_err();
        assert!(matches!(err, PromoteError::NothingRunning(_)), "{err}");
    }

    #[test]
    fn the_soak_counts_from_the_later_of_ready_and_the_last_apply() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let mut status = AppStatus {
            phase: Some(Phase::Synced),
            health: Some(HealthState::Healthy),
            synced_revision: Some("r2".into()),
            last_synced_at: Some("2026-12-01T10:05:00Z".into()),
            ..AppStatus::default()
        };
        crate::reconcile::status::set_phase(
            &mut status,
            Phase::Synced,
            "",
            at("2026-12-01T10:00:00Z"),
        );
        assert_eq!(healthy_since(&status), Some(at("2026-12-01T10:05:00Z")));
        let ten = Duration::from_secs(600);
        let err = check_soak("s", &status, ten, at("2026-12-01T10:11:00Z")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "source App s has been Synced and Healthy at r2 for 360s; the target requires 600s (240s left)"
        );
        check_soak("s", &status, ten, at("2026-12-01T10:15:00Z")).unwrap();
        check_soak("s", &status, Duration::ZERO, at("2026-12-01T10:05:00Z")).unwrap();
        // A clock behind the last apply, or a source no longer Healthy: the whole soak is left.
        let err = check_soak("s", &status, ten, at("2026-12-01T09:00:00Z")).unwrap_err();
        assert!(err.to_string().contains("(600s left)"), "{err}");
        status.health = Some(HealthState::Degraded);
        assert_eq!(healthy_since(&status), None);
    }

    #[test]
    fn only_a_synced_and_healthy_source_is_promoted() {
        let mut status = AppStatus {
            phase: Some(Phase::Synced),
            health: Some(HealthState::Healthy),
            ..AppStatus::default()
        };
        check_source("s", &status).unwrap();
        status.health = Some(HealthState::Degraded);
        let err = check_source("s", &status).unwrap_err().to_string();
        assert!(err.contains("phase Synced, health Degraded"), "{err}");
        let err = check_source("s", &AppStatus::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("phase unknown, health unknown"), "{err}");
    }
}
