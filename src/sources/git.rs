//! Bare Git mirrors fetched with gix.
//!
//! One mirror per [`SourceKey`] lives under `DATA/repos/<digest>.git` and is shared by every
//! App using the repository. A [`Mirror::fetch`] costs one ref advertisement (protocol v2
//! `ls-refs`) when nothing changed: the advertised branches and tags are compared with the
//! mirror's before any pack is negotiated. Branches and tags are fetched with forced refspecs
//! and refs deleted on the remote are pruned; every change is reported as a [`RefChange`] so
//! force-pushes, moved tags and deleted branches can be shown to users.
//!
//! Transports: `https://` (anonymous, basic or bearer credentials; rustls with the platform
//! verifier plus optional extra roots), `http://` (anonymous only), `ssh://` and `user@host:path`
//! (gix runs the system `ssh` client in batch mode, with the daemon user's keys and
//! known_hosts), `git://`, and `file://` or absolute paths, for which gix spawns the
//! `git-upload-pack` program of the installed Git. Every call sets a credentials callback, so
//! the daemon never prompts, and every network transport gives up on a silent remote
//! ([`super::transport`]).
//!
//! Maintenance: every fetch that brings objects adds one pack, and gix's object store has a
//! fixed number of index slots per opened handle. The repository handle is therefore opened
//! with slots sized to the packs on disk (at least [`MIN_SLOTS`], twice the pack count) and
//! re-opened before a fetch could need more; once a mirror holds more than [`PACK_LIMIT`]
//! packs, the next fetch first consolidates them with the installed Git (`git repack -a -d
//! --keep-unreachable`, so no object the mirror had is lost) and re-opens the handle. The
//! repack is serialised with fetches of the same mirror and postponed to a later fetch while
//! a [`Snapshot`] of the mirror is alive, so a render never reads through a handle whose packs
//! were removed; without Git it is skipped (logged once) and slot sizing alone keeps the
//! mirror working (up to gix's limit of 32,767 packs). Packs are mapped only while read: each
//! [`Snapshot`] reads through an object store of its own, dropped with its last clone, and
//! each fetch first re-opens the mirror's handle when its store has files mapped (what earlier
//! fetches and resolves read).
//! A fetch that fails because the handle ran out of slots is repaired (re-opened) and retried
//! once; damaged or missing objects are reported as [`GitError::Corrupt`], on which the
//! poller re-creates the mirror.
//!
//! Every function here blocks: call them from `tokio::task::spawn_blocking`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::remote::Direction;
use parking_lot::{Mutex, RwLock};

use super::credentials::{Credentials, InsecureCredentials};
use super::snapshot::{GitTree, Snapshot, describe};
use super::spec::GitRef;
use super::transport::{self, DEFAULT_TIMEOUT};
use super::url::{RepoUrl, Scheme, SourceKey};

/// The refspecs of a mirror: every branch and tag, force-updated.
const REFSPECS: [&str; 2] = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];

/// A mirror holding more packs than this is consolidated (repacked) before its next fetch.
pub const PACK_LIMIT: usize = 16;

/// The fewest object-store index slots a mirror's handle is opened with.
pub const MIN_SLOTS: usize = 64;

/// The most index slots gix's object store can address.
const MAX_SLOTS: usize = (1 << 15) - 1;

/// A handle is re-opened (with more slots) before a fetch when fewer than this many slots
/// would be left free; one fetch adds at most one pack.
const SLOT_HEADROOM: usize = 4;

/// Settings shared by every mirror of one daemon.
#[derive(Clone, Debug)]
pub struct GitSettings {
    /// The data directory; mirrors live under `repos/` in it.
    pub data_dir: PathBuf,
    /// Extra trusted root certificates (PEM) for https remotes, on top of the platform's.
    pub extra_roots_pem: Option<Arc<Vec<u8>>>,
    /// How long a remote may stay silent (connecting, or in the middle of a fetch) before
    /// the fetch gives up (`--git-timeout`; see [`super::transport`]).
    pub timeout: Duration,
}

