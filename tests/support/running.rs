//! A `wardn serve` running in this process (kubesim as its management cluster), for the
//! tests that drive Apps through the API.

use std::time::Duration;

use wardn::daemon::ServeOptions;
use wardn::seal::Sealer;
use wardn::server::Server;

/// The admin password of [`Running`] servers.
pub const PASSWORD: &str = "correct horse battery staple";

/// A server running in this process until [`Running::stop`].
pub struct Running {
    pub runner: std::sync::Arc<wardn::daemon::runner::Runner>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), wardn::server::ServeError>>,
}

impl Running {
    /// Binds and runs a server on `data` with the Apps of `apps`, the cluster of `kubeconfig`
    /// as its management cluster.
    pub async fn start(
        kubeconfig: &std::path::Path,
        data: &std::path::Path,
        apps: &std::path::Path,
    ) -> Running {
        Running::start_with(ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: data.to_path_buf(),
            admin_password: Some(PASSWORD.into()),
            apps_dir: Some(apps.to_path_buf()),
            management_kubeconfig: Some(kubeconfig.to_path_buf()),
            probe_interval: Duration::from_secs(3600),
            probe_timeout: Duration::from_secs(5),
            ..ServeOptions::default()
        })
        .await
    }

    /// Binds and runs a server with `options` (creating its data directory).
    pub async fn start_with(options: ServeOptions) -> Running {
        std::fs::create_dir_all(&options.data_dir).unwrap();
        let server = Server::bind(options, Sealer::new(&[7u8; 32], None))
            .await
            .unwrap();
        let runner = std::sync::Arc::clone(server.runner());
        let base = format!("http://{}", server.addr);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        Running {
            runner,
            base,
            stop,
            task,
        }
    }

    /// Stops the server as a shutdown signal does (passes in flight are cancelled).
    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap().unwrap();
    }
}

/// Polls `check` until it holds (a minute at most).
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..600 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

/// An HTTP client whose connections come from `ip` (a loopback address such as 127.0.0.2),
/// as a distinct source address for the login limits.
pub fn client_from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(ip))
        .build()
        .unwrap()
}

/// The HTTP status of a login as `username` with `password` at `base` through `http`.
pub async fn login_status_at(
    http: &reqwest::Client,
    base: &str,
    username: &str,
    password: &str,
) -> u16 {
    http.post(format!("{base}/api/v1/auth/login"))
        .json(&serde_json::json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Logs in as admin with `password` at the server `base` (`http://127.0.0.1:PORT`) and returns
/// the session cookie (`wardn_session=…`).
pub async fn login(base: &str, password: &str) -> String {
    login_as(base, "admin", password).await
}

/// Logs in as `username` with `password` at the server `base` and returns the session cookie.
pub async fn login_as(base: &str, username: &str, password: &str) -> String {
    login_with(&reqwest::Client::new(), base, username, password).await
}

/// [`login_as`] through `http` (e.g. a client trusting a test CA).
pub async fn login_with(
    http: &reqwest::Client,
    base: &str,
    username: &str,
    password: &str,
) -> String {
    let response = http
        .post(format!("{base}/api/v1/auth/login"))
        .json(&serde_json::json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().to_string()
}
