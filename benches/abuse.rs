//! What unauthenticated clients cost the API server: peak RSS growth and database growth (the
//! SQLite file with its WAL and shared-memory index) under parallel bad logins and parallel
//! forged 24 MB webhooks, login latency (p99) under parallel attempts,
//! and `/api/v1/health` latency (p99) while partial-header connections (slowloris) are held
//! open. Prints figures; asserts nothing about time.
//!
//! Two servers on SQLite: one in this process (its peak RSS counts the client's connections
//! too; it exposes the password-check counters and the audit log), then `wardn serve` as its
//! own process, measured alone (`/proc/PID`), beside the client's growth: bad logins twice
//! (the first flood allocates the argon2 workers' buffers, the second reuses them), the timed
//! logins, and parallel unauthenticated requests to each public route.
//!
//! Full: 1,000 bad logins, 100 webhooks, 200 timed logins, 20,000 partial connections (fewer if
//! the file-descriptor limit does not allow them, said in the output), 1,000 requests per
//! public route. `-- --quick` or `WARDN_BENCH_QUICK=1`: 200, 20, 50, 2,000 and 200.

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::json;
use support::replica::Process;
use support::rss::Rss;
use support::server::TestServer;
use tokio::io::AsyncWriteExt;

fn quick() -> bool {
    std::env::args().any(|a| a == "--quick")
        || std::env::var("WARDN_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Bytes of the SQLite database in `data`: the file, its WAL and shared-memory index.
fn db_bytes(data: &Path) -> u64 {
    std::fs::read_dir(data)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("wardn.db"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Growth of the database in `data` from `before` bytes to now, in KiB.
fn db_growth_kib(data: &Path, before: u64) -> f64 {
    (db_bytes(data) as f64 - before as f64) / 1024.0
}

/// Entries in the server's audit log.
async fn audit_entries(server: &TestServer) -> usize {
    server
        .registry
        .store()
        .audit_log()
        .await
        .map_or(0, |(entries, _)| entries.len())
}

fn client_from(a: u8, b: u8) -> Client {
    Client::builder()
        .local_address(IpAddr::from([127, 0, a, b]))
        .build()
        .unwrap_or_else(|e| panic!("client: {e}"))
}

fn percentile(samples: &mut [Duration], q: f64) -> f64 {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
    samples[index].as_secs_f64() * 1000.0
}

fn tally(statuses: &[u16]) -> String {
    let mut counts = std::collections::BTreeMap::new();
    for s in statuses {
        *counts.entry(*s).or_insert(0) += 1;
    }
    format!("{counts:?}")
}

async fn login(http: &Client, base: &str, user: &str, password: &str) -> u16 {
    match http
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"username": user, "password": password}))
        .send()
        .await
    {
        Ok(response) => response.status().as_u16(),
        Err(_) => 0,
    }
}

/// `count` parallel bad logins of `admin` against `base`, from 50 addresses 127.0.NET.i; their
/// statuses.
async fn flood_logins(base: &str, net: u8, count: usize) -> Vec<u16> {
    let clients: Vec<Client> = (0..50).map(|i| client_from(net, i + 1)).collect();
    let attempts = (0..count).map(|i| login(&clients[i % clients.len()], base, "admin", "wrong"));
    futures_util::future::join_all(attempts).await
}

async fn bad_logins(server: &TestServer, count: usize) {
    let data = server.data.path();
    let rss = Rss::this();
    let db = db_bytes(data);
    let entries = audit_entries(server).await;
    let base = rss.reset_peak();
    let start = Instant::now();
    let statuses = flood_logins(&server.base, 10, count).await;
    let elapsed = start.elapsed();
    let (peak, db) = (rss.peak_mib() - base, db_growth_kib(data, db));
    let entries = audit_entries(server).await - entries;
    let checks = server.state.password_checks();
    println!(
        "in process: {count} parallel bad logins from 50 addresses: peak RSS +{peak:.1} MiB \
         (server and client), DB +{db:.0} KiB (+{entries} audit entries, the windows' counts \
         follow), {:.1} s, argon2 checks {} (at most {} at once, {} refused a slot), statuses {}",
        elapsed.as_secs_f64(),
        checks.total(),
        checks.peak(),
        checks.refused(),
        tally(&statuses),
    );
}

/// `wardn serve` as its own process on SQLite in `data`, with its memory.
struct Subprocess {
    process: Process,
    rss: Rss,
}

impl Subprocess {
    fn start(work: &Path) -> Subprocess {
        let process = Process::spawn(
            &[],
            &work.join("data"),
            support::server::ADMIN_PASSWORD,
            &work.join("serve.log"),
        );
        let rss = Rss::of(process.pid());
        Subprocess { process, rss }
    }

    /// Runs `flood` against the server and prints `what` with the server's peak RSS growth,
    /// the client's (this process), the database's growth and the statuses.
    async fn measure<F: Future<Output = Vec<u16>>>(
        &self,
        data: &Path,
        what: &str,
        flood: impl FnOnce(String) -> F,
    ) {
        let client = Rss::this();
        let db = db_bytes(data);
        let (server_base, client_base) = (self.rss.reset_peak(), client.reset_peak());
        let start = Instant::now();
        let statuses = flood(self.process.base.clone()).await;
        println!(
            "subprocess: {what}: server peak RSS +{:.1} MiB (from {server_base:.1} MiB), client \
             +{:.1} MiB, DB +{:.0} KiB, {:.1} s, statuses {}",
            self.rss.peak_mib() - server_base,
            client.peak_mib() - client_base,
            db_growth_kib(data, db),
            start.elapsed().as_secs_f64(),
            tally(&statuses),
        );
    }
}

/// `count` parallel GETs of `path` (or, for the webhook route, small forged POSTs) from 50
/// addresses; their statuses.
async fn flood_route(base: &str, path: &str, count: usize) -> Vec<u16> {
    let clients: Vec<Client> = (0..50).map(|i| client_from(40, i + 1)).collect();
    let body = br#"{"repository":{"clone_url":"https://example.com/x.git"}}"#;
    let forged = wardn::sources::webhook::sign(b"guess", body);
    let requests = (0..count).map(|i| {
        let http = &clients[i % clients.len()];
        let url = format!("{base}{path}");
        let request = if path == wardn::sources::webhook::ROUTE {
            http.post(url)
                .header("x-hub-signature-256", &forged)
                .header("content-type", "application/json")
                .body(&body[..])
        } else {
            http.get(url)
        };
        async move {
            match request.send().await {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let _ = response.bytes().await;
                    status
                }
                Err(_) => 0,
            }
        }
    });
    futures_util::future::join_all(requests).await
}

