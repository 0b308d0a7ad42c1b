//! The API client the CLI commands share: where the server is (`--server`/`WARDN_SERVER`, or the
//! credentials saved by `wardn login`), how to authenticate (`--token`/`WARDN_TOKEN`, or saved),
//! and turning non-2xx answers into errors carrying the server's message.

use std::path::PathBuf;

use reqwest::{Method, RequestBuilder};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::redact::{Hidden, hidden};

/// How long a client command waits for the server (connection tests take up to the server's
/// probe timeout).
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Errors of client commands; each is printed as one line and exits non-zero.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// No server or token is configured.
    #[error("{0}")]
    NotConfigured(String),
    /// The server could not be reached.
    #[error("cannot reach {server}: {source}")]
    Http {
        /// The server URL.
        server: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The server answered with an error.
    #[error("server answered {status}: {message}")]
    Api {
        /// HTTP status.
        status: reqwest::StatusCode,
        /// The `error` field, or the body.
        message: String,
    },
    /// A local file could not be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A saved credentials file or an answer is not the expected JSON.
    #[error("{what}: {reason}")]
    Decode {
        /// What was being decoded.
        what: String,
        /// Why it failed.
        reason: String,
    },
    /// The command ran but found a problem (e.g. a broken audit chain, a disconnected cluster).
    #[error("{0}")]
    Failed(String),
}

/// `--server` and `--token`, shared by every client command.
#[derive(Clone, Default, clap::Args)]
pub struct ConnectionArgs {
    /// wardn server URL, e.g. http://localhost:8080 (default: saved by `wardn login`).
    #[arg(long, env = "WARDN_SERVER", global = true)]
    pub server: Option<String>,
    /// API token (default: saved by `wardn login`).
    #[arg(long, env = "WARDN_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
}

impl std::fmt::Debug for ConnectionArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionArgs")
            .field("server", &self.server)
            .field("token", &hidden(&self.token))
            .finish()
    }
}

/// What `wardn login` saves.
#[derive(Clone, Serialize, Deserialize)]
pub struct SavedCredentials {
    /// Server URL.
    pub server: String,
    /// API token.
    pub token: String,
}

impl std::fmt::Debug for SavedCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedCredentials")
            .field("server", &self.server)
            .field("token", &Hidden)
            .finish()
    }
}

/// `$WARDN_CONFIG_DIR`, else `$XDG_CONFIG_HOME/wardn`, else `$HOME/.config/wardn`.
pub fn config_dir() -> Result<PathBuf, CliError> {
    if let Some(dir) = std::env::var_os("WARDN_CONFIG_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(dir).join("wardn"));
    }
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".config").join("wardn"))
        .ok_or_else(|| CliError::NotConfigured("HOME is not set: set WARDN_CONFIG_DIR".into()))
}

/// Path of the saved credentials file.
pub fn credentials_path() -> Result<PathBuf, CliError> {
    Ok(config_dir()?.join("credentials.json"))
}

/// Writes the credentials file, readable by the owner only.
pub fn save_credentials(credentials: &SavedCredentials) -> Result<PathBuf, CliError> {
    let path = credentials_path()?;
    let file_error = |source| CliError::File {
        path: path.clone(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(file_error)?;
    }
    let text = serde_json::to_string_pretty(credentials).map_err(|err| CliError::Decode {
        what: "credentials".into(),
        reason: err.to_string(),
    })?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path).map_err(file_error)?;
    std::io::Write::write_all(&mut file, text.as_bytes()).map_err(file_error)?;
    Ok(path)
}

fn load_credentials() -> Result<Option<SavedCredentials>, CliError> {
    let path = credentials_path()?;
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|err| CliError::Decode {
                what: path.display().to_string(),
                reason: err.to_string(),
            }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CliError::File { path, source }),
    }
}

/// An authenticated connection to a wardn server.
pub struct ApiClient {
    server: String,
    token: String,
    http: reqwest::Client,
}

impl ApiClient {
    /// Resolves server and token from the arguments, the environment or the saved credentials.
    pub fn from_args(args: &ConnectionArgs) -> Result<ApiClient, CliError> {
        let saved = match (&args.server, &args.token) {
            (Some(_), Some(_)) => None,
            _ => load_credentials()?,
        };
        let server = args
            .server
            .clone()
            .or_else(|| saved.as_ref().map(|s| s.server.clone()))
            .ok_or_else(|| {
                CliError::NotConfigured(
                    "no server: pass --server URL, set WARDN_SERVER, or run `wardn login`".into(),
                )
            })?;
        let token = args
            .token
            .clone()
            .or_else(|| saved.map(|s| s.token))
            .ok_or_else(|| {
                CliError::NotConfigured(
                    "no API token: pass --token, set WARDN_TOKEN, or run `wardn login`".into(),
                )
            })?;
        Ok(ApiClient::new(&server, &token))
    }

    /// A client for `server` with bearer `token`.
    pub fn new(server: &str, token: &str) -> ApiClient {
        ApiClient {
            server: server.trim_end_matches('/').to_string(),
            token: token.to_string(),
            http: reqwest::Client::new(),
        }
    }

    /// The server URL (no trailing `/`).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The API token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// This client, also trusting the CA certificates of the PEM bundle `pem` (a server whose
    /// certificate the system does not trust).
    pub fn trusting(self, pem: &[u8]) -> Result<ApiClient, CliError> {
        let decode = |reason: String| CliError::Decode {
            what: "CA file".into(),
            reason,
        };
        let certs =
            reqwest::Certificate::from_pem_bundle(pem).map_err(|e| decode(e.to_string()))?;
        if certs.is_empty() {
            return Err(decode("no PEM certificate in it".into()));
        }
        let http = reqwest::Client::builder()
            .tls_certs_merge(certs)
            .build()
            .map_err(|e| decode(e.to_string()))?;
        Ok(ApiClient { http, ..self })
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.server))
            .bearer_auth(&self.token)
            .timeout(REQUEST_TIMEOUT)
    }

    /// Sends a request with an optional JSON body and decodes the JSON answer (`null` for an
    /// empty body).
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<T, CliError> {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        send(request, &self.server).await
    }
}

/// Sends `request` and decodes its JSON answer, or returns the server's error message.
pub async fn send<T: DeserializeOwned>(
    request: RequestBuilder,
    server: &str,
) -> Result<T, CliError> {
    let response = request.send().await.map_err(|source| CliError::Http {
        server: server.to_string(),
        source,
    })?;
    let status = response.status();
    let text = response.text().await.map_err(|source| CliError::Http {
        server: server.to_string(),
        source,
    })?;
    if !status.is_success() {
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
            .unwrap_or(text);
        return Err(CliError::Api { status, message });
    }
    let text = if text.trim().is_empty() {
        "null"
    } else {
        &text
    };
    serde_json::from_str(text).map_err(|err| CliError::Decode {
        what: "server answer".into(),
        reason: err.to_string(),
    })
}
