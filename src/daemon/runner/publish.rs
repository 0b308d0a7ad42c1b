//! Publishing App statuses: a background task that takes every status change, in order, to
//! the store (so a restarted daemon resumes from it) and, for Apps defined by custom resources,
//! to the resource's status subresource with a Kubernetes Event on each phase transition
//! (Synced, Held, Degraded, Failed) and on approvals and rejections. Writes never block a
//! reconcile pass; a failed write is logged and the next change writes the full status again.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, CustomResourceExt, Resource};
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::Origin;
use super::server_routes::{RemovedApp, ReportedStatus, STATUS_ROUTE};
use crate::app::targets::TargetStatus;
use crate::app::{App, AppStatus, Destination, Phase};
use crate::object::owner::FIELD_MANAGER;
use crate::server_link::ServerLink;
use crate::store::apps::AppStatusRecord;
use crate::store::{Store, StoreError};

/// One change to publish.
pub(super) enum Change {
    /// App `key` has a new status.
    Status {
        /// `namespace/name`.
        key: String,
        /// The App (its destination and name are stored alongside the status).
        app: Box<App>,
        /// Where the App is defined.
        origin: Origin,
        /// The phase before this change (a different phase is a transition worth an Event).
        previous: Option<Phase>,
        /// The new status as compact JSON text, as the runner holds it and the store keeps
        /// it (about a fifth of the parsed status's allocations, see `status_cell`); parsed
        /// again only for an App resource's status subresource and Events.
        status: Box<RawValue>,
        /// Whether the runner manages the App (only then is the status stored; an invalid
        /// App resource is reported on the resource alone).
        managed: bool,
        /// Answered once the status is written (with the store's error, if it failed).
        written: Option<oneshot::Sender<Result<(), StoreError>>>,
    },
    /// Something happened to App `key` that is worth an Event (approval, rejection).
    Note {
        /// The App.
        app: Box<App>,
        /// Where the App is defined (only resources get Events).
        origin: Origin,
        /// Normal or Warning.
        warning: bool,
        /// A CamelCase reason, e.g. `Approved`.
        reason: &'static str,
        /// The message.
        note: String,
    },
    /// App `key` is no longer managed.
    Removed {
        /// `namespace/name`.
        key: String,
    },
    /// From now on, write the status of App resources through this management client.
    Resources(Client),
    /// From now on, send statuses (and removals) to this wardn server instead of a store: an
    /// operator's report ([`super::report`]).
    Server(ServerLink),
    /// Send again the statuses the server did not take.
    Resend,
    /// Answer once every earlier change is written.
    Flush(oneshot::Sender<()>),
}

/// Why a status could not be made durable.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The store refused the write.
    #[error("storing the App status failed: {0}")]
    Store(StoreError),
    /// The publishing task is gone (the runner stopped).
    #[error("the status publisher has stopped")]
    Stopped,
}

/// The sending side of the publishing task.
pub(super) struct Publisher {
    tx: mpsc::UnboundedSender<Change>,
    task: JoinHandle<()>,
    /// Changes queued and not yet taken by the task: `/metrics` shows whether writes keep up
    /// with passes (the queue is unbounded, so passes never wait for the store).
    depth: Arc<AtomicUsize>,
    /// Reports an operator's server did not take: statuses sent here, App lists counted by
    /// the report task ([`Publisher::count_refused`]).
    refused: Arc<AtomicU64>,
}

