//! How a cluster's connections reach its API server: directly, or through the HTTP proxy its
//! kubeconfig names (`clusters[].cluster.proxy-url`), as client-go and kubectl reach a cluster
//! behind a corporate proxy.
//!
//! Through a proxy, each connection is an HTTP `CONNECT` tunnel to the API server's host and
//! port, and TLS to the API server runs inside it end to end: the proxy sees neither the
//! requests nor the credentials, only where the tunnel goes. Credentials for the proxy itself
//! come from the URL's user information (`http://user:password@proxy:3128`) and are sent as
//! `Proxy-Authorization: Basic`, as client-go sends them; they never appear in an error.

use std::task::{Context, Poll};

use base64::Engine as _;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::{HeaderValue, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower::{BoxError, Service};

/// Why a kubeconfig's `proxy-url` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("proxy-url {proxy}: {reason}")]
pub struct ProxyUrlError {
    /// The proxy's URL without its user information.
    pub proxy: String,
    /// Why it cannot be used.
    pub reason: String,
}

/// Why a connection through the proxy failed: the proxy, named without its credentials; what
/// it answered is the error's source.
#[derive(Debug, thiserror::Error)]
#[error("through proxy {proxy}")]
pub struct ProxyError {
    proxy: String,
    #[source]
    source: BoxError,
}

/// Opens the TCP connections of one cluster: directly to the API server, or as a tunnel
/// through its proxy.
#[derive(Clone)]
pub enum Dial {
    /// A TCP connection to the API server.
    Direct(HttpConnector),
    /// An HTTP `CONNECT` tunnel through the proxy (named without credentials, for errors).
    Tunnel {
        /// The connector dialling the proxy and asking it for the tunnel (boxed: it holds the
        /// proxy's URL and headers, ten times a direct connector's size).
        tunnel: Box<Tunnel<HttpConnector>>,
        /// The proxy's URL without user information.
        proxy: String,
    },
}

impl Dial {
    /// Dials with `tcp`, through `proxy_url` when there is one; a URL [`unsupported`] refuses
    /// is an error naming the proxy without its user information.
    pub fn new(tcp: HttpConnector, proxy_url: Option<&Uri>) -> Result<Dial, ProxyUrlError> {
        let Some(url) = proxy_url else {
            return Ok(Dial::Direct(tcp));
        };
        let proxy = without_user_info(url);
        let refuse = |reason: &str| ProxyUrlError {
            proxy: proxy.clone(),
            reason: reason.to_string(),
        };
        if let Some(reason) = unsupported(url) {
            return Err(refuse(&reason));
        }
        let mut tunnel = Tunnel::new(url.clone(), tcp);
        if let Some(credentials) = basic_credentials(url) {
            let value = HeaderValue::from_str(&credentials)
                .map_err(|_| refuse("its user information cannot be sent as a header"))?;
            tunnel = tunnel.with_auth(value);
        }
        Ok(Dial::Tunnel {
            tunnel: Box::new(tunnel),
            proxy,
        })
    }
}

/// Why `url` cannot be a cluster's proxy, if it cannot: only absolute `http://` URLs with a
/// host are taken. An `https://` proxy (TLS to the proxy as well) or a SOCKS proxy is refused,
/// naming the scheme, rather than bypassed. The reason never quotes the URL (it may hold a
/// password).
pub fn unsupported(url: &Uri) -> Option<String> {
    match url.scheme_str() {
        Some("http") if url.host().is_some_and(|host| !host.is_empty()) => None,
        Some("http") => Some("has no host".to_string()),
        Some(scheme) => Some(format!(
            "{scheme}:// proxies are not supported; use an http:// proxy (the API server's TLS runs inside its CONNECT tunnel)"
        )),
        None => Some("must be an absolute http:// URL".to_string()),
    }
}

/// `url` as text without its user information (`user:password@`), for errors and logs.
fn without_user_info(url: &Uri) -> String {
    let text = url.to_string();
    match url.authority() {
        Some(authority) => match authority.as_str().rsplit_once('@') {
            Some((_, host)) => text.replacen(authority.as_str(), host, 1),
            None => text,
        },
        None => text,
    }
}

/// The `Proxy-Authorization` value of `url`'s user information, percent-decoded as client-go
/// decodes it: `Basic base64(user:password)`.
fn basic_credentials(url: &Uri) -> Option<String> {
    let (user_info, _) = url.authority()?.as_str().rsplit_once('@')?;
    let (user, password) = user_info.split_once(':').unwrap_or((user_info, ""));
    let decode = |part: &str| percent_encoding::percent_decode_str(part).collect::<Vec<u8>>();
    let mut pair = decode(user);
    pair.push(b':');
    pair.extend(decode(password));
    Some(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    ))
}

impl Service<Uri> for Dial {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<TokioIo<TcpStream>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Dial::Direct(tcp) => tcp.poll_ready(cx).map_err(Into::into),
            Dial::Tunnel { tunnel, proxy } => tunnel.poll_ready(cx).map_err(|source| {
                ProxyError {
                    proxy: proxy.clone(),
                    source: source.into(),
                }
                .into()
            }),
        }
    }

    fn call(&mut self, destination: Uri) -> Self::Future {
        match self {
            Dial::Direct(tcp) => tcp.call(destination).map(|r| r.map_err(Into::into)).boxed(),
            Dial::Tunnel { tunnel, proxy } => {
                let proxy = proxy.clone();
                tunnel
                    .call(destination)
                    .map(move |r| {
                        r.map_err(|source| {
                            ProxyError {
                                proxy,
                                source: source.into(),
                            }
                            .into()
                        })
                    })
                    .boxed()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dial(url: &str) -> Result<Dial, ProxyUrlError> {
        Dial::new(HttpConnector::new(), Some(&url.parse().unwrap()))
    }

    #[test]
    fn credentials_are_sent_decoded_and_never_named() {
        let url: Uri = "http://ops%40corp:p%3Ass@proxy.corp:3128".parse().unwrap();
        assert_eq!(without_user_info(&url), "http://proxy.corp:3128/");
        let expected = base64::engine::general_purpose::STANDARD.encode("ops@corp:p:ss");
        assert_eq!(basic_credentials(&url), Some(format!("Basic {expected}")));
        let bare: Uri = "http://proxy.corp:3128".parse().unwrap();
        assert_eq!(basic_credentials(&bare), None);
        let user_only: Uri = "http://ops@proxy.corp:3128".parse().unwrap();
        let expected = base64::engine::general_purpose::STANDARD.encode("ops:");
        assert_eq!(
            basic_credentials(&user_only),
            Some(format!("Basic {expected}"))
        );
    }

    #[test]
    fn only_http_proxies_are_taken_and_refusals_name_the_proxy_without_its_password() {
        assert!(matches!(dial("http://proxy:3128"), Ok(Dial::Tunnel { .. })));
        for (url, reason) in [
            (
                "https://u:secret@proxy:3128",
                "https:// proxies are not supported",
            ),
            (
                "socks5://u:secret@proxy:1080",
                "socks5:// proxies are not supported",
            ),
        ] {
            let err = dial(url).err().unwrap().to_string();
            assert!(err.contains(reason), "{err}");
            assert!(!err.contains("secret") && !err.contains("u:"), "{err}");
        }
        let err = Dial::new(HttpConnector::new(), Some(&"/relative".parse().unwrap()))
            .err()
            .unwrap();
        assert_eq!(err.reason, "must be an absolute http:// URL");
        assert!(matches!(
            Dial::new(HttpConnector::new(), None),
            Ok(Dial::Direct(_))
        ));
    }
}
