//! How to start a cluster: the configuration a cluster is started with and keeps.

use std::time::Duration;

/// How to start a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterConfig {
    /// Cluster name (kubeconfig cluster, context and user names derive from it).
    pub name: String,
    /// Port on 127.0.0.1; 0 picks an ephemeral one.
    pub port: u16,
    /// Number of simulated Nodes.
    pub nodes: usize,
    /// Namespaces created at start, each with a namespaced token.
    pub namespaces: Vec<String>,
    /// How long simulated workloads take to become ready.
    pub ready_delay: Duration,
    /// Whether the kwok-like controllers run (Nodes, ReplicaSets, Pods, workload status).
    pub simulate: bool,
    /// How many changes are kept for watches to resume from; older resourceVersions get
    /// 410 Gone.
    pub watch_history: usize,
    /// How long the simulated kubelet takes to stop a Pod's containers once its graceful
    /// deletion starts (the Pod is removed then, or at the end of its grace period when that
    /// is shorter). `gracePeriodSeconds=0` deletes at once.
    pub pod_termination: Duration,
    /// Serve HTTP/1.1 only, as kube-apiserver does with `--disable-http2-serving` (or behind a
    /// proxy that does not pass HTTP/2 on): TLS offers no `h2`.
    pub disable_http2: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            name: "kubesim".to_string(),
            port: 0,
            nodes: 1,
            namespaces: Vec::new(),
            ready_delay: Duration::from_millis(500),
            simulate: true,
            watch_history: 10_000,
            pod_termination: Duration::from_secs(1),
            disable_http2: false,
        }
    }
}
