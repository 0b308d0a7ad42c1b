//! How a mirror connects to its remote, and why it never waits on one forever.
//!
//! A remote that accepts a connection and then sends nothing (a hung Git server, a proxy or
//! firewall that drops a connection silently) would otherwise hold its repository's poll, and
//! every App using it, until the daemon restarts. Every network transport is therefore bounded
//! by [`GitSettings::timeout`](super::git::GitSettings::timeout) (`--git-timeout`, default
//! [`DEFAULT_TIMEOUT`]), measured as time without progress, so a large pack that keeps
//! arriving is never cut off:
//! - `https://`, `http://`: connecting (TCP and TLS) and every operation (a request until its
//!   answer's headers, each read of a body) are bounded by reqwest's timeouts.
//! - `git://`: the TCP connection is made here, with read and write timeouts on the socket.
//! - `ssh://`, `user@host:path`: OpenSSH (`GIT_SSH_COMMAND`, else `ssh`) runs in batch mode
//!   with `ConnectTimeout` (which also bounds the banner exchange) and `ServerAliveInterval` ×
//!   `ServerAliveCountMax` set to the same limit, so ssh gives up on a server that stops
//!   answering.
//! - `file://` and paths: a local `git-upload-pack`, no network, no limit.
//!
//! The failure reads as the remote being unreachable (`… timed out`), the poll backs off and
//! tries again later.

use std::any::Any;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use gix::protocol::transport::client::blocking_io::{Transport, http, ssh};
use gix::protocol::transport::client::git::ConnectMode;
use gix::protocol::transport::client::git::blocking_io::Connection as GitDaemonConnection;
use gix::remote::{Connection, Direction};

use super::credentials::Credentials;

/// The default limit on a Git remote's silence: as Flux's `GitRepository.spec.timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What an ssh fetch that ended where an answer was due adds to its error: the ssh command
/// exited, and gix (0.90) waits only 5 ms after ssh's output ends for the stderr line that
/// says why (`Connection to … timed out`), so on a loaded machine the reason is often lost
/// and the error is only `failed to fill whole buffer`. gix writes ssh's other lines to
/// wardn's standard error.
pub const SSH_ENDED: &str =
    "the ssh command ended without answering (what it said is on wardn's standard error)";

/// Whether `error` comes from a transport stream that ended where more was due (an ssh
/// command that exited; see [`SSH_ENDED`]).
pub fn ended_early(error: &gix::Error) -> bool {
    error.iter_errors().any(|e| {
        e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::UnexpectedEof)
    })
}

/// The port of `git://` remotes that name none.
const GIT_DAEMON_PORT: u16 = 9418;

/// A connection to `remote` for fetching, each network transport bounded by `timeout` (see
/// the module documentation).
pub(super) fn connect<'a, 'repo>(
    remote: &'a gix::Remote<'repo>,
    timeout: Duration,
) -> gix::Result<Connection<'a, 'static, 'repo, Box<dyn Transport + Send>>> {
    // Only git:// and ssh are connected here; gix connects the others as it would.
    let git_daemon = match remote.url(Direction::Fetch).map(|url| &url.scheme) {
        Some(gix::url::Scheme::Git) => true,
        Some(gix::url::Scheme::Ssh) => false,
        _ => return remote.connect(Direction::Fetch),
    };
    let (url, version) = remote.sanitized_url_and_version(Direction::Fetch)?;
    let transport: Box<dyn Transport + Send> = if git_daemon {
        Box::new(git_daemon_connection(&url, version, timeout)?)
    } else {
        Box::new(
            ssh::connect(url, version, ssh_options(timeout), false)
                .map_err(gix::Error::from_error)?,
        )
    };
    Ok(remote.to_connection_with_transport(transport))
}

/// The environment variable naming the ssh command, as for Git (e.g. `ssh -i /keys/deploy`).
pub const SSH_COMMAND_ENV: &str = "GIT_SSH_COMMAND";

/// OpenSSH in batch mode (`GIT_SSH_COMMAND`, else `ssh`), giving up after `timeout` of
/// silence.
fn ssh_options(timeout: Duration) -> ssh::connect::Options {
    let base = std::env::var(SSH_COMMAND_ENV).ok();
    ssh::connect::Options {
        command: Some(ssh_command(base.as_deref(), timeout).into()),
        disallow_shell: false,
        kind: Some(ssh::ProgramKind::Ssh),
    }
}

/// `base` (`ssh` when unset or blank) followed by `-o BatchMode=yes` and a `ConnectTimeout`
/// and keepalives bounded by `timeout` (whole seconds, at least one; `ServerAliveCountMax`
/// keepalives `timeout / 4` apart). OpenSSH keeps the first value it is given for an option,
/// so options in `base` win over these.
pub fn ssh_command(base: Option<&str>, timeout: Duration) -> String {
    const KEEPALIVES: u64 = 4;
    let base = base
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .unwrap_or("ssh");
    let seconds = timeout.as_secs().max(1);
    let interval = (seconds / KEEPALIVES).max(1);
    format!(
        "{base} -o BatchMode=yes -o ConnectTimeout={seconds} -o ServerAliveInterval={interval} -o ServerAliveCountMax={KEEPALIVES}"
    )
}

