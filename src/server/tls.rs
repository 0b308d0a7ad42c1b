//! HTTPS for the API (`wardn serve --tls-cert FILE --tls-key FILE`): rustls with the
//! certificate and key read from PEM files, and read again when either file changes (checked
//! at most once a second, on new connections), so a renewed certificate (cert-manager, a
//! mounted Secret) is served without a restart. A renewal that cannot be read or does not
//! match its key keeps the previous certificate and logs why.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How often the files are checked for a renewal.
const RECHECK: Duration = Duration::from_secs(1);

/// Why the certificate or key cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("--tls-cert {cert} / --tls-key {key}: {reason}")]
pub struct TlsError {
    /// The certificate file.
    pub cert: PathBuf,
    /// The key file.
    pub key: PathBuf,
    /// What is wrong.
    pub reason: String,
}

/// The certificate chain and key files of the API listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM certificate chain (leaf first).
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

impl TlsFiles {
    /// A rustls server configuration serving these files, reloaded when they change. Fails
    /// when they cannot be read now.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        let resolver = Reloading::new(self.clone())?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| self.error(e))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(resolver));
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    fn error(&self, reason: impl fmt::Display) -> TlsError {
        TlsError {
            cert: self.cert.clone(),
            key: self.key.clone(),
            reason: reason.to_string(),
        }
    }

    /// Reads and checks the pair.
    fn load(&self) -> Result<Arc<CertifiedKey>, TlsError> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&self.cert)
            .map_err(|e| self.error(format!("certificate: {e}")))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.error(format!("certificate: {e}")))?;
        if chain.is_empty() {
            return Err(self.error("the certificate file holds no CERTIFICATE block"));
        }
        let key =
            PrivateKeyDer::from_pem_file(&self.key).map_err(|e| self.error(format!("key: {e}")))?;
        let provider = rustls::crypto::ring::default_provider();
        let certified = CertifiedKey::from_der(chain, key, &provider)
            .map_err(|e| self.error(format!("the key does not fit the certificate: {e}")))?;
        Ok(Arc::new(certified))
    }

    /// The files' modification times (a change of either means a renewal).
    fn stamps(&self) -> (Option<SystemTime>, Option<SystemTime>) {
        let stamp = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        (stamp(&self.cert), stamp(&self.key))
    }
}

/// The current certificate, and when the files were last looked at.
struct Current {
    key: Arc<CertifiedKey>,
    stamps: (Option<SystemTime>, Option<SystemTime>),
    checked: Instant,
}

/// A certificate resolver that reloads the files when they change.
struct Reloading {
    files: TlsFiles,
    current: Mutex<Current>,
}

impl fmt::Debug for Reloading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reloading")
            .field("files", &self.files)
            .finish()
    }
}

impl Reloading {
    fn new(files: TlsFiles) -> Result<Reloading, TlsError> {
        let stamps = files.stamps();
        let key = files.load()?;
        Ok(Reloading {
            files,
            current: Mutex::new(Current {
                key,
                stamps,
                checked: Instant::now(),
            }),
        })
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut current = self.current.lock();
        if current.checked.elapsed() >= RECHECK {
            current.checked = Instant::now();
            let stamps = self.files.stamps();
            if stamps != current.stamps {
                match self.files.load() {
                    Ok(key) => {
                        tracing::info!(cert = %self.files.cert.display(), "TLS certificate reloaded");
                        current.key = key;
                        current.stamps = stamps;
                    }
                    // A half-written renewal: keep serving the previous pair, try again later.
                    Err(err) => tracing::warn!(%err, "TLS certificate not reloaded"),
                }
            }
        }
        Some(Arc::clone(&current.key))
    }
}
