//! What an operator's reports of its Apps cost a `--role server` process, on SQLite and on a
//! throwaway PostgreSQL, for a fleet of `WARDN_BENCH_REPORT_APPS` Apps (10,000; 1,000 with
//! `WARDN_BENCH_QUICK=1`): the operator's encoding of its report (when an App changed, and
//! for each 30-second heartbeat), and through the server's HTTP route the first report, a
//! report that changes nothing, one that changes one App, one that changes every App (what
//! each 30-second sign of life cost before heartbeats: every row rewritten), and a heartbeat.
//! Prints figures; asserts nothing about time.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::postgres::Postgres;
use support::server::{INTERNAL_TOKEN, TestServer};
use wardn::app::App;
use wardn::daemon::runner::{ReportedApp, ReportedApps, report_digest};

/// The fleet's Apps, each with label `round: {round}` (a new round changes every App).
fn apps(count: usize, round: usize) -> Vec<App> {
    (0..count).map(|i| app(i, round)).collect()
}

/// App `i` of the fleet, labelled `round: {round}`.
fn app(i: usize, round: usize) -> App {
    let yaml = format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: app-{i:05}\n  namespace: fleet\n  labels: {{team: team-{t}, round: '{round}'}}\n\
                 spec:\n  source:\n    type: Git\n    git:\n      repoURL: https://git.example.com/platform/fleet.git\n      branch: main\n      path: apps/app-{i:05}\n\
                 \x20 destination: {{cluster: cluster-{c:03}, namespace: team-{t}}}\n\
                 \x20 syncPolicy: {{automated: true, prune: true}}\n",
        t = i % 50,
        c = i % 100,
    );
    serde_saphyr::from_str(&yaml).unwrap_or_else(|e| panic!("App {i}: {e}"))
}

/// The report body of `apps`, as the operator encodes it.
fn encode(apps: &[App]) -> String {
    let report = ReportedApps {
        apps: apps.iter().map(ReportedApp::of).collect(),
    };
    serde_json::to_string(&report).unwrap_or_else(|e| panic!("encode: {e}"))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Sends `body` to `path` (PUT, internal token) `times` times; the median time, after
/// checking each answer is `code`.
async fn put(server: &TestServer, path: &str, body: &str, code: u16, times: usize) -> Duration {
    let http = server.http();
    let mut samples = Vec::with_capacity(times);
    for _ in 0..times {
        let started = Instant::now();
        let response = http
            .put(server.url(path))
            .bearer_auth(INTERNAL_TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        samples.push(started.elapsed());
        assert_eq!(status, code, "{path}: {text}");
    }
    median(samples)
}

async fn run(backend: &str, database_url: Option<String>, count: usize) {
    let server = TestServer::start_configured(
        database_url,
        wardn::seal::Sealer::new(&[7u8; 32], None),
        tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}")),
        |options| options.reconcile_apps = false,
    )
    .await;
    let apps_path = "/internal/operators/op-bench/apps";
    let heartbeat_path = "/internal/operators/op-bench/heartbeat";
    let first = encode(&apps(count, 0));
    let first_ms = put(&server, apps_path, &first, 204, 1).await;
    let same_ms = put(&server, apps_path, &first, 204, 5).await;
    let mut one_changed = apps(count, 0);
    let mut one_ms = Vec::new();
    for round in 1..=5 {
        one_changed[round] = app(round, 100 + round);
        one_ms.push(put(&server, apps_path, &encode(&one_changed), 204, 1).await);
    }
    let mut all_ms = Vec::new();
    for round in 1..=3 {
        all_ms.push(put(&server, apps_path, &encode(&apps(count, round)), 204, 1).await);
    }
    let last = encode(&apps(count, 3));
    let heartbeat = serde_json::json!({ "digest": report_digest(last.as_bytes()) }).to_string();
    let heartbeat_ms = put(&server, heartbeat_path, &heartbeat, 204, 50).await;
    println!(
        "operator reports, {backend}, {count} Apps ({:.1} MiB a report): first {:.0} ms; \
         unchanged {:.0} ms; one App changed {:.0} ms; every App changed (each 30-s report \
         before heartbeats) {:.0} ms; heartbeat {:.2} ms ({:.0}x less than every App changed)",
        last.len() as f64 / (1024.0 * 1024.0),
        ms(first_ms),
        ms(same_ms),
        ms(median(one_ms)),
        ms(median(all_ms.clone())),
        ms(heartbeat_ms),
        median(all_ms).as_secs_f64() / heartbeat_ms.as_secs_f64(),
    );
    server.stop().await;
}

fn main() {
    let count: usize = std::env::var("WARDN_BENCH_REPORT_APPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if support_quick() { 1_000 } else { 10_000 });
    // The operator's side: each look (every 2 s) encodes the report and hashes it.
    let fleet = apps(count, 0);
    let mut looks = Vec::new();
    for _ in 0..11 {
        let started = Instant::now();
        let body = encode(&fleet);
        let digest = report_digest(body.as_bytes());
        looks.push(started.elapsed());
        assert_eq!(digest.len(), 64);
    }
    let look = median(looks);
    println!(
        "operator reports: encoding {count} Apps (+ SHA-256): {:.1} ms; an idle operator encodes \
         once a 30-s heartbeat, {:.3} % of a core (at every 2-s look, as before: {:.2} %)",
        ms(look),
        look.as_secs_f64() / 30.0 * 100.0,
        look.as_secs_f64() / 2.0 * 100.0
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(async {
        run("SQLite", None, count).await;
        let pg = Postgres::start();
        let url = pg.create_database("operator_reports");
        run("PostgreSQL", Some(url), count).await;
    });
}

/// Whether the benchmark runs scaled down (`WARDN_BENCH_QUICK=1`, as `make bench` sets).
fn support_quick() -> bool {
    std::env::var("WARDN_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}
