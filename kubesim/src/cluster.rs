//! The library API: start a cluster in-process, connect to it, stop and restart it on the
//! same port, inject faults, and read objects directly.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::config::ClusterConfig;
use crate::error::Error;
use crate::faults::Faults;
use crate::resources::split_api_version;
use crate::state::State;
use crate::store::EventType;
use crate::tokens::Tokens;
use crate::util::{new_uid, now_rfc3339};
use crate::{server, sim, tls};

/// A running (or stopped) in-process cluster.
pub struct Cluster {
    state: Arc<State>,
    tls: Arc<rustls::ServerConfig>,
    port: u16,
    server: Mutex<Option<JoinHandle<()>>>,
    sim: Option<JoinHandle<()>>,
}

/// Namespaces every cluster starts with.
const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The store key of APIServices.
const API_SERVICES: &str = "apiregistration.k8s.io/apiservices";

/// The objects every cluster starts with: system namespaces (with their ServiceAccount and
/// root CA), the `default/kubernetes` Service, the local APIServices and the RBAC bootstrap
/// policy.
fn seed(state: &State) {
    let mut store = state.store();
    let registry = state.registry();
    let names = SYSTEM_NAMESPACES
        .iter()
        .map(|s| s.to_string())
        .chain(state.config.namespaces.iter().cloned());
    for name in names {
        if store.get("/namespaces", "", &name).is_some() {
            continue;
        }
        let mut ns = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "uid": new_uid(), "creationTimestamp": now_rfc3339()},
        });
        crate::defaults::prepare_for_create("v1", "Namespace", &mut ns);
        store.put("/namespaces", ns, EventType::Added);
        crate::hooks::populate_namespace(state, &mut store, &name);
    }
    if store.get("/services", "default", "kubernetes").is_none() {
        store.put("/services", kubernetes_service(), EventType::Added);
    }
    for mut service in crate::api_services::local_api_services(&registry, &now_rfc3339()) {
        let name = service["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if store.get(API_SERVICES, "", &name).is_none() {
            service["metadata"]["uid"] = json!(new_uid());
            store.put(API_SERVICES, service, EventType::Added);
        }
    }
    for mut obj in crate::rbac::bootstrap_policy() {
        let Some(info) = obj
            .get("kind")
            .and_then(Value::as_str)
            .and_then(|k| registry.by_kind("rbac.authorization.k8s.io/v1", k))
        else {
            continue;
        };
        obj["metadata"]["uid"] = json!(new_uid());
        obj["metadata"]["creationTimestamp"] = json!(now_rfc3339());
        store.put(&info.store_key(), obj, EventType::Added);
    }
}

/// The `default/kubernetes` Service every cluster has: the API server's address, the first
/// of the service range.
fn kubernetes_service() -> Value {
    let ip = crate::defaults::allocate_cluster_ip(0);
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes", "namespace": "default", "uid": new_uid(),
            "creationTimestamp": now_rfc3339(),
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "clusterIP": ip, "clusterIPs": [ip], "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
            "sessionAffinity": "None", "type": "ClusterIP",
        },
        "status": {"loadBalancer": {}},
    })
}

