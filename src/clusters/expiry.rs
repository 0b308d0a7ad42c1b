//! When a kubeconfig's credentials stop working: the `notAfter` of client certificates and the
//! `exp` claim of JWT bearer tokens, whichever comes first. Opaque tokens have no known expiry.

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

/// Splits one DER TLV off `input`: (tag, contents, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, input) = input.split_first()?;
    let (&first, mut input) = input.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || input.len() < count {
            return None;
        }
        let (bytes, rest) = input.split_at(count);
        input = rest;
        bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b))
    };
    if input.len() < len {
        return None;
    }
    let (contents, rest) = input.split_at(len);
    Some((tag, contents, rest))
}

/// Reads `tbsCertificate.validity.notAfter` from an X.509 certificate in DER.
fn der_not_after(der: &[u8]) -> Option<Timestamp> {
    const SEQUENCE: u8 = 0x30;
    let (SEQUENCE, certificate, _) = tlv(der)? else {
        return None;
    };
    let (SEQUENCE, mut tbs, _) = tlv(certificate)? else {
        return None;
    };
    if tbs.first() == Some(&0xa0) {
        tbs = tlv(tbs)?.2; // explicit [0] version
    }
    let after_serial = tlv(tbs)?.2;
    let after_signature = tlv(after_serial)?.2;
    let after_issuer = tlv(after_signature)?.2;
    let (SEQUENCE, validity, _) = tlv(after_issuer)? else {
        return None;
    };
    let after_not_before = tlv(validity)?.2;
    let (tag, time, _) = tlv(after_not_before)?;
    let time = std::str::from_utf8(time).ok()?;
    let full = match tag {
        // UTCTime YYMMDDHHMMSSZ: years 50-99 are 19xx (RFC 5280).
        0x17 if time.len() == 13 => {
            let century = if time.get(..2)?.parse::<u32>().ok()? >= 50 {
                "19"
            } else {
                "20"
            };
            format!("{century}{time}")
        }
        0x18 if time.len() == 15 => time.to_string(), // GeneralizedTime YYYYMMDDHHMMSSZ
        _ => return None,
    };
    let rfc3339 = format!(
        "{}-{}-{}T{}:{}:{}Z",
        full.get(0..4)?,
        full.get(4..6)?,
        full.get(6..8)?,
        full.get(8..10)?,
        full.get(10..12)?,
        full.get(12..14)?
    );
    rfc3339.parse().ok()
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
