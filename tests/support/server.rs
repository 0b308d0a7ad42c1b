//! An in-process wardn server on an ephemeral port, with a known admin password and internal
//! token, stopped when dropped.

use std::sync::Arc;
use std::time::Duration;

#[allow(unused_imports)]
pub use super::running::{login, login_as, login_with};

use wardn::clusters::registry::Registry;
use wardn::daemon::ServeOptions;
use wardn::seal::Sealer;
use wardn::server::Server;

/// The admin password the test servers use.
pub const ADMIN_PASSWORD: &str = "correct horse battery staple";
/// The internal token the test servers use.
pub const INTERNAL_TOKEN: &str = "internal-token-for-tests-0123456789";
/// The Git webhook secret the test servers use.
pub const WEBHOOK_SECRET: &str = "webhook-secret-for-tests";
/// The credentials key the test servers use.
pub const KEY: [u8; 32] = [42u8; 32];

/// A running test server.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The registry behind it.
    pub registry: Arc<Registry>,
    /// The state the server's handlers share (login limiter, password-check counters).
    pub state: wardn::server::AppState,
    /// The data directory (SQLite file lives here unless a database URL was given).
    pub data: tempfile::TempDir,
    /// The PEM of the CA that signed the server's certificate, when it serves https.
    pub ca: Option<String>,
    /// One client for every request of the test (trusting `ca` when there is one): a client
    /// holds a connection pool and, with a CA, parses its roots, so it is built once.
    http: reqwest::Client,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// Installs ring as the rustls provider (the binary does this in main).
pub fn crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl TestServer {
    /// Starts a server on SQLite (`database_url` None) or the given database.
    pub async fn start(database_url: Option<String>) -> TestServer {
        TestServer::start_with(
            database_url,
            Sealer::new(&KEY, None),
            tempfile::tempdir().unwrap(),
        )
        .await
    }

    /// Starts a server with a given sealer and data directory.
    pub async fn start_with(
        database_url: Option<String>,
        sealer: Sealer,
        data: tempfile::TempDir,
    ) -> TestServer {
        TestServer::start_configured(database_url, sealer, data, |_| {}).await
    }

    /// Starts a server on SQLite with the test options changed by `configure` (e.g. an apps
    /// directory and a management cluster).
    pub async fn start_with_options(configure: impl FnOnce(&mut ServeOptions)) -> TestServer {
        TestServer::start_configured(
            None,
            Sealer::new(&KEY, None),
            tempfile::tempdir().unwrap(),
            configure,
        )
        .await
    }

    /// Starts a server on `database_url` (None: SQLite) with the test options changed by
    /// `configure`.
    pub async fn start_configured(
        database_url: Option<String>,
        sealer: Sealer,
        data: tempfile::TempDir,
        configure: impl FnOnce(&mut ServeOptions),
    ) -> TestServer {
        crypto();
        let mut options = ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: data.path().to_path_buf(),
            database_url,
            admin_password: Some(ADMIN_PASSWORD.to_string()),
            internal_token: Some(INTERNAL_TOKEN.to_string()),
            webhook_secret: Some(WEBHOOK_SECRET.to_string()),
            probe_interval: Duration::from_secs(3600),
            probe_timeout: Duration::from_secs(3),
            ..ServeOptions::default()
        };
        configure(&mut options);
        let ca = options
            .tls_cert
            .as_ref()
            .and_then(|cert| std::fs::read_to_string(cert.with_file_name("ca.pem")).ok());
        let http = match &ca {
            Some(pem) => reqwest::Client::builder()
                .tls_certs_merge(reqwest::Certificate::from_pem_bundle(pem.as_bytes()).unwrap())
                .build()
                .unwrap(),
            None => reqwest::Client::new(),
        };
        let server = Server::bind(options, sealer).await.unwrap();
        let base = format!("{}://{}", server.scheme(), server.addr);
        let registry = Arc::clone(server.registry());
        let state = server.state().clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            server
                .run(async move {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
        TestServer {
            base,
            registry,
            state,
            data,
            ca,
            http,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// Stops the server and waits for it (closing the store).
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        std::mem::replace(&mut self.data, dir)
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Starts a server on SQLite serving https with a certificate of a fresh CA (written to
    /// `ca.pem` in `certs`, next to `cert.pem` and `key.pem`).
    pub async fn start_https(certs: &std::path::Path) -> TestServer {
        super::certs::issue(certs, "ca");
        TestServer::start_with_options(|options| {
            options.tls_cert = Some(certs.join("cert.pem"));
            options.tls_key = Some(certs.join("key.pem"));
        })
        .await
    }

    /// An HTTP client for this server (trusting its CA when it serves https): the test's one
    /// client, shared (cloning it shares its connection pool).
    pub fn http(&self) -> reqwest::Client {
        self.http.clone()
    }

    /// Logs in as admin and returns the session cookie (`wardn_session=…`).
    pub async fn login(&self) -> String {
        login_with(&self.http(), &self.base, "admin", ADMIN_PASSWORD).await
    }

    /// Creates an API token (through a login session) and returns it.
    pub async fn token(&self) -> String {
        let cookie = self.login().await;
        self.token_of_session(&cookie, "tests").await
    }

    /// Creates the API token `name` through the session `cookie` and returns it.
    async fn token_of_session(&self, cookie: &str, name: &str) -> String {
        let response = self
            .http()
            .post(self.url("/api/v1/tokens"))
            .header("cookie", cookie)
            .json(&serde_json::json!({"name": name}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let body: serde_json::Value = response.json().await.unwrap();
        body["token"].as_str().unwrap().to_string()
    }
}

impl TestServer {
    /// Creates the user `name` with `role` (through the admin token `admin`), logs in as it
    /// and returns an API token created through that session.
    pub async fn user_token(&self, admin: &str, name: &str, role: &str) -> String {
        let password = "a long enough password";
        let response = self
            .http()
            .post(self.url("/api/v1/users"))
            .bearer_auth(admin)
            .json(&serde_json::json!({"username": name, "password": password, "role": role}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let cookie = login_with(&self.http(), &self.base, name, password).await;
        self.token_of_session(&cookie, "t").await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A kubeconfig for `server` with a bearer `token` and distinctive (fake) CA data.
pub fn kubeconfig(server: &str, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: remote\n  cluster:\n    server: {server}\n\
         \x20   certificate-authority-data: TUlTU0lOR19DQV9EQVRBX0ZPUl9URVNUUw==\n\
         users:\n- name: wardn\n  user:\n    token: {token}\n\
         contexts:\n- name: remote\n  context:\n    cluster: remote\n    user: wardn\n\
         current-context: remote\n"
    )
}
