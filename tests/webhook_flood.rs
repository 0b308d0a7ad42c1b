//! Webhook bodies are never held whole: a flood of large forged bodies costs little memory,
//! and large genuine ones (spooled to a temporary file) are still checked under the right
//! secret. The floods are scaled down from `benches/abuse.rs`; the figures come from there.

mod support;

use reqwest::{Client, StatusCode};
use serde_json::json;
use support::server::{TestServer, WEBHOOK_SECRET};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wardn::server::spool::SPOOL_MEMORY;
use wardn::sources::webhook::{ROUTE, sign};

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Resets the peak RSS to the current one; returns the current RSS in KiB.
fn reset_peak() -> u64 {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    status_kib("VmRSS:")
}

async fn deliver(http: &Client, server: &TestServer, signature: &str, body: Vec<u8>) -> u16 {
    http.post(server.url(ROUTE))
        .header("x-hub-signature-256", signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// A push payload naming `url` after `filler` bytes of commits (GitLab puts `repository`
/// after its commits), so the URL is found only by reading the whole spooled body.
fn payload(url: &str, filler: usize) -> Vec<u8> {
    json!({"commits": [{"message": "m".repeat(filler)}], "repository": {"clone_url": url}})
        .to_string()
        .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_large_bodies_in_parallel_cost_little_memory() {
    const BODIES: usize = 12;
    const SIZE: usize = 12 << 20;
    let server = TestServer::start(None).await;
    let body = axum::body::Bytes::from(vec![b'x'; SIZE]);
    let forged = sign(b"guess", &body);
    let http = Client::new();
    let before = reset_peak();
    let posts = (0..BODIES).map(|_| {
        http.post(server.url(ROUTE))
            .header("x-hub-signature-256", &forged)
            .body(body.clone())
            .send()
    });
    let statuses: Vec<u16> = futures_util::future::join_all(posts)
        .await
        .into_iter()
        .map(|r| r.unwrap().status().as_u16())
        .collect();
    let grown_mib = (status_kib("VmHWM:").saturating_sub(before)) / 1024;
    eprintln!(
        "{BODIES} parallel forged {SIZE}-byte bodies: peak RSS +{grown_mib} MiB, {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 503),
        "{statuses:?}"
    );
    assert!(statuses.contains(&401), "{statuses:?}");
    // Held whole, four bodies at once would take 4 × 12 MiB (twice that while collected).
    assert!(
        grown_mib < 40,
        "{BODIES} parallel {SIZE}-byte forged bodies grew the peak RSS by {grown_mib} MiB"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_spooled_body_is_checked_under_the_secret_of_the_repository_it_names() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let http = Client::new();
    let url = "https://git.example.com/org/hooked";
    let created = http
        .post(server.url("/api/v1/repositories"))
        .bearer_auth(&token)
        .json(&json!({"url": url, "webhook_secret": "repository-hook"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let body = payload(url, 2 * SPOOL_MEMORY);
    // The repository's own secret signs it: authenticated (no App polls it: 202).
    let signed = sign(b"repository-hook", &body);
    assert_eq!(deliver(&http, &server, &signed, body.clone()).await, 202);
    // The server secret may not stand in for the repository's own.
    let server_signed = sign(WEBHOOK_SECRET.as_bytes(), &body);
    assert_eq!(
        deliver(&http, &server, &server_signed, body.clone()).await,
        401
    );
    // A body naming another repository is the server secret's.
    let other = payload("https://git.example.com/org/other", 2 * SPOOL_MEMORY);
    let other_signed = sign(WEBHOOK_SECRET.as_bytes(), &other);
    assert_eq!(deliver(&http, &server, &other_signed, other).await, 202);
    // One byte changed after the server signed it: refused.
    let mut tampered = payload("https://git.example.com/org/other", 2 * SPOOL_MEMORY);
    let tampered_signature = sign(WEBHOOK_SECRET.as_bytes(), &tampered);
    tampered[10] ^= 1;
    assert_eq!(
        deliver(&http, &server, &tampered_signature, tampered).await,
        401
    );
    server.stop().await;
}

#[tokio::test]
async fn bodies_over_the_limit_and_malformed_signatures_are_refused() {
    let server = TestServer::start(None).await;
    let http = Client::new();
    // Refused before the body is read: a malformed signature header.
    assert_eq!(deliver(&http, &server, "md5=00", b"{}".to_vec()).await, 401);
    // Over the limit without saying so in advance (chunked): refused once past it, with
    // 413 (had the whole body been read, the forged signature would have made it a 401).
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST {ROUTE} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\
         X-Hub-Signature-256: {}\r\n\r\n",
        sign(b"guess", b"")
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let chunk = format!("100000\r\n{}\r\n", " ".repeat(1 << 20));
    for _ in 0..27 {
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    eprintln!(
        "answer to an oversized chunked body: {:?}",
        answer.lines().next()
    );
    if !answer.is_empty() {
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    }
    // A small genuine delivery still works afterwards.
    let body = payload("https://git.example.com/org/small", 10);
    let signed = sign(WEBHOOK_SECRET.as_bytes(), &body);
    assert_eq!(deliver(&http, &server, &signed, body).await, 202);
    server.stop().await;
}
