//! `POST /api/v1/clusters/test`: connects without storing, and its `error` names the cause.

mod support;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use support::server::{TestServer, kubeconfig};
use tokio::io::AsyncWriteExt;

async fn test_cluster(server: &TestServer, token: &str, server_url: &str) -> (StatusCode, Value) {
    let response = Client::new()
        .post(server.url("/api/v1/clusters/test"))
        .bearer_auth(token)
        .json(&json!({"server_url": server_url, "kubeconfig": kubeconfig(server_url, "tok")}))
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

fn error_of(body: &Value) -> String {
    assert_eq!(body["status"], "disconnected", "{body}");
    body["error"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn each_failure_cause_is_named_and_nothing_is_stored() {
    let server = TestServer::start(None).await;
    let token = server.token().await;

    let (status, body) = test_cluster(&server, &token, "https://no-such-host.invalid:6443").await;
    assert_eq!(status, StatusCode::OK);
    assert!(error_of(&body).starts_with("DNS failure"), "{body}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let (_, body) = test_cluster(&server, &token, &format!("https://127.0.0.1:{port}")).await;
    assert!(error_of(&body).starts_with("connection refused"), "{body}");

    // A server that answers plain HTTP where TLS is expected.
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain_url = format!("https://127.0.0.1:{}", plain.local_addr().unwrap().port());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = plain.accept().await {
            let _ = stream
                .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let (_, body) = test_cluster(&server, &token, &plain_url).await;
    assert!(error_of(&body).starts_with("TLS error"), "{body}");

    // A server that accepts and never answers (the test server's probe timeout is 3 s).
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_url = format!("https://127.0.0.1:{}", silent.local_addr().unwrap().port());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let (_, body) = test_cluster(&server, &token, &silent_url).await;
    assert!(error_of(&body).starts_with("timeout"), "{body}");

    let (status, body) = Client::new()
        .post(server.url("/api/v1/clusters/test"))
        .bearer_auth(&token)
        .json(
            &json!({"server_url": "http://x:6443", "kubeconfig": kubeconfig("http://x:6443", "t")}),
        )
        .send()
        .await
        .map(|r| (r.status(), r))
        .unwrap();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let body: Value = body.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().starts_with("server_url:"));

    let list: Value = Client::new()
        .get(server.url("/api/v1/clusters"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list, json!({"clusters": []}));
    let log: Value = Client::new()
        .get(server.url("/api/v1/audit"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let tests = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "cluster.test")
        .count();
    assert_eq!(tests, 5);
}