/// The `--git-ca-file` could not be read.
#[derive(Debug, thiserror::Error)]
#[error("--git-ca-file {path}: {source}")]
pub struct GitCaError {
    /// The file.
    pub path: PathBuf,
    /// The I/O error.
    pub source: std::io::Error,
}

impl GitSettings {
    /// Settings with mirrors under `data_dir`, giving up after `timeout` of silence, trusting
    /// the CA certificates of `ca_file` (`--git-ca-file`) too: the file is read now, once.
    pub fn read(
        data_dir: &Path,
        ca_file: Option<&Path>,
        timeout: Duration,
    ) -> Result<GitSettings, GitCaError> {
        let extra_roots_pem = ca_file
            .map(|path| {
                std::fs::read(path)
                    .map(Arc::new)
                    .map_err(|source| GitCaError {
                        path: path.to_path_buf(),
                        source,
                    })
            })
            .transpose()?;
        Ok(GitSettings {
            data_dir: data_dir.to_path_buf(),
            extra_roots_pem,
            timeout,
        })
    }
}

impl Default for GitSettings {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::new(),
            extra_roots_pem: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// Why a Git operation failed, by what an operator would do about it.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// Credentials would have been sent over an insecure transport.
    #[error(transparent)]
    InsecureCredentials(#[from] InsecureCredentials),
    /// The remote could not be reached or did not answer as a Git server.
    #[error("{url}: remote unreachable: {message}")]
    Unreachable {
        /// The remote.
        url: String,
        /// The transport's explanation.
        message: String,
    },
    /// The remote asked for credentials that are missing or were rejected.
    #[error("{url}: authentication failed: {message}")]
    Authentication {
        /// The remote.
        url: String,
        /// What happened.
        message: String,
    },
    /// An object in the mirror is damaged or missing.
    #[error("{key}: corrupted repository mirror at {dir}: {message}")]
    Corrupt {
        /// The repository.
        key: SourceKey,
        /// The mirror directory.
        dir: PathBuf,
        /// The object database's explanation.
        message: String,
    },
    /// The branch, tag or commit is not in the repository.
    #[error("{key}: {reference} not found{hint}")]
    RefNotFound {
        /// The repository.
        key: SourceKey,
        /// What was looked up.
        reference: GitRef,
        /// Extra context (e.g. that the branch was deleted on the remote).
        hint: String,
    },
    /// The fetch itself failed after the remote answered.
    #[error("{url}: fetch failed: {message}")]
    Fetch {
        /// The remote.
        url: String,
        /// The explanation.
        message: String,
    },
    /// The mirror directory could not be created or opened.
    #[error("{dir}: cannot open repository mirror: {message}")]
    Mirror {
        /// The mirror directory.
        dir: PathBuf,
        /// The explanation.
        message: String,
    },
}

/// How one branch or tag changed in a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// The ref appeared.
    Created,
    /// A branch advanced; the old commit is an ancestor of the new one.
    FastForward,
    /// A branch was rewritten (force-push): the old commit is not an ancestor of the new one.
    ForcePushed,
    /// A tag now points elsewhere.
    TagMoved,
    /// The ref was deleted on the remote and pruned from the mirror.
    Deleted,
}

/// One ref change observed by a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefChange {
    /// The full ref name, e.g. `refs/heads/main`.
    pub name: String,
    /// The previous target, if the ref existed.
    pub old: Option<ObjectId>,
    /// The new target, unless the ref was deleted.
    pub new: Option<ObjectId>,
    /// What kind of change this is.
    pub kind: ChangeKind,
}

/// What a fetch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchOutcome {
    /// Every changed branch and tag; empty when the remote was unchanged.
    pub changes: Vec<RefChange>,
}

