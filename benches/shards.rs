//! Scale-out benchmark (printed figures, not assertions): N Apps × 10 objects (Git monorepo
//! paths, as `benches/fleet.rs`) on M kubesim clusters, reconciled by 1, 2 and 4 replicas of
//! `wardn serve --role all --shards auto` (separate processes, the release binary) sharing one
//! throwaway PostgreSQL; kubesim in its own child process, fresh for each replica count, with a
//! management cluster `mgmt` for the Leases. For each replica count:
//! - cold convergence: from starting the replicas to every App Synced in the store,
//! - each replica's peak RSS (VmHWM) and the sockets it holds open then (cluster and database
//!   connections, listeners),
//! - one `GET /api/v1/apps` on the first replica: its time, body size and RSS rise,
//!
//! and with 4 replicas, after SIGKILL of the one owning most clusters: the takeover (its
//! clusters listed under the survivors by `GET /api/v1/shards`) and re-convergence (the
//! survivors' pass counters grew by the dead replica's Apps: each taken-over App passed once
//! under its new owner; resyncs are set to 1 h so they do not count).
//!
//! `cargo bench --bench shards` (full size: 10,000 Apps on 100 clusters);
//! `-- --quick` or `WARDN_BENCH_QUICK=1`: 200 Apps on 8 clusters; `WARDN_BENCH_SHARD_APPS`
//! and `WARDN_BENCH_SHARD_CLUSTERS` set any size, `WARDN_BENCH_SHARD_REPLICAS` the replica
//! counts (`1,2,4`).

mod support;
// The tests' helpers, for their throwaway PostgreSQL.
#[path = "../tests/support/mod.rs"]
mod test_support;

use test_support::postgres;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wardn::app::{AppStatus, Phase};
use wardn::clusters::registry::{RegisterRequest, Registry};
use wardn::seal::Sealer;
use wardn::store::Store;

const KEY: [u8; 32] = [9u8; 32];
const PASSWORD: &str = "bench-password-0123";

