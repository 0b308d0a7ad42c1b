//! Clusters declared as code (`wardn serve --clusters FILE`): `Cluster` documents whose
//! credentials are Secrets in the management cluster (a whole kubeconfig, or a token and a CA)
//! join the registry beside API-registered clusters, are probed like them, cannot be changed
//! or removed through the API (409 naming the file), follow edits of the file, and are refused
//! under the registration rules (an exec kubeconfig, a name the API already registered), each
//! named in `declarationErrors`.

mod common;
mod support;

use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use wardn::daemon::ServeOptions;
use wardn::seal::Sealer;
use wardn::server::Server;

const EXEC_KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://exec.example:6443\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/steal-secrets\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n";

fn cluster_doc(name: &str, server: &str, credentials: &str) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n\
         spec:\n  server: {server}\n  namespaces: [shop]\n{credentials}"
    )
}

/// Polls `check` until it holds (a minute at most).
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..600 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_clusters_join_the_registry_and_follow_their_file() {
    support::server::crypto();
    let management = common::start(&["wardn"]).await;
    let target = common::start(&["shop"]).await;
    let server_url = target.cluster.url();
    let mut secrets = String::new();
    for (name, key, value) in [
        (
            "prod-credentials",
            "kubeconfig",
            target.cluster.kubeconfig(),
        ),
        ("edge-token", "token", target.cluster.tokens().admin.clone()),
        ("edge-ca", "ca.crt", target.cluster.ca_pem().to_string()),
        (
            "evil-credentials",
            "kubeconfig",
            EXEC_KUBECONFIG.to_string(),
        ),
    ] {
        secrets.push_str(&format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: wardn\ndata:\n  {key}: {}\n",
            base64::engine::general_purpose::STANDARD.encode(value)
        ));
    }
    management.kubectl(&["apply", "-f", "-"], Some(&secrets));

    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("clusters.yaml");
    let prod = cluster_doc(
        "prod",
        &server_url,
        "  secretRef: {name: prod-credentials, namespace: wardn}\n",
    );
    let edge = cluster_doc(
        "edge",
        &server_url,
        "  tokenRef: {name: edge-token, namespace: wardn}\n  caRef: {name: edge-ca, namespace: wardn}\n",
    );
    let evil = cluster_doc(
        "evil",
        "https://exec.example:6443",
        "  secretRef: {name: evil-credentials, namespace: wardn}\n",
    );
    std::fs::write(&file, format!("{prod}---\n{edge}---\n{evil}")).unwrap();

    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        admin_password: Some(support::server::ADMIN_PASSWORD.into()),
        management_kubeconfig: Some(management.kubeconfig.clone()),
        clusters_file: Some(file.clone()),
        probe_interval: Duration::from_secs(1),
        probe_timeout: Duration::from_secs(5),
        ..ServeOptions::default()
    };
    let server = Server::bind(options, Sealer::new(&support::server::KEY, None))
        .await
        .unwrap();
    let base = format!("http://{}", server.addr);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let cookie = support::server::login(&base, support::server::ADMIN_PASSWORD).await;
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{base}/api/v1/tokens"))
        .header("cookie", &cookie)
        .json(&json!({"name": "tests"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = created["token"].as_str().unwrap().to_string();
    let list = async || -> Value {
        http.get(format!("{base}/api/v1/clusters"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    };

    // Both credential forms work: the clusters are probed connected.
    eventually("prod and edge connected", async || {
        let clusters = list().await;
        let connected: Vec<&str> = clusters["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["status"] == "connected")
            .filter_map(|c| c["name"].as_str())
            .collect();
        connected == ["edge", "prod"]
    })
    .await;
    let clusters = list().await;
    assert_eq!(
        clusters["clusters"][1]["declared_in"],
        file.display().to_string(),
        "{clusters}"
    );
    let errors = clusters["declarationErrors"].to_string();
    assert!(
        errors.contains("cluster \\\"evil\\\"") && errors.contains("exec"),
        "{clusters}"
    );

    // The API may not change or remove a declared cluster.
    let removed = http
        .delete(format!("{base}/api/v1/clusters/prod"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), 409);
    let body = removed.text().await.unwrap();
    assert!(
        body.contains("is declared in") && body.contains("clusters.yaml"),
        "{body}"
    );
    let updated = http
        .put(format!("{base}/api/v1/clusters/prod"))
        .bearer_auth(&token)
        .json(&json!({"namespaces": ["other"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(updated.status(), 409);

    // A name the API registered cannot be declared too.
    let registered = http
        .post(format!("{base}/api/v1/clusters"))
        .bearer_auth(&token)
        .json(&json!({"name": "api-one", "server_url": server_url,
                      "kubeconfig": target.cluster.kubeconfig(), "namespaces": ["shop"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        registered.status(),
        201,
        "{}",
        registered.text().await.unwrap()
    );
    let clash = cluster_doc(
        "api-one",
        &server_url,
        "  secretRef: {name: prod-credentials, namespace: wardn}\n",
    );
    // Edits take effect: edge dropped, prod's allowlist changed, the clash reported.
    std::fs::write(
        &file,
        format!("{}---\n{clash}", prod.replace("[shop]", "[shop, extra]")),
    )
    .unwrap();
    eventually("the file's edit applied", async || {
        let clusters = list().await;
        let names: Vec<&str> = clusters["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        names == ["api-one", "prod"]
            && clusters["clusters"][1]["namespaces"] == json!(["shop", "extra"])
            && clusters["declarationErrors"]
                .to_string()
                .contains("also registered through the API")
    })
    .await;
    let clusters = list().await;
    assert_eq!(
        clusters["clusters"][0]["declared_in"],
        Value::Null,
        "{clusters}"
    );

    // Declarations are audited under the file's name.
    let audit: Value = http
        .get(format!("{base}/api/v1/audit?limit=100"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = audit.to_string();
    assert!(
        text.contains("cluster.declare") && text.contains("cluster.undeclare"),
        "{text}"
    );
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