/// A bare mirror of one repository.
pub struct Mirror {
    url: RepoUrl,
    dir: PathBuf,
    credentials: Credentials,
    extra_roots_pem: Option<Arc<Vec<u8>>>,
    /// The limit on the remote's silence ([`GitSettings::timeout`]).
    timeout: Duration,
    /// The repository handle; replaced (write lock) when it is re-opened after maintenance
    /// or to get more slots. Readers clone a thread-local handle under the read lock.
    handle: RwLock<Handle>,
    /// Serialises fetches and maintenance of this mirror.
    fetch_lock: Mutex<()>,
    /// One clone per live [`Snapshot`] tree of this mirror: packs are never removed while
    /// the count is above one.
    leases: Arc<()>,
    /// The tree of each commit a snapshot of which is still alive: another snapshot of that
    /// commit shares it (one object store, one mapping of the packs) instead of opening its
    /// own. At a cold start every poll snapshots the commit for the Apps that subscribed since
    /// the last one, and those snapshots wait together for the renders.
    live_trees: Mutex<HashMap<ObjectId, Weak<GitTree>>>,
    /// Set once `git repack` could not be run because Git is not installed.
    git_missing: AtomicBool,
}

/// An opened repository and the number of object-store index slots it was opened with.
struct Handle {
    repo: gix::ThreadSafeRepository,
    slots: usize,
}

/// What [`Mirror::maintain`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maintenance {
    /// Nothing was needed.
    None,
    /// The handle was re-opened with more index slots.
    Reopened {
        /// Packs on disk.
        packs: usize,
        /// Slots of the new handle.
        slots: usize,
    },
    /// The packs were consolidated and the handle re-opened.
    Repacked {
        /// Packs before.
        before: usize,
        /// Packs after.
        after: usize,
    },
    /// The handle was re-opened to unmap the packs and indices its object store had mapped.
    Released {
        /// Pack and index files that were mapped.
        files: usize,
    },
    /// A repack was due but postponed: a snapshot of the mirror is being read, or Git is
    /// missing or failed (logged). The handle's slots still cover the packs on disk.
    Deferred {
        /// Packs on disk.
        packs: usize,
    },
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror")
            .field("key", &self.url.key)
            .field("dir", &self.dir)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

/// The on-disk directory of the mirror of `key`.
pub fn mirror_dir(data_dir: &Path, key: &SourceKey) -> PathBuf {
    data_dir.join("repos").join(format!("{}.git", key.digest()))
}

