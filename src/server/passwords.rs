//! Argon2 password hashing and checking on a small fixed pool of dedicated threads, each
//! reusing one block buffer.
//!
//! An argon2id hash with the default parameters (m = 19,456 KiB, t = 2, p = 1) fills 19 MiB of
//! memory blocks. Allocated per check, that is a fresh 19 MiB allocation for every login
//! (and, on a blocking-task pool, on whichever of its many threads runs it). Here each of
//! [`WORKERS`] threads owns one block buffer, allocated at its first hash and reused by every
//! later one: the memory password hashing can ever use is [`WORKERS`] ×
//! [`BLOCK_BUFFER_BYTES`] whatever the number of logins, and the allocator never sees a
//! per-check allocation. A worker that has had no job for [`IDLE_RELEASE`] frees its buffer:
//! a burst of logins reuses it, and a replica that saw one login an hour ago does not hold
//! 19 MiB for it. Stored hashes are checked with the parameters they were stored with
//! (a hash stored with a larger `m` grows that worker's buffer to it: such hashes come only
//! from the store, never from a request).
//!
//! Who may start a check, and how many wait, is decided before a job gets here (the login's
//! [`super::login_limit::PasswordChecks`] slots); a job whose caller has gone away by the time
//! a worker takes it is skipped.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use argon2::password_hash::{Output, PasswordHash, Salt, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use parking_lot::{Mutex, MutexGuard};

use super::login_limit::MAX_CONCURRENT_CHECKS;

/// Why a password could not be hashed or checked.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    /// argon2 refused the input or its parameters.
    #[error("password hashing failed: {0}")]
    Hash(String),
    /// The random generator failed (a salt for a new hash).
    #[error("random generator failed: {0}")]
    Random(String),
    /// The worker threads could not run the hash or check.
    #[error("password workers: {0}")]
    Workers(&'static str),
}

/// Threads that hash and check passwords: as many as logins may check at once, so a login
/// holding a check slot finds a worker free.
pub const WORKERS: usize = MAX_CONCURRENT_CHECKS;

/// Bytes of one worker's block buffer with the default parameters (19 MiB): the memory one
/// password check costs, held by its worker from its first check on.
pub const BLOCK_BUFFER_BYTES: usize = Params::DEFAULT_M_COST as usize * Block::SIZE;

/// How long a worker keeps its block buffer without a job.
pub const IDLE_RELEASE: Duration = Duration::from_secs(60);

/// A unit of work for a worker, given the worker's block buffer.
type Job = Box<dyn FnOnce(&mut Vec<Block>) + Send>;

/// The password workers: [`WORKERS`] threads taking jobs from one queue. The threads end when
/// the last handle to the pool is dropped.
pub struct PasswordWorkers {
    jobs: mpsc::Sender<Job>,
    /// Bytes of block buffers the workers hold now.
    held: Arc<AtomicUsize>,
}

impl Default for PasswordWorkers {
    fn default() -> Self {
        PasswordWorkers::start(WORKERS, IDLE_RELEASE)
    }
}

impl PasswordWorkers {
    /// Starts `count` worker threads (`wardn-argon2-N`) that free their block buffer after
    /// `idle` without a job. A thread the system refuses is logged; with none at all, every
    /// hash or check fails with [`PasswordError::Workers`].
    pub fn start(count: usize, idle: Duration) -> PasswordWorkers {
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let held = Arc::new(AtomicUsize::new(0));
        for index in 0..count {
            let queue = Arc::clone(&queue);
            let held = Arc::clone(&held);
            let spawned = std::thread::Builder::new()
                .name(format!("wardn-argon2-{index}"))
                .spawn(move || worker_loop(&queue, idle, &held));
            if let Err(err) = spawned {
                tracing::error!(%err, index, "cannot start a password worker thread");
            }
        }
        PasswordWorkers { jobs, held }
    }

    /// Bytes of block buffers the workers hold now (zero once all have been idle).
    pub fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Runs `work` on a worker with its block buffer and returns its result.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Vec<Block>) -> T + Send + 'static,
    ) -> Result<T, PasswordError> {
        let (done, result) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |blocks: &mut Vec<Block>| {
            // The caller (a login whose client went away) no longer waits: skip the work.
            if !done.is_closed() {
                let _ = done.send(work(blocks));
            }
        });
        self.jobs
            .send(job)
            .map_err(|_| PasswordError::Workers("no password worker thread is running"))?;
        result
            .await
            .map_err(|_| PasswordError::Workers("a password worker thread failed"))
    }

    /// Whether `password` matches the stored PHC string (see [`verify_with`]).
    pub async fn verify(&self, password: String, stored: String) -> Result<bool, PasswordError> {
        self.run(move |blocks| verify_with(password.as_bytes(), &stored, blocks))
            .await
    }

    /// An argon2id PHC string for `password` with the default parameters (see [`hash_with`]).
    pub async fn hash(&self, password: String) -> Result<String, PasswordError> {
        self.run(move |blocks| hash_with(password.as_bytes(), blocks))
            .await?
    }
}

