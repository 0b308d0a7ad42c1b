//! The transport of wardn's clients to destination clusters (`clusters::transport`) against
//! kubesim clusters: requests and watches multiplexed over a few HTTP/2 connections, as the
//! real kubectl connects; HTTP/1.1 when a cluster does not offer HTTP/2; more watches than one
//! connection's stream limit without starving requests; a connection gone silent noticed by
//! its pings; and a thousand watches that leave no connection or slot behind.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::Sim;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kubesim::{Cluster, ClusterConfig, Connections};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wardn::clusters::connect::throttled_client_from_kubeconfig;
use wardn::clusters::throttle::Throttles;
use wardn::clusters::transport::{self, Keepalive, WATCHES_PER_CONNECTION};

/// A bound on waits for what must happen; far above what any of them takes.
const PATIENCE: Duration = Duration::from_secs(60);

async fn cluster(namespaces: usize, disable_http2: bool) -> Sim {
    common::start_with(ClusterConfig {
        namespaces: (0..namespaces).map(|i| format!("ns{i}")).collect(),
        simulate: false,
        disable_http2,
        ..ClusterConfig::default()
    })
    .await
}

/// A client built as the reconciler builds its cached clients.
async fn wardn_client(cluster: &Cluster) -> kube::Client {
    let throttles = Throttles::new(10_000.0, 10_000);
    throttled_client_from_kubeconfig(
        &cluster.kubeconfig(),
        Duration::from_secs(10),
        &throttles.layer(cluster.name()),
    )
    .await
    .unwrap()
}

type Watch =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Send>>;

/// Opens a watch on the ConfigMaps of `namespace`; it is open once this returns.
async fn watch(client: &kube::Client, namespace: &str) -> Watch {
    let api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    tokio::time::timeout(
        PATIENCE,
        api.watch(&WatchParams::default().timeout(290), "0"),
    )
    .await
    .expect("the watch did not open")
    .unwrap()
    .boxed()
}

/// The names of the ConfigMaps in `namespace`.
async fn list(client: &kube::Client, namespace: &str) -> kube::Result<Vec<String>> {
    Ok(Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|map| map.metadata.name)
        .collect())
}

async fn create(client: &kube::Client, namespace: &str, name: &str) {
    let map: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name}, "data": {"k": "v"},
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &map)
        .await
        .unwrap();
}

