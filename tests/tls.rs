//! `wardn serve --tls-cert/--tls-key`: the API over HTTPS (checked with the real curl), a
//! renewed certificate served without a restart, `Secure` session cookies over https (served,
//! or published with `--public-url https://…`), and a certificate that does not fit its key
//! refused at start with the files named.

mod support;

use support::certs::issue;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use wardn::daemon::ServeOptions;
use wardn::seal::Sealer;
use wardn::server::{ServeError, Server};

const PASSWORD: &str = "correct horse battery staple";

/// `curl` over https trusting `ca`; returns (exit code, stdout+headers).
fn curl(ca: &Path, url: &str, extra: &[&str]) -> (i32, String) {
    let out = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "10", "--cacert"])
        .arg(ca)
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn options(data: &Path) -> ServeOptions {
    ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: data.to_path_buf(),
        admin_password: Some(PASSWORD.into()),
        probe_interval: Duration::from_secs(3600),
        ..ServeOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_renewal_and_secure_cookies() {
    support::server::crypto();
    let dir = tempfile::tempdir().unwrap();
    issue(dir.path(), "first-ca");
    let server = Server::bind(
        ServeOptions {
            tls_cert: Some(dir.path().join("cert.pem")),
            tls_key: Some(dir.path().join("key.pem")),
            ..options(&dir.path().join("data"))
        },
        Sealer::new(&[7u8; 32], None),
    )
    .await
    .unwrap();
    assert_eq!(server.scheme(), "https");
    let base = format!("https://{}", server.addr);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let first = dir.path().join("first-ca.pem");
    let health = format!("{base}/api/v1/health");
    let blocking = |ca: std::path::PathBuf, url: String, extra: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
            curl(&ca, &url, &extra)
        })
    };
    let (code, answer) = blocking(first.clone(), health.clone(), vec![])
        .await
        .unwrap();
    assert_eq!(code, 0, "{answer}");
    assert!(answer.contains("\"ok\""), "{answer}");

    // Login over https: the session cookie is Secure.
    let login = format!("{{\"username\":\"admin\",\"password\":\"{PASSWORD}\"}}");
    let (code, answer) = blocking(
        first.clone(),
        format!("{base}/api/v1/auth/login"),
        vec![
            "-H".into(),
            "Content-Type: application/json".into(),
            "-d".into(),
            login,
        ],
    )
    .await
    .unwrap();
    assert_eq!(code, 0, "{answer}");
    let cookie = answer
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_default();
    assert!(cookie.contains("; Secure"), "{answer}");

    // Plain HTTP on the TLS port gets no answer.
    let plain = Command::new("curl")
        .args(["-sS", "--max-time", "5"])
        .arg(health.replace("https://", "http://"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("\"ok\""));

    // A renewed certificate (another CA) is served without a restart.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    issue(dir.path(), "second-ca");
    let second = dir.path().join("second-ca.pem");
    let mut renewed = (1, String::new());
    for _ in 0..50 {
        renewed = blocking(second.clone(), health.clone(), vec![])
            .await
            .unwrap();
        if renewed.0 == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        renewed.0, 0,
        "the renewed certificate is served: {}",
        renewed.1
    );
    let (code, _) = blocking(first, health.clone(), vec![]).await.unwrap();
    assert_ne!(code, 0, "the old CA no longer verifies the server");
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_https_url_makes_cookies_secure_and_bad_pairs_are_refused() {
    support::server::crypto();
    let dir = tempfile::tempdir().unwrap();
    // Each bind has its own data directory: the data-directory lock is a flock, which a child
    // another test forks at that moment holds until it execs.
    let server = Server::bind(
        ServeOptions {
            public_url: Some("https://wardn.example.com".into()),
            ..options(&dir.path().join("data-secure"))
        },
        Sealer::new(&[7u8; 32], None),
    )
    .await
    .unwrap();
    assert_eq!(server.scheme(), "http");
    assert!(server.state().secure_cookies());
    drop(server);
    let plain = Server::bind(
        options(&dir.path().join("data-plain")),
        Sealer::new(&[7u8; 32], None),
    )
    .await
    .unwrap();
    assert!(!plain.state().secure_cookies(), "plain http: no Secure");
    drop(plain);

    // A key that does not fit the certificate, and a missing file: refused, naming the files.
    issue(dir.path(), "ca");
    let other = rcgen::KeyPair::generate().unwrap();
    std::fs::write(dir.path().join("other.pem"), other.serialize_pem()).unwrap();
    let err = Server::bind(
        ServeOptions {
            tls_cert: Some(dir.path().join("cert.pem")),
            tls_key: Some(dir.path().join("other.pem")),
            ..options(&dir.path().join("data-bad-key"))
        },
        Sealer::new(&[7u8; 32], None),
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(err, ServeError::Tls(_)), "{err}");
    assert!(err.to_string().contains("other.pem"), "{err}");
    let err = Server::bind(
        ServeOptions {
            tls_cert: Some(dir.path().join("missing.pem")),
            ..options(&dir.path().join("data-missing"))
        },
        Sealer::new(&[7u8; 32], None),
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(err, ServeError::TlsPair), "{err}");
}
