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
//! the daemon never prompts.
//!
//! Every function here blocks: call them from `tokio::task::spawn_blocking`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::remote::Direction;
use parking_lot::Mutex;

use super::credentials::{Credentials, InsecureCredentials};
use super::snapshot::{GitTree, Snapshot, describe};
use super::spec::GitRef;
use super::url::{RepoUrl, Scheme, SourceKey};

/// The refspecs of a mirror: every branch and tag, force-updated.
const REFSPECS: [&str; 2] = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];

/// Settings shared by every mirror of one daemon.
#[derive(Clone, Debug, Default)]
pub struct GitSettings {
    /// The data directory; mirrors live under `repos/` in it.
    pub data_dir: PathBuf,
    /// Extra trusted root certificates (PEM) for https remotes, on top of the platform's.
    pub extra_roots_pem: Option<Arc<Vec<u8>>>,
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
    repo: gix::ThreadSafeRepository,
    fetch_lock: Mutex<()>,
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
        let repo = if dir.join("HEAD").is_file() {
            gix::open(&dir).map_err(|e| mirror_err(describe(&e)))?
        } else {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent).map_err(|e| mirror_err(e.to_string()))?;
            }
            let repo = gix::init_bare(&dir).map_err(|e| mirror_err(describe(&e)))?;
            write_mirror_config(&dir).map_err(|e| mirror_err(e.to_string()))?;
            gix::open(repo.path()).map_err(|e| mirror_err(describe(&e)))?
        };
        Ok(Self {
            url,
            dir,
            credentials,
            extra_roots_pem: settings.extra_roots_pem.clone(),
            repo: repo.into_sync(),
            fetch_lock: Mutex::new(()),
        })
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
        local_refs(&self.repo.to_thread_local()).map_err(|e| self.corrupt(&e))
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
        let repo = self.repo.to_thread_local();
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
                GitError::Unreachable {
                    url: self.url.fetch_url.clone(),
                    message: describe(&e),
                }
            }
        };
        let remote = repo
            .remote_at(self.url.fetch_url.as_str())
            .and_then(|r| r.with_refspecs(REFSPECS, Direction::Fetch))
            .map_err(|e| remote_err(e, &auth_asked))?
            .with_fetch_tags(gix::remote::fetch::Tags::None);
        let connection = remote
            .connect(Direction::Fetch)
            .map_err(|e| remote_err(e, &auth_asked))?;
        let mut connection = connection.with_credentials(credentials_callback(
            credentials.clone(),
            auth_asked.clone(),
        ));
        if matches!(self.url.scheme, Scheme::Https | Scheme::Http) {
            let options = self
                .http_options(&repo, credentials)
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
                Some(gix::error::Class::Corruption) => self.corrupt(&e),
                _ => GitError::Fetch {
                    url: self.url.fetch_url.clone(),
                    message: describe(&e),
                },
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

    /// Resolves a branch, tag or commit to a commit id in the mirror.
    pub fn resolve(&self, reference: &GitRef) -> Result<ObjectId, GitError> {
        let repo = self.repo.to_thread_local();
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

    /// The files of `commit`, read straight from the object database.
    pub fn snapshot(&self, commit: ObjectId) -> Result<Snapshot, GitError> {
        let repo = self.repo.to_thread_local();
        let tree = repo
            .find_commit(commit)
            .and_then(|c| c.tree_id().map(|id| id.detach()))
            .map_err(|e| self.corrupt(&e))?;
        Ok(Snapshot {
            source_key: self.url.key.clone(),
            revision: commit.to_string(),
            tree: Arc::new(GitTree::new(repo, tree)),
        })
    }

    fn corrupt(&self, error: &gix::Error) -> GitError {
        GitError::Corrupt {
            key: self.url.key.clone(),
            dir: self.dir.clone(),
            message: describe(error),
        }
    }

    /// HTTP transport options: the repository's defaults plus our user agent, the bearer
    /// header and the extra trusted roots.
    fn http_options(
        &self,
        repo: &gix::Repository,
        credentials: &Credentials,
    ) -> gix::Result<Box<dyn std::any::Any>> {
        use gix::protocol::transport::client::blocking_io::http;
        let mut options = repo
            .transport_options(self.url.fetch_url.as_str(), None)?
            .and_then(|o| o.downcast::<http::Options>().ok())
            .map(|o| *o)
            .unwrap_or_default();
        options.user_agent = Some(concat!("wardn/", env!("CARGO_PKG_VERSION")).to_string());
        if let Credentials::Bearer { token } = credentials {
            options
                .extra_headers
                .push(format!("Authorization: Bearer {token}"));
        }
        if let Some(pem) = self.extra_roots_pem.clone() {
            let configure: Box<http::reqwest::ConfigureClientFn> = Box::new(move |builder| {
                let certs =
                    reqwest::Certificate::from_pem_bundle(&pem).map_err(gix::Error::from_error)?;
                Ok(builder.tls_certs_merge(certs))
            });
            let backend = http::reqwest::Options {
                configure_client: Some(configure),
                configure_request: None,
            };
            options.backend = Some(Arc::new(std::sync::Mutex::new(backend)));
        }
        Ok(Box::new(options))
    }
}

/// Writes the mirror's config: never prompt, ssh in batch mode.
fn write_mirror_config(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("config"))?;
    file.write_all(
        b"[core]\n\tsshCommand = ssh -o BatchMode=yes\n[credential]\n\tinteractive = false\n",
    )
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