/// The next event of `watch` that names `name`, skipping the others.
async fn event_for(watch: &mut Watch, name: &str) {
    let found = tokio::time::timeout(PATIENCE, async {
        while let Some(event) = watch.next().await {
            if let Ok(WatchEvent::Added(map) | WatchEvent::Modified(map)) = event
                && map.metadata.name.as_deref() == Some(name)
            {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "no event for {name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_beyond_one_connections_stream_limit_and_requests_share_a_few_http2_connections_as_kubectl_speaks_it()
 {
    // kubesim, like kube-apiserver 1.32, lets one HTTP/2 connection carry 100 streams.
    let namespaces = 40;
    let sim = cluster(namespaces, false).await;
    let cluster = &sim.cluster;
    let client = wardn_client(cluster).await;
    // The first request opens the connection the others share (requests sent before any
    // connection has negotiated HTTP/2 each open one, and all but one are dropped).
    list(&client, "ns0").await.unwrap();
    let mut watches = Vec::new();
    for index in 0..3 * namespaces {
        watches.push(watch(&client, &format!("ns{}", index % namespaces)).await);
    }
    assert_eq!(watches.len(), 120);
    // 120 watches hold 120 streams open; 50 requests at once still get through.
    let requests = (0..50).map(|i| {
        let client = client.clone();
        async move { list(&client, &format!("ns{}", i % namespaces)).await }
    });
    let answered = tokio::time::timeout(PATIENCE, futures_util::future::join_all(requests))
        .await
        .expect("requests starved behind the watches");
    assert!(answered.iter().all(|r| r.is_ok()), "{answered:?}");
    // One connection for requests, one per 50 watches; none over HTTP/1.1.
    let watch_connections = 120_u64.div_ceil(WATCHES_PER_CONNECTION as u64);
    assert_eq!(
        cluster.connections(),
        Connections {
            http2: 1 + watch_connections,
            http1: 0,
            open: 1 + watch_connections,
        }
    );
    // Every watch is live: a ConfigMap created in ns7 reaches the three watches of ns7.
    create(&client, "ns7", "seen").await;
    for index in [7, 7 + namespaces, 7 + 2 * namespaces] {
        event_for(&mut watches[index], "seen").await;
    }
    // The real kubectl negotiates HTTP/2 with the same server too.
    let before = cluster.connections();
    sim.kubectl(&["get", "--raw", "/version"], None);
    let after = cluster.connections();
    assert_eq!(
        (after.http2 - before.http2, after.http1 - before.http1),
        (1, 0),
        "kubectl connected otherwise"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_http2_is_spoken_to_over_http1_like_kubectl_does() {
    let sim = cluster(3, true).await;
    let cluster = &sim.cluster;
    let client = wardn_client(cluster).await;
    let mut watches = Vec::new();
    for ns in 0..3 {
        watches.push(watch(&client, &format!("ns{ns}")).await);
    }
    list(&client, "ns0").await.unwrap();
    create(&client, "ns1", "plain").await;
    event_for(&mut watches[1], "plain").await;
    let seen = cluster.connections();
    assert_eq!(seen.http2, 0);
    // HTTP/1.1 holds a connection per watch open.
    assert!(seen.http1 >= 4, "{seen:?}");
    sim.kubectl(&["get", "--raw", "/version"], None);
    assert_eq!(cluster.connections().http2, 0);
}

/// A TCP relay in front of a cluster that can go silent on the connections it has, as a
/// network failure or a dead load balancer leaves them: nothing passes either way and nothing
/// is closed. Connections made afterwards pass.
struct Relay {
    port: u16,
    /// Connections numbered below this are silent.
    silent_below: Arc<AtomicU64>,
    accepted: Arc<AtomicU64>,
}

impl Relay {
    async fn start(upstream: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let silent_below = Arc::new(AtomicU64::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let (silent, count) = (silent_below.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let number = count.fetch_add(1, Ordering::AcqRel);
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let gate = (number, silent.clone());
                tokio::spawn(pipe(client_read, server_write, gate.clone()));
                tokio::spawn(pipe(server_read, client_write, gate));
            }
        });
        Relay {
            port,
            silent_below,
            accepted,
        }
    }

    fn silence_open_connections(&self) {
        self.silent_below
            .store(self.accepted.load(Ordering::Acquire), Ordering::Release);
    }
}

/// Copies `from` to `to` until either ends, or forever holds both once connection `number`
/// is silenced.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    (number, silent_below): (u64, Arc<AtomicU64>),
) {
    let mut buffer = vec![0; 16 * 1024];
    loop {
        let Ok(read) = from.read(&mut buffer).await else {
            return;
        };
        if read == 0 {
            return;
        }
        if number < silent_below.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_gone_silent_fails_its_watch_by_ping_and_the_next_request_takes_a_new_one() {
    let sim = cluster(1, false).await;
    let cluster = &sim.cluster;
    let relay = Relay::start(cluster.port()).await;
    let mut config = cluster.config().await.unwrap();
    config.cluster_url = format!("https://127.0.0.1:{}", relay.port).parse().unwrap();
    let keepalive = Keepalive {
        interval: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
    };
    let client = transport::client(&config, None, keepalive).unwrap();
    list(&client, "ns0").await.unwrap();
    let mut silenced = watch(&client, "ns0").await;
    relay.silence_open_connections();
    // Nothing is closed, so without pings this watch would wait for the read timeout
    // (295 s); the unanswered ping ends it.
    let ended = tokio::time::timeout(PATIENCE, async {
        loop {
            match silenced.next().await {
                None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the silent watch was not noticed");
    // Requests go through a new connection once the silent one is found dead.
    let answered = tokio::time::timeout(PATIENCE, async {
        loop {
            if list(&client, "ns0").await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(answered.is_ok(), "no request got through after the silence");
    let mut fresh = watch(&client, "ns0").await;
    create(&client, "ns0", "after").await;
    event_for(&mut fresh, "after").await;
    assert!(relay.accepted.load(Ordering::Acquire) >= 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_watches_opened_and_dropped_leave_no_connection_or_slot_behind() {
    let sim = cluster(2, false).await;
    let cluster = &sim.cluster;
    let client = wardn_client(cluster).await;
    for round in 0..1_000 {
        let opened = watch(&client, &format!("ns{}", round % 2)).await;
        drop(opened);
        if round % 10 == 0 {
            list(&client, "ns0").await.unwrap();
        }
    }
    let seen = cluster.connections();
    assert_eq!((seen.http2, seen.http1), (2, 0), "{seen:?}");
    // Every slot came back: a full connection's worth of watches fits on the one there is.
    let mut held = Vec::new();
    for i in 0..WATCHES_PER_CONNECTION {
        held.push(watch(&client, &format!("ns{}", i % 2)).await);
    }
    assert_eq!(cluster.connections().http2, 2);
    held.push(watch(&client, "ns0").await);
    assert_eq!(cluster.connections().http2, 3);
}