/// A worker's loop: takes jobs until the queue's sender is gone. A job that panics loses its
/// answer (its caller gets [`PasswordError::Workers`]), not the worker.
fn worker_loop(queue: &Mutex<mpsc::Receiver<Job>>, idle: Duration, held: &AtomicUsize) {
    let mut blocks = Vec::new();
    loop {
        let received = {
            let queue = queue.lock();
            let received = queue.recv_timeout(idle);
            // Handed to a waiting worker, so each in turn times out and frees its buffer.
            MutexGuard::unlock_fair(queue);
            received
        };
        let before = blocks.capacity() * Block::SIZE;
        match received {
            Ok(job) => {
                if std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut blocks))).is_err() {
                    tracing::error!("a password check panicked");
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => blocks = Vec::new(),
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        let after = blocks.capacity() * Block::SIZE;
        held.fetch_add(after, Ordering::Relaxed);
        held.fetch_sub(before, Ordering::Relaxed);
    }
}

/// The first `count` blocks of `blocks`, growing it (once per size) when it is shorter.
fn blocks_for(blocks: &mut Vec<Block>, count: usize) -> &mut [Block] {
    if blocks.len() < count {
        blocks.resize(count, Block::default());
    }
    &mut blocks[..count]
}

/// Whether `password` matches `stored`, a PHC string of any argon2 variant, version and
/// parameters, computed in `blocks` (grown if it is shorter than the parameters need). A
/// stored string that cannot be parsed matches nothing. The digests are compared in
/// constant time.
pub fn verify_with(password: &[u8], stored: &str, blocks: &mut Vec<Block>) -> bool {
    let Ok(parsed) = PasswordHash::new(stored) else {
        return false;
    };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return false;
    };
    let Ok(algorithm) = Algorithm::try_from(parsed.algorithm) else {
        return false;
    };
    let version = match parsed.version.map(Version::try_from).transpose() {
        Ok(version) => version.unwrap_or_default(),
        Err(_) => return false,
    };
    let Ok(params) = Params::try_from(&parsed) else {
        return false;
    };
    let mut salt_bytes = [0u8; Salt::MAX_LENGTH];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let mut digest = [0u8; Output::MAX_LENGTH];
    let digest = &mut digest[..expected.len()];
    let count = params.block_count();
    Argon2::new(algorithm, version, params)
        .hash_password_into_with_memory(password, salt, digest, blocks_for(blocks, count))
        .is_ok()
        // `Output` compares in constant time.
        && Output::new(digest).is_ok_and(|digest| digest == expected)
}