impl Mirror {
    /// Opens the mirror of `url`, creating an empty bare repository on first use. Credentials
    /// for anything but https are refused here, before any network access.
    pub fn open(
        settings: &GitSettings,
        url: RepoUrl,
        credentials: Credentials,
    ) -> Result<Self, GitError> {
        credentials.check_transport(&url)?;
        let dir = mirror_dir(&settings.data_dir, &url.key);
        let mirror_err = |message: String| GitError::Mirror {
            dir: dir.clone(),
            message,
        };
        if !dir.join("HEAD").is_file() {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent).map_err(|e| mirror_err(e.to_string()))?;
            }
            gix::init_bare(&dir).map_err(|e| mirror_err(describe(&e)))?;
            write_mirror_config(&dir).map_err(|e| mirror_err(e.to_string()))?;
        }
        let handle = open_handle(&dir)?;
        Ok(Self {
            url,
            dir,
            credentials,
            extra_roots_pem: settings.extra_roots_pem.clone(),
            timeout: settings.timeout,
            handle: RwLock::new(handle),
            fetch_lock: Mutex::new(()),
            leases: Arc::new(()),
            live_trees: Mutex::new(HashMap::new()),
            git_missing: AtomicBool::new(false),
        })
    }

    /// A thread-local handle on the current repository.
    fn repo(&self) -> gix::Repository {
        self.handle.read().repo.to_thread_local()
    }

    /// The number of pack indices in the mirror (one per pack).
    pub fn pack_count(&self) -> Result<usize, GitError> {
        count_packs(&self.dir)
    }

    /// The number of object-store index slots of the current handle.
    pub fn slots(&self) -> usize {
        self.handle.read().slots
    }

    /// Keeps the mirror healthy; [`Mirror::fetch`] calls it first. With more than
    /// [`PACK_LIMIT`] packs, consolidates them with `git repack` (unless a snapshot of the
    /// mirror is alive or Git is missing) and re-opens the handle; otherwise re-opens the
    /// handle when its slots would not cover the next fetch or when its object store has files
    /// mapped (see [`Maintenance::Released`]). Blocking.
    pub fn maintain(&self) -> Result<Maintenance, GitError> {
        let _serialised = self.fetch_lock.lock();
        self.maintain_locked()
    }

    fn maintain_locked(&self) -> Result<Maintenance, GitError> {
        let packs = self.pack_count()?;
        if packs > PACK_LIMIT {
            // The write lock keeps new snapshots from being taken while packs are replaced.
            let mut handle = self.handle.write();
            if Arc::strong_count(&self.leases) == 1 && self.repack() {
                *handle = open_handle(&self.dir)?;
                let after = self.pack_count()?;
                return Ok(Maintenance::Repacked {
                    before: packs,
                    after,
                });
            }
            if packs + SLOT_HEADROOM > handle.slots {
                *handle = open_handle(&self.dir)?;
            }
            tracing::debug!(
                dir = %self.dir.display(),
                packs,
                live_snapshots = Arc::strong_count(&self.leases) - 1,
                "mirror repack postponed"
            );
            return Ok(Maintenance::Deferred { packs });
        }
        if packs + SLOT_HEADROOM > self.handle.read().slots {
            return self.reopen();
        }
        self.release_mapped()
    }

    /// Re-opens the handle when its object store has pack or index files mapped (what earlier
    /// fetches and resolves read), so the old store is dropped and unmaps them: each fetch
    /// starts from a store that maps nothing. Snapshots read through stores of their own and
    /// are unaffected. The count is read under the read lock and the fresh handle opened
    /// outside any lock, so resolves wait only for the swap (not for the unmapping, nor at all
    /// when nothing is mapped).
    fn release_mapped(&self) -> Result<Maintenance, GitError> {
        let mapped = {
            let metrics = self.handle.read().repo.objects.metrics();
            metrics.open_reachable_indices
                + metrics.open_reachable_packs
                + metrics.unreachable_indices
                + metrics.unreachable_packs
        };
        if mapped == 0 {
            return Ok(Maintenance::None);
        }
        let fresh = open_handle(&self.dir)?;
        // The old store unmaps its files when dropped here, after the lock is released.
        let _old = std::mem::replace(&mut *self.handle.write(), fresh);
        Ok(Maintenance::Released { files: mapped })
    }

    /// Re-opens the handle with slots sized to the packs on disk.
    fn reopen(&self) -> Result<Maintenance, GitError> {
        let fresh = open_handle(&self.dir)?;
        let slots = fresh.slots;
        *self.handle.write() = fresh;
        let packs = self.pack_count()?;
        tracing::info!(dir = %self.dir.display(), packs, slots, "mirror re-opened with more object-store slots");
        Ok(Maintenance::Reopened { packs, slots })
    }

    /// Runs `git repack` on the mirror; `false` (logged) when Git is missing or fails.
    fn repack(&self) -> bool {
        if self.git_missing.load(Ordering::Relaxed) {
            return false;
        }
        let started = Instant::now();
        let output = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&self.dir)
            .args([
                "repack",
                "-a",
                "-d",
                "-q",
                "--keep-unreachable",
                "--no-write-bitmap-index",
            ])
            .stdin(std::process::Stdio::null())
            .output();
        match output {
            Ok(out) if out.status.success() => {
                tracing::debug!(
                    dir = %self.dir.display(),
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "mirror repacked"
                );
                true
            }
            Ok(out) => {
                tracing::warn!(
                    dir = %self.dir.display(),
                    status = %out.status,
                    stderr = %String::from_utf8_lossy(&out.stderr).trim(),
                    "git repack of the mirror failed; the mirror keeps working with more packs"
                );
                false
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.git_missing.store(true, Ordering::Relaxed);
                tracing::warn!(
                    dir = %self.dir.display(),
                    "git is not installed: mirror packs are not consolidated (the mirror keeps working)"
                );
                false
            }
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot run git repack on the mirror");
                false
            }
        }
    }

    /// The repository's key.
    pub fn key(&self) -> &SourceKey {
        &self.url.key
    }

    /// The URL fetched from.
    pub fn url(&self) -> &RepoUrl {
        &self.url
    }

    /// The mirror's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The mirror's branches and tags with their direct targets (tag objects for annotated
    /// tags).
    pub fn local_refs(&self) -> Result<BTreeMap<String, ObjectId>, GitError> {
        let handle = self.handle.read();
        local_refs(&handle.repo.to_thread_local()).map_err(|e| self.corrupt(&e))
    }

    /// Fetches from the remote: one ref advertisement, then a pack only if a branch or tag
    /// differs from the mirror; refs deleted remotely are pruned. Blocking.
    pub fn fetch(&self) -> Result<FetchOutcome, GitError> {
        self.fetch_with(&self.credentials)
    }

    /// [`Mirror::fetch`] with `credentials` instead of those the mirror was opened with (the
    /// poller passes the currently registered ones); refused before any request unless the
    /// transport is https.
    pub fn fetch_with(&self, credentials: &Credentials) -> Result<FetchOutcome, GitError> {
        credentials.check_transport(&self.url)?;
        let _serialised = self.fetch_lock.lock();
        self.maintain_locked()?;
        match self.fetch_once(credentials) {
            Err(FetchFailure::Slots(e)) => {
                tracing::warn!(
                    dir = %self.dir.display(),
                    error = %describe(&e),
                    "fetch ran out of object-store slots; re-opening the mirror and retrying"
                );
                self.reopen()?;
                self.fetch_once(credentials).map_err(|f| match f {
                    FetchFailure::Slots(e) => GitError::Fetch {
                        url: self.url.fetch_url.clone(),
                        message: describe(&e),
                    },
                    FetchFailure::Other(e) => e,
                })
            }
            Err(FetchFailure::Other(e)) => Err(e),
            Ok(outcome) => Ok(outcome),
        }
    }

    /// One fetch attempt; see [`Mirror::fetch_with`].
    fn fetch_once(&self, credentials: &Credentials) -> Result<FetchOutcome, FetchFailure> {
        let repo = self.repo();
        let before = local_refs(&repo).map_err(|e| self.corrupt(&e))?;
        let auth_asked = Arc::new(AtomicBool::new(false));
        let remote_err = |e: gix::Error, auth_asked: &AtomicBool| {
            if auth_asked.load(std::sync::atomic::Ordering::SeqCst)
                || matches!(
                    e.dominant_class(),
                    Some(gix::error::Class::Unauthenticated | gix::error::Class::PermissionDenied)
                )
            {
                GitError::Authentication {
                    url: self.url.fetch_url.clone(),
                    message: describe(&e),
                }
            } else {
                let mut message = describe(&e);
                if self.url.scheme == Scheme::Ssh && transport::ended_early(&e) {
                    message.push_str(": ");
                    message.push_str(transport::SSH_ENDED);
                }
                GitError::Unreachable {
                    url: self.url.fetch_url.clone(),
                    message,
                }
            }
        };
        let remote = repo
            .remote_at(self.url.fetch_url.as_str())
            .and_then(|r| r.with_refspecs(REFSPECS, Direction::Fetch))
            .map_err(|e| remote_err(e, &auth_asked))?
            .with_fetch_tags(gix::remote::fetch::Tags::None);
        let connection =
            transport::connect(&remote, self.timeout).map_err(|e| remote_err(e, &auth_asked))?;
        let mut connection = connection.with_credentials(credentials_callback(
            credentials.clone(),
            auth_asked.clone(),
        ));
        if matches!(self.url.scheme, Scheme::Https | Scheme::Http) {
            let options = transport::http_options(
                &repo,
                self.url.fetch_url.as_str(),
                credentials,
                self.extra_roots_pem.clone(),
                self.timeout,
            )
            .map_err(|e| remote_err(e, &auth_asked))?;
            connection.set_transport_options(options);
        }
        let prepare = connection
            .prepare_fetch(gix::progress::Discard, Default::default())
            .map_err(|e| remote_err(e, &auth_asked))?;
        let remote_refs = advertised_refs(&prepare.ref_map().remote_refs);
        if remote_refs == before {
            return Ok(FetchOutcome::default());
        }
        prepare
            .receive(gix::progress::Discard, &AtomicBool::new(false))
            .map_err(|e| match e.dominant_class() {
                Some(gix::error::Class::Corruption) => FetchFailure::Other(self.corrupt(&e)),
                _ if self.out_of_slots(&e) => FetchFailure::Slots(e),
                // Negotiation reads the commits the mirror's refs point to: if one is gone
                // (packs removed or damaged), the mirror, not the remote, is at fault.
                _ if before.values().any(|id| !repo.has_object(id)) => {
                    FetchFailure::Other(self.corrupt(&e))
                }
                _ => FetchFailure::Other(GitError::Fetch {
                    url: self.url.fetch_url.clone(),
                    message: describe(&e),
                }),
            })?;
        for name in before.keys().filter(|n| !remote_refs.contains_key(*n)) {
            delete_ref(&repo, name).map_err(|e| GitError::Fetch {
                url: self.url.fetch_url.clone(),
                message: format!("cannot prune {name}: {}", describe(&e)),
            })?;
        }
        let after = local_refs(&repo).map_err(|e| self.corrupt(&e))?;
        let changes = classify_changes(&repo, &before, &after).map_err(|e| self.corrupt(&e))?;
        Ok(FetchOutcome { changes })
    }

    /// Whether a failed fetch ran out of object-store slots: gix says so, or the packs on
    /// disk no longer fit the handle's slots.
    fn out_of_slots(&self, error: &gix::Error) -> bool {
        describe(error).contains("too few index slots")
            || self
                .pack_count()
                .is_ok_and(|packs| packs + 1 > self.handle.read().slots)
    }

    /// Resolves a branch, tag or commit to a commit id in the mirror.
    pub fn resolve(&self, reference: &GitRef) -> Result<ObjectId, GitError> {
        // Held throughout, so no repack removes packs under this lookup.
        let handle = self.handle.read();
        let repo = handle.repo.to_thread_local();
        let not_found = |hint: &str| GitError::RefNotFound {
            key: self.url.key.clone(),
            reference: reference.clone(),
            hint: hint.to_string(),
        };
        let target = match reference {
            GitRef::Commit(hex) => {
                let id = ObjectId::from_hex(hex.as_bytes()).map_err(|_| not_found(""))?;
                if !repo.has_object(id) {
                    return Err(not_found(
                        " (no fetched branch or tag contains it; push it to a branch or tag)",
                    ));
                }
                id
            }
            GitRef::Branch(_) | GitRef::Tag(_) => {
                let name = reference.ref_name().unwrap_or_default();
                let Some(mut r) = repo
                    .try_find_reference(name.as_str())
                    .map_err(|e| self.corrupt(&e))?
                else {
                    return Err(not_found(" on the remote"));
                };
                r.peel_to_id().map_err(|e| self.corrupt(&e))?.detach()
            }
        };
        let object = repo.find_object(target).map_err(|e| self.corrupt(&e))?;
        let commit = object.peel_to_commit().map_err(|e| GitError::RefNotFound {
            key: self.url.key.clone(),
            reference: reference.clone(),
            hint: format!(" as a commit: {}", describe(&e)),
        })?;
        Ok(commit.id)
    }

    /// The files of `commit`, read straight from the object database through an object store
    /// of the snapshot's own: the packs and indices a render maps are unmapped when the
    /// snapshot's last clone is dropped, not kept by the mirror until its next fetch (at
    /// 10,000 Apps polled hourly, 11 MiB of every replica's resident memory).
    ///
    /// While a snapshot of `commit` is alive, the next ones share its tree.
    pub fn snapshot(&self, commit: ObjectId) -> Result<Snapshot, GitError> {
        let mut live = self.live_trees.lock();
        live.retain(|_, tree| tree.strong_count() > 0);
        let tree = match live.get(&commit).and_then(Weak::upgrade) {
            Some(tree) => tree,
            None => {
                let tree = Arc::new(self.open_tree(commit)?);
                live.insert(commit, Arc::downgrade(&tree));
                tree
            }
        };
        Ok(Snapshot {
            source_key: self.url.key.clone(),
            revision: commit.to_string(),
            tree,
        })
    }

    /// The tree of `commit` through an object store of its own, holding a lease.
    fn open_tree(&self, commit: ObjectId) -> Result<GitTree, GitError> {
        // Under the read lock, so maintenance sees the lease before it removes any pack.
        let handle = self.handle.read();
        let lease = Arc::clone(&self.leases);
        let repo = open_handle(&self.dir)?.repo.to_thread_local();
        drop(handle);
        let tree = repo
            .find_commit(commit)
            .and_then(|c| c.tree_id().map(|id| id.detach()))
            .map_err(|e| self.corrupt(&e))?;
        Ok(GitTree::new(repo, tree).with_lease(lease))
    }

    /// The author's email address of `commit` (as recorded in the commit, unverified).
    pub fn author_email(&self, commit: ObjectId) -> Result<String, GitError> {
        let repo = self.handle.read().repo.to_thread_local();
        let commit = repo.find_commit(commit).map_err(|e| self.corrupt(&e))?;
        let author = commit.author().map_err(|e| self.corrupt(&e))?;
        Ok(author.email.to_string())
    }

    fn corrupt(&self, error: &gix::Error) -> GitError {
        GitError::Corrupt {
            key: self.url.key.clone(),
            dir: self.dir.clone(),
            message: describe(error),
        }
    }
}

