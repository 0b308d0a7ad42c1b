//! Clusters behind a proxy (`proxy-url` in the kubeconfig): wardn's clients reach a kubesim
//! cluster through an HTTP `CONNECT` proxy and through a SOCKS5 proxy as the real kubectl
//! does (same tunnel target, same credentials, same answers), a thousand requests and a
//! hundred watches keep to two tunnels, and a proxy that refuses, fails, floods or stalls is
//! named without its password (or times out) instead of being bypassed, through the client
//! and through `POST /api/v1/clusters/test`.

mod common;
mod support;

use std::time::Duration;

use common::Sim;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kubesim::ClusterConfig;
use support::proxy::{Answer, Connect, Protocol, Proxy};
use tokio::net::TcpListener;
use wardn::clusters::connect::{ConnectError, classify, throttled_client_from_kubeconfig};
use wardn::clusters::throttle::Throttles;

/// A bound on waits for what must happen; far above what any of them takes.
const PATIENCE: Duration = Duration::from_secs(60);

async fn cluster() -> Sim {
    common::start_with(ClusterConfig {
        namespaces: vec!["demo".to_string()],
        simulate: false,
        ..ClusterConfig::default()
    })
    .await
}

/// `kubeconfig` reaching its server through `proxy_url`.
fn through(kubeconfig: &str, proxy_url: &str) -> String {
    kubeconfig.replacen(
        "    certificate-authority-data:",
        &format!("    proxy-url: {proxy_url}\n    certificate-authority-data:"),
        1,
    )
}

/// A client built as the reconciler builds its cached clients.
async fn wardn_client(kubeconfig: &str) -> Result<kube::Client, ConnectError> {
    let throttles = Throttles::new(10_000.0, 10_000);
    throttled_client_from_kubeconfig(kubeconfig, Duration::from_secs(5), &throttles.layer("c"))
        .await
}

async fn names(client: &kube::Client) -> kube::Result<Vec<String>> {
    let mut names: Vec<String> = Api::<ConfigMap>::namespaced(client.clone(), "demo")
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|map| map.metadata.name)
        .filter(|name| name != "kube-root-ca.crt")
        .collect();
    names.sort();
    Ok(names)
}

