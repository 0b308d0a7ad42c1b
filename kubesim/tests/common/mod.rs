//! Shared test helpers: a cluster with its kubeconfig on disk, the real kubectl 1.32 with a
//! fresh cache dir, and raw HTTPS requests through a kube client.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use http_body_util::BodyExt;
use hyper::http::{Request, StatusCode};
use kubesim::{Cluster, ClusterConfig};
use serde_json::Value;
use tempfile::TempDir;

/// The real kubectl these tests hold kubesim to.
pub const KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32";

/// A running cluster plus a scratch directory with its kubeconfig.
pub struct Env {
    pub cluster: Cluster,
    pub dir: TempDir,
}

/// The output of a kubectl run.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Panics with the output when the run failed.
    pub fn ok(self) -> Output {
        assert_eq!(self.code, 0, "kubectl failed: {self:?}");
        self
    }
}

impl Env {
    /// A GET through the admin client asking for `accept`: (status, Content-Type, body).
    pub async fn get_as(&self, path: &str, accept: &str) -> (u16, String, Vec<u8>) {
        let client = self.cluster.client().await.unwrap();
        let req = Request::builder()
            .uri(path)
            .header("accept", accept)
            .body(kube::client::Body::empty())
            .unwrap();
        let resp = client.send(req).await.unwrap();
        let status = resp.status().as_u16();
        let content_type = resp.headers()["content-type"].to_str().unwrap().to_string();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        (status, content_type, bytes)
    }

    /// Starts a cluster with namespace `team-a` (and its token) and a short ready delay.
    pub async fn start() -> Env {
        Self::with(ClusterConfig {
            name: "test".into(),
            namespaces: vec!["team-a".into()],
            ready_delay: Duration::from_millis(200),
            ..ClusterConfig::default()
        })
        .await
    }

    /// Starts a cluster with the given configuration.
    pub async fn with(config: ClusterConfig) -> Env {
        let cluster = Cluster::start(config).await.expect("cluster starts");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("admin.kubeconfig"), cluster.kubeconfig()).unwrap();
        Env { cluster, dir }
    }

    /// Writes a file in the scratch directory.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Runs kubectl with the admin kubeconfig and this test's own cache dir.
    pub async fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_as("admin.kubeconfig", args).await
    }

    /// Runs kubectl with a kubeconfig bearing `token`.
    pub async fn kubectl_with_token(&self, token: &str, args: &[&str]) -> Output {
        let name = format!("token-{}.kubeconfig", &token[..8]);
        self.write(&name, &self.cluster.kubeconfig_with_token(token));
        self.kubectl_as(&name, args).await
    }

    async fn kubectl_as(&self, kubeconfig: &str, args: &[&str]) -> Output {
        let out = tokio::process::Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(self.dir.path().join(kubeconfig))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .output()
            .await
            .expect("kubectl runs");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// A raw request with the admin token: (status, parsed JSON body or Null).
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let client = self.cluster.client().await.unwrap();
        raw_with(&client, method, path, content_type, body).await
    }

    /// A raw JSON request with the admin token.
    pub async fn json(&self, method: &str, path: &str, body: &Value) -> (StatusCode, Value) {
        self.raw(
            method,
            path,
            "application/json",
            serde_json::to_vec(body).unwrap(),
        )
        .await
    }

    /// A raw GET with the admin token, returning the body as text (watch streams).
    pub async fn text(&self, path: &str) -> (StatusCode, String) {
        let client = self.cluster.client().await.unwrap();
        let req = Request::builder()
            .uri(path)
            .body(kube::client::Body::empty())
            .unwrap();
        let resp = client.send(req).await.expect("request sent");
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// A raw request through a kube client: (status, parsed JSON body or Null).
pub async fn raw_with(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(path);
    if !content_type.is_empty() {
        req = req.header("content-type", content_type);
    }
    let resp = client
        .send(req.body(kube::client::Body::from(body)).unwrap())
        .await
        .expect("request sent");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Parses YAML text (kubectl -o yaml output) into JSON values.
pub fn yaml(text: &str) -> Value {
    serde_saphyr::from_str::<Value>(text).expect("valid YAML")
}

/// A kube client for the kubeconfig that does not retry 429/503 responses.
pub async fn client_without_retries(kubeconfig: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}
