//! The wire contract between an operator and its wardn server for the operator's reports
//! (see [`super::report`]): the routes and their bodies, shared by the operator that sends
//! them and the server's handlers that take them.

use kube::api::ObjectMeta;
use serde_json::value::RawValue;

use crate::app::App;
use crate::app::promotion::PinnedImage;
use crate::store::promotions::PromotionRecord;

/// The route an operator reports its Apps to (`{operator}`: its replica id).
pub const APPS_ROUTE: &str = "/internal/operators/{operator}/apps";
/// The route an operator sends a sign of life to between two reports of its Apps
/// ([`Heartbeat`]): one row written on the server, whatever the size of its fleet.
pub const HEARTBEAT_ROUTE: &str = "/internal/operators/{operator}/heartbeat";
/// The route an operator reports a status to (`PUT`), or an App's removal (`DELETE`).
pub const STATUS_ROUTE: &str = "/internal/app-status";

/// The route an operator reads an App that another operator reports from (`GET ?key=`, or
/// `?name=[&cluster=]` as `spec.promotion.from` names it; answered with a [`ReportedApp`]):
/// the source of a promotion into one of its Apps when the source is not among its own
/// `--apps` (see [`ReportedAppQuery`]).
pub const REPORTED_APP_ROUTE: &str = "/internal/reported-apps";

/// The query of [`REPORTED_APP_ROUTE`]: `key`, or `name` (and `cluster`).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportedAppQuery {
    /// The App's key (`namespace/name`, a target's `namespace/name:target`).
    pub key: Option<String>,
    /// The App's name (`NAME` or `NAME:TARGET`), as a promotion's `from` names it.
    pub name: Option<String>,
    /// With `name`: its destination cluster (segment).
    pub cluster: Option<String>,
}

/// The route an operator records the automatic promotions it performs at (`POST` a pending
/// promotion record of actor `wardn/autoPromote`, answered with its [`NewPromotion`] id), so
/// that they are in the server's promotion history and audit log as every promotion asked
/// for there is.
pub const PROMOTIONS_ROUTE: &str = "/internal/promotions";
/// The route an operator finishes such a record at (`PUT` a [`FinishedPromotion`]).
pub const PROMOTION_ROUTE: &str = "/internal/promotions/{id}";

/// The answer of [`PROMOTIONS_ROUTE`]: the id the record was stored under.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewPromotion {
    /// The record's id.
    pub id: i64,
}

/// The body of [`PROMOTION_ROUTE`]: the record with its outcome, and its audit entry.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishedPromotion {
    /// The record, as the pass left it.
    pub record: PromotionRecord<Vec<PinnedImage>>,
    /// The audit entry's outcome text.
    pub audit: String,
}

/// The body of [`APPS_ROUTE`]: every App the operator reconciles (targets expanded).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedApps {
    /// The Apps.
    pub apps: Vec<ReportedApp>,
}

/// One reported App: the App, and what expanding it set on its destination, which an App's
/// own JSON leaves out (a target's name makes its key, `namespace/name:target`).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedApp {
    /// The App as its resource or file defines it.
    pub app: App,
    /// The template its destination cluster came from, if any.
    #[serde(default)]
    pub cluster_template: Option<String>,
    /// Its target, for one target of an App with `spec.targets`.
    #[serde(default)]
    pub target: Option<String>,
    /// Whether it is its App's first target.
    #[serde(default)]
    pub primary: bool,
}

impl ReportedApp {
    /// The report of `app`, as expanded: its name, namespace, labels, annotations and spec.
    /// What an App resource carries besides (its status, resource version, managed fields)
    /// changes with every status wardn writes to it and means nothing to the server: left
    /// out, so a report changes only when the App does.
    pub fn of(app: &App) -> ReportedApp {
        let destination = &app.spec.destination;
        let metadata = &app.metadata;
        let trimmed = App {
            metadata: ObjectMeta {
                name: metadata.name.clone(),
                namespace: metadata.namespace.clone(),
                labels: metadata.labels.clone(),
                annotations: metadata.annotations.clone(),
                ..ObjectMeta::default()
            },
            spec: app.spec.clone(),
            status: None,
        };
        ReportedApp {
            app: trimmed,
            cluster_template: destination.cluster_template.clone(),
            target: destination.target.clone(),
            primary: destination.primary,
        }
    }

    /// The App as the operator holds it, expansion included.
    pub fn into_app(self) -> App {
        let mut app = self.app;
        app.spec.destination.cluster_template = self.cluster_template;
        app.spec.destination.target = self.target;
        app.spec.destination.primary = self.primary;
        app
    }
}

/// The digest of a report of Apps: the SHA-256 of the body sent to [`APPS_ROUTE`], in hex. The
/// operator and the server each work it out from the same bytes, so a heartbeat names the
/// report it vouches for without sending it again.
pub fn report_digest(body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(body))
}

