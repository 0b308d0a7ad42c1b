//! The listener's connection cap, scaled down: at the cap, the oldest connection still waiting
//! for its first request's headers makes room for a new one, so a client that sends its
//! request at once is always served; connections that sent a request are never closed for
//! room. (`tests/api.rs` holds 1,500 partial connections against the full server;
//! `benches/abuse.rs` 20,000.)

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wardn::server::listener::{FD_HEADROOM, MAX_CONNECTIONS, connection_cap, serve_capped};

const CAP: usize = 32;

/// Whether the server closed `stream` (reads end or fail) rather than leaving it open; a
/// stream the server keeps open is seen as open after `patience`.
async fn closed(stream: &mut TcpStream, patience: Duration) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(patience, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

/// One request on a new connection: the status line's code, or 0 if the connection failed.
async fn health(addr: &str) -> u16 {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return 0;
    };
    let request = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if stream.write_all(request).await.is_err() {
        return 0;
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer)
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_the_oldest_partial_connections_make_room_and_probes_are_served() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let router = Router::new().route("/health", get(|| async { "ok" }));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_capped(listener, router, None, CAP, async {
        let _ = stopped.await;
    }));

    // A keep-alive client that has sent a request: never closed to make room.
    let mut kept = TcpStream::connect(&addr).await.unwrap();
    kept.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    let read = kept.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..read]).starts_with("HTTP/1.1 200"));

    // Ten times the cap of partial-header connections, then probes on new connections.
    let mut partial = Vec::new();
    for _ in 0..10 * CAP {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        partial.push(stream);
    }
    let mut served = 0;
    for _ in 0..40 {
        served += usize::from(health(&addr).await == 200);
    }
    assert_eq!(served, 40, "every probe is served at the cap");

    // The oldest partial connections were closed for room, the newest are still open (their
    // header deadline is seconds away), and so is the keep-alive client.
    let patience = Duration::from_millis(300);
    for stream in partial.iter_mut().take(CAP) {
        assert!(
            closed(stream, Duration::from_secs(5)).await,
            "an old one is open"
        );
    }
    let newest = partial.len() - 1;
    assert!(
        !closed(&mut partial[newest], patience).await,
        "the newest was closed"
    );
    kept.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let read = kept.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..read]).starts_with("HTTP/1.1 200"));

    // Shutdown closes what is left, partial connections included.
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(20), server)
        .await
        .expect("the listener stops")
        .unwrap();
    assert!(closed(&mut partial[newest], Duration::from_secs(5)).await);
    assert!(closed(&mut kept, Duration::from_secs(5)).await);
}

#[test]
fn the_cap_leaves_file_descriptors_to_the_rest_of_the_process() {
    assert_eq!(connection_cap(20_000), MAX_CONNECTIONS);
    assert_eq!(connection_cap(1024), 512);
    assert_eq!(connection_cap(4096), 4096 - FD_HEADROOM);
    assert_eq!(connection_cap(0), 1);
    for limit in [256, 1024, 4096, 8192, 65_536, 1 << 20] {
        let cap = connection_cap(limit);
        assert!(cap <= MAX_CONNECTIONS, "{limit}: {cap}");
        assert!(
            limit - cap >= (limit / 2).min(FD_HEADROOM),
            "{limit}: {cap}"
        );
    }
}
