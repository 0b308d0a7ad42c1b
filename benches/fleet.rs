//! Fleet benchmark (printed figures, not assertions): 1,000 Apps of 10 objects each
//! (4 ConfigMaps, 3 Services, 3 Deployments) across 10 kubesim clusters, reconciled by the real
//! `wardn serve` machinery (`Server::bind` with `--apps`, clusters registered in the store
//! first). The Apps' sources are paths of one local Git repository (a monorepo, made with the
//! git CLI): one mirror, 1,000 renders — the shape of a GitOps monorepo. Kubesim runs in a
//! child process, so the figures are wardn's alone:
//! - cold start (bind) to every App Synced,
//! - CPU per no-op reconcile: process CPU over N forced automatic passes of unchanged Apps,
//!   minus the idle CPU of the same wall time, divided by N — for the first pass after the
//!   sync (which writes the no-op plan to the store) and for the steady state after it,
//! - peak RSS (VmHWM) of the wardn process.
//!
//! `cargo bench --bench fleet` (full size; targets ≤ 60 s, ≤ 2 ms, ≤ 200 MiB);
//! `-- --quick` or `WARDN_BENCH_QUICK=1`: 100 Apps on 2 clusters.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, stream};
use wardn::app::Phase;
use wardn::clusters::registry::{RegisterRequest, Registry};
use wardn::daemon::ServeOptions;
use wardn::daemon::runner::{Completed, Operation, Runner};
use wardn::reconcile::decide::Trigger;
use wardn::seal::Sealer;
use wardn::server::Server;
use wardn::store::Store;

const KEY: [u8; 32] = [9u8; 32];

/// Registers the clusters in the store under `data` before the server starts (as an operator
/// would have done earlier), so the first passes find them.
async fn register(data: &Path, sims: &support::Sims) {
    let store = Store::open(data, None)
        .await
        .unwrap_or_else(|e| panic!("store: {e}"));
    let registry = Registry::new(store, Sealer::new(&KEY, None), Duration::from_secs(10));
    for (name, kubeconfig, url) in &sims.clusters {
        let text = std::fs::read_to_string(kubeconfig).unwrap_or_else(|e| panic!("{e}"));
        registry
            .register(
                "bench",
                RegisterRequest {
                    name: name.clone(),
                    server_url: url.clone(),
                    kubeconfig: text,
                    namespaces: vec!["bench".into()],
                    allow_insecure_tls: false,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("register {name}: {e}"));
    }
    registry.store().close().await;
}

fn count(runner: &Runner, phase: Phase) -> usize {
    runner
        .apps()
        .keys()
        .filter(|k| runner.status(k).and_then(|s| s.phase) == Some(phase))
        .count()
}

async fn fleet(apps: usize, clusters: usize, noop_passes: usize) {
    let names: Vec<String> = (0..clusters).map(|i| format!("c{i}")).collect();
    let sims = support::Sims::start(&names);
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    support::monorepo::write_apps(work.path(), apps, clusters);
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).unwrap_or_else(|e| panic!("{e}"));
    register(&data, &sims).await;

    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")),
        data_dir: data,
        admin_password: Some("fleet benchmark password".into()),
        apps_dir: Some(work.path().join("apps")),
        probe_interval: Duration::from_secs(3600),
        probe_timeout: Duration::from_secs(10),
        ..ServeOptions::default()
    };
    let cpu0 = support::cpu_seconds();
    let start = Instant::now();
    let server = Server::bind(options, Sealer::new(&KEY, None))
        .await
        .unwrap_or_else(|e| panic!("bind: {e}"));
    let runner = Arc::clone(server.runner());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let limit = Duration::from_secs(1800);
    let mut last_report = Instant::now();
    while count(&runner, Phase::Synced) < apps && start.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if last_report.elapsed() > Duration::from_secs(30) {
            eprintln!(
                "  … {:.0} s: {} of {apps} Synced",
                start.elapsed().as_secs_f64(),
                count(&runner, Phase::Synced)
            );
            last_report = Instant::now();
        }
    }
    let converged = start.elapsed();
    let cold_cpu = support::cpu_seconds() - cpu0;
    let synced = count(&runner, Phase::Synced);
    println!(
        "fleet: {apps} Apps x 10 objects on {clusters} kubesim clusters: cold start to all Synced {:.1} s ({synced}/{apps} Synced, {:.1} s CPU)",
        converged.as_secs_f64(),
        cold_cpu
    );
    if synced < apps {
        for (key, _) in runner.apps().iter().take(2000) {
            if let Some(s) = runner
                .status(key)
                .filter(|s| s.phase != Some(Phase::Synced))
            {
                println!("  not Synced: {key}: {:?} {:?}", s.phase, s.message);
                break;
            }
        }
    }

    // The first pass after a sync records the no-op plan (summary and hash change once, so
    // the status is written to the store); later passes are the steady state of resyncs and
    // drift follow-ups. Both are measured, N passes each, 4 at a time.
    let keys: Vec<String> = runner.apps().keys().take(noop_passes).cloned().collect();
    for round in ["first no-op pass after the sync", "steady-state no-op pass"] {
        let (per, wall, cpu, ok) = noop_round(&runner, &keys).await;
        println!(
            "fleet: {round} of one App (10 objects): {:.2} ms CPU each ({} passes, {:.2} s CPU in {:.2} s wall, idle CPU subtracted; {ok} stayed Synced), {:.1} ms wall each at 4 in parallel",
            per * 1e3,
            keys.len(),
            cpu,
            wall,
            wall * 1e3 / keys.len() as f64 * 4.0
        );
    }
    println!(
        "fleet: peak RSS of wardn {:.1} MiB (kubesim child process, not included: {:.1} MiB)",
        support::peak_rss_mib(),
        sims.peak_rss_mib()
    );
    let _ = stop.send(());
    let _ = task.await;
}

/// Forces one automatic pass of each of `keys` (4 at a time) and returns the CPU per pass
/// (idle CPU of the same wall time subtracted), the wall and CPU seconds, and how many passes
/// ended Synced.
async fn noop_round(runner: &Arc<Runner>, keys: &[String]) -> (f64, f64, f64, usize) {
    let idle_wall = Duration::from_secs(3);
    let c = support::cpu_seconds();
    tokio::time::sleep(idle_wall).await;
    let idle_rate = (support::cpu_seconds() - c) / idle_wall.as_secs_f64();
    let c = support::cpu_seconds();
    let t = Instant::now();
    let results: Vec<bool> = stream::iter(keys.iter())
        .map(|key| {
            let runner = Arc::clone(runner);
            async move {
                matches!(
                    runner.operate(key, Operation::Pass(Trigger::Automatic)).await,
                    Ok(Completed::Status(s)) if s.phase == Some(Phase::Synced)
                )
            }
        })
        .buffer_unordered(4)
        .collect()
        .await;
    let wall = t.elapsed().as_secs_f64();
    let cpu = support::cpu_seconds() - c;
    let per = (cpu - idle_rate * wall) / keys.len() as f64;
    (per, wall, cpu, results.iter().filter(|ok| **ok).count())
}

fn main() {
    if support::kubesim_child() {
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (apps, clusters, passes) = if support::quick() {
        (100, 2, 50)
    } else {
        (1000, 10, 500)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(fleet(apps, clusters, passes));
}