impl Publisher {
    /// Starts the task writing to `store` (statuses are only kept in memory without one).
    pub(super) fn start(store: Option<Store>) -> Publisher {
        let (tx, mut rx) = mpsc::unbounded_channel::<Change>();
        let depth = Arc::new(AtomicUsize::new(0));
        let written = Arc::clone(&depth);
        let refused = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&refused);
        let task = tokio::spawn(async move {
            let mut writer = Writer {
                store,
                server: None,
                unsent: BTreeMap::new(),
                refused: counted,
                resources: None,
                target_phases: HashMap::new(),
            };
            while let Some(change) = rx.recv().await {
                written.fetch_sub(1, Ordering::Relaxed);
                writer.write(change).await;
            }
        });
        Publisher {
            tx,
            task,
            depth,
            refused,
        }
    }

    /// Counts one report the server did not take.
    pub(super) fn count_refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// How many reports the server did not take so far.
    pub(super) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Queues `change`.
    pub(super) fn send(&self, change: Change) {
        self.depth.fetch_add(1, Ordering::Relaxed);
        // The task ends only with the runner; a change after that has nowhere to go.
        if self.tx.send(change).is_err() {
            self.depth.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// How many changes wait behind the one being written.
    pub(super) fn depth(&self) -> usize {
        self.depth.load(Ordering::Relaxed)
    }

    /// Queues `change` and waits until it is written; for a [`Change::Status`], with the
    /// store's error if storing it failed (`Ok` without a store).
    pub(super) async fn send_and_wait(&self, mut change: Change) -> Result<(), PublishError> {
        let (done, written) = oneshot::channel();
        match &mut change {
            Change::Status { written, .. } => *written = Some(done),
            _ => {
                self.send(change);
                self.flush().await;
                return Ok(());
            }
        }
        self.send(change);
        match written.await {
            Ok(stored) => stored.map_err(PublishError::Store),
            Err(_) => Err(PublishError::Stopped),
        }
    }

    /// Waits until every change queued so far is written.
    pub(super) async fn flush(&self) {
        let (done, written) = oneshot::channel();
        self.send(Change::Flush(done));
        // An error means the task is gone: nothing is pending any more.
        let _ = written.await;
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The management cluster's side: status patches and Events.
struct Resources {
    client: Client,
    recorder: Recorder,
}

/// The state of the publishing task.
struct Writer {
    store: Option<Store>,
    /// The server statuses go to instead of a store (an operator's).
    server: Option<ServerLink>,
    /// What the server did not take, by App key: the latest status, or `None` for a removal.
    /// Sent again at [`Change::Resend`] (and dropped when a newer change of the App is sent).
    unsent: BTreeMap<String, Option<ReportedStatus>>,
    /// Counts the statuses the server did not take (see [`Publisher::refused`]).
    refused: Arc<AtomicU64>,
    resources: Option<Resources>,
    /// The last phase of each target of each App resource with targets (`namespace/name` →
    /// target → phase), from which its top-level `status.phase` is derived.
    target_phases: HashMap<String, BTreeMap<String, Phase>>,
}

/// The top-level fields of the App status schema: a merge patch sets the absent ones to null
/// so that the resource's status is replaced, not merged.
static STATUS_FIELDS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let crd = serde_json::to_value(App::crd()).unwrap_or_default();
    crd.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/status/properties")
        .and_then(Value::as_object)
        .map(|fields| fields.keys().cloned().collect())
        .unwrap_or_default()
});

/// The merge patch replacing a resource's status by `status`.
pub fn status_patch(status: &AppStatus) -> Value {
    let mut fields = match serde_json::to_value(status) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    for name in STATUS_FIELDS.iter() {
        fields.entry(name.clone()).or_insert(Value::Null);
    }
    json!({ "status": fields })
}

/// The merge patch writing target `target`'s entry of `status.targets` and the App's
/// `phase` (`worst`, the phase of its targets that most needs attention, so `kubectl get apps`
/// shows one), and clearing the other top-level fields, which an App with targets does not
/// use, but `observedGeneration`.
pub fn target_status_patch(
    target: &str,
    destination: &Destination,
    status: &AppStatus,
    worst: Option<Phase>,
) -> Value {
    let mut fields = Map::new();
    for name in STATUS_FIELDS.iter() {
        if name != "targets" && name != "observedGeneration" {
            fields.insert(name.clone(), Value::Null);
        }
    }
    fields.insert("phase".into(), json!(worst));
    if let Some(generation) = status.observed_generation {
        fields.insert("observedGeneration".into(), json!(generation));
    }
    let entry = serde_json::to_value(TargetStatus::of(destination, status)).unwrap_or(Value::Null);
    fields.insert("targets".into(), json!({ target: entry }));
    json!({ "status": fields })
}

/// Of `phases`, the one that most needs attention: Failed, Degraded, Held, Waiting, OutOfSync,
/// Progressing, then Synced.
fn worst_phase(phases: impl Iterator<Item = Phase>) -> Option<Phase> {
    let attention = |phase: &Phase| match phase {
        Phase::Failed => 6,
        Phase::Degraded => 5,
        Phase::Held => 4,
        Phase::Waiting => 3,
        Phase::OutOfSync => 2,
        Phase::Progressing => 1,
        Phase::Synced => 0,
    };
    phases.max_by_key(attention)
}

/// The Event a transition into `phase` deserves: (warning, reason).
fn transition_event(phase: Phase) -> Option<(bool, &'static str)> {
    match phase {
        Phase::Synced => Some((false, "Synced")),
        Phase::Held => Some((false, "Held")),
        Phase::Degraded => Some((true, "Degraded")),
        Phase::Failed => Some((true, "Failed")),
        Phase::OutOfSync | Phase::Progressing | Phase::Waiting => None,
    }
}

impl Writer {
    async fn write(&mut self, change: Change) {
        match change {
            Change::Flush(done) => {
                let _ = done.send(());
            }
            Change::Server(server) => self.server = Some(server),
            Change::Resend => self.resend().await,
            Change::Resources(client) => {
                let reporter = Reporter {
                    controller: FIELD_MANAGER.to_string(),
                    instance: std::env::var("HOSTNAME").ok(),
                };
                self.resources = Some(Resources {
                    recorder: Recorder::new(client.clone(), reporter),
                    client,
                });
            }
            Change::Status {
                key,
                app,
                origin,
                previous,
                status,
                managed,
                written,
            } => {
                if origin == Origin::Resource {
                    self.publish_on_resource(&key, &app, previous, &status)
                        .await;
                }
                let stored = if managed {
                    self.store(key, &app, status).await
                } else {
                    Ok(())
                };
                if let Some(written) = written {
                    let _ = written.send(stored);
                }
            }
            Change::Note {
                app,
                origin,
                warning,
                reason,
                note,
            } => {
                if origin == Origin::Resource {
                    self.event(&app, warning, reason, note).await;
                }
            }
            Change::Removed { key } => {
                self.drop_target_status(&key).await;
                if self.server.is_some() {
                    self.report(key, None).await;
                    return;
                }
                let Some(store) = &self.store else { return };
                if let Err(error) = store.delete_app_status(&key).await {
                    tracing::warn!(app = %key, %error, "cannot delete the stored App status");
                }
            }
        }
    }

    /// Writes App resource `key`'s new status (`text`) to its status subresource, with an
    /// Event when its phase changed from `previous`.
    async fn publish_on_resource(
        &mut self,
        key: &str,
        app: &App,
        previous: Option<Phase>,
        text: &RawValue,
    ) {
        let status: AppStatus = match serde_json::from_str(text.get()) {
            Ok(status) => status,
            // Not expected: the runner wrote the text from a status.
            Err(error) => {
                tracing::error!(app = %key, %error, "status text unreadable: not published");
                return;
            }
        };
        self.patch_status(key, app, &status).await;
        let transition = status
            .phase
            .filter(|p| previous != Some(*p))
            .and_then(transition_event);
        if let Some((warning, reason)) = transition {
            let note = status.message.clone().unwrap_or_default();
            self.event(app, warning, reason, note).await;
        }
    }

    async fn store(
        &mut self,
        key: String,
        app: &App,
        status: Box<RawValue>,
    ) -> Result<(), StoreError> {
        if self.server.is_some() {
            let reported = ReportedStatus {
                cluster: app.spec.destination.cluster_segment().to_string(),
                name: app.metadata.name.clone().unwrap_or_default(),
                key: key.clone(),
                status,
            };
            self.report(key, Some(reported)).await;
            return Ok(());
        }
        let Some(store) = &self.store else {
            return Ok(());
        };
        let record = AppStatusRecord {
            cluster: app.spec.destination.cluster_segment().to_string(),
            name: app.metadata.name.clone().unwrap_or_default(),
            key,
            status,
            updated_at: crate::time::now_rfc3339(),
        };
        let stored = store.put_app_status(&record).await;
        if let Err(error) = &stored {
            tracing::warn!(app = %record.key, %error, "cannot store the App status");
        }
        stored
    }

    /// Sends App `key`'s new status (`None`: its removal) to the server; what it does not
    /// take is kept for [`Writer::resend`].
    async fn report(&mut self, key: String, status: Option<ReportedStatus>) {
        let Some(server) = &self.server else { return };
        let sent = match &status {
            Some(status) => {
                server
                    .exchange::<_, IgnoredAny>(reqwest::Method::PUT, STATUS_ROUTE, Some(status))
                    .await
            }
            None => {
                let removed = RemovedApp { key: key.clone() };
                server
                    .exchange::<_, IgnoredAny>(
                        reqwest::Method::DELETE,
                        STATUS_ROUTE,
                        Some(&removed),
                    )
                    .await
            }
        };
        match sent {
            Ok(_) => {
                self.unsent.remove(&key);
            }
            Err(error) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                if self.unsent.is_empty() {
                    tracing::warn!(app = %key, %error, "cannot report the App's status to the server; sent again after the next report of the Apps");
                }
                self.unsent.insert(key, status);
            }
        }
    }

    /// Sends again what the server did not take, oldest key first, until it refuses one.
    async fn resend(&mut self) {
        while let Some((key, status)) = self.unsent.pop_first() {
            self.report(key.clone(), status).await;
            if self.unsent.contains_key(&key) {
                return;
            }
        }
    }

    async fn patch_status(&mut self, key: &str, app: &App, status: &AppStatus) {
        let (Some(namespace), Some(name)) = (&app.metadata.namespace, &app.metadata.name) else {
            return;
        };
        let patch = match &app.spec.destination.target {
            Some(target) => {
                let phases = self
                    .target_phases
                    .entry(format!("{namespace}/{name}"))
                    .or_default();
                match status.phase {
                    Some(phase) => phases.insert(target.clone(), phase),
                    None => phases.remove(target),
                };
                let worst = worst_phase(phases.values().copied());
                target_status_patch(target, &app.spec.destination, status, worst)
            }
            None => status_patch(&AppStatus {
                cluster: Some(app.spec.destination.cluster_segment().to_string()),
                ..status.clone()
            }),
        };
        self.merge_status(key, namespace, name, patch).await;
    }

    /// Drops target `key`'s entry from its App resource's `status.targets` (nothing for an
    /// App without targets: its resource is gone or its status is replaced next).
    async fn drop_target_status(&mut self, key: &str) {
        let Some((base, target)) = key.split_once(':') else {
            return;
        };
        let Some((namespace, name)) = base.split_once('/') else {
            return;
        };
        let worst = match self.target_phases.get_mut(base) {
            Some(phases) => {
                phases.remove(target);
                let worst = worst_phase(phases.values().copied());
                if phases.is_empty() {
                    self.target_phases.remove(base);
                }
                worst
            }
            None => None,
        };
        let patch = json!({ "status": { "targets": { target: null }, "phase": worst } });
        self.merge_status(key, namespace, name, patch).await;
    }

    /// Merge-patches the status subresource of App resource `namespace/name` (for App `key`).
    async fn merge_status(&self, key: &str, namespace: &str, name: &str, patch: Value) {
        let Some(resources) = &self.resources else {
            return;
        };
        let api: Api<App> = Api::namespaced(resources.client.clone(), namespace);
        let params = PatchParams::apply(FIELD_MANAGER);
        let patch = Patch::Merge(patch);
        match api.patch_status(name, &params, &patch).await {
            Ok(_) => {}
            // Deleted meanwhile: its removal follows from the watch.
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(error) => {
                tracing::warn!(app = %key, %error, "cannot write the App resource's status")
            }
        }
    }

    async fn event(&self, app: &App, warning: bool, reason: &str, note: String) {
        let Some(resources) = &self.resources else {
            return;
        };
        let note = match &app.spec.destination.target {
            Some(target) if !note.is_empty() => format!("target {target}: {note}"),
            Some(target) => format!("target {target}"),
            None => note,
        };
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_string(),
            // The API server limits a note to 1 kB.
            note: (!note.is_empty()).then(|| truncate(note, 1024)),
            action: "Reconcile".to_string(),
            secondary: None,
        };
        if let Err(error) = resources
            .recorder
            .publish(&event, &app.object_ref(&()))
            .await
        {
            tracing::warn!(app = ?app.metadata.name, %error, "cannot record an Event on the App");
        }
    }
}

