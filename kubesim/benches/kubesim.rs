//! kubesim figures: start-up of one cluster, gets/s and server-side-apply patches/s from one
//! client, and resident memory with 10,000 ConfigMaps. Prints numbers; asserts nothing.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kubesim::{Cluster, ClusterConfig};
use serde_json::json;

const CONCURRENCY: usize = 16;

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|kb| kb.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

async fn rate<F, Fut>(total: usize, f: F) -> f64
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let start = Instant::now();
    futures_util::stream::iter(0..total)
        .map(f)
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    total as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    kubesim::install_crypto_provider();
    let mut startups = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let c = Cluster::start(ClusterConfig::default())
            .await
            .expect("start");
        startups.push(t.elapsed());
        c.stop().await;
    }
    let best = startups.iter().min().copied().unwrap_or(Duration::ZERO);
    let mean = startups.iter().sum::<Duration>() / startups.len() as u32;
    println!(
        "start-up of one cluster: mean {:.1} ms, best {:.1} ms",
        mean.as_secs_f64() * 1e3,
        best.as_secs_f64() * 1e3
    );

    let cluster = Cluster::start(ClusterConfig {
        simulate: false,
        ..ClusterConfig::default()
    })
    .await
    .expect("start");
    let client = cluster.client().await.expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "bench"}, "data": {"k": "v"}})).unwrap();
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");

    let gets = rate(5_000, |_| {
        let api = api.clone();
        async move {
            api.get("bench").await.expect("get");
        }
    })
    .await;
    println!("gets/s from one client ({CONCURRENCY} in flight): {gets:.0}");

    let applies = rate(3_000, |i| {
        let api = api.clone();
        async move {
            let patch = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench"},
                "data": {"k": format!("v{i}")}});
            api.patch("bench", &PatchParams::apply("bench").force(), &Patch::Apply(patch)).await.expect("apply");
        }
    })
    .await;
    println!("server-side-apply patches/s from one client ({CONCURRENCY} in flight): {applies:.0}");

    let before = rss_mib();
    let creates = rate(10_000, |i| {
        let api = api.clone();
        async move {
            let cm: ConfigMap =
                serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}"),
                "labels": {"app": "bench", "index": i.to_string()}},
                "data": {"config.yaml": format!("key: value-{i}\nother: {}\n", "x".repeat(64))}}))
                .unwrap();
            api.create(&PostParams::default(), &cm)
                .await
                .expect("create");
        }
    })
    .await;
    let after = rss_mib();
    println!("creates/s from one client ({CONCURRENCY} in flight): {creates:.0}");
    println!(
        "resident memory of the process (server, store and client): {before:.1} MiB before, {after:.1} MiB with 10,000 ConfigMaps (+{:.1} MiB)",
        after - before
    );
    cluster.stop().await;
}
