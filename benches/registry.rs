//! Registry figures: registration latency, and `GET /api/v1/clusters` with 100 registered
//! clusters (99 reachable kubesim registrations, one that accepts connections and never
//! answers) while a probe round is in flight — the list must answer from cached status.
//! Runs on SQLite and on a throwaway PostgreSQL. Prints figures; asserts nothing about time.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use kubesim::{Cluster, ClusterConfig};
use reqwest::Client;
use serde_json::{Value, json};
use support::postgres::Postgres;
use support::server::TestServer;

fn summary(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let total: Duration = samples.iter().sum();
    let pick = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{label:<58} n={:<4} mean={:>7.2} ms  p50={:>7.2} ms  p95={:>7.2} ms  max={:>7.2} ms",
        samples.len(),
        ms(total / samples.len() as u32),
        ms(pick(0.5)),
        ms(pick(0.95)),
        ms(pick(1.0)),
    );
}

/// The kubesim cluster's URL and kubeconfig.
type Target = (String, String);

async fn run(backend: &str, database_url: Option<String>, cluster: &Target, dead_url: &str) {
    let server = TestServer::start(database_url).await;
    let token = server.token().await;
    let http = Client::new();

    let mut registration = Vec::new();
    for i in 0..100 {
        let (url, kubeconfig) = if i == 99 {
            (
                dead_url.to_string(),
                support::server::kubeconfig(dead_url, "t"),
            )
        } else {
            cluster.clone()
        };
        let body = json!({"name": format!("c{i:03}"), "server_url": url, "kubeconfig": kubeconfig,
                          "namespaces": ["default"]});
        let start = Instant::now();
        let response = http
            .post(server.url("/api/v1/clusters"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        registration.push(start.elapsed());
        assert_eq!(response.status(), 201);
    }
    summary(
        &format!("[{backend}] POST /api/v1/clusters (register)"),
        registration,
    );

    let probe_start = Instant::now();
    server.registry.probe_all().await.unwrap();
    println!(
        "[{backend}] probe round, 100 clusters, one dead (3 s timeout): {:.0} ms",
        probe_start.elapsed().as_secs_f64() * 1000.0
    );

    // A second probe round in flight (held up by the dead cluster) while listing.
    let registry = server.registry.clone();
    let round = tokio::spawn(async move { registry.probe_all().await });
    // Every sample is taken while the round is still waiting on the dead cluster.
    let mut listing = Vec::new();
    while !round.is_finished() {
        let start = Instant::now();
        let body: Value = http
            .get(server.url("/api/v1/clusters"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let elapsed = start.elapsed();
        assert_eq!(body["clusters"].as_array().unwrap().len(), 100);
        if !round.is_finished() {
            listing.push(elapsed);
        }
    }
    let mut in_process = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        let views = server.registry.list().await.unwrap();
        in_process.push(start.elapsed());
        assert_eq!(views.len(), 100);
    }
    summary(
        &format!("[{backend}] Registry::list (no HTTP, no auth)"),
        in_process,
    );
    summary(
        &format!("[{backend}] GET /api/v1/clusters, 100 clusters, dead one probing"),
        listing,
    );
    round.await.unwrap().unwrap();
    server.stop().await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    support::server::crypto();
    // kubesim runs on its own runtime and thread, as a remote cluster would, so its request
    // handling does not compete with the API server's runtime.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let cluster = Cluster::start(ClusterConfig {
                name: "bench".into(),
                nodes: 3,
                ..ClusterConfig::default()
            })
            .await
            .unwrap();
            tx.send((cluster.url(), cluster.kubeconfig())).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let cluster = rx.recv().unwrap();
    // Accepts connections and never answers: a blackholed API server.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("https://127.0.0.1:{}", dead.local_addr().unwrap().port());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = dead.accept().await {
            held.push(stream);
        }
    });

    run("sqlite", None, &cluster, &dead_url).await;
    let pg = Postgres::start();
    let url = pg.create_database("bench");
    run("postgres", Some(url), &cluster, &dead_url).await;
}