/// An argon2id (version 0x13) PHC string for `password` with the default parameters and a
/// fresh random salt, computed in `blocks` (grown if it is shorter than the parameters need).
pub fn hash_with(password: &[u8], blocks: &mut Vec<Block>) -> Result<String, PasswordError> {
    let hash_error = |err: &dyn std::fmt::Display| PasswordError::Hash(err.to_string());
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|err| PasswordError::Random(err.to_string()))?;
    let params = Params::default();
    let count = params.block_count();
    let mut digest = [0u8; Params::DEFAULT_OUTPUT_LEN];
    let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone());
    argon2
        .hash_password_into_with_memory(password, &salt, &mut digest, blocks_for(blocks, count))
        .map_err(|err| hash_error(&err))?;
    let salt = SaltString::encode_b64(&salt).map_err(|err| hash_error(&err))?;
    let hash = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: (&params).try_into().map_err(|err| hash_error(&err))?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&digest).map_err(|err| hash_error(&err))?),
    };
    Ok(hash.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHasher, PasswordVerifier};

    /// PHC strings made by the argon2 crate itself, with other variants, versions and
    /// parameters than ours (small `m`, so the test is quick).
    fn reference_hashes(password: &str) -> Vec<String> {
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        [
            (Algorithm::Argon2id, Version::V0x13, 64, 1, 1),
            (Algorithm::Argon2id, Version::V0x13, 256, 3, 2),
            (Algorithm::Argon2i, Version::V0x13, 128, 2, 1),
            (Algorithm::Argon2d, Version::V0x10, 64, 1, 4),
        ]
        .into_iter()
        .map(|(algorithm, version, m, t, p)| {
            let params = Params::new(m, t, p, None).unwrap();
            Argon2::new(algorithm, version, params)
                .hash_password(password.as_bytes(), &salt)
                .unwrap()
                .to_string()
        })
        .collect()
    }

    #[test]
    fn checks_agree_with_the_argon2_crate_for_every_variant_and_parameter() {
        let mut blocks = Vec::new();
        for stored in reference_hashes("correct horse") {
            let parsed = PasswordHash::new(&stored).unwrap();
            for guess in ["correct horse", "correct hors", "", "correct horse "] {
                let reference = Argon2::default()
                    .verify_password(guess.as_bytes(), &parsed)
                    .is_ok();
                assert_eq!(
                    verify_with(guess.as_bytes(), &stored, &mut blocks),
                    reference,
                    "{guess:?} against {stored}"
                );
            }
        }
    }

    #[test]
    fn hashes_are_default_argon2id_that_the_argon2_crate_verifies() {
        let mut blocks = Vec::new();
        let stored = hash_with(b"s3cret", &mut blocks).unwrap();
        let parsed = PasswordHash::new(&stored).unwrap();
        // The same PHC string as the crate's own hasher, up to the salt and digest.
        let salt = SaltString::encode_b64(b"0123456789abcdef").unwrap();
        let reference = Argon2::default().hash_password(b"s3cret", &salt).unwrap();
        let head = |phc: &str| phc.rsplitn(3, '$').nth(2).unwrap().to_string();
        assert_eq!(head(&stored), head(&reference.to_string()));
        assert_eq!(head(&stored), "$argon2id$v=19$m=19456,t=2,p=1");
        assert!(
            Argon2::default()
                .verify_password(b"s3cret", &parsed)
                .is_ok()
        );
        assert!(
            Argon2::default()
                .verify_password(b"s3cre", &parsed)
                .is_err()
        );
        // Fresh salt each time.
        assert_ne!(stored, hash_with(b"s3cret", &mut blocks).unwrap());
    }

    #[test]
    fn malformed_stored_hashes_match_nothing() {
        let mut blocks = Vec::new();
        let good = hash_with(b"pw", &mut blocks).unwrap();
        let no_hash = good.rsplit_once('$').unwrap().0.to_string();
        for stored in [
            "",
            "pw",
            "$argon2id$",
            "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHQ$aGFzaA",
            &no_hash,
            &good.replace("m=19456", "m=1"),
            &good.replace("argon2id", "argon3"),
        ] {
            assert!(!verify_with(b"pw", stored, &mut blocks), "{stored:?}");
        }
    }

    #[test]
    fn the_block_buffer_is_allocated_once_and_reused() {
        let mut blocks = Vec::new();
        let stored = hash_with(b"pw", &mut blocks).unwrap();
        let (address, length) = (blocks.as_ptr(), blocks.len());
        assert_eq!(length * Block::SIZE, BLOCK_BUFFER_BYTES);
        for guess in ["pw", "wrong", "also wrong"] {
            verify_with(guess.as_bytes(), &stored, &mut blocks);
            assert_eq!((blocks.as_ptr(), blocks.len()), (address, length));
        }
        // Smaller parameters use the front of the same buffer.
        for stored in reference_hashes("pw") {
            assert!(verify_with(b"pw", &stored, &mut blocks));
            assert_eq!((blocks.as_ptr(), blocks.len()), (address, length));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_checks_share_the_pool_and_each_gets_its_own_answer() {
        let workers = Arc::new(PasswordWorkers::start(2, IDLE_RELEASE));
        let stored = reference_hashes("right").remove(0);
        let checks = (0..40).map(|i| {
            let (workers, stored) = (Arc::clone(&workers), stored.clone());
            async move {
                let guess = if i % 3 == 0 { "right" } else { "wrong" };
                (i, workers.verify(guess.into(), stored).await.unwrap())
            }
        });
        for (i, valid) in futures_util::future::join_all(checks).await {
            assert_eq!(valid, i % 3 == 0, "check {i}");
        }
        let hashed = workers.hash("new".into()).await.unwrap();
        assert!(workers.verify("new".into(), hashed).await.unwrap());
    }

    #[tokio::test]
    async fn a_pool_without_threads_fails_with_an_error() {
        let workers = PasswordWorkers::start(0, IDLE_RELEASE);
        let err = workers.verify("a".into(), "b".into()).await.unwrap_err();
        assert!(err.to_string().contains("no password worker"), "{err}");
    }

    /// Both workers free their buffers once idle (each in turn takes the queue and times out),
    /// and a check after that allocates one again and still answers. (The idle period is long
    /// enough that a loaded machine does not free the buffers between a check and the look.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_workers_free_their_buffers_and_allocate_again_when_needed() {
        let workers = Arc::new(PasswordWorkers::start(2, Duration::from_secs(3)));
        let stored = workers.hash("pw".into()).await.unwrap();
        let both = (0..2).map(|_| workers.verify("pw".into(), stored.clone()));
        for valid in futures_util::future::join_all(both).await {
            assert!(valid.unwrap());
        }
        assert!(workers.held_bytes() >= BLOCK_BUFFER_BYTES);
        let freed = async {
            while workers.held_bytes() != 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(60), freed)
            .await
            .expect("idle workers free their buffers");
        assert!(workers.verify("pw".into(), stored.clone()).await.unwrap());
        assert!(!workers.verify("no".into(), stored).await.unwrap());
        assert!(workers.held_bytes() >= BLOCK_BUFFER_BYTES);
    }
}
