//! Clusters behind a proxy (`proxy-url` in the kubeconfig): wardn's clients reach a kubesim
//! cluster through an HTTP `CONNECT` proxy and through a SOCKS5 proxy as the real kubectl
//! does (same tunnel target, same credentials, same answers), a thousand requests and a
//! hundred watches keep to two tunnels, and a proxy that refuses, fails, floods or stalls is
//! named without its password (or times out) instead of being bypassed, through the client
//! and through `POST /api/v1/clusters/test`.

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

/// The protocol a proxy speaks.
#[derive(Clone, Copy, Debug)]
enum Protocol {
    /// HTTP `CONNECT`, as squid or a corporate proxy answers it.
    Http,
    /// SOCKS5 `CONNECT` (RFC 1928) with username and password (RFC 1929).
    Socks5,
}

/// What the proxy answers a `CONNECT`.
#[derive(Clone, Copy)]
enum Answer {
    /// Opens the tunnel when the credentials match (else refuses them).
    Tunnel,
    /// Sends these bytes and closes (HTTP).
    Bytes(&'static [u8]),
    /// Sends a header line without end (HTTP).
    Flood,
    /// Never answers (HTTP).
    Stall,
}

/// One `CONNECT` the proxy received: its target and the credentials sent (`user:password`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Connect {
    target: String,
    credentials: Option<String>,
}

/// A proxy on 127.0.0.1.
struct Proxy {
    protocol: Protocol,
    port: u16,
    seen: Arc<Mutex<Vec<Connect>>>,
}

impl Proxy {
    /// Starts a proxy of `protocol` answering `answer`, requiring `credentials`
    /// (`user:password`) when given.
    async fn start(protocol: Protocol, answer: Answer, credentials: Option<&str>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let required = credentials.map(str::to_string);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (log, required) = (Arc::clone(&log), required.clone());
                match protocol {
                    Protocol::Http => {
                        tokio::spawn(serve_http(client, answer, required, log));
                    }
                    Protocol::Socks5 => {
                        tokio::spawn(serve_socks5(client, required, log));
                    }
                }
            }
        });
        Proxy {
            protocol,
            port,
            seen,
        }
    }

    fn url(&self, user_info: &str) -> String {
        let scheme = match self.protocol {
            Protocol::Http => "http",
            Protocol::Socks5 => "socks5",
        };
        format!("{scheme}://{user_info}127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Connect> {
        self.seen.lock().clone()
    }
}

/// Connects to `target` and relays between it and `client` once `established` is sent (or
/// sends `refused`).
async fn relay(mut client: TcpStream, target: &str, established: &[u8], refused: &[u8]) {
    let Ok(mut server) = TcpStream::connect(target).await else {
        let _ = client.write_all(refused).await;
        return;
    };
    if client.write_all(established).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

async fn serve_http(
    mut client: TcpStream,
    answer: Answer,
    required: Option<String>,
    log: Arc<Mutex<Vec<Connect>>>,
) {
    use base64::Engine as _;
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
    let credentials = lines
        .filter_map(|line| line.split_once(": "))
        .find(|(name, _)| name.eq_ignore_ascii_case("proxy-authorization"))
        .and_then(|(_, value)| value.strip_prefix("Basic "))
        .and_then(|basic| base64::engine::general_purpose::STANDARD.decode(basic).ok())
        .map(|pair| String::from_utf8_lossy(&pair).to_string());
    log.lock().push(Connect {
        target: target.clone(),
        credentials: credentials.clone(),
    });
    match answer {
        Answer::Bytes(bytes) => {
            let _ = client.write_all(bytes).await;
        }
        Answer::Flood => {
            let _ = client.write_all(b"HTTP/1.1 200 OK\r\nX-Padding: ").await;
            while client.write_all(b"0123456789").await.is_ok() {}
        }
        Answer::Stall => {
            let _ = client.read(&mut [0u8; 1]).await;
        }
        Answer::Tunnel if required.is_some() && credentials != required => {
            let _ = client
                .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                .await;
        }
        Answer::Tunnel => {
            let established = b"HTTP/1.1 200 Connection established\r\n\r\n";
            relay(
                client,
                &target,
                established,
                b"HTTP/1.1 502 Bad Gateway\r\n\r\n",
            )
            .await;
        }
    }
}

/// Reads a length byte, then that many bytes, as text.
async fn read_counted(client: &mut TcpStream) -> std::io::Result<String> {
    let length = client.read_u8().await?;
    let mut text = vec![0; usize::from(length)];
    client.read_exact(&mut text).await?;
    Ok(String::from_utf8_lossy(&text).to_string())
}

async fn serve_socks5(
    mut client: TcpStream,
    required: Option<String>,
    log: Arc<Mutex<Vec<Connect>>>,
) -> std::io::Result<()> {
    let mut greeting = [0u8; 2];
    client.read_exact(&mut greeting).await?;
    let mut methods = vec![0; usize::from(greeting[1])];
    client.read_exact(&mut methods).await?;
    let mut credentials = None;
    if required.is_some() {
        if !methods.contains(&2) {
            return client.write_all(&[5, 0xff]).await;
        }
        client.write_all(&[5, 2]).await?;
        let _version = client.read_u8().await?;
        let user = read_counted(&mut client).await?;
        let password = read_counted(&mut client).await?;
        credentials = Some(format!("{user}:{password}"));
        if credentials != required {
            log.lock().push(Connect {
                target: String::new(),
                credentials,
            });
            return client.write_all(&[1, 1]).await;
        }
        client.write_all(&[1, 0]).await?;
    } else {
        client.write_all(&[5, 0]).await?;
    }
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).await?;
            std::net::Ipv4Addr::from(ip).to_string()
        }
        3 => read_counted(&mut client).await?,
        _ => return client.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    let port = client.read_u16().await?;
    let target = format!("{host}:{port}");
    log.lock().push(Connect {
        target: target.clone(),
        credentials,
    });
    let established = [5, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    relay(
        client,
        &target,
        &established,
        &[5, 5, 0, 1, 0, 0, 0, 0, 0, 0],
    )
    .await;
    Ok(())
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
