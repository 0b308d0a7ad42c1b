//! Sealing of kubeconfigs at rest: AES-256-GCM under `WARDN_CREDENTIALS_KEY`, blobs written as
//! `enc:v1:` + base64(nonce ‖ ciphertext ‖ tag) with a fresh random nonce per blob. During a key
//! rotation `WARDN_CREDENTIALS_KEY_PREVIOUS` still opens old blobs until `reseal` rewrites them.
//!
//! The same keys also key the audit chain, through a separate derived key (HKDF-SHA256 with
//! the info string [`AUDIT_KEY_INFO`]), so a MAC never reuses the sealing key itself.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

/// Prefix of every sealed blob; the version names the format above.
pub const PREFIX: &str = "enc:v1:";
/// Environment variable holding the current key.
pub const KEY_ENV: &str = "WARDN_CREDENTIALS_KEY";
/// Environment variable holding the previous key during a rotation.
pub const PREVIOUS_KEY_ENV: &str = "WARDN_CREDENTIALS_KEY_PREVIOUS";

/// HKDF info string of the audit chain key derived from a credentials key.
pub const AUDIT_KEY_INFO: &[u8] = b"wardn audit chain v1";

const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// Errors from key loading, sealing and opening. Messages never contain key or plain text.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The key variable is not set.
    #[error(
        "{var} is not set: wardn needs a 32-byte key (base64 or hex) to seal kubeconfigs; \
         generate one with `head -c 32 /dev/urandom | base64`"
    )]
    MissingKey {
        /// The variable name.
        var: &'static str,
    },
    /// The key variable does not decode to 32 bytes.
    #[error("{var}: expected 32 bytes encoded as base64 or as 64 hex characters ({reason})")]
    BadKey {
        /// The variable name.
        var: &'static str,
        /// What was wrong (never the key itself).
        reason: String,
    },
    /// The blob does not start with `enc:v1:` or is not valid base64 of a long enough payload.
    #[error("sealed value is malformed: {0}")]
    Malformed(&'static str),
    /// Neither the current nor the previous key opens the blob (wrong key or tampered data).
    #[error("sealed value cannot be opened with the configured keys (wrong key or tampered data)")]
    Undecryptable,
    /// The random number generator failed.
    #[error("cannot draw a random nonce: {0}")]
    Random(String),
}

/// The keys wardn seals with: the current one, and optionally the previous one for reading.
#[derive(Clone)]
pub struct Sealer {
    current: Aes256Gcm,
    previous: Option<Aes256Gcm>,
    audit_current: [u8; 32],
    audit_previous: Option<[u8; 32]>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer")
            .field("previous", &self.previous.is_some())
            .finish_non_exhaustive()
    }
}

/// HKDF-SHA256 (RFC 5869) of `ikm` with `salt` and `info`, 32 bytes of output (one block:
/// `T(1)`). An empty salt stands for the hash length of zeros, as the RFC says.
pub fn hkdf_sha256(salt: &[u8], ikm: &[u8], info: &[u8]) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    let hmac = |key: &[u8], parts: &[&[u8]]| -> [u8; 32] {
        let zeros = [0u8; 32];
        let key = if key.is_empty() { &zeros[..] } else { key };
        // HMAC accepts keys of any length.
        let Ok(mut mac) = <Hmac<sha2::Sha256> as Mac>::new_from_slice(key) else {
            unreachable!("HMAC-SHA256 takes any key length")
        };
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    };
    let prk = hmac(salt, &[ikm]);
    hmac(&prk, &[info, &[1u8]])
}

/// The audit chain key derived from a credentials key (see [`AUDIT_KEY_INFO`]).
pub fn audit_key(credentials_key: &[u8; 32]) -> [u8; 32] {
    hkdf_sha256(&[], credentials_key, AUDIT_KEY_INFO)
}

