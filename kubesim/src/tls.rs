//! TLS material: a per-cluster CA and a serving certificate for 127.0.0.1 and localhost.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::Error;

/// The generated CA and serving certificate of one cluster, kept across restarts so that
/// clients holding the kubeconfig keep trusting the server.
pub struct TlsMaterial {
    /// PEM of the CA certificate (what kubeconfigs carry as `certificate-authority-data`).
    pub ca_pem: String,
    /// rustls configuration serving the leaf certificate (HTTP/2 and HTTP/1.1 via ALPN).
    pub server_config: Arc<rustls::ServerConfig>,
}

/// Installs the ring crypto provider as the process default (idempotent). kube's client and
/// the server both need one; without it rustls panics when two providers are compiled in.
pub fn install_crypto_provider() {
    // An Err means a provider is already installed, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Generates a fresh CA and a serving certificate with SANs 127.0.0.1 and localhost; TLS offers
/// HTTP/2 (ALPN `h2`) before HTTP/1.1 unless `http2` is false.
pub fn generate(cluster: &str, http2: bool) -> Result<TlsMaterial, Error> {
    install_crypto_provider();
    let tls = |e: rcgen::Error| Error::Tls(e.to_string());
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(tls)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("kubesim-ca-{cluster}"));
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(tls)?;
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).map_err(tls)?;

    let mut leaf_params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .map_err(tls)?;
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, format!("kubesim-{cluster}"));
    leaf_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate().map_err(tls)?;
    let leaf = leaf_params.signed_by(&leaf_key, &ca).map_err(tls)?;

    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let chain = vec![leaf.der().clone(), ca.der().clone()];
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| Error::Tls(e.to_string()))?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(|e| Error::Tls(e.to_string()))?;
    config.alpn_protocols = match http2 {
        true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        false => vec![b"http/1.1".to_vec()],
    };
    Ok(TlsMaterial {
        ca_pem: ca.pem(),
        server_config: Arc::new(config),
    })
}