/// `text` cut to at most `max` bytes on a character boundary.
fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The depth counts every queued change until it is written, over a thousand changes
    /// queued before the task first runs (a current-thread runtime runs it only when the test
    /// waits).
    #[tokio::test(flavor = "current_thread")]
    async fn the_queue_depth_counts_changes_until_they_are_written() {
        let publisher = Publisher::start(None);
        for _ in 0..1_000 {
            publisher.send(Change::Removed {
                key: "team/web".into(),
            });
        }
        assert_eq!(publisher.depth(), 1_000);
        publisher.flush().await;
        assert_eq!(publisher.depth(), 0);
        for round in 1..=3 {
            publisher.send(Change::Removed {
                key: "team/api".into(),
            });
            assert_eq!(publisher.depth(), 1, "round {round}");
            publisher.flush().await;
            assert_eq!(publisher.depth(), 0, "round {round}");
        }
    }

    #[test]
    fn status_patches_clear_absent_fields() {
        let status = AppStatus {
            phase: Some(Phase::Synced),
            observed_generation: Some(3),
            ..Default::default()
        };
        let patch = status_patch(&status);
        assert_eq!(patch["status"]["phase"], "Synced");
        assert_eq!(patch["status"]["observedGeneration"], 3);
        assert_eq!(patch["status"]["planHash"], Value::Null);
        assert!(
            patch["status"]
                .as_object()
                .unwrap()
                .contains_key("planHash")
        );
        assert!(
            patch["status"]
                .as_object()
                .unwrap()
                .contains_key("inventory")
        );
    }

    #[test]
    fn target_patches_write_their_entry_alone() {
        let destination = Destination {
            cluster: "prod".into(),
            namespace: "shop".into(),
            target: Some("prod".into()),
            ..Destination::default()
        };
        let status = AppStatus {
            phase: Some(Phase::Held),
            plan_hash: Some("abc".into()),
            observed_generation: Some(2),
            ..Default::default()
        };
        let patch = target_status_patch("prod", &destination, &status, Some(Phase::Failed));
        let target = &patch["status"]["targets"]["prod"];
        assert_eq!(
            (&target["cluster"], &target["phase"], &target["planHash"]),
            (&json!("prod"), &json!("Held"), &json!("abc"))
        );
        assert_eq!(patch["status"]["observedGeneration"], 2);
        assert_eq!(patch["status"]["phase"], "Failed");
        assert!(
            patch["status"]
                .as_object()
                .unwrap()
                .contains_key("planHash")
        );
    }

    #[test]
    fn the_apps_phase_is_its_targets_phase_that_most_needs_attention() {
        use Phase::*;
        assert_eq!(
            worst_phase([Synced, Held, Progressing].into_iter()),
            Some(Held)
        );
        assert_eq!(
            worst_phase([Synced, Failed, Degraded].into_iter()),
            Some(Failed)
        );
        assert_eq!(worst_phase([Synced, Synced].into_iter()), Some(Synced));
        assert_eq!(worst_phase(std::iter::empty()), None);
    }

    #[test]
    fn only_meaningful_phases_get_events_and_notes_are_bounded() {
        assert_eq!(transition_event(Phase::Failed), Some((true, "Failed")));
        assert_eq!(transition_event(Phase::Held), Some((false, "Held")));
        assert_eq!(transition_event(Phase::Progressing), None);
        assert_eq!(truncate("é".repeat(600), 1024).len(), 1024);
        assert_eq!(truncate("ab".into(), 1), "a");
    }
}
