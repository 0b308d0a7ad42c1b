//! What unauthenticated floods cost `wardn serve` itself: the server runs as its own process
//! and its peak RSS (`/proc/PID`) is measured alone, so the client's connections do not count.
//! Scaled down from `benches/abuse.rs` (whose full-size figures are in the README); the bounds
//! are generous, and nothing here is timed.

mod support;

use reqwest::Client;
use serde_json::json;
use support::replica::Process;
use support::rss::Rss;
use support::server::ADMIN_PASSWORD;
use wardn::server::passwords::BLOCK_BUFFER_BYTES;

/// The growth every flood here must stay under, in MiB (the issue's figure).
const BOUND_MIB: f64 = 64.0;

fn serve(work: &tempfile::TempDir) -> Process {
    Process::spawn(
        &[],
        &work.path().join("data"),
        ADMIN_PASSWORD,
        &work.path().join("serve.log"),
    )
}

/// `count` clients, each with its own source address 127.0.NET.i.
fn clients(net: u8, count: u8) -> Vec<Client> {
    (1..=count)
        .map(|i| {
            Client::builder()
                .local_address(std::net::IpAddr::from([127, 0, net, i]))
                // Below the server's idle timeout, as a well-behaved client keeps it: a pooled
                // connection the server is closing at that moment fails the request sent on it.
                .pool_idle_timeout(wardn::server::listener::HEADER_READ_TIMEOUT / 2)
                .build()
                .unwrap()
        })
        .collect()
}

/// Runs `flood` and returns the server's peak RSS growth over it, in MiB.
async fn growth<F: Future<Output = Vec<u16>>>(server: &Process, flood: F) -> (f64, Vec<u16>) {
    let rss = Rss::of(server.pid());
    let before = rss.reset_peak();
    let statuses = flood.await;
    (rss.peak_mib() - before, statuses)
}

async fn bad_logins(server: &Process, clients: &[Client], count: usize) -> Vec<u16> {
    let attempts = (0..count).map(|i| {
        clients[i % clients.len()]
            .post(server.url("/api/v1/auth/login"))
            .json(&json!({"username": "admin", "password": format!("guess {i}")}))
            .send()
    });
    futures_util::future::join_all(attempts)
        .await
        .into_iter()
        .map(|r| r.unwrap().status().as_u16())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_bad_logins_grow_the_servers_memory_by_a_bounded_amount() {
    const LOGINS: usize = 200;
    let work = tempfile::tempdir().unwrap();
    let server = serve(&work);
    // Twice, from other addresses each time (the limiter would refuse the same ones): the
    // first flood allocates the password workers' buffers, the second reuses them.
    for round in 1..=2 {
        let attackers = clients(3 + round, 20);
        let (grown, statuses) = growth(&server, bad_logins(&server, &attackers, LOGINS)).await;
        eprintln!("flood {round}: {LOGINS} parallel bad logins: server peak RSS +{grown:.1} MiB");
        assert!(
            statuses.iter().all(|s| *s == 401 || *s == 429),
            "{statuses:?}"
        );
        assert!(statuses.contains(&401), "some were checked: {statuses:?}");
        assert!(
            grown < BOUND_MIB,
            "flood {round}: {LOGINS} parallel bad logins grew the server's peak RSS by \
             {grown:.1} MiB"
        );
        if round == 2 {
            // Less than one check's blocks: the workers check in the buffers they kept.
            let one_check = BLOCK_BUFFER_BYTES as f64 / f64::from(1 << 20);
            assert!(
                grown < one_check,
                "the second flood grew the server's peak RSS by {grown:.1} MiB: were the \
                 argon2 blocks allocated again?"
            );
        }
    }
    // The admin, from an address that did not take part, still logs in.
    let admin = &clients(7, 1)[0];
    let response = admin
        .post(server.url("/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_requests_to_every_public_route_grow_the_servers_memory_by_a_bounded_amount() {
    const REQUESTS: usize = 200;
    let work = tempfile::tempdir().unwrap();
    let server = serve(&work);
    let strangers = clients(6, 20);
    let body = br#"{"repository":{"clone_url":"https://example.com/x.git"}}"#;
    let forged = wardn::sources::webhook::sign(b"guess", body);
    for (route, expected) in [
        ("/api/v1/health", 200),
        ("/metrics", 200),
        ("/api/v1/openapi.json", 200),
        ("/ui/login", 200),
        ("/ui/assets/app.js", 200),
        (wardn::sources::webhook::ROUTE, 401),
    ] {
        let requests = (0..REQUESTS).map(|i| {
            let http = &strangers[i % strangers.len()];
            let request = if route == wardn::sources::webhook::ROUTE {
                http.post(server.url(route))
                    .header("x-hub-signature-256", &forged)
                    .header("content-type", "application/json")
                    .body(&body[..])
            } else {
                http.get(server.url(route))
            };
            async move {
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                response.bytes().await.unwrap();
                status
            }
        });
        let (grown, statuses) = growth(&server, futures_util::future::join_all(requests)).await;
        eprintln!("{REQUESTS} parallel requests to {route}: server peak RSS +{grown:.1} MiB");
        assert!(
            statuses.iter().all(|s| *s == expected),
            "{route}: {statuses:?}"
        );
        assert!(
            grown < BOUND_MIB,
            "{REQUESTS} parallel requests to {route} grew the server's peak RSS by {grown:.1} MiB"
        );
    }
}
