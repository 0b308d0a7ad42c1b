//! How a cluster's connections reach its API server: directly, or through the proxy its
//! kubeconfig names (`clusters[].cluster.proxy-url`), as client-go and kubectl reach a cluster
//! behind a corporate proxy.
//!
//! Through an `http://` proxy each connection is an HTTP `CONNECT` tunnel to the API server's
//! host and port; through a `socks5://` proxy, a SOCKS5 `CONNECT` (the host name resolved by
//! the proxy, as client-go's SOCKS5 dialer leaves it). Either way TLS to the API server runs
//! inside, end to end: the proxy sees neither the requests nor the cluster's credentials, only
//! where the connection goes. Credentials for the proxy itself come from the URL's user
//! information (`http://user:password@proxy:3128`), percent-decoded, and are sent as
//! `Proxy-Authorization: Basic` or as SOCKS5 username and password, as client-go sends them;
//! they never appear in an error.

use std::task::{Context, Poll};

use base64::Engine as _;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::{HeaderValue, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::{SocksV5, Tunnel};
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

/// Opens the TCP connections of one cluster: directly to the API server, or through its
/// proxy.
#[derive(Clone)]
pub enum Dial {
    /// A TCP connection to the API server.
    Direct(HttpConnector),
    /// A connection through the proxy.
    Proxied {
        /// How the proxy is asked for the connection (boxed: it holds the proxy's URL and
        /// credentials, ten times a direct connector's size).
        via: Box<Via>,
        /// The proxy's URL without user information, for errors.
        proxy: String,
    },
}

/// The protocol a proxy is asked in.
#[derive(Clone)]
pub enum Via {
    /// HTTP `CONNECT` (an `http://` proxy).
    Connect(Tunnel<HttpConnector>),
    /// SOCKS5 `CONNECT` (a `socks5://` proxy).
    Socks5(SocksV5<HttpConnector>),
}

impl Dial {
    /// Dials with `tcp`, through `proxy_url` when there is one. A URL that is not an absolute
    /// `http://` or `socks5://` one with a host, or whose credentials cannot be sent, is an
    /// error naming the proxy without its user information.
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
        let credentials = user_info(url);
        let via = if url.scheme_str() == Some("socks5") {
            let mut socks = SocksV5::new(url.clone(), tcp);
            if let Some((user, password)) = credentials {
                let text = |part: Vec<u8>| {
                    String::from_utf8(part)
                        .map_err(|_| refuse("its user information is not UTF-8 once decoded"))
                };
                let (user, password) = (text(user)?, text(password)?);
                if user.len() > 255 || password.len() > 255 {
                    return Err(refuse(
                        "its user name and password may have at most 255 bytes each (SOCKS5)",
                    ));
                }
                socks = socks.with_auth(user, password);
            }
            Via::Socks5(socks)
        } else {
            let mut tunnel = Tunnel::new(url.clone(), tcp);
            if let Some((user, password)) = credentials {
                let mut pair = user;
                pair.push(b':');
                pair.extend(password);
                let basic = base64::engine::general_purpose::STANDARD.encode(pair);
                let value = HeaderValue::from_str(&format!("Basic {basic}"))
                    .map_err(|_| refuse("its user information cannot be sent as a header"))?;
                tunnel = tunnel.with_auth(value);
            }
            Via::Connect(tunnel)
        };
        Ok(Dial::Proxied {
            via: Box::new(via),
            proxy,
        })
    }
}

