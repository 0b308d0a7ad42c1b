//! The `wardn` binary: `serve` start-up (key required, generated admin password printed once),
//! and every client command against a running server and a kubesim cluster.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use kubesim::{Cluster, ClusterConfig};
use support::server::{ADMIN_PASSWORD, TestServer};

const WARDN: &str = env!("CARGO_BIN_EXE_wardn");

fn wardn(config_dir: &Path, args: &[&str]) -> Output {
    Command::new(WARDN)
        .args(args)
        .env("WARDN_CONFIG_DIR", config_dir)
        .env_remove("WARDN_SERVER")
        .env_remove("WARDN_TOKEN")
        .output()
        .unwrap()
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn failed(output: &Output) -> String {
    assert!(!output.status.success(), "expected failure: {output:?}");
    String::from_utf8(output.stderr.clone()).unwrap()
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_commands_cover_login_tokens_clusters_and_audit() {
    kubesim::install_crypto_provider();
    let cluster = Cluster::start(ClusterConfig {
        name: "staging".into(),
        nodes: 2,
        ..Default::default()
    })
    .await
    .unwrap();
    let server = TestServer::start(None).await;
    let base = server.base.clone();
    let config = tempfile::tempdir().unwrap();
    let dir = config.path().to_path_buf();
    let kubeconfig = dir.join("staging.kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig()).unwrap();
    let expired = dir.join("expired.kubeconfig");
    std::fs::write(
        &expired,
        cluster.kubeconfig_with_token(&cluster.tokens().expired),
    )
    .unwrap();
    let url = cluster.url();

    let online = blocking(move || {
        let out = failed(&wardn(&dir, &["clusters", "list"]));
        assert!(out.contains("no server: pass --server URL"), "{out}");

        let mut login = Command::new(WARDN)
            .args(["login", "--server", &base, "--password-stdin"])
            .env("WARDN_CONFIG_DIR", &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(
            login.stdin.as_mut().unwrap(),
            format!("{ADMIN_PASSWORD}\n").as_bytes(),
        )
        .unwrap();
        assert!(ok(&login.wait_with_output().unwrap()).contains("credentials saved"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join("credentials.json"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }

        let token = ok(&wardn(&dir, &["tokens", "create", "ci"]));
        assert!(token.trim().starts_with("wardn_"));
        // --token overrides the saved token: a wrong one fails clearly.
        let out = failed(&wardn(
            &dir,
            &["clusters", "list", "--server", &base, "--token", "bad"],
        ));
        assert!(
            out.contains("401") && out.contains("invalid API token"),
            "{out}"
        );
        let listed = ok(&wardn(
            &dir,
            &[
                "clusters",
                "list",
                "--server",
                &base,
                "--token",
                token.trim(),
            ],
        ));
        assert!(listed.starts_with("NAME"), "{listed}");

        let kc = kubeconfig.to_str().unwrap();
        let out = ok(&wardn(
            &dir,
            &[
                "clusters",
                "add",
                "staging",
                "--server-url",
                &url,
                "--kubeconfig",
                kc,
                "--namespaces",
                "staging,default",
            ],
        ));
        assert!(out.contains("cluster staging registered"), "{out}");
        let out = failed(&wardn(
            &dir,
            &[
                "clusters",
                "add",
                "staging",
                "--server-url",
                &url,
                "--kubeconfig",
                kc,
            ],
        ));
        assert!(
            out.contains("409") && out.contains("already exists"),
            "{out}"
        );
        let out = failed(&wardn(
            &dir,
            &[
                "clusters",
                "add",
                "x",
                "--server-url",
                "http://a:1",
                "--kubeconfig",
                kc,
            ],
        ));
        assert!(
            out.contains("400") && out.contains("server_url: must use https://"),
            "{out}"
        );

        let out = ok(&wardn(
            &dir,
            &["clusters", "test", "--server-url", &url, "--kubeconfig", kc],
        ));
        assert!(out.contains("\"connected\""), "{out}");
        let out = failed(&wardn(
            &dir,
            &[
                "clusters",
                "test",
                "--server-url",
                &url,
                "--kubeconfig",
                expired.to_str().unwrap(),
            ],
        ));
        assert!(
            out.contains("disconnected: credentials rejected or expired"),
            "{out}"
        );

        let out = ok(&wardn(&dir, &["clusters", "get", "staging"]));
        let view: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            view["namespaces"],
            serde_json::json!(["staging", "default"])
        );
        let out = ok(&wardn(&dir, &["clusters", "list"]));
        assert!(out.lines().nth(1).unwrap().starts_with("staging"), "{out}");

        let out = ok(&wardn(&dir, &["clusters", "reseal"]));
        assert!(out.contains("resealed 1"), "{out}");
        let out = ok(&wardn(&dir, &["clusters", "rm", "staging"]));
        assert!(out.contains("removed"), "{out}");
        let out = failed(&wardn(&dir, &["clusters", "rm", "staging"]));
        assert!(out.contains("404") && out.contains("not found"), "{out}");

        let out = ok(&wardn(&dir, &["audit", "verify"]));
        assert!(out.contains("audit log intact"), "{out}");
        out
    })
    .await;
    let online = online.trim().rsplit("head ").next().unwrap().to_string();
    let (last, mac) = online.split_once(':').unwrap();
    let last: i64 = last.parse().unwrap();
    assert_eq!(mac.len(), 64, "{online}");

    // Offline, where the key is: the same head.
    let data = server.data.path().to_path_buf();
    let key = hex::encode(support::server::KEY);
    let offline = {
        let (dir, data) = (config.path().to_path_buf(), data.clone());
        move |extra: &[&str], key: Option<&str>| {
            let mut command = Command::new(WARDN);
            command
                .args(["audit", "verify", "--data-dir"])
                .arg(&data)
                .args(extra)
                .env("WARDN_CONFIG_DIR", &dir)
                .env_remove("WARDN_CREDENTIALS_KEY")
                .env_remove("WARDN_CREDENTIALS_KEY_PREVIOUS");
            if let Some(key) = key {
                command.env("WARDN_CREDENTIALS_KEY", key);
            }
            command.output().unwrap()
        }
    };
    let out = ok(&offline(&[], Some(&key)));
    assert!(out.contains(&format!("head {online}")), "{out}");
    let out = failed(&offline(&[], None));
    assert!(out.contains("WARDN_CREDENTIALS_KEY is not set"), "{out}");
    let out = failed(&offline(&[], Some(&hex::encode([1u8; 32]))));
    assert!(out.contains("FAILED at entry 1"), "a wrong key: {out}");

    // The newest entry deleted and the head moved back: only the expected head shows it.
    let db = server.data.path().join(wardn::store::SQLITE_FILE);
    let db_url = format!("sqlite://{}", db.display());
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&db_url)
        .await
        .unwrap();
    sqlx::query("DELETE FROM audit_log WHERE seq = $1")
        .bind(last)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE audit_head SET seq = $1, hash = (SELECT hash FROM audit_log WHERE seq = $1) WHERE id = 1")
        .bind(last - 1)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    ok(&offline(&[], Some(&key)));
    let out = failed(&offline(&["--expect-head", &online], Some(&key)));
    assert!(out.contains(&format!("FAILED at entry {last}")), "{out}");
    assert!(out.contains("entries were deleted"), "{out}");
    let out = failed(&offline(&["--expect-head", "bogus"], Some(&key)));
    assert!(out.contains("SEQ:MAC"), "{out}");

    // Tamper with one entry in the database: verification fails.
    support::execute(
        &db_url,
        "UPDATE audit_log SET actor = 'mallory' WHERE seq = 3",
    )
    .await;
    let dir = config.path().to_path_buf();
    let out = blocking(move || failed(&wardn(&dir, &["audit", "verify"]))).await;
    assert!(
        out.contains("audit log verification FAILED at entry 3: audit entry 3 was changed"),
        "{out}"
    );
    let out = failed(&offline(&[], Some(&key)));
    assert!(out.contains("FAILED at entry 3"), "{out}");
}

#[test]
fn serve_requires_a_key_and_prints_a_generated_admin_password_once() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_str().unwrap();
    let output = Command::new(WARDN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir])
        .env_remove("WARDN_CREDENTIALS_KEY")
        .output()
        .unwrap();
    let err = failed(&output);
    assert!(err.contains("WARDN_CREDENTIALS_KEY is not set"), "{err}");
    let output = Command::new(WARDN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir])
        .env("WARDN_CREDENTIALS_KEY", "c2hvcnQ=")
        .output()
        .unwrap();
    let err = failed(&output);
    assert!(
        err.contains("WARDN_CREDENTIALS_KEY: expected 32 bytes")
            && err.contains("decodes to 5 bytes"),
        "{err}"
    );
    assert!(!err.contains("c2hvcnQ="), "the key is never echoed");

    let start = || {
        let mut child = Command::new(WARDN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir])
            .env("WARDN_CREDENTIALS_KEY", "2a".repeat(32))
            .env_remove("WARDN_ADMIN_PASSWORD")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        for line in lines.by_ref() {
            let line = line.unwrap();
            let done = line.starts_with("wardn: listening on http://127.0.0.1:");
            seen.push(line);
            if done {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        seen
    };
    let first = start();
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first[0].starts_with("wardn: generated password for user 'admin' (shown once): "));
    let second = start();
    assert_eq!(second.len(), 1, "no new password on restart: {second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_logs_of_a_served_registration_hold_no_credentials() {
    kubesim::install_crypto_provider();
    let cluster = Cluster::start(ClusterConfig {
        name: "logged".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let log_path = data.path().join("stderr.log");
    let mut child = Command::new(WARDN)
        .args(["serve", "--listen", "127.0.0.1:0", "--probe-interval", "1"])
        .arg("--data-dir")
        .arg(data.path().join("data"))
        .env("WARDN_CREDENTIALS_KEY", "2a".repeat(32))
        .env("WARDN_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("RUST_LOG", "debug")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = blocking(move || {
        stdout
            .find_map(|line| {
                line.unwrap()
                    .strip_prefix("wardn: listening on ")
                    .map(str::to_string)
            })
            .unwrap()
    })
    .await;
    let http = reqwest::Client::new();
    let cookie = support::server::login(&base, ADMIN_PASSWORD).await;
    let created = http
        .post(format!("{base}/api/v1/clusters"))
        .header("cookie", &cookie)
        .json(
            &serde_json::json!({"name": "logged", "server_url": cluster.url(),
                                  "kubeconfig": cluster.kubeconfig()}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    // Wait (without a time bound) until a probe round has connected.
    loop {
        let list: serde_json::Value = http
            .get(format!("{base}/api/v1/clusters"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if list["clusters"][0]["status"] == "connected" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("DEBUG"), "debug logging was on");
    let session = cookie.trim_start_matches("wardn_session=");
    for secret in [
        cluster.tokens().admin.as_str(),
        "kind: Config",
        ADMIN_PASSWORD,
        session,
    ] {
        assert!(!log.contains(secret), "the log contains {secret:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_creates_a_least_privilege_identity_and_registers_it() {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    use k8s_openapi::api::rbac::v1::{ClusterRole, Role};
    use kube::api::{Api, ListParams, PostParams};

    kubesim::install_crypto_provider();
    let cluster = Cluster::start(ClusterConfig {
        name: "target".into(),
        namespaces: vec!["team-a".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let config = tempfile::tempdir().unwrap();
    let kubeconfig = config.path().join("admin.kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig()).unwrap();
    let (base, dir) = (server.base.clone(), config.path().to_path_buf());
    let out = blocking(move || {
        let kc = kubeconfig.to_str().unwrap().to_string();
        let args = [
            "clusters",
            "bootstrap",
            "--server",
            &base,
            "--token",
            &token,
            "--kubeconfig",
            &kc,
            "--context",
            "target",
            "--name",
            "target",
            "--kinds",
            "ConfigMap,apps/Deployment",
            "--namespaces",
            "team-a",
        ];
        ok(&wardn(&dir, &args))
    })
    .await;
    assert!(
        out.contains("ServiceAccount wardn/wardn created")
            && out.contains("cluster target registered"),
        "{out}"
    );

    let admin = cluster.client().await.unwrap();
    // Namespaced kinds are granted by a Role in each allowed namespace, not cluster-wide.
    assert!(
        Api::<ClusterRole>::all(admin.clone())
            .get_opt("wardn-target")
            .await
            .unwrap()
            .is_none()
    );
    let role = Api::<Role>::namespaced(admin, "team-a")
        .get("wardn-target")
        .await
        .unwrap();
    let rules = serde_json::to_string(&role.rules).unwrap();
    assert!(!rules.contains('*'), "{rules}");
    assert!(
        rules.contains("configmaps") && rules.contains("deployments"),
        "{rules}"
    );

    let status = server.registry.probe("target").await;
    assert_eq!(
        status.status,
        wardn::clusters::connect::Connectivity::Connected,
        "{status:?}"
    );
    let wardn_client = server
        .registry
        .cached_cluster("target")
        .await
        .unwrap()
        .client;
    let config_map = |ns: &str| {
        serde_json::from_value::<ConfigMap>(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe", "namespace": ns}}))
        .unwrap()
    };
    Api::<ConfigMap>::namespaced(wardn_client.clone(), "team-a")
        .create(&PostParams::default(), &config_map("team-a"))
        .await
        .unwrap();
    let outside = Api::<ConfigMap>::namespaced(wardn_client.clone(), "default")
        .create(&PostParams::default(), &config_map("default"))
        .await;
    assert!(
        matches!(outside, Err(kube::Error::Api(ref s)) if s.code == 403),
        "{outside:?}"
    );
    let secrets = Api::<Secret>::namespaced(wardn_client, "team-a")
        .list(&ListParams::default())
        .await;
    assert!(
        matches!(secrets, Err(kube::Error::Api(ref s)) if s.code == 403),
        "secrets are not granted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_create_with_a_ttl_list_and_revoke() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let base = server.base.clone();
    let config = tempfile::tempdir().unwrap();
    let dir = config.path().to_path_buf();
    blocking(move || {
        let run = |args: &[&str]| {
            let mut all = args.to_vec();
            all.extend_from_slice(&["--server", base.as_str(), "--token", admin.as_str()]);
            wardn(&dir, &all)
        };
        let created = run(&["tokens", "create", "laptop", "--ttl", "12h"]);
        let secret = ok(&created).trim().to_string();
        assert!(secret.starts_with("wardn_"), "{secret}");
        let note = String::from_utf8(created.stderr.clone()).unwrap();
        let id = note
            .strip_prefix("id ")
            .and_then(|rest| rest.split(',').next())
            .unwrap()
            .to_string();
        let listed = ok(&run(&["tokens", "list"]));
        let lines: Vec<&str> = listed.lines().collect();
        assert!(
            lines[0].starts_with("ID") && lines[0].contains("LAST USED"),
            "{listed}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&id) && l.contains("laptop")),
            "{listed}"
        );
        assert!(!listed.contains(&secret), "{listed}");

        let out = failed(&run(&["tokens", "create", "bad", "--ttl=-5d"]));
        assert!(out.contains("400") && out.contains("ttl: "), "{out}");
        let out = failed(&run(&["tokens", "revoke", "../clusters"]));
        assert!(out.contains("not an API token id"), "{out}");

        assert!(ok(&run(&["tokens", "revoke", &id])).contains(&id));
        let out = failed(&wardn(
            &dir,
            &["clusters", "list", "--server", &base, "--token", &secret],
        ));
        assert!(out.contains("401"), "{out}");
        assert!(!ok(&run(&["tokens", "list"])).contains(&id));
        let out = failed(&run(&["tokens", "revoke", &id]));
        assert!(out.contains("404"), "{out}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_create_list_set_role_and_delete() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let base = server.base.clone();
    let config = tempfile::tempdir().unwrap();
    let dir = config.path().to_path_buf();
    let (generated, run_base, run_admin) = (base.clone(), base.clone(), admin.clone());
    let password = blocking(move || {
        let run = |args: &[&str]| {
            let mut all = args.to_vec();
            all.extend_from_slice(&["--server", run_base.as_str(), "--token", run_admin.as_str()]);
            wardn(&dir, &all)
        };
        // The password from stdin.
        let mut child = Command::new(WARDN)
            .args([
                "users",
                "create",
                "alice",
                "--role",
                "approver",
                "--clusters",
                "staging,prod",
                "--email",
                "alice@example.com",
                "--password-stdin",
                "--server",
                &run_base,
                "--token",
                &run_admin,
            ])
            .env("WARDN_CONFIG_DIR", &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        writeln!(child.stdin.take().unwrap(), "{ADMIN_PASSWORD}").unwrap();
        let out = ok(&child.wait_with_output().unwrap());
        assert_eq!(
            out,
            "user alice created (approver (clusters: staging, prod))\n"
        );
        // A generated password, printed once.
        let out = ok(&run(&["users", "create", "bob", "--role", "viewer"]));
        let password = out
            .lines()
            .find_map(|l| l.strip_prefix("password (shown once): "))
            .unwrap()
            .to_string();
        assert!(password.len() >= 20, "{out}");

        let listed = ok(&run(&["users", "list"]));
        let lines: Vec<&str> = listed.lines().collect();
        assert!(
            lines[0].starts_with("NAME") && lines[0].contains("ROLE"),
            "{listed}"
        );
        assert!(
            lines[1].starts_with("admin") && lines[1].contains("admin"),
            "{listed}"
        );
        assert!(
            lines[2].starts_with("alice")
                && lines[2].contains("approver (clusters: staging, prod)")
                && lines[2].contains("alice@example.com"),
            "{listed}"
        );
        assert!(
            lines[3].starts_with("bob") && lines[3].contains("viewer"),
            "{listed}"
        );
        assert!(!listed.contains(&password));

        let out = ok(&run(&["users", "set-role", "bob", "deployer"]));
        assert_eq!(out, "user bob is now deployer\n");
        let out = ok(&run(&[
            "users",
            "set-role",
            "alice",
            "approver",
            "--clusters",
            "local",
        ]));
        assert_eq!(out, "user alice is now approver (clusters: local)\n");

        // Hostile: a role that is not one (refused by the CLI), a name that is not a user name
        // (refused before anything is sent), the last admin (the server's 409).
        let out = failed(&run(&["users", "create", "eve", "--role", "root"]));
        assert!(out.contains("is not a role"), "{out}");
        let out = failed(&run(&["users", "delete", "../tokens"]));
        assert!(out.contains("not a user name"), "{out}");
        let out = failed(&run(&["users", "set-role", "admin", "viewer"]));
        assert!(out.contains("409") && out.contains("last admin"), "{out}");

        assert!(ok(&run(&["users", "delete", "alice"])).contains("alice deleted"));
        let out = failed(&run(&["users", "delete", "alice"]));
        assert!(out.contains("404"), "{out}");
        password
    })
    .await;
    // The generated password logs in, with the role set.
    let cookie = support::server::login_as(&generated, "bob", &password).await;
    let response = reqwest::Client::new()
        .post(server.url("/api/v1/tokens"))
        .header("cookie", cookie)
        .json(&serde_json::json!({"name": "x"}))
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["role"], "deployer");
}