/// Why one fetch attempt failed.
enum FetchFailure {
    /// The handle ran out of object-store slots: re-open and retry.
    Slots(gix::Error),
    /// Anything else.
    Other(GitError),
}

impl From<GitError> for FetchFailure {
    fn from(e: GitError) -> Self {
        FetchFailure::Other(e)
    }
}

/// Counts the pack indices (one per pack) of the bare repository at `dir`.
fn count_packs(dir: &Path) -> Result<usize, GitError> {
    let pack_dir = dir.join("objects").join("pack");
    let entries = match std::fs::read_dir(&pack_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(GitError::Mirror {
                dir: dir.to_path_buf(),
                message: format!("cannot list {}: {e}", pack_dir.display()),
            });
        }
    };
    let mut count = 0;
    for entry in entries {
        let entry = entry.map_err(|e| GitError::Mirror {
            dir: dir.to_path_buf(),
            message: format!("cannot list {}: {e}", pack_dir.display()),
        })?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".idx") || name == "multi-pack-index" {
            count += 1;
        }
    }
    Ok(count)
}

/// Opens the bare repository at `dir` with object-store slots sized to its packs: twice the
/// pack count, at least [`MIN_SLOTS`].
fn open_handle(dir: &Path) -> Result<Handle, GitError> {
    let packs = count_packs(dir)?;
    let slots = (packs * 2).clamp(MIN_SLOTS, MAX_SLOTS);
    let given = u16::try_from(slots).unwrap_or(u16::MAX >> 1);
    let options = gix::open::Options::default()
        .object_store_slots(gix::odb::store::init::Slots::Given(given));
    let repo =
        gix::ThreadSafeRepository::open_opts(dir, options).map_err(|e| GitError::Mirror {
            dir: dir.to_path_buf(),
            message: describe(&e),
        })?;
    Ok(Handle { repo, slots })
}