/// Decodes a key given as 64 hex characters or as base64 (standard or URL-safe) of 32 bytes.
pub fn parse_key(var: &'static str, text: &str) -> Result<[u8; 32], SealError> {
    let text = text.trim();
    let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(text).map_err(|err| SealError::BadKey {
            var,
            reason: err.to_string(),
        })?
    } else {
        STANDARD
            .decode(text)
            .or_else(|_| URL_SAFE.decode(text))
            .map_err(|_| SealError::BadKey {
                var,
                reason: "neither 64 hex characters nor valid base64".to_string(),
            })?
    };
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| SealError::BadKey {
        var,
        reason: format!("decodes to {} bytes", bytes.len()),
    })
}

impl Sealer {
    /// A sealer from raw keys.
    pub fn new(current: &[u8; 32], previous: Option<&[u8; 32]>) -> Sealer {
        Sealer {
            current: Aes256Gcm::new(current.into()),
            previous: previous.map(|key| Aes256Gcm::new(key.into())),
            audit_current: audit_key(current),
            audit_previous: previous.map(audit_key),
        }
    }

    /// The audit chain keys derived from the current and the previous credentials key.
    pub fn audit_keys(&self) -> ([u8; 32], Option<[u8; 32]>) {
        (self.audit_current, self.audit_previous)
    }

