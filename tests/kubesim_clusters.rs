//! The registry against real (kubesim) clusters: probing, the connection test's causes for
//! rejected and forbidden credentials, a cluster going away and coming back, and resolution of
//! destinations locally and through the internal endpoint, with the namespace allowlist.

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, ListParams};
use kubesim::{Cluster, ClusterConfig};
use reqwest::Client;
use serde_json::{Value, json};
use support::server::{INTERNAL_TOKEN, TestServer};
use wardn::clusters::connect::Connectivity;
use wardn::clusters::resolve::{ClusterSource, ResolveError, Resolver};
use wardn::server_link::ServerLink;

async fn kubesim(name: &str) -> Cluster {
    kubesim::install_crypto_provider();
    Cluster::start(ClusterConfig {
        name: name.to_string(),
        nodes: 3,
        namespaces: vec!["staging".to_string()],
        ..ClusterConfig::default()
    })
    .await
    .unwrap()
}

async fn register(
    server: &TestServer,
    token: &str,
    name: &str,
    cluster: &Cluster,
    namespaces: &[&str],
) {
    let response = Client::new()
        .post(server.url("/api/v1/clusters"))
        .bearer_auth(token)
        .json(&json!({"name": name, "server_url": cluster.url(),
                      "kubeconfig": cluster.kubeconfig(), "namespaces": namespaces}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
}

/// How many Nodes the cluster's admin sees (kubesim's simulated nodes).
async fn node_count(cluster: &Cluster) -> u64 {
    Api::<Node>::all(cluster.client().await.unwrap())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len() as u64
}

async fn namespaces_seen(client: kube::Client) -> Vec<String> {
    Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|ns| ns.metadata.name)
        .collect()
}

#[tokio::test]
async fn probing_reports_version_nodes_and_follows_the_cluster_down_and_up() {
    let cluster = kubesim("staging").await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    register(
        &server,
        &token,
        "staging",
        &cluster,
        &["staging", "default"],
    )
    .await;

    let status = server.registry.probe("staging").await;
    assert_eq!(status.status, Connectivity::Connected, "{status:?}");
    assert!(
        status.version.as_deref().unwrap().starts_with("v1.32"),
        "{status:?}"
    );
    let nodes = node_count(&cluster).await;
    assert_eq!(status.node_count, Some(nodes));
    let list: Value = Client::new()
        .get(server.url("/api/v1/clusters"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entry = &list["clusters"][0];
    assert_eq!(entry["status"], "connected");
    assert_eq!(entry["node_count"], nodes);
    assert!(entry.get("error").is_none());

    // A probe round covers every cluster: a closed port is disconnected, kubesim connected.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("https://127.0.0.1:{}", closed.local_addr().unwrap().port());
    drop(closed);
    let body = json!({"name": "dead", "server_url": dead,
                      "kubeconfig": support::server::kubeconfig(&dead, "t")});
    let response = Client::new()
        .post(server.url("/api/v1/clusters"))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    server.registry.probe_all().await.unwrap();
    let views = server.registry.list().await.unwrap();
    let states: Vec<(&str, Connectivity)> = views
        .iter()
        .map(|v| (v.name.as_str(), v.status.status))
        .collect();
    assert_eq!(
        states,
        [
            ("dead", Connectivity::Disconnected),
            ("staging", Connectivity::Connected)
        ]
    );

    cluster.stop().await;
    let status = server.registry.probe("staging").await;
    assert_eq!(status.status, Connectivity::Disconnected);
    assert!(status.error.unwrap().starts_with("connection refused"));
    cluster.restart().await.unwrap();
    let status = server.registry.probe("staging").await;
    assert_eq!(status.status, Connectivity::Connected, "{status:?}");
}

async fn test_endpoint(server: &TestServer, token: &str, url: &str, kubeconfig: &str) -> Value {
    Client::new()
        .post(server.url("/api/v1/clusters/test"))
        .bearer_auth(token)
        .json(&json!({"server_url": url, "kubeconfig": kubeconfig}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_connection_test_names_rejected_and_forbidden_credentials() {
    let cluster = kubesim("remote").await;
    let server = TestServer::start(None).await;
    let token = server.token().await;

    let ok = test_endpoint(&server, &token, &cluster.url(), &cluster.kubeconfig()).await;
    assert_eq!(ok["status"], "connected", "{ok}");
    assert_eq!(ok["node_count"], node_count(&cluster).await);

    let expired = cluster.kubeconfig_with_token(&cluster.tokens().expired);
    let report = test_endpoint(&server, &token, &cluster.url(), &expired).await;
    let error = report["error"].as_str().unwrap();
    assert!(
        error.starts_with("credentials rejected or expired (401"),
        "{report}"
    );

    let namespaced = cluster.kubeconfig_with_token(&cluster.tokens().namespaced["staging"]);
    let report = test_endpoint(&server, &token, &cluster.url(), &namespaced).await;
    let error = report["error"].as_str().unwrap();
    assert!(error.starts_with("forbidden (403)"), "{report}");

    // A CA that does not match the server: TLS verification fails.
    let other = kubesim("other").await;
    let wrong_ca = cluster
        .kubeconfig()
        .replace(&other_ca_data(&cluster), &other_ca_data(&other));
    let report = test_endpoint(&server, &token, &cluster.url(), &wrong_ca).await;
    assert!(
        report["error"].as_str().unwrap().starts_with("TLS error"),
        "{report}"
    );
}

fn other_ca_data(cluster: &Cluster) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(cluster.ca_pem())
}

#[tokio::test]
async fn local_resolution_enforces_the_allowlist_before_any_request() {
    let cluster = kubesim("staging").await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    register(&server, &token, "staging", &cluster, &["staging"]).await;
    let resolver = Resolver::new(
        ClusterSource::Local(server.registry.clone()),
        Duration::from_secs(5),
    );
    let client = resolver.resolve("staging", "staging").await.unwrap();
    assert!(
        namespaces_seen(client)
            .await
            .contains(&"staging".to_string())
    );
    assert!(server.registry.clients().contains("staging"));

    cluster.stop().await;
    let Err(err) = resolver.resolve("staging", "kube-system").await else {
        panic!("kube-system is outside the allowlist");
    };
    assert_eq!(
        err.to_string(),
        "namespace \"kube-system\" is not in the namespaces allowlist of cluster \"staging\""
    );
    assert!(matches!(err, ResolveError::NamespaceNotAllowed { .. }));
    assert!(matches!(
        resolver.resolve("nope", "default").await,
        Err(ResolveError::UnknownCluster(_))
    ));

    // Removal drops the cached client; resolution then fails as unknown.
    Client::new()
        .delete(server.url("/api/v1/clusters/staging"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert!(!server.registry.clients().contains("staging"));
    assert!(matches!(
        resolver.resolve("staging", "staging").await,
        Err(ResolveError::UnknownCluster(_))
    ));
}

#[tokio::test]
async fn operator_resolution_goes_through_the_internal_endpoint() {
    let cluster = kubesim("prod").await;
    let management = kubesim("mgmt").await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    register(&server, &token, "production", &cluster, &["staging"]).await;

    let link =
        |token: &str| ServerLink::new(&server.base, token, None, Duration::from_secs(5)).unwrap();
    let operator = Resolver::remote(
        link(INTERNAL_TOKEN),
        Duration::from_secs(60),
        Duration::from_secs(5),
    )
    .with_management(
        management.client().await.unwrap(),
        "https://management.test".into(),
    );
    let client = operator.resolve("production", "staging").await.unwrap();
    assert!(
        namespaces_seen(client)
            .await
            .contains(&"staging".to_string())
    );
    assert!(matches!(
        operator.resolve("production", "default").await,
        Err(ResolveError::NamespaceNotAllowed { .. })
    ));
    assert!(matches!(
        operator.resolve("missing", "default").await,
        Err(ResolveError::UnknownCluster(_))
    ));
    // A cached client keeps the allowlist it was fetched with until invalidated.
    let response = Client::new()
        .put(server.url("/api/v1/clusters/production"))
        .bearer_auth(&token)
        .json(&json!({"namespaces": ["staging", "default"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(operator.resolve("production", "default").await.is_err());
    operator.invalidate("production");
    assert!(operator.resolve("production", "default").await.is_ok());

    let destination = operator.destination("production").await.unwrap();
    assert_eq!(
        destination.namespaces,
        Some(vec!["staging".to_string(), "default".to_string()])
    );
    assert_eq!(operator.destination("").await.unwrap().namespaces, None);

    // The empty cluster name is the management cluster, with no allowlist.
    let mgmt = operator.resolve("", "anything").await.unwrap();
    assert!(
        namespaces_seen(mgmt)
            .await
            .contains(&"kube-system".to_string())
    );

    let intruder = Resolver::remote(
        link("wrong"),
        Duration::from_secs(60),
        Duration::from_secs(5),
    );
    let Err(err) = intruder.resolve("production", "staging").await else {
        panic!("a wrong internal token must not resolve");
    };
    assert!(err.to_string().contains("401"), "{err}");
}

/// Open file descriptors of this process (sockets of both ends: kubesim runs in it too).
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_keep_no_client_of_their_own_and_a_thousand_leave_no_connection_open() {
    let cluster = kubesim("staging").await;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    register(&server, &token, "staging", &cluster, &[]).await;
    let registry = &server.registry;

    // Probing a cluster nothing deploys to builds a client for the probe only.
    let status = registry.probe("staging").await;
    assert_eq!(status.status, Connectivity::Connected, "{status:?}");
    assert_eq!(status.node_count, Some(3));
    assert!(!registry.clients().contains("staging"));
    // A careless caller probing what is not registered: a status naming the cause, no entry.
    let unknown = registry.probe("nope").await;
    assert_eq!(unknown.status, Connectivity::Disconnected);
    assert!(
        unknown
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("nope"),
        "{unknown:?}"
    );
    assert!(registry.clients().is_empty());

    // A thousand probes: every one answers, and their connections all close again.
    let before = open_fds();
    for round in 0..1000 {
        let status = registry.probe("staging").await;
        assert_eq!(
            status.status,
            Connectivity::Connected,
            "probe {round}: {status:?}"
        );
    }
    assert!(registry.clients().is_empty());
    let mut settled = open_fds();
    for _ in 0..100 {
        if settled <= before + 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        settled = open_fds();
    }
    assert!(
        settled <= before + 8,
        "{before} fds before the probes, {settled} after"
    );

    // Once something deploys through the cache, probes reuse that client (and its
    // connection) instead of building their own.
    let resolver = Resolver::new(
        ClusterSource::Local(registry.clone()),
        Duration::from_secs(5),
    );
    resolver.resolve("staging", "staging").await.unwrap();
    assert_eq!(resolver.cached_clients(), 1);
    let cached = open_fds();
    for _ in 0..20 {
        assert_eq!(
            registry.probe("staging").await.status,
            Connectivity::Connected
        );
    }
    assert!(
        open_fds() <= cached + 2,
        "probes through the cached client reuse its connection"
    );
    // A replica that stops working on the cluster drops the client.
    resolver.invalidate("staging");
    assert_eq!(resolver.cached_clients(), 0);
    assert_eq!(
        registry.probe("staging").await.status,
        Connectivity::Connected
    );
    assert!(!registry.clients().contains("staging"));
}
