//! An operator's reports to its wardn server, so the server lists the operator's Apps and
//! people approve, sync and promote them through it: the Apps the operator reconciles
//! (`PUT /internal/operators/{operator}/apps` when they change; in between, every
//! [`REPORT_AT_LEAST_EVERY`], a heartbeat naming the last report's digest as a sign of life,
//! so an idle fleet of ten thousand Apps costs the server one row a period), each status change
//! (`PUT /internal/app-status`, from the publishing task, see [`super::publish`]), and the
//! operations the server hands over ([`super::operations::server_requests`]); the statuses
//! are read back from the server when the operator starts or takes clusters over. All with the
//! internal token, through the operator's [`ServerLink`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{Method, StatusCode};
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use super::Runner;
use super::operations::server_requests::ServerRequests;
use super::publish::Change;
use super::server_routes::{
    APPS_ROUTE, FinishedPromotion, HEARTBEAT_ROUTE, Heartbeat, NewPromotion, PROMOTION_ROUTE,
    PROMOTIONS_ROUTE, REPORTED_APP_ROUTE, ReportedApp, ReportedAppQuery, ReportedApps,
    STATUS_ROUTE, StoredStatuses, report_digest,
};
use super::status_cell::StatusCell;
use crate::app::App;
use crate::server_link::{ExchangeError, ServerLink};

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

    /// The status the server stores for App `key` (as text), if any: a sharded operator reads
    /// so the status of an App another operator reconciles (a promotion's source).
    pub(super) async fn status_from_server(
        &self,
        key: &str,
    ) -> Result<Option<Box<RawValue>>, String> {
        let Some(server) = self.server.get() else {
            return Ok(None);
        };
        let encoded = utf8_percent_encode(key, NON_ALPHANUMERIC);
        let page: StoredStatuses = server
            .get_json(&format!("{STATUS_ROUTE}?key={encoded}"))
            .await
            .map_err(|e| e.to_string())?;
        Ok(page
            .statuses
            .into_iter()
            .find(|stored| stored.key == key)
            .map(|stored| stored.status))
    }

    /// App `key` as the operator that reconciles it reported it to the server; `None` when no
    /// operator reports it, or this process has no server. An operator reads so the source of
    /// a promotion into one of its Apps that is not among its own Apps.
    pub(super) async fn app_from_server(&self, key: &str) -> Result<Option<App>, String> {
        self.reported_app(&ReportedAppQuery {
            key: Some(key.to_string()),
            ..ReportedAppQuery::default()
        })
        .await
    }

    /// The key of the App named `name` (on `cluster`) among the Apps the operators report to
    /// this operator's server; `None` when none does (or several), or without a server. An
    /// operator looks so for the upstream of an `autoPromote` App that is not among its own.
    pub(super) async fn find_on_server(
        &self,
        cluster: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, String> {
        let query = ReportedAppQuery {
            name: Some(name.to_string()),
            cluster: cluster.map(str::to_string),
            ..ReportedAppQuery::default()
        };
        Ok(self
            .reported_app(&query)
            .await?
            .map(|app| crate::app::key::app_key(&app)))
    }

    /// The App `query` finds among those the operators report to the server; `None` when it
    /// finds none, or several, or this process has no server.
    async fn reported_app(&self, query: &ReportedAppQuery) -> Result<Option<App>, String> {
        let Some(server) = self.server.get() else {
            return Ok(None);
        };
        let query: Vec<String> = [
            ("key", &query.key),
            ("name", &query.name),
            ("cluster", &query.cluster),
        ]
        .into_iter()
        .filter_map(|(field, value)| {
            let value = value.as_deref()?;
            Some(format!(
                "{field}={}",
                utf8_percent_encode(value, NON_ALPHANUMERIC)
            ))
        })
        .collect();
        let query = query.join("&");
        match server
            .get_json::<ReportedApp>(&format!("{REPORTED_APP_ROUTE}?{query}"))
            .await
        {
            Ok(reported) => Ok(Some(reported.into_app())),
            Err(ExchangeError::Status {
                status: StatusCode::NOT_FOUND | StatusCode::CONFLICT,
                ..
            }) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Sends the pending record of a promotion this operator performs on its own (an
    /// automatic one) to its server, which stores it: its id there, `None` without a server.
    pub(super) async fn promotion_to_server(
        &self,
        record: &super::Promotion,
    ) -> Result<Option<i64>, String> {
        let Some(server) = self.server.get() else {
            return Ok(None);
        };
        let created: NewPromotion = server
            .exchange(Method::POST, PROMOTIONS_ROUTE, Some(record))
            .await
            .map_err(|e| e.to_string())?;
        Ok(Some(created.id))
    }

    /// Finishes on the server the record [`Runner::promotion_to_server`] sent, with the audit
    /// entry's outcome text `audit` (nothing without a server, or for a record it never took).
    pub(super) async fn finished_promotion_to_server(
        &self,
        record: &super::Promotion,
        audit: &str,
    ) -> Result<(), String> {
        let Some(server) = self.server.get().filter(|_| record.id > 0) else {
            return Ok(());
        };
        let body = FinishedPromotion {
            record: record.clone(),
            audit: audit.to_string(),
        };
        let path = PROMOTION_ROUTE.replace("{id}", &record.id.to_string());
        server
            .exchange::<_, IgnoredAny>(Method::PUT, &path, Some(&body))
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
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

    /// What the report of Apps is encoded from now, but for the Apps' content ([`Look`]).
    fn report_look(&self) -> Look {
        let app_changes = self.app_changes.load(Ordering::Relaxed);
        let mut owned = Vec::new();
        if self.sharding.get().is_some() {
            let apps = self.apps.lock();
            let clusters: std::collections::BTreeSet<&str> = apps
                .values()
                .map(|r| r.app.spec.destination.cluster_segment())
                .collect();
            owned = clusters
                .into_iter()
                .filter(|cluster| self.owns_cluster(cluster))
                .map(str::to_string)
                .collect();
        }
        Look { app_changes, owned }
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
    /// the server took; otherwise every [`REPORT_AT_LEAST_EVERY`] a heartbeat naming that
    /// report's digest, and the Apps again if the server no longer holds it. A server that
    /// cannot be reached is logged when it starts and when it stops failing; after each report
    /// taken, statuses that could not be sent are sent again.
    async fn report_apps(self: Arc<Self>, server: ServerLink, operator: String) {
        let apps_path = APPS_ROUTE.replace("{operator}", &operator);
        let heartbeat_path = HEARTBEAT_ROUTE.replace("{operator}", &operator);
        let mut ticker = tokio::time::interval(LOOK_EVERY);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut taken: Option<Taken> = None;
        let mut failing = false;
        loop {
            ticker.tick().await;
            // Encoding ten thousand Apps takes tens of milliseconds: only when they may have
            // changed since the last report taken, or a heartbeat is due.
            let look = self.report_look();
            if taken
                .as_ref()
                .is_some_and(|t| t.look == look && t.fresh(Instant::now()))
            {
                continue;
            }
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
            let digest = report_digest(body.get().as_bytes());
            let sent = match next_send(taken.as_ref(), &digest, Instant::now()) {
                NextSend::Nothing => {
                    // The same Apps after all (a resource's status written, say).
                    if let Some(taken) = taken.as_mut() {
                        taken.look = look;
                    }
                    continue;
                }
                NextSend::Heartbeat => {
                    let heartbeat = Heartbeat {
                        digest: digest.clone(),
                    };
                    let beat = server
                        .exchange::<_, IgnoredAny>(Method::PUT, &heartbeat_path, Some(&heartbeat))
                        .await;
                    match beat {
                        Err(ExchangeError::Status { status, .. })
                            if status == StatusCode::CONFLICT =>
                        {
                            tracing::info!(server = %server.base(),
                                "the server holds no report of this operator's Apps; sending them again");
                            self.reports.count(&self.reports.heartbeats_refused);
                            self.send_apps(&server, &apps_path, &body).await
                        }
                        beat => beat.map(|_| self.reports.count(&self.reports.heartbeats)),
                    }
                }
                NextSend::Apps => self.send_apps(&server, &apps_path, &body).await,
            };
            match sent {
                Ok(()) => {
                    if failing {
                        tracing::info!(server = %server.base(), "the server takes this operator's reports again");
                        failing = false;
                    }
                    taken = Some(Taken {
                        digest,
                        look,
                        at: Instant::now(),
                    });
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

    /// Sends the Apps of `body` to `path`; once the server took them, the statuses that could
    /// not be sent are sent again.
    async fn send_apps(
        &self,
        server: &ServerLink,
        path: &str,
        body: &RawValue,
    ) -> Result<(), ExchangeError> {
        server
            .exchange::<_, IgnoredAny>(Method::PUT, path, Some(body))
            .await?;
        self.reports.count(&self.reports.apps);
        self.publisher.send(Change::Resend);
        Ok(())
    }
}

/// The last report of Apps the server took: its digest, what it was encoded from, and when it
/// or a heartbeat naming it was last taken.
struct Taken {
    digest: String,
    look: Look,
    at: Instant,
}

impl Taken {
    /// Whether the server heard from this operator less than [`REPORT_AT_LEAST_EVERY`] before
    /// `now` (a clock gone backwards counts as just heard).
    fn fresh(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.at) < REPORT_AT_LEAST_EVERY
    }
}

/// What a report of Apps is encoded from, but for the Apps' content: how many times an App
/// was added, replaced or removed, and the clusters this process reconciles (sharded). When
/// neither moved, the report is the one taken last.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Look {
    app_changes: u64,
    owned: Vec<String>,
}

/// What an operator sends at one look.
#[derive(Debug, PartialEq, Eq)]
enum NextSend {
    /// Nothing: the server holds these Apps and heard from the operator recently.
    Nothing,
    /// A heartbeat: the Apps are those the server holds, but [`REPORT_AT_LEAST_EVERY`] passed.
    Heartbeat,
    /// The Apps: none was taken yet, or they changed since.
    Apps,
}

/// What to send at `now` when the reconciled Apps' report has digest `digest` and `taken` is
/// the last one the server took.
fn next_send(taken: Option<&Taken>, digest: &str, now: Instant) -> NextSend {
    match taken {
        Some(taken) if taken.digest == digest => {
            if taken.fresh(now) {
                NextSend::Nothing
            } else {
                NextSend::Heartbeat
            }
        }
        _ => NextSend::Apps,
    }
}

/// How many reports and heartbeats this operator's server took, and how many heartbeats it
/// answered with "send the Apps again" (`/metrics`).
#[derive(Debug, Default)]
pub(super) struct ReportCounts {
    apps: AtomicU64,
    heartbeats: AtomicU64,
    heartbeats_refused: AtomicU64,
}

impl ReportCounts {
    fn count(&self, counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts in Prometheus' text format.
    pub(super) fn metrics_text(&self) -> String {
        format!(
            "# HELP wardn_server_app_reports Reports of this operator's Apps its server took: the whole list, a heartbeat naming the last one, or a heartbeat answered \"send them again\".\n\
             # TYPE wardn_server_app_reports counter\n\
             wardn_server_app_reports_total{{kind=\"apps\"}} {}\n\
             wardn_server_app_reports_total{{kind=\"heartbeat\"}} {}\n\
             wardn_server_app_reports_total{{kind=\"heartbeat_refused\"}} {}\n",
            self.apps.load(Ordering::Relaxed),
            self.heartbeats.load(Ordering::Relaxed),
            self.heartbeats_refused.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A first report, and any change, sends the Apps; the same Apps send nothing until
    /// [`REPORT_AT_LEAST_EVERY`] passed, then a heartbeat; a thousand looks in a row of
    /// unchanged Apps send a heartbeat only once per period.
    #[test]
    fn the_apps_go_when_they_change_and_a_heartbeat_when_they_do_not() {
        let start = Instant::now();
        let digest = report_digest(b"{\"apps\":[]}");
        assert_eq!(next_send(None, &digest, start), NextSend::Apps);
        let taken = Taken {
            digest: digest.clone(),
            look: Look {
                app_changes: 0,
                owned: Vec::new(),
            },
            at: start,
        };
        assert_eq!(next_send(Some(&taken), &digest, start), NextSend::Nothing);
        let other = report_digest(b"{\"apps\":[{}]}");
        assert_eq!(next_send(Some(&taken), &other, start), NextSend::Apps);
        let mut taken = taken;
        let mut heartbeats = 0;
        for look in 1..=1000u64 {
            let now = start + LOOK_EVERY * u32::try_from(look).unwrap();
            match next_send(Some(&taken), &digest, now) {
                NextSend::Nothing => {}
                NextSend::Heartbeat => {
                    heartbeats += 1;
                    taken.at = now;
                }
                NextSend::Apps => panic!("look {look}: the Apps did not change"),
            }
        }
        // 2,000 s of looks every 2 s, a heartbeat every 30 s.
        assert_eq!(heartbeats, 2000 / REPORT_AT_LEAST_EVERY.as_secs());
        // A clock that went backwards sends nothing rather than panicking.
        assert_eq!(next_send(Some(&taken), &digest, start), NextSend::Nothing);
    }

    /// The digest is the hex SHA-256 of the body, as the server checks it.
    #[test]
    fn a_report_digest_is_the_sha256_of_the_body() {
        let digest = report_digest(b"abc");
        assert_eq!(
            digest,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(super::super::server_routes::is_report_digest(&digest));
        assert!(!super::super::server_routes::is_report_digest(
            &digest.to_uppercase()
        ));
        assert!(!super::super::server_routes::is_report_digest(&digest[1..]));
    }
}