/// Writes the mirror's config: never prompt (ssh runs in batch mode, see [`transport`]).
fn write_mirror_config(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("config"))?;
    file.write_all(b"[credential]\n\tinteractive = false\n")
}

/// The credentials callback: answers `Get` from the configured basic credentials, and fails
/// (instead of prompting) when there are none. Records that authentication was requested.
fn credentials_callback(
    credentials: Credentials,
    auth_asked: Arc<AtomicBool>,
) -> impl FnMut(
    gix::credentials::helper::Action,
) -> gix::Result<Option<gix::credentials::protocol::Outcome>> {
    use gix::credentials::helper::{Action, NextAction};
    move |action| match action {
        Action::Get(context) => {
            auth_asked.store(true, std::sync::atomic::Ordering::SeqCst);
            match &credentials {
                Credentials::Basic { username, password } => {
                    Ok(Some(gix::credentials::protocol::Outcome {
                        identity: gix::sec::identity::Account {
                            username: username.clone(),
                            password: password.clone(),
                            oauth_refresh_token: None,
                        },
                        next: NextAction::from(context),
                    }))
                }
                Credentials::Anonymous | Credentials::Bearer { .. } => {
                    Err(gix::Error::from_error(NoCredentials))
                }
            }
        }
        Action::Store(_) | Action::Erase(_) => Ok(None),
    }
}