    /// Reads `WARDN_CREDENTIALS_KEY` (required) and `WARDN_CREDENTIALS_KEY_PREVIOUS` (optional).
    pub fn from_env() -> Result<Sealer, SealError> {
        let current = std::env::var(KEY_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .ok_or(SealError::MissingKey { var: KEY_ENV })?;
        let current = parse_key(KEY_ENV, &current)?;
        let previous = match std::env::var(PREVIOUS_KEY_ENV) {
            Ok(text) if !text.trim().is_empty() => Some(parse_key(PREVIOUS_KEY_ENV, &text)?),
            _ => None,
        };
        Ok(Sealer::new(&current, previous.as_ref()))
    }

    /// Seals `plain` under the current key with a fresh random nonce.
    pub fn seal(&self, plain: &str) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|err| SealError::Random(err.to_string()))?;
        let ciphertext = self
            .current
            .encrypt(Nonce::from_slice(&nonce), plain.as_bytes())
            .map_err(|_| SealError::Undecryptable)?;
        let mut payload = Vec::with_capacity(NONCE_LEN + ciphertext.len());
        payload.extend_from_slice(&nonce);
        payload.extend_from_slice(&ciphertext);
        Ok(format!("{PREFIX}{}", STANDARD.encode(payload)))
    }

    /// Opens a blob sealed under the current or the previous key.
    pub fn open(&self, blob: &str) -> Result<String, SealError> {
        let encoded = blob
            .strip_prefix(PREFIX)
            .ok_or(SealError::Malformed("missing enc:v1: prefix"))?;
        let payload = STANDARD
            .decode(encoded)
            .map_err(|_| SealError::Malformed("invalid base64"))?;
        if payload.len() < NONCE_LEN + TAG_LEN {
            return Err(SealError::Malformed("too short"));
        }
        let (nonce, ciphertext) = payload.split_at(NONCE_LEN);
        let nonce = Nonce::from_slice(nonce);
        let plain = self
            .current
            .decrypt(nonce, ciphertext)
            .or_else(|err| match &self.previous {
                Some(previous) => previous.decrypt(nonce, ciphertext),
                None => Err(err),
            })
            .map_err(|_| SealError::Undecryptable)?;
        String::from_utf8(plain).map_err(|_| SealError::Malformed("plain text is not UTF-8"))
    }

    /// Opens a blob with either key and seals it again under the current key.
    pub fn reseal(&self, blob: &str) -> Result<String, SealError> {
        self.seal(&self.open(blob)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_A: [u8; 32] = [7u8; 32];
    const KEY_B: [u8; 32] = [9u8; 32];

    #[test]
    fn seal_and_open_round_trip_with_fresh_nonces() {
        let sealer = Sealer::new(&KEY_A, None);
        let a = sealer.seal("apiVersion: v1").unwrap();
        let b = sealer.seal("apiVersion: v1").unwrap();
        assert!(a.starts_with("enc:v1:"));
        assert_ne!(a, b, "each blob has its own nonce");
        let payload = STANDARD.decode(&a[PREFIX.len()..]).unwrap();
        assert_eq!(payload.len(), NONCE_LEN + "apiVersion: v1".len() + TAG_LEN);
        assert_eq!(sealer.open(&a).unwrap(), "apiVersion: v1");
        assert_eq!(sealer.open(&b).unwrap(), "apiVersion: v1");
    }

    #[test]
    fn wrong_key_and_tampering_are_rejected() {
        let blob = Sealer::new(&KEY_A, None).seal("secret").unwrap();
        assert!(matches!(
            Sealer::new(&KEY_B, None).open(&blob),
            Err(SealError::Undecryptable)
        ));
        let mut payload = STANDARD.decode(&blob[PREFIX.len()..]).unwrap();
        let last = payload.len() - 1;
        payload[last] ^= 1;
        let tampered = format!("{PREFIX}{}", STANDARD.encode(payload));
        assert!(matches!(
            Sealer::new(&KEY_A, None).open(&tampered),
            Err(SealError::Undecryptable)
        ));
        assert!(matches!(
            Sealer::new(&KEY_A, None).open("plain"),
            Err(SealError::Malformed(_))
        ));
    }

    #[test]
    fn previous_key_opens_and_reseal_moves_to_current() {
        let old = Sealer::new(&KEY_A, None).seal("kubeconfig").unwrap();
        let rotating = Sealer::new(&KEY_B, Some(&KEY_A));
        assert_eq!(rotating.open(&old).unwrap(), "kubeconfig");
        let new = rotating.reseal(&old).unwrap();
        assert_eq!(Sealer::new(&KEY_B, None).open(&new).unwrap(), "kubeconfig");
        assert!(Sealer::new(&KEY_A, None).open(&new).is_err());
    }

    #[test]
    fn hkdf_matches_rfc_5869_and_audit_keys_are_distinct() {
        // RFC 5869, test case 1 (the first 32 bytes of its 42-byte OKM).
        let salt: Vec<u8> = (0u8..=0x0c).collect();
        let info: Vec<u8> = (0xf0u8..=0xf9).collect();
        let okm = hkdf_sha256(&salt, &[0x0b; 22], &info);
        assert_eq!(
            hex::encode(okm),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
        );
        let sealer = Sealer::new(&KEY_B, Some(&KEY_A));
        let (current, previous) = sealer.audit_keys();
        assert_eq!(current, audit_key(&KEY_B));
        assert_eq!(previous, Some(audit_key(&KEY_A)));
        assert_ne!(
            current, KEY_B,
            "the audit key is derived, not the sealing key"
        );
        assert_ne!(Some(current), previous);
    }

    #[test]
    fn keys_parse_from_hex_and_base64_only_at_32_bytes() {
        assert_eq!(parse_key(KEY_ENV, &hex::encode(KEY_A)).unwrap(), KEY_A);
        assert_eq!(parse_key(KEY_ENV, &STANDARD.encode(KEY_B)).unwrap(), KEY_B);
        assert_eq!(
            parse_key(KEY_ENV, &URL_SAFE.encode([0xffu8; 32])).unwrap(),
            [0xff; 32]
        );
        let short = parse_key(KEY_ENV, &STANDARD.encode([1u8; 16])).unwrap_err();
        assert!(short.to_string().contains("WARDN_CREDENTIALS_KEY"));
        assert!(short.to_string().contains("16 bytes"));
        assert!(parse_key(KEY_ENV, "not a key!").is_err());
    }
}