/// The public routes (no authentication): health, metrics, the OpenAPI document, the UI's
/// login page and a script, and the Git webhook.
const PUBLIC_ROUTES: [&str; 6] = [
    "/api/v1/health",
    "/metrics",
    "/api/v1/openapi.json",
    "/ui/login",
    "/ui/assets/app.js",
    wardn::sources::webhook::ROUTE,
];

async fn subprocess_figures(logins: usize, timed: usize, per_route: usize) {
    let work = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
    let data = work.path().join("data");
    let server = Subprocess::start(work.path());
    // Each flood from other addresses, so that the limiter lets some reach a password check.
    for (round, net) in [("first", 11), ("second", 12)] {
        let what = format!("{logins} parallel bad logins from 50 addresses ({round} flood)");
        server
            .measure(&data, &what, |base| async move {
                flood_logins(&base, net, logins).await
            })
            .await;
    }
    login_latency(&server.process.base, timed).await;
    for route in PUBLIC_ROUTES {
        let what = format!("{per_route} parallel unauthenticated requests to {route}");
        server
            .measure(&data, &what, |base| async move {
                flood_route(&base, route, per_route).await
            })
            .await;
    }
}

async fn login_latency(base: &str, count: usize) {
    let clients: Vec<Client> = (0..count)
        .map(|i| client_from(20 + (i / 200) as u8, (i % 200) as u8 + 1))
        .collect();
    let attempts = clients.iter().map(|c| async move {
        let start = Instant::now();
        let status = login(c, base, "admin", "wrong").await;
        (start.elapsed(), status)
    });
    let results = futures_util::future::join_all(attempts).await;
    let statuses: Vec<u16> = results.iter().map(|(_, s)| *s).collect();
    let mut times: Vec<Duration> = results.into_iter().map(|(d, _)| d).collect();
    println!(
        "subprocess: {count} parallel login attempts (one per address): p50 {:.0} ms, p99 {:.0} ms, \
         statuses {}",
        percentile(&mut times, 0.5),
        percentile(&mut times, 0.99),
        tally(&statuses),
    );
}