/// A `git://` connection over a socket whose reads and writes time out after `timeout`.
fn git_daemon_connection(
    url: &gix::Url,
    version: gix::protocol::transport::Protocol,
    timeout: Duration,
) -> gix::Result<GitDaemonConnection<SilenceLimited, SilenceLimited>> {
    let host = url
        .host()
        .ok_or_else(|| gix::Error::from_error(io::Error::other("git:// URL without a host")))?;
    let port = url.port.unwrap_or(GIT_DAEMON_PORT);
    let stream = connect_tcp(host, port, timeout).map_err(gix::Error::from_error)?;
    let write = stream.try_clone().map_err(gix::Error::from_error)?;
    Ok(GitDaemonConnection::new(
        SilenceLimited { stream, timeout },
        SilenceLimited {
            stream: write,
            timeout,
        },
        version,
        url.path.clone(),
        Some((host.to_string(), url.port)),
        ConnectMode::Daemon,
        false,
    ))
}

/// Connects to the first address of `host:port` that answers within `timeout`, with read and
/// write timeouts of `timeout` on the socket.
fn connect_tcp(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::other(format!("{host}:{port}: the host name has no address"));
    for address in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&address, timeout) {
            Ok(stream) => {
                stream.set_read_timeout(Some(timeout))?;
                stream.set_write_timeout(Some(timeout))?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A socket whose timeouts read as what they mean: the remote sent nothing for `timeout`
/// (the OS reports a socket timeout as `WouldBlock`, "Resource temporarily unavailable").
struct SilenceLimited {
    stream: TcpStream,
    timeout: Duration,
}

impl SilenceLimited {
    fn explain(&self, error: io::Error) -> io::Error {
        match error.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "timed out: the remote sent nothing for {} s (--git-timeout)",
                    self.timeout.as_secs_f64()
                ),
            ),
            _ => error,
        }
    }
}

impl Read for SilenceLimited {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read(buf).map_err(|e| self.explain(e))
    }
}

impl Write for SilenceLimited {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.write(buf).map_err(|e| self.explain(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush().map_err(|e| self.explain(e))
    }
}

/// HTTP transport options for `url`: the repository's defaults plus wardn's user agent, the
/// bearer header, the extra trusted roots and the timeouts.
pub(super) fn http_options(
    repo: &gix::Repository,
    url: &str,
    credentials: &Credentials,
    extra_roots_pem: Option<Arc<Vec<u8>>>,
    timeout: Duration,
) -> gix::Result<Box<dyn Any>> {
    let mut options = repo
        .transport_options(url, None)?
        .and_then(|o| o.downcast::<http::Options>().ok())
        .map(|o| *o)
        .unwrap_or_default();
    options.user_agent = Some(concat!("wardn/", env!("CARGO_PKG_VERSION")).to_string());
    if let Credentials::Bearer { token } = credentials {
        options
            .extra_headers
            .push(format!("Authorization: Bearer {token}"));
    }
    let configure: Box<http::reqwest::ConfigureClientFn> = Box::new(move |builder| {
        let builder = builder.connect_timeout(timeout).timeout(timeout);
        match &extra_roots_pem {
            Some(pem) => {
                let certs =
                    reqwest::Certificate::from_pem_bundle(pem).map_err(gix::Error::from_error)?;
                Ok(builder.tls_certs_merge(certs))
            }
            None => Ok(builder),
        }
    });
    let backend = http::reqwest::Options {
        configure_client: Some(configure),
        configure_request: None,
    };
    options.backend = Some(Arc::new(std::sync::Mutex::new(backend)));
    Ok(Box::new(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ssh_command_bounds_connecting_and_silence_by_the_timeout() {
        assert_eq!(
            ssh_command(None, Duration::from_secs(60)),
            "ssh -o BatchMode=yes -o ConnectTimeout=60 -o ServerAliveInterval=15 -o ServerAliveCountMax=4"
        );
        // Below a second (tests) ssh still gets whole seconds; a blank base is plain ssh.
        assert_eq!(
            ssh_command(Some("  "), Duration::from_millis(300)),
            "ssh -o BatchMode=yes -o ConnectTimeout=1 -o ServerAliveInterval=1 -o ServerAliveCountMax=4"
        );
        // GIT_SSH_COMMAND's own options come first, so they win.
        assert_eq!(
            ssh_command(
                Some("ssh -i /keys/deploy -o ConnectTimeout=5"),
                Duration::from_secs(8)
            ),
            "ssh -i /keys/deploy -o ConnectTimeout=5 -o BatchMode=yes -o ConnectTimeout=8 -o ServerAliveInterval=2 -o ServerAliveCountMax=4"
        );
    }
}
