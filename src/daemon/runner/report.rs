//! An operator's reports to its wardn server, so the server lists the operator's Apps and
//! people approve, sync and promote them through it: the Apps the operator reconciles
//! (`PUT /internal/operators/{operator}/apps`, when they change and every
//! [`REPORT_AT_LEAST_EVERY`] as a sign of life), each status change
//! (`PUT /internal/app-status`, from the publishing task, see [`super::publish`]), and the
//! operations the server hands over ([`super::operations::server_requests`]); the statuses
//! are read back from the server when the operator starts or takes clusters over. All with the
//! internal token, through the operator's [`ServerLink`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::Runner;
use super::operations::server_requests::ServerRequests;
use super::publish::Change;
use super::server_routes::{APPS_ROUTE, ReportedApp, ReportedApps, STATUS_ROUTE, StoredStatuses};
use super::status_cell::StatusCell;
use crate::server_link::ServerLink;

/// How often the operator looks whether its Apps changed.
const LOOK_EVERY: Duration = Duration::from_secs(2);
/// The longest time between two reports of the same Apps: well inside the server's
/// [`crate::store::operator_apps::REPORTED_FOR_MS`], after which they would expire.
pub const REPORT_AT_LEAST_EVERY: Duration = Duration::from_secs(30);

/// Hands `each` the statuses `server` stores (of the Apps deploying to `cluster`, when given),
/// a page of [`super::server_routes::MAX_STATUSES_PER_PAGE`] at a time; returns how many.
async fn read_statuses(
    server: &ServerLink,
    cluster: Option<&str>,
    mut each: impl FnMut(String, Box<RawValue>),
) -> Result<usize, String> {
    let encode = |text: &str| utf8_percent_encode(text, NON_ALPHANUMERIC).to_string();
    let mut after = String::new();
    let mut count = 0;
    loop {
        let mut path = format!("{STATUS_ROUTE}?after={}", encode(&after));
        if let Some(cluster) = cluster {
            path.push_str(&format!("&cluster={}", encode(cluster)));
        }
        let page: StoredStatuses = server.get_json(&path).await.map_err(|e| e.to_string())?;
        for stored in page.statuses {
            each(stored.key, stored.status);
            count += 1;
        }
        match page.next {
            Some(next) if next > after => after = next,
            _ => return Ok(count),
        }
    }
}

impl Runner {
    /// Makes `server` this operator's server: from now on statuses go to it (the publishing
    /// task sends each change), and the statuses of the clusters this runner takes over are
    /// read back from it ([`Runner::reload_from_server`]). Call before joining a fleet.
    pub fn link_server(&self, server: ServerLink) {
        self.publisher.send(Change::Server(server.clone()));
        let _ = self.server.set(server);
    }

    /// Loads the statuses the server stores, as [`Runner::restore`] loads a store's, so a
    /// restarted unsharded operator keeps its Held plans and inventories. Call after
    /// [`Runner::link_server`] and before adding Apps; returns how many were loaded.
    pub async fn restore_from_server(&self) -> Result<usize, String> {
        let Some(server) = self.server.get() else {
            return Ok(0);
        };
        read_statuses(server, None, |key, status| {
            self.restored.lock().insert(key, StatusCell::stored(status));
        })
        .await
    }

    /// Takes the statuses the server stores for the Apps of `clusters` as theirs: a sharded
    /// operator that takes clusters over continues where their previous owner stopped (a Held
    /// plan stays Held, the inventory stays exact for prune).
    pub(super) async fn reload_from_server(
        &self,
        clusters: &std::collections::BTreeSet<String>,
    ) -> Result<(), String> {
        let Some(server) = self.server.get() else {
            return Ok(());
        };
        for cluster in clusters {
            read_statuses(server, Some(cluster), |key, status| {
                if let Some(record) = self.apps.lock().get_mut(&key)
                    && record.app.spec.destination.cluster_segment() == cluster
                {
                    record.status.store_text(status);
                }
            })
            .await?;
        }
        Ok(())
    }

    /// Reports to the linked server ([`Runner::link_server`]) as operator `operator` until the
    /// runner stops: the Apps it reconciles, and the operations the server hands over,
    /// performed here. Nothing without a linked server.
    pub fn report_to(self: &Arc<Self>, operator: String) {
        let Some(server) = self.server.get().cloned() else {
            return;
        };
        let requests = Arc::new(ServerRequests::new(server.clone()));
        let handovers = tokio::spawn(Arc::clone(self).serve_handovers(requests, operator.clone()));
        let this = Arc::clone(self);
        let reports = tokio::spawn(async move { this.report_apps(server, operator).await });
        self.tasks.lock().extend([handovers, reports]);
    }

    /// The Apps this process reconciles now: all of them, or its share when sharded.
    fn reconciled_apps(&self) -> Vec<ReportedApp> {
        self.apps
            .lock()
            .values()
            .filter(|r| {
                r.operator.is_none() && self.owns_cluster(r.app.spec.destination.cluster_segment())
            })
            .map(|r| ReportedApp::of(&r.app))
            .collect()
    }

    /// Every [`LOOK_EVERY`], sends the reconciled Apps when they changed since the last report
    /// the server took, or [`REPORT_AT_LEAST_EVERY`] passed. A server that cannot be reached
    /// is logged when it starts and when it stops failing; after each report taken, statuses
    /// that could not be sent are sent again.
    async fn report_apps(self: Arc<Self>, server: ServerLink, operator: String) {
        let path = APPS_ROUTE.replace("{operator}", &operator);
        let mut ticker = tokio::time::interval(LOOK_EVERY);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut taken: Option<([u8; 32], Instant)> = None;
        let mut failing = false;
        loop {
            ticker.tick().await;
            let report = ReportedApps {
                apps: self.reconciled_apps(),
            };
            // Encoded once: its digest tells whether it changed, and it is sent as it is.
            let body = match serde_json::value::to_raw_value(&report) {
                Ok(body) => body,
                Err(error) => {
                    tracing::error!(%error, "cannot encode the Apps to report");
                    continue;
                }
            };
            let digest: [u8; 32] = Sha256::digest(body.get()).into();
            if taken
                .is_some_and(|(last, at)| last == digest && at.elapsed() < REPORT_AT_LEAST_EVERY)
            {
                continue;
            }
            let sent = server
                .exchange::<_, serde::de::IgnoredAny>(reqwest::Method::PUT, &path, Some(&body))
                .await;
            match sent {
                Ok(_) => {
                    if failing {
                        tracing::info!(server = %server.base(), "the server takes this operator's reports again");
                        failing = false;
                    }
                    taken = Some((digest, Instant::now()));
                    self.publisher.send(Change::Resend);
                }
                Err(error) => {
                    self.publisher.count_refused();
                    if !failing {
                        tracing::warn!(server = %server.base(), %error,
                            "cannot report this operator's Apps to the server; retrying");
                        failing = true;
                    }
                }
            }
        }
    }
}
