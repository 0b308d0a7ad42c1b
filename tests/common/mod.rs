//! Shared helpers for the kubesim-backed tests: a started cluster, a kubeconfig file, kubectl.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use kubesim::{Cluster, ClusterConfig};

/// The real kubectl 1.32 on these machines.
pub const KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32";

/// A started kubesim cluster with its kubeconfig written to a temporary file.
pub struct Sim {
    pub cluster: Cluster,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

pub async fn start(namespaces: &[&str]) -> Sim {
    start_with(ClusterConfig {
        namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
        // Zero: kubesim can miss its own ready deadline under load (see the report); the health
        // wait is still exercised, since statuses are written asynchronously after the apply.
        ready_delay: Duration::ZERO,
        ..Default::default()
    })
    .await
}

/// Starts a cluster of `config` and writes its kubeconfig.
pub async fn start_with(config: ClusterConfig) -> Sim {
    kubesim::install_crypto_provider();
    let cluster = Cluster::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig()).unwrap();
    Sim {
        cluster,
        dir,
        kubeconfig,
    }
}

impl Sim {
    /// Runs kubectl with this cluster's kubeconfig, optionally feeding `stdin`; returns stdout.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        use std::io::Write;
        let mut child = Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The token kubesim's token controller writes into the `wardn-token` Secret of
    /// `namespace` (the Secret the generated RBAC files and `deploy/` create).
    pub async fn service_account_token(&self, namespace: &str) -> String {
        use k8s_openapi::api::core::v1::Secret;
        use kube::api::Api;
        let admin = self.cluster.client().await.unwrap();
        for _ in 0..100 {
            let secret = Api::<Secret>::namespaced(admin.clone(), namespace)
                .get("wardn-token")
                .await
                .unwrap();
            if let Some(token) = secret.data.and_then(|d| d.get("token").cloned()) {
                return String::from_utf8(token.0).unwrap();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the token controller did not fill {namespace}/wardn-token");
    }

    /// A client of this cluster that authenticates with `token`.
    pub async fn client_with_token(&self, token: &str) -> kube::Client {
        let config =
            kube::config::Kubeconfig::from_yaml(&self.cluster.kubeconfig_with_token(token))
                .unwrap();
        kube::Client::try_from(
            kube::Config::from_custom_kubeconfig(config, &Default::default())
                .await
                .unwrap(),
        )
        .unwrap()
    }
}