/// Whether `text` could be a [`report_digest`]: 64 lowercase hexadecimal digits.
pub fn is_report_digest(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The body of [`HEARTBEAT_ROUTE`]: the operator still reconciles the Apps of the report whose
/// [`report_digest`] is `digest`. The server answers 204, or 409 when it holds another report
/// of this operator, or none: the operator then sends its Apps again.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    /// The digest of the operator's last report taken.
    pub digest: String,
}

/// The body of [`STATUS_ROUTE`]'s `PUT`: one App's new status.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedStatus {
    /// The App's key, `namespace/name`.
    pub key: String,
    /// Its destination cluster segment.
    pub cluster: String,
    /// Its name.
    pub name: String,
    /// The status (JSON).
    pub status: Box<RawValue>,
}

/// The body of [`STATUS_ROUTE`]'s `DELETE`: an App the operator no longer manages.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemovedApp {
    /// The App's key, `namespace/name`.
    pub key: String,
}

/// The most statuses one answer of [`STATUS_ROUTE`]'s `GET` holds.
pub const MAX_STATUSES_PER_PAGE: u32 = 500;

/// The query of [`STATUS_ROUTE`]'s `GET`: one page of the stored statuses, in key order.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusesQuery {
    /// Only this App's status (`namespace/name`): at most one, and no other parameter.
    pub key: Option<String>,
    /// Only the Apps deploying to this cluster (segment).
    pub cluster: Option<String>,
    /// Only keys after this one (the previous page's `next`).
    pub after: Option<String>,
    /// At most this many (at most [`MAX_STATUSES_PER_PAGE`], the default).
    pub limit: Option<u32>,
}

/// The answer of [`STATUS_ROUTE`]'s `GET`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredStatuses {
    /// The statuses of this page.
    pub statuses: Vec<StoredStatus>,
    /// The key to read the next page after; `None` on the last page.
    pub next: Option<String>,
}

/// One stored status.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredStatus {
    /// The App's key.
    pub key: String,
    /// Its status (JSON).
    pub status: Box<RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::key::app_key;
    use crate::app::targets::expand;

    /// Differential against the operator's own expansion: each target of an App with
    /// `spec.targets`, and an App routed by a cluster template, reads back from a report's
    /// JSON as the operator holds it (same key, target, template and primary), though the
    /// App's own JSON leaves those out.
    #[test]
    fn a_reported_app_reads_back_as_the_operator_expanded_it() {
        let yaml = "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: web\n  namespace: team\n  labels: {env: prod}\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: /srv\n\
             \x20 destination: {namespace: shop}\n\
             \x20 targets: {eu: {cluster: 'eu-{{ .metadata.labels.env }}', primary: true}, us: {cluster: us-1}}\n";
        let app: App = serde_saphyr::from_str(yaml).unwrap();
        let expanded = expand(&app).unwrap();
        assert_eq!(expanded.len(), 2);
        for app in &expanded {
            let text = serde_json::to_string(&ReportedApp::of(app)).unwrap();
            let back = serde_json::from_str::<ReportedApp>(&text)
                .unwrap()
                .into_app();
            assert_eq!(app_key(&back), app_key(app));
            assert_eq!(back.spec.destination.target, app.spec.destination.target);
            assert_eq!(
                back.spec.destination.cluster_template,
                app.spec.destination.cluster_template
            );
            assert_eq!(back.spec.destination.primary, app.spec.destination.primary);
            assert_eq!(back.spec, app.spec);
            // The App's own JSON alone loses the target, and so the key.
            let bare: App = serde_json::from_str(&serde_json::to_string(app).unwrap()).unwrap();
            assert_ne!(app_key(&bare), app_key(app));
        }
        let keys: Vec<String> = expanded.iter().map(app_key).collect();
        assert_eq!(keys, ["team/web:eu", "team/web:us"]);
    }

    /// What an App resource gains from wardn's status writes (a status, a new resource
    /// version, managed fields) leaves its report as it was; a changed label does not.
    #[test]
    fn a_report_changes_with_the_app_and_not_with_its_status_writes() {
        let yaml = "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: web\n  namespace: team\n  labels: {env: prod}\n  annotations: {note: x}\n  resourceVersion: '1'\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: /srv\n\
             \x20 destination: {cluster: east, namespace: shop}\n";
        let app: App = serde_saphyr::from_str(yaml).unwrap();
        let report = |app: &App| serde_json::to_string(&ReportedApp::of(app)).unwrap();
        let mut written = app.clone();
        written.metadata.resource_version = Some("2".into());
        written.metadata.managed_fields = Some(vec![Default::default()]);
        written.metadata.uid = Some("0f0f".into());
        written.status = Some(Box::default());
        assert_eq!(report(&written), report(&app));
        let back = serde_json::from_str::<ReportedApp>(&report(&app))
            .unwrap()
            .into_app();
        assert_eq!(back.metadata.labels, app.metadata.labels);
        assert_eq!(back.metadata.annotations, app.metadata.annotations);
        assert_eq!(back.spec, app.spec);
        let mut relabelled = app.clone();
        relabelled
            .metadata
            .labels
            .get_or_insert_default()
            .insert("env".into(), "stage".into());
        assert_ne!(report(&relabelled), report(&app));
    }
}
