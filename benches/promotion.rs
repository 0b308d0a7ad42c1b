//! Promotion latencies (printed, not asserted), p50 and p99 over rounds on kubesim through an
//! in-process `wardn serve`: a commit to staging's Git path plus a signed webhook until staging
//! is Synced on the new revision, then `POST …/promote?to=production` until production is
//! Synced on staging's digest (production needs no approval here: approval time excluded).
//! Quick (`WARDN_BENCH_QUICK=1`): 20 rounds; full: 100. Run with
//! `cargo bench -p wardn --bench promotion` (add `--profile dev` for a debug-build run; figures
//! then are pessimistic).

#[allow(dead_code)]
#[path = "../tests/support/git_repo.rs"]
mod git_repo;
#[allow(dead_code)]
#[path = "../tests/support/running.rs"]
mod running;
mod support;

use std::time::{Duration, Instant};

use running::{PASSWORD, Running};
use serde_json::{Value, json};
use wardn::app::{HealthState, Phase};
use wardn::daemon::ServeOptions;

const REPO: &str = "ghcr.io/acme/web";

fn deployment(tag: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n\
         \x20 selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n\
         \x20   spec:\n      containers:\n      - name: web\n        image: {REPO}:{tag}\n"
    )
}

fn app(name: &str, url: &str, namespace: &str, automated: bool) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: bench\n\
         spec:\n  source:\n    type: Git\n    git:\n      repoURL: {url}\n      branch: main\n\
         \x20     path: {namespace}\n      interval: 1h\n\
         \x20 destination:\n    namespace: {namespace}\n  syncPolicy:\n    automated: {automated}\n"
    )
}

/// Polls `check` every 2 ms until it holds (two minutes at most).
async fn wait(what: &str, check: impl Fn() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn report(what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{what}: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms ({} rounds)",
        percentile(&samples, 50.0).as_secs_f64() * 1e3,
        percentile(&samples, 99.0).as_secs_f64() * 1e3,
        samples.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        samples.len()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds = if support::quick() { 20 } else { 100 };
    kubesim::install_crypto_provider();
    let cluster = kubesim::Cluster::start(kubesim::ClusterConfig {
        namespaces: vec!["staging".into(), "production".into()],
        ready_delay: Duration::ZERO,
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("kubesim: {e}"));
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kubeconfig = work.path().join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig()).unwrap_or_else(|e| panic!("{e}"));
    let upstream = git_repo::Upstream::init(&work.path().join("upstream"));
    let kustomization = "resources:\n- web.yaml\n";
    upstream.commit(
        &[
            ("staging/kustomization.yaml", kustomization),
            ("staging/web.yaml", &deployment("0")),
            ("production/kustomization.yaml", kustomization),
            ("production/web.yaml", &deployment("0")),
        ],
        "first",
    );
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap_or_else(|e| panic!("{e}"));
    let url = upstream.url();
    std::fs::write(
        apps.join("staging.yaml"),
        app("staging", &url, "staging", true),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(
        apps.join("production.yaml"),
        app("production", &url, "production", false),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let running = Running::start_with(ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")),
        data_dir: work.path().join("data"),
        admin_password: Some(PASSWORD.into()),
        webhook_secret: Some("hook".into()),
        apps_dir: Some(apps),
        management_kubeconfig: Some(kubeconfig),
        probe_interval: Duration::from_secs(3600),
        ..ServeOptions::default()
    })
    .await;
    let runner = std::sync::Arc::clone(&running.runner);
    let http = reqwest::Client::new();
    let cookie = running::login(&running.base, PASSWORD).await;
    let ready = |key: &str, revision: &str| {
        runner.status(key).is_some_and(|s| {
            s.phase == Some(Phase::Synced)
                && s.health == Some(HealthState::Healthy)
                && s.synced_revision.as_deref() == Some(revision)
        })
    };
    wait("staging", || ready("bench/staging", &upstream.head())).await;
    let (mut to_staging, mut to_production) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let revision = upstream.commit(
            &[("staging/web.yaml", &deployment(&round.to_string()))],
            "bump",
        );
        let start = Instant::now();
        let body = serde_json::to_vec(&json!({"repoURL": url})).unwrap_or_default();
        let hook = http
            .post(format!("{}/api/v1/webhooks/git", running.base))
            .header(
                "x-wardn-signature",
                wardn::sources::webhook::sign(b"hook", &body),
            )
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("webhook: {e}"));
        assert!(hook.status().is_success(), "webhook: {}", hook.status());
        wait(&format!("staging at {revision}"), || {
            ready("bench/staging", &revision)
        })
        .await;
        to_staging.push(start.elapsed());

        let start = Instant::now();
        let response = http
            .post(format!(
                "{}/api/v1/apps/local/staging/promote?to=production",
                running.base
            ))
            .header("cookie", &cookie)
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap_or_else(|e| panic!("promote: {e}"));
        let status = response.status();
        let answer: Value = response.json().await.unwrap_or_default();
        assert!(status.is_success(), "promote: {status} {answer}");
        wait(&format!("production promoted in round {round}"), || {
            runner.status("bench/production").is_some_and(|s| {
                s.phase == Some(Phase::Synced)
                    && s.promoted_from
                        .as_ref()
                        .is_some_and(|p| p.revision == revision)
            })
        })
        .await;
        to_production.push(start.elapsed());
    }
    report("commit + webhook → staging Synced", to_staging);
    report("promote → production Synced", to_production);
    running.stop().await;
}