/// The remote asked for credentials the daemon does not have.
#[derive(Debug, thiserror::Error)]
#[error(
    "the remote requires authentication and no (or no accepted) credentials are configured for this repository"
)]
struct NoCredentials;

/// Branches and tags from a ref advertisement, with their direct targets.
fn advertised_refs(refs: &[gix::protocol::handshake::Ref]) -> BTreeMap<String, ObjectId> {
    refs.iter()
        .filter_map(|r| {
            let (name, target, _peeled) = r.unpack();
            let name = name.to_str().ok()?;
            let target = target?.to_owned();
            is_mirrored(name).then(|| (name.to_string(), target))
        })
        .collect()
}

fn is_mirrored(name: &str) -> bool {
    name.starts_with("refs/heads/") || name.starts_with("refs/tags/")
}

/// The mirror's branches and tags with their direct targets.
fn local_refs(repo: &gix::Repository) -> gix::Result<BTreeMap<String, ObjectId>> {
    let mut refs = BTreeMap::new();
    let platform = repo.references()?;
    for prefix in ["refs/heads/", "refs/tags/"] {
        for r in platform.prefixed(prefix)? {
            let r = r.map_err(gix::Error::from_error)?;
            if let Some(id) = r.target().try_id() {
                refs.insert(r.name().as_bstr().to_string(), id.to_owned());
            }
        }
    }
    Ok(refs)
}

