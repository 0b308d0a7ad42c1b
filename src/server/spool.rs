//! A webhook body received as it streams in, so a delivery never holds its body in memory.
//!
//! [`receive`] reads the body chunk by chunk: each chunk feeds the HMAC under the server
//! secret (so the usual check needs no second pass) and is kept — in memory while the body
//! is at most [`SPOOL_MEMORY`] bytes, beyond that in an unnamed temporary file in the system
//! temporary directory (`TMPDIR`, `/tmp`), removed by the kernel when the [`Spool`] is dropped
//! whatever happens. A body over the limit is refused as soon as its bytes pass the limit.
//! The [`RawBody`] checks then read the spool back as a stream: the HMAC under another
//! (per-repository) secret, and the bounded URL reader.

use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use axum::body::Body;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use hmac::Mac;
use subtle::ConstantTimeEq;
use tokio::io::AsyncWriteExt;

use crate::sources::webhook::{BodyError, RawBody, new_mac, payload_urls_reader};

/// Bodies up to this many bytes stay in memory; longer ones go to a temporary file.
pub const SPOOL_MEMORY: usize = 256 << 10;

/// Read size when a spooled file is read back.
const READ_CHUNK: usize = 64 << 10;

/// Why a body was not received.
#[derive(Debug, thiserror::Error)]
pub enum ReceiveError {
    /// More than the limit arrived (the rest is not read).
    #[error("webhook body larger than {0} bytes")]
    TooLarge(usize),
    /// The connection failed while the body streamed.
    #[error("webhook body unreadable: {0}")]
    Read(axum::Error),
    /// The temporary file could not be created or written.
    #[error("cannot spool the webhook body to a temporary file: {0}")]
    Spool(io::Error),
}

/// Where the bytes are.
enum Content {
    Memory(Vec<u8>),
    File(Arc<std::fs::File>),
}

/// A received body: its bytes (in memory or in a temporary file) and its MAC under the
/// server secret, computed as it streamed.
pub struct Spool {
    content: Content,
    len: u64,
    server_mac: Option<(Vec<u8>, Vec<u8>)>,
}

/// Receives `body`, at most `limit` bytes, keeping it as described in the module
/// documentation and computing its HMAC under `server_secret` on the way.
pub async fn receive(
    body: Body,
    limit: usize,
    server_secret: Option<&[u8]>,
) -> Result<Spool, ReceiveError> {
    let mut mac = server_secret.and_then(new_mac);
    let mut memory = Vec::new();
    let mut file: Option<tokio::fs::File> = None;
    let mut len = 0usize;
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(ReceiveError::Read)?;
        len += chunk.len();
        if len > limit {
            return Err(ReceiveError::TooLarge(limit));
        }
        if let Some(mac) = &mut mac {
            mac.update(&chunk);
        }
        match &mut file {
            Some(file) => file.write_all(&chunk).await.map_err(ReceiveError::Spool)?,
            None if memory.len() + chunk.len() <= SPOOL_MEMORY => memory.extend_from_slice(&chunk),
            None => {
                let mut spilled =
                    tokio::fs::File::from_std(tempfile::tempfile().map_err(ReceiveError::Spool)?);
                spilled
                    .write_all(&memory)
                    .await
                    .map_err(ReceiveError::Spool)?;
                spilled
                    .write_all(&chunk)
                    .await
                    .map_err(ReceiveError::Spool)?;
                memory = Vec::new();
                file = Some(spilled);
            }
        }
    }
    let content = match file {
        None => Content::Memory(memory),
        Some(mut file) => {
            file.flush().await.map_err(ReceiveError::Spool)?;
            Content::File(Arc::new(file.into_std().await))
        }
    };
    let server_mac = server_secret
        .zip(mac)
        .map(|(secret, mac)| (secret.to_vec(), mac.finalize().into_bytes().to_vec()));
    Ok(Spool {
        content,
        len: len as u64,
        server_mac,
    })
}

impl Spool {
    /// The body's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the body is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the body went to a temporary file (it was longer than [`SPOOL_MEMORY`]).
    pub fn spilled(&self) -> bool {
        matches!(self.content, Content::File(_))
    }
}

