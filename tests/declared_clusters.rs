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

/// GET `url` with the API `token`, as JSON.
async fn get_json(http: &reqwest::Client, url: &str, token: &str) -> Value {
    http.get(url)
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The names of the clusters a `GET /api/v1/clusters` answer lists, in its order.
fn names(clusters: &Value) -> Vec<String> {
    clusters["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
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
    let clusters_url = format!("{base}/api/v1/clusters");
    let list = async || get_json(&http, &clusters_url, &token).await;

    // Both credential forms work: the clusters are probed connected.
    eventually("prod and edge connected", async || {
        support::connected_clusters(&list().await) == ["edge", "prod"]
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
        names(&clusters) == ["api-one", "prod"]
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
    let text = get_json(&http, &format!("{base}/api/v1/audit?limit=100"), &token)
        .await
        .to_string();
    assert!(
        text.contains("cluster.declare") && text.contains("cluster.undeclare"),
        "{text}"
    );

    // A file that no longer parses changes nothing and says why under declarationErrors.
    std::fs::write(&file, "kind: [").unwrap();
    eventually("the unreadable file reported", async || {
        let clusters = list().await;
        names(&clusters) == ["api-one", "prod"]
            && clusters["declarationErrors"]
                .to_string()
                .contains("clusters.yaml (document 1)")
    })
    .await;
    // Emptied, as a save in progress leaves it: the first reading keeps the clusters and
    // says so; the next one that finds the file empty too removes them.
    std::fs::write(&file, "").unwrap();
    eventually("the emptied file held", async || {
        let clusters = list().await;
        names(&clusters) == ["api-one", "prod"]
            && clusters["declarationErrors"]
                .to_string()
                .contains("declares no cluster now (a save in progress?)")
    })
    .await;
    eventually("the emptied file applied", async || {
        names(&list().await) == ["api-one"]
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

/// The `Cluster` resources of `namespace` in `sim`, by name, as kubectl 1.32 shows them.
fn cluster_resources(sim: &common::Sim, namespace: &str) -> Value {
    let listed: Value = serde_json::from_str(&sim.kubectl(
        &[
            "get",
            "clusters.cd.wardn.space",
            "-n",
            namespace,
            "-o",
            "json",
        ],
        None,
    ))
    .unwrap();
    listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["metadata"]["name"].as_str().unwrap().to_string(),
                item.clone(),
            )
        })
        .collect::<serde_json::Map<String, Value>>()
        .into()
}

/// `Cluster` resources in wardn's namespace of the management cluster join the registry
/// (installed with `wardn crd | kubectl apply`), each with a status saying whether and why
/// not; Secrets of other namespaces are out of their reach, resources of other namespaces are
/// ignored, the API may not change them, a name declared twice names both sources, edits and
/// deletions follow; the 1,000th reading of unchanged resources writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_resources_in_the_management_cluster_join_the_registry() {
    let management = common::start(&["wardn", "other"]).await;
    let target = common::start(&["shop"]).await;
    let server_url = target.cluster.url();
    let crd = std::process::Command::new(env!("CARGO_BIN_EXE_wardn"))
        .arg("crd")
        .output()
        .unwrap();
    assert!(crd.status.success());
    management.kubectl(
        &["apply", "-f", "-"],
        Some(&String::from_utf8(crd.stdout).unwrap()),
    );
    management.kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "crd/clusters.cd.wardn.space",
            "--timeout=20s",
        ],
        None,
    );
    let secret = |name: &str, namespace: &str, value: &str| {
        format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
             data:\n  kubeconfig: {}\n",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    };
    let resource = |name: &str, namespace: &str, server: &str, credentials: &str| {
        format!(
            "---\napiVersion: cd.wardn.space/v1alpha1\nkind: Cluster\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
             spec:\n  server: {server}\n  namespaces: [shop]\n{credentials}"
        )
    };
    let kubeconfig = target.cluster.kubeconfig();
    management.kubectl(
        &["apply", "-f", "-"],
        Some(
            &[
                secret("prod-credentials", "wardn", &kubeconfig),
                secret("evil-credentials", "wardn", EXEC_KUBECONFIG),
                secret("stolen", "other", &kubeconfig),
                resource(
                    "prod",
                    "wardn",
                    &server_url,
                    "  secretRef: {name: prod-credentials}\n",
                ),
                resource(
                    "evil",
                    "wardn",
                    "https://exec.example:6443",
                    "  secretRef: {name: evil-credentials}\n",
                ),
                resource(
                    "sneaky",
                    "wardn",
                    &server_url,
                    "  secretRef: {name: stolen, namespace: other}\n",
                ),
                resource(
                    "plain",
                    "wardn",
                    "http://plain.example:6443",
                    "  secretRef: {name: prod-credentials}\n",
                ),
                resource(
                    "filed",
                    "wardn",
                    &server_url,
                    "  secretRef: {name: prod-credentials}\n",
                ),
                resource(
                    "outside",
                    "other",
                    &server_url,
                    "  secretRef: {name: stolen}\n",
                ),
            ]
            .concat(),
        ),
    );
    // The same name in a --clusters file, read first at start-up.
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("clusters.yaml");
    std::fs::write(
        &file,
        cluster_doc(
            "filed",
            &server_url,
            "  secretRef: {name: prod-credentials, namespace: wardn}\n",
        ),
    )
    .unwrap();
    let management_kubeconfig = management.kubeconfig.clone();
    let server = support::server::TestServer::start_with_options(|options| {
        options.management_kubeconfig = Some(management_kubeconfig);
        options.clusters_file = Some(file.clone());
        // In a Pod the default is its own namespace; the test kubeconfig's is `default`.
        options.cluster_resources_namespace = Some("wardn".into());
        options.probe_interval = Duration::from_secs(1);
    })
    .await;
    let token = server.token().await;
    let http = server.http();
    let clusters_url = server.url("/api/v1/clusters");
    let list = async || get_json(&http, &clusters_url, &token).await;
    let source = "Cluster resources of namespace \"wardn\"";

    eventually(
        "prod registered from its resource and connected",
        async || {
            let clusters = list().await;
            clusters["clusters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "prod" && c["status"] == "connected")
        },
    )
    .await;
    let clusters = list().await;
    assert_eq!(names(&clusters), ["filed", "prod"], "{clusters}");
    assert_eq!(clusters["clusters"][1]["declared_in"], source, "{clusters}");
    assert_eq!(
        clusters["clusters"][0]["declared_in"],
        file.display().to_string()
    );
    let errors = clusters["declarationErrors"].to_string();
    for want in [
        "\\\"evil\\\"",
        "exec",
        "spec.secretRef.namespace",
        "spec.server",
        "also declared in",
    ] {
        assert!(errors.contains(want), "{want}: {errors}");
    }

    // Each resource says what became of it.
    let resources = cluster_resources(&management, "wardn");
    let status = |name: &str| resources[name]["status"].clone();
    assert_eq!(status("prod")["registered"], true, "{resources}");
    assert_eq!(status("prod")["message"], "registered");
    assert_eq!(status("prod")["observedGeneration"], 1);
    for (name, want) in [
        ("evil", "exec"),
        (
            "sneaky",
            "spec.secretRef.namespace: \"other\" is not this Cluster resource's namespace",
        ),
        ("plain", "spec.server"),
        (
            "filed",
            "is declared in Cluster resources of namespace \"wardn\" and also declared in",
        ),
    ] {
        assert_eq!(status(name)["registered"], false, "{name}: {resources}");
        let message = status(name)["message"].as_str().unwrap().to_string();
        assert!(message.contains(want), "{name}: {message}");
    }
    assert!(
        cluster_resources(&management, "other")["outside"]["status"].is_null(),
        "a Cluster resource outside wardn's namespace is not read"
    );

    // The API may not change or remove a cluster its resource declares.
    let removed = http
        .delete(server.url("/api/v1/clusters/prod"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), 409);
    let body = removed.text().await.unwrap();
    assert!(
        body.contains("is declared in Cluster resources of namespace"),
        "{body}"
    );

    // 1,000 readings of unchanged resources write nothing: no status, no audit entry.
    let client = management.cluster.client().await.unwrap();
    let writes_before = management.cluster.writes().len();
    let audit_count = async || -> usize {
        let audit = get_json(&http, &server.url("/api/v1/audit?limit=500"), &token).await;
        audit["entries"].as_array().map_or(0, Vec::len)
    };
    let audited = audit_count().await;
    for _ in 0..1000 {
        let problems = server
            .registry
            .declare_resources(&client, "wardn")
            .await
            .unwrap();
        assert_eq!(problems.len(), 4, "{problems:?}");
    }
    assert_eq!(management.cluster.writes().len(), writes_before);
    assert_eq!(audit_count().await, audited);
    assert_eq!(list().await["clusters"], clusters["clusters"]);

    // Edits and deletions follow: prod's allowlist grows, sneaky is fixed, evil is deleted.
    management.kubectl(
        &[
            "patch",
            "clusters.cd.wardn.space",
            "prod",
            "-n",
            "wardn",
            "--type=merge",
            "-p",
            r#"{"spec":{"namespaces":["shop","extra"]}}"#,
        ],
        None,
    );
    management.kubectl(
        &[
            "patch",
            "clusters.cd.wardn.space",
            "sneaky",
            "-n",
            "wardn",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/secretRef","value":{"name":"prod-credentials"}}]"#,
        ],
        None,
    );
    eventually("prod's allowlist grown and sneaky registered", async || {
        let clusters = list().await;
        let by_name = |name: &str| {
            clusters["clusters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == name)
                .cloned()
                .unwrap_or(Value::Null)
        };
        by_name("prod")["namespaces"] == json!(["shop", "extra"])
            && by_name("sneaky")["declared_in"] == source
    })
    .await;
    management.kubectl(
        &["delete", "clusters.cd.wardn.space", "prod", "-n", "wardn"],
        None,
    );
    eventually("prod removed", async || {
        let clusters = list().await;
        names(&clusters) == ["filed", "sneaky"]
    })
    .await;
    let resources = cluster_resources(&management, "wardn");
    assert_eq!(
        resources["sneaky"]["status"]["registered"], true,
        "{resources}"
    );
    assert_eq!(resources["sneaky"]["status"]["observedGeneration"], 2);
    let audit_url = server.url("/api/v1/audit?limit=500&actor=resources:wardn");
    let text = get_json(&http, &audit_url, &token).await.to_string();
    assert!(
        text.contains("cluster.declare") && text.contains("cluster.undeclare"),
        "{text}"
    );
    server.stop().await;
}

/// A management cluster that never answers does not hold up start-up: the first reading of
/// its `Cluster` resources, and of the Secrets a `--clusters` file names, give up after the
/// probe timeout (here 3 s; the cluster answers after 600 s), and the server serves its API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_management_cluster_does_not_hold_up_start_up() {
    let management = common::start(&["wardn"]).await;
    management.cluster.set_faults(kubesim::Faults {
        latency: Duration::from_secs(600),
        ..Default::default()
    });
    let kubeconfig = management.kubeconfig.clone();
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("clusters.yaml");
    std::fs::write(
        &file,
        cluster_doc(
            "prod",
            "https://prod.example:6443",
            "  secretRef: {name: prod-credentials}\n",
        ),
    )
    .unwrap();
    let started = tokio::time::timeout(
        Duration::from_secs(300),
        support::server::TestServer::start_with_options(|options| {
            options.management_kubeconfig = Some(kubeconfig);
            options.clusters_file = Some(file);
            options.cluster_resources_namespace = Some("wardn".into());
        }),
    )
    .await
    .expect("the server started although the management cluster is silent");
    let health = started
        .http()
        .get(started.url("/api/v1/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let problems = started.registry.declaration_problems();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("could not be read within 3s")),
        "{problems:?}"
    );
    management.cluster.set_faults(kubesim::Faults::default());
    started.stop().await;
}