fn size(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One replica process and its base URL.
struct Replica {
    id: String,
    child: Child,
    base: String,
}

impl Replica {
    fn spawn(id: &str, database: &str, sims: &support::Sims, apps: &Path, work: &Path) -> Replica {
        let mgmt = &sims.clusters[0].1;
        let log = std::fs::File::create(work.join(format!("{id}.log"))).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_wardn"))
            .args(["serve", "--shards", "auto", "--replica-id", id])
            .args(["--lease-namespace", "bench", "--database-url", database])
            .args(["--listen", "127.0.0.1:0", "--probe-interval", "3600"])
            .args(["--resync-interval", "1h"])
            .arg("--kubeconfig")
            .arg(mgmt)
            .arg("--apps")
            .arg(apps)
            .arg("--data-dir")
            .arg(work.join(id))
            .env("WARDN_CREDENTIALS_KEY", base64_key())
            .env("WARDN_ADMIN_PASSWORD", PASSWORD)
            .env_remove("KUBECONFIG")
            .env_remove("WARDN_APPS_DIR")
            .env_remove("WARDN_ROLE")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let base = loop {
            let line = lines.next().expect("wardn printed its address").unwrap();
            if let Some(addr) = line.strip_prefix("wardn: listening on ") {
                break addr.to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Replica {
            id: id.to_string(),
            child,
            base,
        }
    }

    fn peak_rss_mib(&self) -> f64 {
        support::vm_hwm_mib(&format!("/proc/{}/status", self.child.id()))
    }

    /// `GET path` on this replica as the logged-in user of `cookie`.
    async fn get(&self, path: &str, cookie: &str) -> reqwest::Response {
        reqwest::Client::new()
            .get(format!("{}{path}", self.base))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap()
    }

    /// `GET /api/v1/apps` once: its time, its body's size in MiB and how far the replica's
    /// RSS rose above what it was before (its peak RSS reset first through `clear_refs`).
    async fn list_cost(&self, cookie: &str) -> (Duration, f64, f64) {
        let status = format!("/proc/{}/status", self.child.id());
        let before = support::status_mib(&status, "VmRSS:");
        // Writing 5 resets VmHWM to the current RSS (Linux 4.0 and later).
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
        let started = Instant::now();
        let body = self
            .get("/api/v1/apps", cookie)
            .await
            .bytes()
            .await
            .unwrap();
        let took = started.elapsed();
        let rise = support::vm_hwm_mib(&status) - before;
        (took, body.len() as f64 / (1 << 20) as f64, rise)
    }

    /// The sum of this replica's `wardn_reconcile_total` samples.
    async fn passes(&self) -> f64 {
        let Ok(response) = reqwest::get(format!("{}/metrics", self.base)).await else {
            return 0.0;
        };
        let text = response.text().await.unwrap_or_default();
        text.lines()
            .filter(|l| l.starts_with("wardn_reconcile_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Replica id → clusters, as this replica's `GET /api/v1/shards` lists them.
    async fn shards(&self, cookie: &str) -> Vec<(String, Vec<String>)> {
        let body: serde_json::Value = self
            .get("/api/v1/shards", cookie)
            .await
            .json()
            .await
            .unwrap();
        body["replicas"]
            .as_array()
            .map(|replicas| {
                replicas
                    .iter()
                    .map(|r| {
                        let clusters = r["clusters"].as_array().cloned().unwrap_or_default();
                        (
                            r["replica"].as_str().unwrap_or_default().to_string(),
                            clusters
                                .iter()
                                .filter_map(|c| c.as_str().map(str::to_string))
                                .collect(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

fn base64_key() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(KEY)
}

/// Registers the destination clusters (all but `mgmt`) in the database at `url`.
async fn register(url: &str, sims: &support::Sims) {
    let store = Store::connect(url).await.unwrap();
    let registry = Registry::new(store, Sealer::new(&KEY, None), Duration::from_secs(10));
    for (name, kubeconfig, server) in sims.clusters.iter().skip(1) {
        let text = std::fs::read_to_string(kubeconfig).unwrap();
        registry
            .register(
                "bench",
                RegisterRequest {
                    name: name.clone(),
                    server_url: server.clone(),
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

/// How many stored App statuses are Synced.
async fn synced(store: &Store) -> usize {
    store
        .app_statuses::<AppStatus>()
        .await
        .map(|records| {
            records
                .iter()
                .filter(|r| r.status.phase == Some(Phase::Synced))
                .count()
        })
        .unwrap_or(0)
}

async fn login(base: &str) -> String {
    let response = reqwest::Client::new()
        .post(format!("{base}/api/v1/auth/login"))
        .json(&serde_json::json!({"username": "admin", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_string()
}

async fn run(pg: &postgres::Postgres, replicas: usize, apps: usize, clusters: usize) {
    let mut names = vec!["mgmt".to_string()];
    names.extend((0..clusters).map(|i| format!("c{i}")));
    let sims = support::Sims::start(&names);
    let work = tempfile::tempdir().unwrap();
    support::monorepo::write_apps(work.path(), apps, clusters);
    let database = pg.create_database(&format!("shards_{replicas}"));
    register(&database, &sims).await;
    let store = Store::connect(&database).await.unwrap();
    let started = Instant::now();
    let mut running: Vec<Replica> = (0..replicas)
        .map(|i| {
            Replica::spawn(
                &format!("r{i}"),
                &database,
                &sims,
                &work.path().join("apps"),
                work.path(),
            )
        })
        .collect();
    let limit = Duration::from_secs(1800);
    while synced(&store).await < apps {
        assert!(
            started.elapsed() < limit,
            "{replicas} replicas: no convergence in {limit:?}"
        );
        // Each poll reads every stored status: at 10,000 Apps a tighter loop would take CPU
        // from the replicas it measures.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let cold = started.elapsed();
    let rss: Vec<String> = running
        .iter()
        .map(|r| format!("{} {:.0} MiB", r.id, r.peak_rss_mib()))
        .collect();
    let sockets: Vec<String> = running
        .iter()
        .map(|r| format!("{} {}", r.id, support::open_sockets(r.child.id())))
        .collect();
    println!(
        "shards: {apps} Apps × 10 objects on {clusters} clusters, {replicas} replica(s): cold convergence {:.1} s; peak RSS {}; open sockets {}; kubesim child {:.0} MiB",
        cold.as_secs_f64(),
        rss.join(", "),
        sockets.join(", "),
        sims.peak_rss_mib()
    );
    let cookie = login(&running[0].base).await;
    // After the login's argon2 buffer (19 MiB) is freed.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (took, body, rise) = running[0].list_cost(&cookie).await;
    println!(
        "shards: GET /api/v1/apps on {} ({apps} Apps): {:.0} ms, body {body:.1} MiB, RSS rose {rise:.0} MiB",
        running[0].id,
        took.as_secs_f64() * 1000.0
    );
    if replicas < 2 {
        return;
    }
    // Kill the replica owning most clusters; time the takeover and the re-convergence.
    let shards = running[0].shards(&cookie).await;
    let (victim, victim_clusters) = shards.iter().max_by_key(|(_, c)| c.len()).cloned().unwrap();
    let victim_apps = (0..apps)
        .filter(|i| victim_clusters.contains(&format!("c{}", i % clusters)))
        .count();
    let at = running.iter().position(|r| r.id == victim).unwrap();
    let mut dead = running.remove(at);
    let mut before = 0.0;
    for r in &running {
        before += r.passes().await;
    }
    let killed = Instant::now();
    dead.kill();
    let survivor = &running[0];
    loop {
        let now = survivor.shards(&cookie).await;
        if now.len() == replicas - 1 && now.iter().all(|(id, _)| *id != victim) {
            break;
        }
        assert!(killed.elapsed() < limit, "no takeover");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let takeover = killed.elapsed();
    loop {
        let mut after = 0.0;
        for r in &running {
            after += r.passes().await;
        }
        if after - before >= victim_apps as f64 {
            break;
        }
        assert!(killed.elapsed() < limit, "no re-convergence");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let reconverged = killed.elapsed();
    println!(
        "shards: SIGKILL {victim} ({} clusters, {victim_apps} Apps) of {replicas}: takeover {:.1} s (Lease 15 s), re-converged {:.1} s; {} App(s) Synced",
        victim_clusters.len(),
        takeover.as_secs_f64(),
        reconverged.as_secs_f64(),
        synced(&store).await
    );
    running.clear();
    store.close().await;
}

fn main() {
    if support::kubesim_child() {
        return;
    }
    let (apps, clusters) = if support::quick() {
        (200, 8)
    } else {
        (10_000, 100)
    };
    let apps = size("WARDN_BENCH_SHARD_APPS", apps);
    let clusters = size("WARDN_BENCH_SHARD_CLUSTERS", clusters);
    let counts: Vec<usize> = std::env::var("WARDN_BENCH_SHARD_REPLICAS")
        .unwrap_or_else(|_| "1,2,4".to_string())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("WARDN_BENCH_SHARD_REPLICAS: replica counts, e.g. 1,2,4")
        })
        .collect();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let pg = postgres::Postgres::start();
        for replicas in counts {
            run(&pg, replicas, apps, clusters).await;
        }
    });
}