async fn create(client: &kube::Client, name: &str) {
    let map: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "demo")
        .create(&PostParams::default(), &map)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_behind_an_http_proxy_is_reached_through_two_tunnels_as_kubectl_reaches_it() {
    reached_through(Protocol::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_behind_a_socks5_proxy_is_reached_through_two_tunnels_as_kubectl_reaches_it() {
    reached_through(Protocol::Socks5).await;
}

/// A cluster behind a proxy of `protocol` requiring credentials: wardn's client reaches it,
/// keeps to two tunnels over a long run, and opens them as the real kubectl does.
async fn reached_through(protocol: Protocol) {
    let sim = cluster().await;
    let cluster = &sim.cluster;
    let proxy = Proxy::start(protocol, Answer::Tunnel, Some("ops@corp:p:ss")).await;
    // User information is percent-encoded in the URL and sent decoded, as client-go does.
    let kubeconfig = through(&cluster.kubeconfig(), &proxy.url("ops%40corp:p%3Ass@"));
    std::fs::write(&sim.kubeconfig, &kubeconfig).unwrap();
    let client = wardn_client(&kubeconfig).await.unwrap();
    create(&client, "through-proxy").await;
    assert_eq!(names(&client).await.unwrap(), ["through-proxy"]);

    // Long run: a thousand requests and a hundred watches opened and ended keep to one
    // tunnel for requests and one for watches, each one HTTP/2 connection at the server.
    let mut watch = Api::<ConfigMap>::namespaced(client.clone(), "demo")
        .watch(&WatchParams::default().timeout(290), "0")
        .await
        .unwrap()
        .boxed();
    for round in 0..1_000 {
        names(&client).await.unwrap();
        if round % 10 == 0 {
            let api = Api::<ConfigMap>::namespaced(client.clone(), "demo");
            drop(api.watch(&WatchParams::default(), "0").await.unwrap());
        }
    }
    create(&client, "seen-by-watch").await;
    let seen = tokio::time::timeout(PATIENCE, async {
        while let Some(Ok(event)) = watch.next().await {
            if let WatchEvent::Added(map) = event
                && map.metadata.name.as_deref() == Some("seen-by-watch")
            {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        seen,
        Ok(true),
        "the watch through the proxy missed the event"
    );
    let target = format!("127.0.0.1:{}", cluster.port());
    let tunnels = proxy.seen();
    assert_eq!(tunnels.len(), 2, "{tunnels:?}");
    let expected = Connect {
        target: target.clone(),
        credentials: Some("ops@corp:p:ss".to_string()),
    };
    assert!(tunnels.iter().all(|c| *c == expected), "{tunnels:?}");
    let connections = cluster.connections();
    assert_eq!((connections.http2, connections.http1), (2, 0));

    // Differential: the real kubectl, with the same kubeconfig, opens the same tunnel with the
    // same credentials and sees the same objects.
    let listed = sim.kubectl(&["get", "configmaps", "-n", "demo", "-o", "name"], None);
    assert_eq!(
        listed
            .lines()
            .filter(|name| *name != "configmap/kube-root-ca.crt")
            .collect::<Vec<_>>(),
        ["configmap/seen-by-watch", "configmap/through-proxy"]
    );
    let kubectl = &proxy.seen()[2..];
    assert!(
        !kubectl.is_empty() && kubectl.iter().all(|c| *c == expected),
        "{kubectl:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_refuses_fails_or_floods_is_named_without_its_password_and_never_bypassed() {
    let sim = cluster().await;
    let kubeconfig = sim.cluster.kubeconfig();
    let failure = |url: String| {
        let kubeconfig = through(&kubeconfig, &url);
        async move {
            let client = wardn_client(&kubeconfig).await.unwrap();
            let err = tokio::time::timeout(PATIENCE, names(&client))
                .await
                .expect("the request through the proxy hung")
                .expect_err("a request through a failing proxy succeeded");
            classify(&err)
        }
    };
    let cases: [(Answer, &str); 4] = [
        (Answer::Tunnel, "proxy authorization required"),
        (
            Answer::Bytes(b"HTTP/1.1 502 Bad Gateway\r\n\r\n"),
            "unsuccessful",
        ),
        (Answer::Bytes(b""), "unexpected end of file"),
        (Answer::Flood, "proxy response headers too long"),
    ];
    for (answer, reason) in cases {
        let proxy = Proxy::start(Protocol::Http, answer, Some("ops:right")).await;
        let err = failure(proxy.url("ops:wrong-secret@")).await;
        let text = err.to_string();
        assert!(matches!(err, ConnectError::Proxy(_)), "{text}");
        assert!(
            text.contains(&format!("through proxy http://127.0.0.1:{}/", proxy.port)),
            "{text}"
        );
        assert!(text.contains(reason), "{text}");
        assert!(!text.contains("wrong-secret"), "{text}");
        assert_eq!(proxy.seen().len(), 1, "one CONNECT per request");
    }
    // A SOCKS5 proxy refusing the password.
    let socks = Proxy::start(Protocol::Socks5, Answer::Tunnel, Some("ops:right")).await;
    let err = failure(socks.url("ops:wrong-secret@")).await;
    let text = err.to_string();
    assert!(matches!(err, ConnectError::Proxy(_)), "{text}");
    let named = format!(
        "through proxy socks5://127.0.0.1:{}/: SOCKS error",
        socks.port
    );
    assert!(text.contains(&named), "{text}");
    assert!(!text.contains("wrong-secret"), "{text}");
    // A proxy that never answers holds the connection no longer than the connect timeout
    // (5 s here), which covers the tunnel and TLS inside it.
    let stalled = Proxy::start(Protocol::Http, Answer::Stall, None).await;
    let err = failure(stalled.url("ops:wrong-secret@")).await;
    assert!(matches!(err, ConnectError::Timeout(_)), "{err}");
    assert!(!err.to_string().contains("wrong-secret"), "{err}");
    // A proxy nobody listens at: the failure is the proxy's, and the server is not tried.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let before = sim.cluster.connections();
    let err = failure(format!("http://u:wrong-secret@127.0.0.1:{port}")).await;
    assert!(matches!(err, ConnectError::Proxy(_)), "{err}");
    assert!(!err.to_string().contains("wrong-secret"), "{err}");
    assert_eq!(sim.cluster.connections(), before, "the proxy was bypassed");
    // Schemes wardn does not tunnel through are refused when the client is built.
    for scheme in ["https", "socks4"] {
        let url = format!("{scheme}://u:wrong-secret@127.0.0.1:{port}");
        let err = wardn_client(&through(&kubeconfig, &url))
            .await
            .err()
            .expect("a client through an unsupported proxy was built")
            .to_string();
        assert_eq!(
            err,
            format!(
                "kubeconfig: proxy-url {scheme}://127.0.0.1:{port}/: {scheme}:// proxies are not supported; use an http:// or socks5:// proxy (the API server's TLS runs inside the tunnel)"
            )
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_connects_through_the_proxy_and_names_a_failing_one_without_its_password() {
    let sim = cluster().await;
    let server = support::server::TestServer::start(None).await;
    let token = server.token().await;
    let test = |kubeconfig: String| {
        let (url, token, server_url) = (
            server.url("/api/v1/clusters/test"),
            token.clone(),
            sim.cluster.url(),
        );
        async move {
            let response = reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .json(&serde_json::json!({"server_url": server_url, "kubeconfig": kubeconfig}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), reqwest::StatusCode::OK);
            response.json::<serde_json::Value>().await.unwrap()
        }
    };
    let proxy = Proxy::start(Protocol::Http, Answer::Tunnel, Some("ops:s3cret")).await;
    let body = test(through(
        &sim.cluster.kubeconfig(),
        &proxy.url("ops:s3cret@"),
    ))
    .await;
    assert_eq!(body["status"], "connected", "{body}");
    assert!(!proxy.seen().is_empty());
    let body = test(through(
        &sim.cluster.kubeconfig(),
        &proxy.url("ops:wrong-s3cret@"),
    ))
    .await;
    assert_eq!(body["status"], "disconnected", "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.starts_with("proxy failure"), "{error}");
    assert!(error.contains("proxy authorization required"), "{error}");
    assert!(!body.to_string().contains("s3cret"), "{body}");
    // A proxy wardn does not tunnel through is refused with a 400 naming the field.
    let response = reqwest::Client::new()
        .post(server.url("/api/v1/clusters/test"))
        .bearer_auth(&token)
        .json(&serde_json::json!({
            "server_url": sim.cluster.url(),
            "kubeconfig": through(&sim.cluster.kubeconfig(), "https://ops:s3cret@127.0.0.1:1080"),
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::BAD_REQUEST);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body["error"],
        "kubeconfig.clusters[0].cluster.proxy-url: https:// proxies are not supported; use an http:// or socks5:// proxy (the API server's TLS runs inside the tunnel)"
    );
}
