//! When a kubeconfig's credentials stop working: the `notAfter` of client certificates and the
//! `exp` claim of JWT bearer tokens, whichever comes first. Opaque tokens have no known expiry.
//! Certificates come from user-supplied kubeconfigs, so they are decoded by x509-parser, and
//! anything undecodable means "no known expiry", never a panic.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jiff::Timestamp;

use super::kubeconfig::Kubeconfig;

/// The earliest credential expiry found in a validated kubeconfig, if any is decodable.
pub fn credential_expiry(kubeconfig: &Kubeconfig) -> Option<Timestamp> {
    kubeconfig
        .users
        .iter()
        .flat_map(|named| {
            let user = &named.user;
            let cert = user
                .client_certificate_data
                .as_deref()
                .and_then(certificate_data_not_after);
            let token = user.token.as_deref().and_then(jwt_expiry);
            [cert, token]
        })
        .flatten()
        .min()
}

/// `notAfter` of the first certificate in base64-encoded PEM (a kubeconfig `*-data` field).
pub fn certificate_data_not_after(data: &str) -> Option<Timestamp> {
    let pem = STANDARD.decode(data.trim()).ok()?;
    let pem = std::str::from_utf8(&pem).ok()?;
    let body = pem.split("-----BEGIN CERTIFICATE-----").nth(1)?;
    let body = body.split("-----END CERTIFICATE-----").next()?;
    let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD.decode(compact).ok()?;
    der_not_after(&der)
}

/// The `exp` claim of a JWT, if the token is one and carries it.
pub fn jwt_expiry(token: &str) -> Option<Timestamp> {
    let mut parts = token.split('.');
    let (_header, payload, _signature) = (parts.next()?, parts.next()?, parts.next()?);
    let claims = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&claims).ok()?;
    Timestamp::from_second(claims.get("exp")?.as_i64()?).ok()
}

/// Reads `tbsCertificate.validity.notAfter` from an X.509 certificate in DER (x509-parser;
/// anything it cannot parse, or a time outside jiff's range, gives `None`).
fn der_not_after(der: &[u8]) -> Option<Timestamp> {
    let (_, certificate) = x509_parser::parse_x509_certificate(der).ok()?;
    Timestamp::from_second(certificate.validity().not_after.timestamp()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A self-signed certificate made by the real openssl CLI, valid for `days`.
    fn openssl_certificate(days: u32) -> (String, Timestamp) {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("c.pem");
        let status = Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args([
                "-nodes",
                "-days",
                &days.to_string(),
                "-subj",
                "/CN=wardn-test",
            ])
            .arg("-keyout")
            .arg(dir.path().join("k.pem"))
            .arg("-out")
            .arg(&cert)
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
        let end = Command::new("openssl")
            .args(["x509", "-noout", "-enddate", "-dateopt", "iso_8601", "-in"])
            .arg(&cert)
            .output()
            .unwrap();
        let end = String::from_utf8(end.stdout).unwrap();
        let end = end.trim().trim_start_matches("notAfter=").replace(' ', "T");
        let pem = std::fs::read_to_string(&cert).unwrap();
        (STANDARD.encode(pem), end.parse().unwrap())
    }

    #[test]
    fn reads_not_after_of_a_real_certificate() {
        let (data, expected) = openssl_certificate(3);
        assert_eq!(certificate_data_not_after(&data), Some(expected));
        assert_eq!(certificate_data_not_after("bm90IGEgY2VydA=="), None);
    }

    #[test]
    fn truncated_or_hostile_der_yields_none_without_panicking() {
        let (data, _) = openssl_certificate(1);
        let pem = String::from_utf8(STANDARD.decode(data).unwrap()).unwrap();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = STANDARD.decode(body).unwrap();
        for end in 0..der.len() {
            assert_eq!(der_not_after(&der[..end]), None, "prefix of {end} bytes");
        }
        // A 13-byte UTCTime whose second byte starts a two-byte character.
        let mut hostile = vec![
            0x30, 28, 0x30, 26, 0x02, 1, 1, 0x30, 0, 0x30, 0, 0x30, 17, 0x17, 0,
        ];
        hostile.extend([0x17, 13, b'a', 0xc3, 0xa9]);
        hostile.extend(b"0101000000");
        assert_eq!(der_not_after(&hostile), None);
        // Lengths far beyond the input, indefinite lengths, and deep nesting.
        let huge: [&[u8]; 6] = [
            &[0x30, 0x84, 0xff, 0xff, 0xff, 0xff, 0x30, 0x00],
            &[0x30, 0x88, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            &[0x30, 0x8f, 0x01],
            &[0x30, 0x80, 0x30, 0x80, 0x00, 0x00, 0x00, 0x00],
            &[0x30, 0xff],
            &[],
        ];
        for input in huge {
            assert_eq!(der_not_after(input), None, "{input:02x?}");
        }
        let nested: Vec<u8> = std::iter::repeat_n([0x30, 0x80], 100_000)
            .flatten()
            .collect();
        assert_eq!(der_not_after(&nested), None);
        // Every single-byte corruption of a real certificate: any answer, but no panic.
        for i in 0..der.len() {
            for value in [0x00, 0x80, 0xff] {
                let mut corrupt = der.clone();
                corrupt[i] = value;
                let _ = der_not_after(&corrupt);
            }
        }
        // Garbage inside PEM armour, and a large garbage body.
        let armoured = |body: &str| {
            STANDARD.encode(format!(
                "-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
            ))
        };
        assert_eq!(certificate_data_not_after(&armoured("!!!")), None);
        assert_eq!(
            certificate_data_not_after(&armoured(&STANDARD.encode(vec![0x30; 1 << 20]))),
            None
        );
        assert_eq!(
            certificate_data_not_after(&STANDARD.encode("-----BEGIN CERTIFICATE-----")),
            None
        );
    }

    #[test]
    fn reads_generalized_time_past_2049() {
        // notAfter from 2050 on is a GeneralizedTime rather than a UTCTime (RFC 5280).
        let (data, expected) = openssl_certificate(40 * 366);
        assert!(expected > "2050-01-01T00:00:00Z".parse::<Timestamp>().unwrap());
        assert_eq!(certificate_data_not_after(&data), Some(expected));
    }

    #[test]
    fn reads_jwt_exp_and_ignores_opaque_tokens() {
        let payload =
            URL_SAFE_NO_PAD.encode(br#"{"sub":"system:serviceaccount:a:b","exp":1900000000}"#);
        let token = format!("eyJhbGciOiJSUzI1NiJ9.{payload}.c2ln");
        assert_eq!(
            jwt_expiry(&token),
            Some(Timestamp::from_second(1_900_000_000).unwrap())
        );
        assert_eq!(jwt_expiry("opaque-token"), None);
        assert_eq!(jwt_expiry("a.b.c"), None);
    }

    #[test]
    fn the_earliest_credential_wins() {
        let (data, cert_expiry) = openssl_certificate(2);
        let payload = URL_SAFE_NO_PAD.encode(br#"{"exp":4102444800}"#);
        let yaml = format!(
            "clusters: []\nusers:\n- name: a\n  user:\n    client-certificate-data: {data}\n\
             - name: b\n  user:\n    token: h.{payload}.s\n"
        );
        let parsed: Kubeconfig = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(credential_expiry(&parsed), Some(cert_expiry));
    }
}
