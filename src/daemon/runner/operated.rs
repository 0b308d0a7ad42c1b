//! Apps that operator-role processes reconcile, as a `--role server` process holds them. The
//! server reconciles nothing and reads no `--apps`, so each operator reports the Apps it
//! reconciles ([`super::report`], into [`crate::store::operator_apps`]) and the server keeps a
//! record of each that it never loads: the API lists them with the statuses their operators
//! store, and every operation on one is handed to its operator through the store's
//! `app_requests`, as between sharded replicas ([`super::operations`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::operations::handover::{requests_kept_for, sweep_requests};
use super::server_routes::ReportedApp;
use super::status_cell::StatusCell;
use super::{AppRecord, Origin, Runner};
use crate::app::App;
use crate::app::key::app_key;
use crate::sources::spec::Source;
use crate::sources::url::SourceKey;
use crate::store::Store;
use crate::store::operator_apps::{OperatorAppsVersion, REPORTED_FOR_MS};

/// How often the server looks whether the reported Apps changed.
const READ_EVERY: Duration = Duration::from_secs(2);
/// Every how many looks the reported Apps are read whatever the version says.
const FULL_READ_EVERY: u64 = 30;
/// Every how many looks the handed-over requests no asker waits for are deleted (operators
/// read them through this server and do not sweep its store).
const SWEEP_EVERY: u64 = 30;

/// The share of one operator as its reports show it: the destination clusters of the Apps it
/// reported and how many Apps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorShare {
    /// The clusters (segments), sorted.
    pub clusters: Vec<String>,
    /// How many Apps it reconciles.
    pub apps: usize,
}

impl Runner {
    /// The share of each operator that reported Apps to this server, by operator id.
    pub fn operator_shares(&self) -> BTreeMap<String, OperatorShare> {
        let mut shares: BTreeMap<String, OperatorShare> = BTreeMap::new();
        for record in self.apps.lock().values() {
            let Some(operator) = record.operator.as_deref() else {
                continue;
            };
            let share = shares.entry(operator.to_string()).or_default();
            share.apps += 1;
            let cluster = record.app.spec.destination.cluster_segment();
            if let Err(at) = share.clusters.binary_search_by(|c| c.as_str().cmp(cluster)) {
                share.clusters.insert(at, cluster.to_string());
            }
        }
        shares
    }

    /// The operator (its replica id) that reconciles App `key`, when an operator reported it
    /// to this server; `None` for an App this process reconciles, or none by that key.
    pub fn operator_of(&self, key: &str) -> Option<String> {
        self.apps
            .lock()
            .get(key)
            .and_then(|r| r.operator.as_deref().map(str::to_string))
    }

    /// Follows the Apps the operators report into `store` until the runner stops: every
    /// [`READ_EVERY`], when their version changed (and every [`FULL_READ_EVERY`] looks in any
    /// case), the Apps reported within [`REPORTED_FOR_MS`] become this runner's operated
    /// records; now and then, the handed-over requests no asker waits for are deleted. A
    /// `--role server` process calls it; nothing else writes those records.
    pub fn follow_operators(self: &Arc<Self>, store: Store) {
        let this = Arc::clone(self);
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(READ_EVERY);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut seen: Option<OperatorAppsVersion> = None;
            for step in 0u64.. {
                ticker.tick().await;
                if step % SWEEP_EVERY == 0 {
                    let age = requests_kept_for(this.options.health_timeout);
                    sweep_requests(&store, age).await;
                }
                let since = jiff::Timestamp::now().as_millisecond() - REPORTED_FOR_MS;
                let version = match store.operator_apps_version(since).await {
                    Ok(version) => version,
                    Err(error) => {
                        tracing::warn!(%error, "cannot read the Apps the operators reported");
                        continue;
                    }
                };
                if seen == Some(version) && step % FULL_READ_EVERY != 0 {
                    continue;
                }
                match store.operator_apps(since).await {
                    Ok(rows) => {
                        let reported = rows
                            .into_iter()
                            .filter_map(|row| match serde_json::from_str::<ReportedApp>(&row.app) {
                                Ok(reported) => Some((reported.into_app(), row.operator)),
                                Err(error) => {
                                    tracing::warn!(app = %row.app_key, operator = %row.operator,
                                        %error, "a reported App cannot be read; not listed");
                                    None
                                }
                            })
                            .collect();
                        this.set_operated(reported);
                        seen = Some(version);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot read the Apps the operators reported");
                    }
                }
            }
        });
        self.tasks.lock().push(task);
    }

    /// Makes `reported` (each App with the operator reconciling it) this runner's operated
    /// records: new ones are added, changed ones updated, and those no longer reported
    /// dropped. Their statuses are their operators' (read from the store), so nothing is
    /// published. An App this process reconciles itself is never replaced.
    pub(super) fn set_operated(&self, reported: Vec<(App, String)>) {
        let keys: BTreeSet<String> = reported.iter().map(|(app, _)| app_key(app)).collect();
        let mut apps = self.apps.lock();
        apps.retain(|key, record| record.operator.is_none() || keys.contains(key));
        for (app, operator) in reported {
            let key = app_key(&app);
            match apps.get_mut(&key) {
                Some(record) if record.operator.is_some() => {
                    record.app = app;
                    record.operator = Some(operator.into());
                }
                Some(_) => {
                    tracing::warn!(app = %key, %operator,
                        "an operator reports an App this process reconciles itself; ignored");
                }
                None => {
                    let source_key = match app.spec.source.validate() {
                        Ok(Source::Git(git)) => git.url.key,
                        Ok(Source::Directory(path)) => SourceKey::elsewhere(&path),
                        Err(error) => {
                            tracing::warn!(app = %key, %operator, %error,
                                "a reported App has an invalid source; not listed");
                            continue;
                        }
                    };
                    apps.insert(
                        key,
                        Box::new(AppRecord {
                            app,
                            origin: Origin::Operator,
                            source_key,
                            watch: None,
                            status: StatusCell::default(),
                            manifests: None,
                            verified: None,
                            operation: None,
                            removed: None,
                            loaded: false,
                            operator: Some(operator.into()),
                        }),
                    );
                }
            }
        }
    }
}
