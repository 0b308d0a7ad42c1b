//! The App custom resource (`cd.wardn.space/v1alpha1`, kind `App`): what to deploy
//! (`spec.source`), where (`spec.destination`), how (`spec.syncPolicy`), and what wardn last
//! did (`status`). `wardn crd` prints its CustomResourceDefinition. Beside it: the App's key
//! ([`key`]), its sync windows ([`window`]) and App files (`--apps DIR`, [`files`]).

pub mod files;
pub mod key;
pub mod promotion;
pub mod routing;
pub mod targets;
pub mod template;
pub mod window;

use std::collections::BTreeMap;

use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::object::ObjectRef;
use crate::sources::spec::SourceSpec;

/// The URL segment that names the management cluster (an App with an empty
/// `destination.cluster`), as in `/api/v1/apps/local/{name}`.
pub const LOCAL_CLUSTER: &str = "local";

/// `spec` of an App: a source to render and a destination to reconcile it into.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cd.wardn.space",
    version = "v1alpha1",
    kind = "App",
    plural = "apps",
    doc = "An App: manifests from a Git source, rendered and reconciled into a destination cluster.",
    namespaced,
    // Boxed: the runner holds every App of the fleet with no status in it (it keeps statuses
    // as text), and inline the unused status took a third of each App's 1.2 KB. (Not a doc
    // comment: this type's doc is the CRD's description of `spec`.)
    status = "Box<AppStatus>",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".status.cluster"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Revision","type":"string","jsonPath":".status.revision"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AppSpec {
    /// Where the manifests come from (Git or a local directory).
    pub source: SourceSpec,
    /// The cluster and default namespace the manifests are applied to.
    pub destination: Destination,
    /// Named targets fanning the App out to several destinations (see [`targets`]): each is
    /// planned, Held, approved, promoted and reported on its own. Empty: the App deploys to
    /// `destination` alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub targets: BTreeMap<String, targets::Target>,
    /// When and how wardn applies changes.
    #[serde(default)]
    pub sync_policy: SyncPolicy,
    /// Where digest promotions into this App come from, their soak time and whether they
    /// happen on their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion: Option<promotion::PromotionPolicy>,
    /// Where to send this App's notifications (Held with the plan summary and an approve
    /// link, approved, rejected, promoted, Degraded, Failed), besides `--notify-url`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notify: Vec<crate::notify::Target>,
}

/// `spec.destination`: the target cluster and namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Destination {
    /// A registered cluster's name; empty means the management cluster itself. May be a
    /// template evaluated against the App (see [`routing`]); once resolved, this holds the
    /// cluster's name and the template is in [`Destination::cluster_template`].
    #[serde(default)]
    pub cluster: String,
    /// The template `cluster` was resolved from, if it was one (never read from or written to
    /// an App's YAML: it is `cluster` there).
    #[serde(skip)]
    #[schemars(skip)]
    pub cluster_template: Option<String>,
    /// The named target (`spec.targets.NAME`) this destination was expanded from, if any
    /// (never read from or written to an App's YAML; see [`targets::expand`]).
    #[serde(skip)]
    #[schemars(skip)]
    pub target: Option<String>,
    /// Whether that target is the App's `primary: true` one (answers for the App when a
    /// request names no target).
    #[serde(skip)]
    #[schemars(skip)]
    pub primary: bool,
    /// The namespace namespaced objects without one are placed in; it must be allowed on the
    /// cluster.
    pub namespace: String,
}

impl Destination {
    /// The cluster's URL segment: its name, or [`LOCAL_CLUSTER`] for the management cluster.
    pub fn cluster_segment(&self) -> &str {
        if self.cluster.is_empty() {
            LOCAL_CLUSTER
        } else {
            &self.cluster
        }
    }

    /// The field the cluster is read from, for errors: `spec.destination.cluster`, or
    /// `spec.targets.NAME.cluster` for a target.
    pub fn cluster_field(&self) -> String {
        self.field("cluster")
    }

    /// The field the namespace is read from, for errors: `spec.destination.namespace`, or
    /// `spec.targets.NAME.namespace` for a target.
    pub fn namespace_field(&self) -> String {
        self.field("namespace")
    }

    fn field(&self, name: &str) -> String {
        match &self.target {
            Some(target) => format!("spec.targets.{target}.{name}"),
            None => format!("spec.destination.{name}"),
        }
    }
}

/// `spec.syncPolicy`: automation, pruning, self-healing, approval gate and sync windows.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncPolicy {
    /// Apply new revisions without a manual sync.
    #[serde(default)]
    pub automated: bool,
    /// Delete objects wardn applied earlier that are no longer rendered.
    #[serde(default)]
    pub prune: bool,
    /// Re-apply when managed objects drift from the rendered state (without a new revision).
    #[serde(default)]
    pub self_heal: bool,
    /// Stage every change as a Held plan that must be approved before it is applied.
    #[serde(default)]
    pub requires_approval: bool,
    /// With `requiresApproval`: a Held plan may not be approved by a user who triggered a
    /// sync or refresh that produced it, nor by the user whose email is the Git commit
    /// author's of its revision (four-eyes).
    #[serde(default)]
    pub four_eyes: bool,
    /// Take over rendered objects whose owner annotation names another App (each takeover is
    /// logged, audited and recorded in the status and Events). Without it such an object is
    /// left untouched and the App reports a `SharedResource` condition.
    #[serde(default)]
    pub adopt: bool,
    /// Time windows that allow or deny automated syncs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sync_windows: Vec<SyncWindow>,
}