/// Why `url` cannot be a cluster's proxy, if it cannot: only absolute `http://` and
/// `socks5://` URLs with a host are taken. An `https://` proxy (TLS to the proxy as well) or
/// any other scheme is refused, naming the scheme, rather than bypassed. The reason never
/// quotes the URL (it may hold a password).
fn unsupported(url: &Uri) -> Option<String> {
    match url.scheme_str() {
        Some("http" | "socks5") if url.host().is_some_and(|host| !host.is_empty()) => None,
        Some("http" | "socks5") => Some("has no host".to_string()),
        Some(scheme) => Some(format!(
            "{scheme}:// proxies are not supported; use an http:// or socks5:// proxy (the API server's TLS runs inside the tunnel)"
        )),
        None => Some("must be an absolute http:// or socks5:// URL".to_string()),
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

/// The user name and password of `url`'s user information, percent-decoded as client-go
/// decodes them (a missing password is empty).
fn user_info(url: &Uri) -> Option<(Vec<u8>, Vec<u8>)> {
    let (user_info, _) = url.authority()?.as_str().rsplit_once('@')?;
    let (user, password) = user_info.split_once(':').unwrap_or((user_info, ""));
    let decode = |part: &str| percent_encoding::percent_decode_str(part).collect::<Vec<u8>>();
    Some((decode(user), decode(password)))
}

/// `connecting` with its failure wrapped as the proxy's.
fn through<E: Into<BoxError>>(
    proxy: &str,
    connecting: impl Future<Output = Result<TokioIo<TcpStream>, E>> + Send + 'static,
) -> BoxFuture<'static, Result<TokioIo<TcpStream>, BoxError>> {
    let proxy = proxy.to_string();
    connecting
        .map(move |result| {
            result.map_err(|source| {
                ProxyError {
                    proxy,
                    source: source.into(),
                }
                .into()
            })
        })
        .boxed()
}

impl Service<Uri> for Dial {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<TokioIo<TcpStream>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Both proxy connectors are ready when the TCP connector they wrap is.
        match self {
            Dial::Direct(tcp) => tcp.poll_ready(cx).map_err(Into::into),
            Dial::Proxied { via, .. } => match via.as_mut() {
                Via::Connect(tunnel) => tunnel.poll_ready(cx).map_err(Into::into),
                Via::Socks5(socks) => socks.poll_ready(cx).map_err(Into::into),
            },
        }
    }

    fn call(&mut self, destination: Uri) -> Self::Future {
        match self {
            Dial::Direct(tcp) => tcp.call(destination).map(|r| r.map_err(Into::into)).boxed(),
            Dial::Proxied { via, proxy } => match via.as_mut() {
                Via::Connect(tunnel) => through(proxy, tunnel.call(destination)),
                Via::Socks5(socks) => through(proxy, socks.call(destination)),
            },
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
    fn credentials_are_decoded_and_never_named() {
        let url: Uri = "http://ops%40corp:p%3Ass@proxy.corp:3128".parse().unwrap();
        assert_eq!(without_user_info(&url), "http://proxy.corp:3128/");
        let pair = |user: &str, password: &str| Some((user.into(), password.into()));
        assert_eq!(user_info(&url), pair("ops@corp", "p:ss"));
        let bare: Uri = "http://proxy.corp:3128".parse().unwrap();
        assert_eq!(user_info(&bare), None);
        let user_only: Uri = "socks5://ops@proxy.corp:1080".parse().unwrap();
        assert_eq!(user_info(&user_only), pair("ops", ""));
    }

    #[test]
    fn http_and_socks5_proxies_are_taken_and_refusals_name_the_proxy_without_its_password() {
        let via = |url: &str| match dial(url) {
            Ok(Dial::Proxied { via, .. }) => Some(matches!(*via, Via::Socks5(_))),
            _ => None,
        };
        assert_eq!(via("http://u:secret@proxy:3128"), Some(false));
        assert_eq!(via("socks5://u:secret@proxy:1080"), Some(true));
        let long = format!("socks5://{}:secret@proxy:1080", "a".repeat(256));
        for (url, reason) in [
            (
                "https://u:secret@proxy:3128",
                "https:// proxies are not supported",
            ),
            (
                "socks4://u:secret@proxy:1080",
                "socks4:// proxies are not supported",
            ),
            (
                "socks5://u:secret%FF@proxy:1080",
                "its user information is not UTF-8",
            ),
            (
                &long,
                "its user name and password may have at most 255 bytes",
            ),
        ] {
            let err = dial(url).err().unwrap().to_string();
            assert!(err.contains(reason), "{err}");
            assert!(!err.contains("secret") && !err.contains("u:"), "{err}");
        }
        let err = Dial::new(HttpConnector::new(), Some(&"/relative".parse().unwrap()))
            .err()
            .unwrap();
        assert_eq!(err.reason, "must be an absolute http:// or socks5:// URL");
        assert!(matches!(
            Dial::new(HttpConnector::new(), None),
            Ok(Dial::Direct(_))
        ));
    }
}