fn delete_ref(repo: &gix::Repository, name: &str) -> gix::Result<()> {
    use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};
    repo.edit_reference(RefEdit {
        change: Change::Delete {
            expected: PreviousValue::Any,
            log: RefLog::AndReference,
        },
        name: name.try_into().map_err(gix::Error::from_error)?,
        deref: false,
    })?;
    Ok(())
}

/// Compares the refs before and after a fetch.
fn classify_changes(
    repo: &gix::Repository,
    before: &BTreeMap<String, ObjectId>,
    after: &BTreeMap<String, ObjectId>,
) -> gix::Result<Vec<RefChange>> {
    let mut changes = Vec::new();
    for (name, old) in before {
        match after.get(name) {
            None => changes.push(RefChange {
                name: name.clone(),
                old: Some(*old),
                new: None,
                kind: ChangeKind::Deleted,
            }),
            Some(new) if new != old => {
                let kind = if name.starts_with("refs/tags/") {
                    ChangeKind::TagMoved
                } else if is_ancestor(repo, *old, *new)? {
                    ChangeKind::FastForward
                } else {
                    ChangeKind::ForcePushed
                };
                changes.push(RefChange {
                    name: name.clone(),
                    old: Some(*old),
                    new: Some(*new),
                    kind,
                });
            }
            Some(_) => {}
        }
    }
    for (name, new) in after {
        if !before.contains_key(name) {
            changes.push(RefChange {
                name: name.clone(),
                old: None,
                new: Some(*new),
                kind: ChangeKind::Created,
            });
        }
    }
    Ok(changes)
}

/// Whether commit `old` is an ancestor of (or equal to) `new`; the walk stops at commits older
/// than `old`. A force-push may leave `old` unreachable but still present in the mirror.
fn is_ancestor(repo: &gix::Repository, old: ObjectId, new: ObjectId) -> gix::Result<bool> {
    let Ok(old_commit) = repo.find_commit(old) else {
        return Ok(false);
    };
    let cutoff = old_commit.time()?.seconds;
    let walk = repo
        .find_commit(new)?
        .id()
        .ancestors()
        .sorting(gix::revision::walk::Sorting::ByCommitTimeCutoff {
            order: Default::default(),
            seconds: cutoff,
        })
        .all()?;
    for info in walk {
        if info.map_err(gix::Error::from_error)?.id == old {
            return Ok(true);
        }
    }
    Ok(false)
}
