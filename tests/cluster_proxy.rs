//! Clusters behind an HTTP proxy (`proxy-url` in the kubeconfig): wardn's clients reach a
//! kubesim cluster through a `CONNECT` proxy as the real kubectl does (same tunnel target,
//! same credentials, same answers), a thousand requests and watches keep to two tunnels, and
//! a proxy that refuses, fails or floods is named (without its password) instead of being
//! bypassed, through the client and through `POST /api/v1/clusters/test`.

mod common;
mod support;

use std::sync::Arc;
use std::time::Duration;

use common::Sim;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kubesim::ClusterConfig;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wardn::clusters::connect::{ConnectError, classify, throttled_client_from_kubeconfig};
use wardn::clusters::throttle::Throttles;

/// A bound on waits for what must happen; far above what any of them takes.
const PATIENCE: Duration = Duration::from_secs(60);

/// What the proxy answers a `CONNECT`.
#[derive(Clone, Copy)]
enum Answer {
    /// Opens the tunnel when the credentials match (else 407).
    Tunnel,
    /// Sends these bytes and closes.
    Bytes(&'static [u8]),
    /// Sends a header line without end.
    Flood,
}

/// One `CONNECT` the proxy received: its target and its `Proxy-Authorization` value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Connect {
    target: String,
    authorization: Option<String>,
}

/// An HTTP `CONNECT` proxy on 127.0.0.1, as squid or a corporate proxy answers one.
struct Proxy {
    port: u16,
    seen: Arc<Mutex<Vec<Connect>>>,
}

impl Proxy {
    /// Starts a proxy answering `answer`, requiring `authorization` when given.
    async fn start(answer: Answer, authorization: Option<String>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (log, authorization) = (Arc::clone(&log), authorization.clone());
                tokio::spawn(serve(client, answer, authorization, log));
            }
        });
        Proxy { port, seen }
    }

    fn url(&self, user_info: &str) -> String {
        format!("http://{user_info}127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Connect> {
        self.seen.lock().clone()
    }
}

async fn serve(
    mut client: TcpStream,
    answer: Answer,
    required: Option<String>,
    log: Arc<Mutex<Vec<Connect>>>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 8192 || client.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let mut lines = head.lines();
    let target = lines
        .next()
        .and_then(|line| line.strip_prefix("CONNECT "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_default()
        .to_string();
    let authorization = lines
        .filter_map(|line| line.split_once(": "))
        .find(|(name, _)| name.eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, value)| value.to_string());
    log.lock().push(Connect {
        target: target.clone(),
        authorization: authorization.clone(),
    });
    match answer {
        Answer::Bytes(bytes) => {
            let _ = client.write_all(bytes).await;
        }
        Answer::Flood => {
            let _ = client.write_all(b"HTTP/1.1 200 OK\r\nX-Padding: ").await;
            while client.write_all(b"0123456789").await.is_ok() {}
        }
        Answer::Tunnel if required.is_some() && authorization != required => {
            let _ = client
                .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                .await;
        }
        Answer::Tunnel => {
            let Ok(mut server) = TcpStream::connect(&target).await else {
                let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                return;
            };
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_ok()
            {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            }
        }
    }
}

/// `Basic base64(user:password)`, as the proxy expects it.
fn basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    )
}

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
async fn a_cluster_behind_a_connect_proxy_is_reached_through_two_tunnels_as_kubectl_reaches_it() {
    let sim = cluster().await;
    let cluster = &sim.cluster;
    let proxy = Proxy::start(Answer::Tunnel, Some(basic("ops@corp", "p:ss"))).await;
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
        authorization: Some(basic("ops@corp", "p:ss")),
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
        let proxy = Proxy::start(answer, Some(basic("ops", "right"))).await;
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
    for scheme in ["https", "socks5"] {
        let url = format!("{scheme}://u:wrong-secret@127.0.0.1:{port}");
        let err = wardn_client(&through(&kubeconfig, &url))
            .await
            .err()
            .expect("a client through an unsupported proxy was built")
            .to_string();
        assert_eq!(
            err,
            format!(
                "kubeconfig: proxy-url {scheme}://127.0.0.1:{port}/: {scheme}:// proxies are not supported; use an http:// proxy (the API server's TLS runs inside its CONNECT tunnel)"
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
    let proxy = Proxy::start(Answer::Tunnel, Some(basic("ops", "s3cret"))).await;
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
            "kubeconfig": through(&sim.cluster.kubeconfig(), "socks5://ops:s3cret@127.0.0.1:1080"),
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::BAD_REQUEST);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(
        body["error"],
        "kubeconfig.clusters[0].cluster.proxy-url: socks5:// proxies are not supported; use an http:// proxy (the API server's TLS runs inside its CONNECT tunnel)"
    );
}
