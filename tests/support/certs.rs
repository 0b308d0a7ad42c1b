//! Test certificates: a CA and a server certificate it signs (rcgen).

use std::path::Path;

/// A CA and a certificate it signs for 127.0.0.1, written to `dir` as `ca.pem`,
/// `cert.pem` and `key.pem` (the pair replaced atomically, as a renewal would be).
pub fn issue(dir: &Path, ca_name: &str) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, ca_name);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join(format!("{ca_name}.pem")), ca_cert.pem()).unwrap();
    std::fs::write(dir.join("cert.pem.new"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem.new"), key.serialize_pem()).unwrap();
    std::fs::rename(dir.join("key.pem.new"), dir.join("key.pem")).unwrap();
    std::fs::rename(dir.join("cert.pem.new"), dir.join("cert.pem")).unwrap();
}