/// Whether a sync window permits or blocks syncs while it is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WindowKind {
    /// Automated syncs may only run while some allow window is open.
    Allow,
    /// Automated syncs are blocked while the window is open.
    Deny,
}

/// One entry of `spec.syncPolicy.syncWindows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncWindow {
    /// `allow` or `deny`.
    pub kind: WindowKind,
    /// When the window opens: a cron expression of 5 fields (minute hour day month weekday),
    /// or 6 with seconds first, or 7 with seconds first and year last. Weekdays: 0 or 7 =
    /// Sunday, 1 = Monday, or names (`MON`).
    pub schedule: String,
    /// How long it stays open, e.g. `1h`, `30m`, `1h30m`.
    pub duration: String,
    /// The IANA time zone the schedule is read in (default UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// The App's lifecycle phase, as shown by `kubectl get apps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    /// The cluster matches the rendered revision.
    Synced,
    /// The cluster differs and wardn will not apply on its own (manual sync or drift report).
    OutOfSync,
    /// Applied; waiting for objects to become healthy.
    Progressing,
    /// A plan waits for approval (or was stopped by the prune guard).
    Held,
    /// A deny sync window (or no open allow window) blocks the sync.
    Waiting,
    /// Applied, but objects did not become healthy in time, or a rendered object belongs to
    /// another App and was left untouched (the `SharedResource` condition names it).
    Degraded,
    /// The pipeline failed (render, allowlist, API errors); see the message.
    Failed,
}

/// The aggregate health of the App's objects after the last apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum HealthState {
    /// Every object reports ready.
    Healthy,
    /// Some object is still rolling out.
    Progressing,
    /// Some object failed or did not become ready before the timeout.
    Degraded,
}

/// Counts of what a plan does, kept in status and shown by the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanSummary {
    /// Objects the cluster does not have yet.
    pub creates: u32,
    /// Objects whose live state differs from the rendered one.
    pub updates: u32,
    /// Objects already as rendered.
    pub unchanged: u32,
    /// Previously applied objects that are no longer rendered and will be deleted.
    pub prunes: u32,
}

/// A status condition (`Ready`, `Reconciling`, `Stalled`), kstatus-style.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready`, `Reconciling` or `Stalled`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase reason (usually the phase).
    pub reason: String,
    /// Human-readable detail.
    #[serde(default)]
    pub message: String,
    /// When the status last changed (RFC 3339).
    pub last_transition_time: String,
}

/// `status` of an App: the outcome of the last reconcile.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppStatus {
    /// The cluster the App deploys to: its `spec.destination.cluster` as resolved (a
    /// template's result), `local` for the management cluster. Written on App resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// The lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The source revision of the last pass, whether it succeeded or failed (e.g. a commit id):
    /// a Failed App names the revision that failed; `synced_revision` is the last one applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// sha256 of the rendered manifests last reconciled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered_digest: Option<String>,
    /// The revision last applied successfully (drift versus new revision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_revision: Option<String>,
    /// The rendered digest last applied successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_digest: Option<String>,
    /// What the current plan does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanSummary>,
    /// The hash of the current plan; an approval must name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_hash: Option<String>,
    /// When the current plan was Held (RFC 3339), for approval expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_at: Option<String>,
    /// Every object wardn has applied and still manages; prune only ever deletes from here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inventory: Vec<ObjectRef>,
    /// The aggregate health after the last apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthState>,
    /// `Ready`, `Reconciling` and `Stalled` conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// When the last successful apply finished (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_synced_at: Option<String>,
    /// Why the App is in its phase (hold reason, next window opening, error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The `metadata.generation` of the App resource this status reflects (absent for Apps
    /// from `--apps` files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The images a promotion pinned on this App (applied to every render until the next
    /// promotion or an unpin), and where they come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted_from: Option<promotion::PromotedFrom>,
    /// For an App resource with `spec.targets`: each target's status, by target name (the
    /// fields above then stay empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub targets: BTreeMap<String, targets::TargetStatus>,
}

/// Why the CRD could not be printed.
#[derive(Debug, thiserror::Error)]
#[error("cannot serialise the App CRD to YAML: {0}")]
pub struct CrdError(String);

/// The App CustomResourceDefinition as YAML, for `wardn crd | kubectl apply -f -`.
pub fn crd_yaml() -> Result<String, CrdError> {
    serde_saphyr::to_string(&App::crd()).map_err(|e| CrdError(e.to_string()))
}
