//! A local proxy (HTTP `CONNECT` or SOCKS5) that records what it is asked and answers as told:
//! it opens the tunnel, refuses, floods or stalls. Used for clusters and Git remotes behind a
//! proxy.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The protocol a proxy speaks.
#[derive(Clone, Copy, Debug)]
pub enum Protocol {
    /// HTTP `CONNECT`, as squid or a corporate proxy answers it.
    Http,
    /// SOCKS5 `CONNECT` (RFC 1928) with username and password (RFC 1929).
    Socks5,
}

/// What the proxy answers a `CONNECT`.
#[derive(Clone, Copy)]
pub enum Answer {
    /// Opens the tunnel when the credentials match (else refuses them).
    Tunnel,
    /// Sends these bytes and closes (HTTP).
    Bytes(&'static [u8]),
    /// Sends a header line without end (HTTP).
    Flood,
    /// Never answers (HTTP).
    Stall,
}

/// One `CONNECT` the proxy received: its target and the credentials sent (`user:password`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connect {
    /// `host:port` asked for.
    pub target: String,
    /// `user:password`, when sent.
    pub credentials: Option<String>,
}

/// A proxy on 127.0.0.1.
pub struct Proxy {
    protocol: Protocol,
    /// The port it listens on.
    pub port: u16,
    seen: Arc<Mutex<Vec<Connect>>>,
}

impl Proxy {
    /// Starts a proxy of `protocol` answering `answer`, requiring `credentials`
    /// (`user:password`) when given.
    pub async fn start(protocol: Protocol, answer: Answer, credentials: Option<&str>) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let required = credentials.map(str::to_string);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (log, required) = (Arc::clone(&log), required.clone());
                match protocol {
                    Protocol::Http => {
                        tokio::spawn(serve_http(client, answer, required, log));
                    }
                    Protocol::Socks5 => {
                        tokio::spawn(serve_socks5(client, required, log));
                    }
                }
            }
        });
        Proxy {
            protocol,
            port,
            seen,
        }
    }

    /// The proxy's URL, with `user_info` (`user:password@`, or empty) in it.
    pub fn url(&self, user_info: &str) -> String {
        let scheme = match self.protocol {
            Protocol::Http => "http",
            Protocol::Socks5 => "socks5",
        };
        format!("{scheme}://{user_info}127.0.0.1:{}", self.port)
    }

    /// Every `CONNECT` received so far.
    pub fn seen(&self) -> Vec<Connect> {
        self.seen.lock().clone()
    }
}

/// Connects to `target` and relays between it and `client` once `established` is sent (or
/// sends `refused`).
async fn relay(mut client: TcpStream, target: &str, established: &[u8], refused: &[u8]) {
    let Ok(mut server) = TcpStream::connect(target).await else {
        let _ = client.write_all(refused).await;
        return;
    };
    if client.write_all(established).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
    }
}

async fn serve_http(
    mut client: TcpStream,
    answer: Answer,
    required: Option<String>,
    log: Arc<Mutex<Vec<Connect>>>,
) {
    use base64::Engine as _;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 8192 || client.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let mut lines = head.lines();
    let target = lines
        .next()
        .and_then(|line| line.strip_prefix("CONNECT "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_default()
        .to_string();
    let credentials = lines
        .filter_map(|line| line.split_once(": "))
        .find(|(name, _)| name.eq_ignore_ascii_case("proxy-authorization"))
        .and_then(|(_, value)| value.strip_prefix("Basic "))
        .and_then(|basic| base64::engine::general_purpose::STANDARD.decode(basic).ok())
        .map(|pair| String::from_utf8_lossy(&pair).to_string());
    log.lock().push(Connect {
        target: target.clone(),
        credentials: credentials.clone(),
    });
    match answer {
        Answer::Bytes(bytes) => {
            let _ = client.write_all(bytes).await;
        }
        Answer::Flood => {
            let _ = client.write_all(b"HTTP/1.1 200 OK\r\nX-Padding: ").await;
            while client.write_all(b"0123456789").await.is_ok() {}
        }
        Answer::Stall => {
            let _ = client.read(&mut [0u8; 1]).await;
        }
        Answer::Tunnel if required.is_some() && credentials != required => {
            let _ = client
                .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                .await;
        }
        Answer::Tunnel => {
            let established = b"HTTP/1.1 200 Connection established\r\n\r\n";
            relay(
                client,
                &target,
                established,
                b"HTTP/1.1 502 Bad Gateway\r\n\r\n",
            )
            .await;
        }
    }
}

/// Reads a length byte, then that many bytes, as text.
async fn read_counted(client: &mut TcpStream) -> std::io::Result<String> {
    let length = client.read_u8().await?;
    let mut text = vec![0; usize::from(length)];
    client.read_exact(&mut text).await?;
    Ok(String::from_utf8_lossy(&text).to_string())
}

async fn serve_socks5(
    mut client: TcpStream,
    required: Option<String>,
    log: Arc<Mutex<Vec<Connect>>>,
) -> std::io::Result<()> {
    let mut greeting = [0u8; 2];
    client.read_exact(&mut greeting).await?;
    let mut methods = vec![0; usize::from(greeting[1])];
    client.read_exact(&mut methods).await?;
    let mut credentials = None;
    if required.is_some() {
        if !methods.contains(&2) {
            return client.write_all(&[5, 0xff]).await;
        }
        client.write_all(&[5, 2]).await?;
        let _version = client.read_u8().await?;
        let user = read_counted(&mut client).await?;
        let password = read_counted(&mut client).await?;
        credentials = Some(format!("{user}:{password}"));
        if credentials != required {
            log.lock().push(Connect {
                target: String::new(),
                credentials,
            });
            return client.write_all(&[1, 1]).await;
        }
        client.write_all(&[1, 0]).await?;
    } else {
        client.write_all(&[5, 0]).await?;
    }
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).await?;
            std::net::Ipv4Addr::from(ip).to_string()
        }
        3 => read_counted(&mut client).await?,
        _ => return client.write_all(&[5, 8, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    };
    let port = client.read_u16().await?;
    let target = format!("{host}:{port}");
    log.lock().push(Connect {
        target: target.clone(),
        credentials,
    });
    let established = [5, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    relay(
        client,
        &target,
        &established,
        &[5, 5, 0, 1, 0, 0, 0, 0, 0, 0],
    )
    .await;
    Ok(())
}