/// Reads a spooled file from its start with positional reads (no shared cursor).
struct FileReader {
    file: Arc<std::fs::File>,
    offset: u64,
}

impl Read for FileReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.file.read_at(buf, self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

/// Runs `work` over a reader of the spooled `file` on the blocking pool.
async fn read_back<T: Send + 'static>(
    file: &Arc<std::fs::File>,
    work: impl FnOnce(io::BufReader<FileReader>) -> T + Send + 'static,
) -> Result<T, BodyError> {
    let reader = FileReader {
        file: Arc::clone(file),
        offset: 0,
    };
    tokio::task::spawn_blocking(move || work(io::BufReader::with_capacity(READ_CHUNK, reader)))
        .await
        .map_err(|err| BodyError(io::Error::other(err)))
}

impl RawBody for Spool {
    fn mac<'a>(&'a self, secret: &'a [u8]) -> BoxFuture<'a, Result<Vec<u8>, BodyError>> {
        Box::pin(async move {
            if let Some((server, mac)) = &self.server_mac
                && bool::from(server.as_slice().ct_eq(secret))
            {
                return Ok(mac.clone());
            }
            let file = match &self.content {
                Content::Memory(bytes) => return bytes.as_slice().mac(secret).await,
                Content::File(file) => file,
            };
            let secret = secret.to_vec();
            read_back(file, move |mut reader| {
                let Some(mut mac) = new_mac(&secret) else {
                    return Ok(Vec::new());
                };
                let mut buf = vec![0u8; READ_CHUNK];
                loop {
                    match reader.read(&mut buf)? {
                        0 => return Ok(mac.finalize().into_bytes().to_vec()),
                        read => mac.update(&buf[..read]),
                    }
                }
            })
            .await?
            .map_err(BodyError)
        })
    }

    fn urls(&self) -> BoxFuture<'_, Result<Result<Vec<String>, serde_json::Error>, BodyError>> {
        Box::pin(async move {
            match &self.content {
                Content::Memory(bytes) => bytes.as_slice().urls().await,
                Content::File(file) => read_back(file, payload_urls_reader).await,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::webhook::sign;

    fn chunked(bytes: &[u8], chunk: usize) -> Body {
        let chunks: Vec<Result<Vec<u8>, io::Error>> =
            bytes.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
        Body::from_stream(futures_util::stream::iter(chunks))
    }

    fn hex_mac(mac: &[u8]) -> String {
        format!("sha256={}", hex::encode(mac))
    }

    #[tokio::test]
    async fn small_bodies_stay_in_memory_large_ones_spill_and_read_back_the_same() {
        let payload = |filler: usize| {
            serde_json::json!({"pad": "x".repeat(filler), "repository": {"clone_url": "https://h/o/r.git"}})
                .to_string()
        };
        for (filler, spilled) in [(10, false), (SPOOL_MEMORY + 1, true), (3 << 20, true)] {
            let body = payload(filler);
            let spool = receive(
                chunked(body.as_bytes(), 16 << 10),
                25 << 20,
                Some(b"server"),
            )
            .await
            .unwrap();
            assert_eq!(spool.spilled(), spilled, "{filler}");
            assert_eq!(spool.len(), body.len() as u64);
            // The MAC streamed under the server secret, and one read back under another.
            for secret in [&b"server"[..], b"repository"] {
                let mac = spool.mac(secret).await.unwrap();
                assert_eq!(hex_mac(&mac), sign(secret, body.as_bytes()), "{filler}");
            }
            assert_eq!(spool.urls().await.unwrap().unwrap(), ["https://h/o/r.git"]);
        }
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_refused_once_past_it() {
        let body = vec![b'x'; 1 << 20];
        let err = receive(chunked(&body, 4096), 64 << 10, None).await.err();
        assert!(matches!(err, Some(ReceiveError::TooLarge(_))), "{err:?}");
    }

    #[tokio::test]
    async fn a_spilled_body_that_is_not_json_says_so() {
        let body = vec![b'x'; SPOOL_MEMORY * 2];
        let spool = receive(chunked(&body, 8192), 25 << 20, None).await.unwrap();
        assert!(spool.spilled());
        assert!(spool.urls().await.unwrap().is_err());
    }
}