async fn bind(port: u16) -> Result<TcpListener, Error> {
    let mut last = None;
    // A just-stopped listener can take a moment to release the port.
    for _ in 0..50 {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(Error::Bind {
        port,
        source: last.unwrap_or_else(|| std::io::Error::other("bind failed")),
    })
}

impl Cluster {
    /// Starts a cluster: generates its CA and tokens, seeds namespaces, listens on 127.0.0.1.
    pub async fn start(config: ClusterConfig) -> Result<Cluster, Error> {
        let material = tls::generate(&config.name, !config.disable_http2)?;
        let tokens = Tokens::generate(&config.namespaces);
        let listener = bind(config.port).await?;
        let port = listener
            .local_addr()
            .map_err(|source| Error::Bind {
                port: config.port,
                source,
            })?
            .port();
        let state = Arc::new(State::new(config, tokens, material.ca_pem));
        seed(&state);
        let sim = state.config.simulate.then(|| {
            sim::create_nodes(&mut state.store(), state.config.nodes);
            sim::spawn(state.clone())
        });
        let handle = server::spawn(state.clone(), listener, material.server_config.clone());
        Ok(Cluster {
            state,
            tls: material.server_config,
            port,
            server: Mutex::new(Some(handle)),
            sim,
        })
    }

    /// The cluster's name.
    pub fn name(&self) -> &str {
        &self.state.config.name
    }

    /// The API server URL, `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The port the cluster listens on (kept across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A kubeconfig (YAML) with the CA and the admin token.
    pub fn kubeconfig(&self) -> String {
        self.kubeconfig_with_token(&self.state.tokens.admin)
    }

    /// A kubeconfig (YAML) with the CA and the given bearer token.
    pub fn kubeconfig_with_token(&self, token: &str) -> String {
        let name = self.name();
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {url}\n    certificate-authority-data: {ca}\nusers:\n- name: {name}-user\n  user:\n    token: {token}\ncontexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}-user\n    namespace: default\ncurrent-context: {name}\n",
            url = self.url(),
            ca = STANDARD.encode(self.state.ca_pem.as_bytes()),
        )
    }

    /// The cluster's bearer tokens.
    pub fn tokens(&self) -> &Tokens {
        &self.state.tokens
    }

    /// PEM of the cluster CA.
    pub fn ca_pem(&self) -> &str {
        &self.state.ca_pem
    }

    /// A kube client configuration with the admin token.
    pub async fn config(&self) -> Result<kube::Config, Error> {
        tls::install_crypto_provider();
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&self.kubeconfig())
            .map_err(|e| Error::Client(e.to_string()))?;
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(|e| Error::Client(e.to_string()))
    }

    /// A kube client with the admin token.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        let config = self.config().await?;
        kube::Client::try_from(config).map_err(|e| Error::Client(e.to_string()))
    }

    /// The connections accepted so far, by protocol, and those open now.
    pub fn connections(&self) -> crate::Connections {
        self.state.connections.snapshot()
    }

    /// Stops serving: closes the listener and every connection (watches end). State is kept.
    pub async fn stop(&self) {
        let handle = self.server.lock().take();
        if let Some(handle) = handle {
            handle.abort();
            let _ = handle.await;
        }
    }

    /// Serves again on the same port with the same CA, tokens and objects.
    pub async fn restart(&self) -> Result<(), Error> {
        self.stop().await;
        let listener = bind(self.port).await?;
        let handle = server::spawn(self.state.clone(), listener, self.tls.clone());
        *self.server.lock() = Some(handle);
        Ok(())
    }

    /// Sets the faults injected into every request from now on.
    pub fn set_faults(&self, faults: Faults) {
        self.state.set_faults(faults);
    }

    /// One stored object, by apiVersion, kind, namespace and name.
    pub fn get_object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let info = self.state.registry().by_kind(api_version, kind)?;
        let obj = self
            .state
            .store()
            .get(&info.store_key(), namespace.unwrap_or_default(), name)?;
        Some(crate::handlers::present(&info, &obj))
    }

    /// Every write this cluster served, oldest first, with its caller's User-Agent (see
    /// [`crate::write_log`]).
    pub fn writes(&self) -> Vec<crate::WriteRecord> {
        self.state.write_log.records()
    }

    /// Every stored object of a kind, in all namespaces.
    pub fn list_objects(&self, api_version: &str, kind: &str) -> Vec<Value> {
        let (group, _) = split_api_version(api_version);
        let Some(info) = self.state.registry().by_kind(api_version, kind) else {
            return Vec::new();
        };
        debug_assert_eq!(info.group, group);
        self.state
            .store()
            .list(&info.store_key(), None)
            .map(|o| crate::handlers::present(&info, o))
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(handle) = self.server.lock().take() {
            handle.abort();
        }
        if let Some(sim) = &self.sim {
            sim.abort();
        }
    }
}
