//! A real smart-HTTPS Git server for tests: `git http-backend` behind a small CGI bridge, with
//! TLS from a CA generated per server, and bearer or basic authentication checked here.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;

/// What the server requires from clients.
#[derive(Clone, Debug)]
pub enum Auth {
    /// Anyone may fetch.
    None,
    /// `Authorization: Bearer TOKEN`.
    Bearer(String),
    /// `Authorization: Basic base64(USER:PASS)`.
    Basic(String, String),
}

/// A running server; dropping it (or [`stop`](HttpsGitServer::stop)) shuts it down.
pub struct HttpsGitServer {
    /// `127.0.0.1:PORT`.
    pub addr: SocketAddr,
    /// The CA that signed the server certificate (PEM), for the client to trust.
    pub ca_pem: String,
    /// One line per request served: `METHOD /path` plus the protocol v2 command, if any.
    pub requests: Arc<std::sync::Mutex<Vec<String>>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpsGitServer {
    /// Serves the repositories under `root` (URL path `/NAME` → `root/NAME`).
    pub fn start(root: PathBuf, auth: Auth) -> Self {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "wardn test CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().unwrap();
        let params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let (tx, mut rx) = oneshot::channel();
        let root = Arc::new(root);
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = requests.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        accepted = listener.accept() => {
                            let Ok((tcp, _)) = accepted else { continue };
                            let acceptor = acceptor.clone();
                            let root = root.clone();
                            let auth = auth.clone();
                            let log = log.clone();
                            tokio::spawn(async move {
                                let Ok(tls) = acceptor.accept(tcp).await else { return };
                                let service = hyper::service::service_fn(move |req| {
                                    handle(req, root.clone(), auth.clone(), log.clone())
                                });
                                let _ = hyper::server::conn::http1::Builder::new()
                                    .serve_connection(TokioIo::new(tls), service)
                                    .await;
                            });
                        }
                    }
                }
            });
            rt.shutdown_background();
        });
        Self {
            addr,
            ca_pem: ca_cert.pem(),
            requests,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// The https URL of repository `name`.
    pub fn url(&self, name: &str) -> String {
        format!("https://127.0.0.1:{}/{name}", self.addr.port())
    }

    /// Stops the server (the port stops accepting connections).
    pub fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for HttpsGitServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn authorized(req: &Request<Incoming>, auth: &Auth) -> bool {
    let header = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match auth {
        Auth::None => true,
        Auth::Bearer(token) => header == format!("Bearer {token}"),
        Auth::Basic(user, pass) => {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            header == format!("Basic {encoded}")
        }
    }
}

async fn handle(
    req: Request<Incoming>,
    root: Arc<PathBuf>,
    auth: Auth,
    log: Arc<std::sync::Mutex<Vec<String>>>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    if !authorized(&req, &auth) {
        let mut res = Response::new(Full::new(Bytes::from_static(b"authentication required\n")));
        *res.status_mut() = StatusCode::UNAUTHORIZED;
        res.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Basic realm=\"git\""),
        );
        return Ok(res);
    }
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let content_type = header("content-type");
    let git_protocol = header("git-protocol");
    let encoding = header("content-encoding");
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let command = ["ls-refs", "fetch"].into_iter().find(|c| {
        body.windows(8 + c.len())
            .any(|w| w == format!("command={c}").as_bytes())
    });
    log.lock().unwrap().push(
        format!("{method} {path} {}", command.unwrap_or(""))
            .trim_end()
            .to_string(),
    );

    let mut child = tokio::process::Command::new("git")
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root.as_os_str())
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", &path)
        .env("QUERY_STRING", &query)
        .env("CONTENT_TYPE", &content_type)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", &encoding)
        .env("GIT_PROTOCOL", &git_protocol)
        .env("HTTP_GIT_PROTOCOL", &git_protocol)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
    });
    let out = child.wait_with_output().await.unwrap();
    let _ = writer.await;
    Ok(cgi_response(&out.stdout))
}

/// Turns CGI output (headers, blank line, body) into an HTTP response.
fn cgi_response(out: &[u8]) -> Response<Full<Bytes>> {
    let (head, body) = match out.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => (&out[..i], &out[i + 4..]),
        None => match out.windows(2).position(|w| w == b"\n\n") {
            Some(i) => (&out[..i], &out[i + 2..]),
            None => (&out[..0], out),
        },
    };
    let mut res = Response::new(Full::new(Bytes::copy_from_slice(body)));
    for line in String::from_utf8_lossy(head).lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().unwrap_or("500");
            *res.status_mut() = StatusCode::from_u16(code.parse().unwrap_or(500)).unwrap();
        } else if let (Ok(n), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(value),
        ) {
            res.headers_mut().append(n, v);
        }
    }
    res
}