async fn webhooks(server: &TestServer, count: usize) {
    let body = axum::body::Bytes::from(vec![b'x'; 24 << 20]);
    let forged = wardn::sources::webhook::sign(b"guess", &body);
    let http = Client::new();
    let data = server.data.path();
    let rss = Rss::this();
    let db = db_bytes(data);
    let base = rss.reset_peak();
    let start = Instant::now();
    let posts = (0..count).map(|_| {
        let request = http
            .post(server.url("/api/v1/webhooks/git"))
            .header("x-hub-signature-256", &forged)
            .body(body.clone());
        async move {
            match request.send().await {
                Ok(response) => response.status().as_u16(),
                Err(_) => 0,
            }
        }
    });
    let statuses = futures_util::future::join_all(posts).await;
    println!(
        "in process: {count} parallel 24 MB webhooks with a forged signature: peak RSS +{:.1} MiB \
         (the bodies themselves are shared by the client), DB +{:.0} KiB, {:.1} s, statuses {}",
        rss.peak_mib() - base,
        db_growth_kib(data, db),
        start.elapsed().as_secs_f64(),
        tally(&statuses),
    );
}

async fn slowloris(server: &TestServer, wanted: usize) {
    let limit = rlimit_nofile();
    // Each partial connection costs a descriptor here and one in the in-process server.
    let count = wanted
        .min(limit.saturating_sub(6_000) / 2 + 4_096)
        .min(limit.saturating_sub(500));
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut held = Vec::new();
    let mut refused = 0;
    let open_start = Instant::now();
    for i in 0..count {
        let local = IpAddr::from([127, 0, 30 + (i / 250) as u8, (i % 250) as u8 + 1]);
        let socket = match tokio::net::TcpSocket::new_v4() {
            Ok(socket) => socket,
            Err(_) => break,
        };
        if socket.bind((local, 0).into()).is_err() {
            break;
        }
        match socket
            .connect(addr.parse().unwrap_or_else(|e| panic!("{e}")))
            .await
        {
            Ok(mut stream) => {
                if stream
                    .write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
                    .await
                    .is_err()
                {
                    refused += 1;
                }
                held.push(stream);
            }
            Err(_) => refused += 1,
        }
    }
    let opened = open_start.elapsed();
    let http = Client::new();
    let mut times = Vec::new();
    let mut failures = 0;
    for _ in 0..40 {
        let start = Instant::now();
        match tokio::time::timeout(
            Duration::from_secs(15),
            http.get(server.url("/api/v1/health")).send(),
        )
        .await
        {
            Ok(Ok(response)) if response.status().is_success() => times.push(start.elapsed()),
            _ => failures += 1,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let note = if count < wanted {
        format!(" (of {wanted} wanted: file-descriptor limit {limit})")
    } else {
        String::new()
    };
    println!(
        "in process: {count} partial-header connections{note} opened in {:.1} s ({refused} refused or reset): \
         /health p50 {:.1} ms, p99 {:.1} ms over {} probes, {failures} failed",
        opened.as_secs_f64(),
        if times.is_empty() {
            f64::NAN
        } else {
            percentile(&mut times, 0.5)
        },
        if times.is_empty() {
            f64::NAN
        } else {
            percentile(&mut times, 0.99)
        },
        times.len(),
    );
    drop(held);
}

fn rlimit_nofile() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    wardn::server::tune_allocator();
    let quick = quick();
    let (logins, hooks, timed, partial, per_route) = if quick {
        (200, 20, 50, 2_000, 200)
    } else {
        (1_000, 100, 200, 20_000, 1_000)
    };
    println!(
        "abuse benchmark ({}), servers on SQLite: in this process, then `wardn serve` alone",
        if quick { "quick" } else { "full" }
    );
    let server = TestServer::start(None).await;
    bad_logins(&server, logins).await;
    webhooks(&server, hooks).await;
    slowloris(&server, partial).await;
    server.stop().await;
    subprocess_figures(logins, timed, per_route).await;
}
