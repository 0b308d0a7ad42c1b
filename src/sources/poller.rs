//! The polling scheduler: one task per repository, shared by every App that uses it.
//!
//! Each repository is polled at the shortest interval among its Apps (default 60 s), with
//! ±10 % jitter so that many repositories do not poll in lockstep. A poll is one
//! [`Mirror::fetch`] in `spawn_blocking` — a single ref advertisement when nothing changed —
//! then each App's branch, tag or commit is resolved locally. Failures back off exponentially
//! (5 s, 10 s, 20 s … capped at 10 min) and show in the status of every affected App; a
//! corrupted mirror is re-created and fetched again. Webhooks call [`Poller::trigger`] for an
//! immediate poll. With a [`CredentialsProvider`] ([`Poller::with_provider`]) every fetch uses
//! the credentials registered for the repository at that moment, so credentials added or
//! rotated through the API apply at the next poll. Apps receive [`SourceUpdate`]s on the channel returned by [`Poller::new`]
//! whenever their revision or their status changes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use gix::ObjectId;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

use super::credentials::{Credentials, CredentialsProvider};
use super::git::{ChangeKind, FetchOutcome, GitError, GitSettings, Mirror};
use super::snapshot::Snapshot;
use super::spec::{DEFAULT_INTERVAL, GitRef, GitSource};
use super::status::{Reason, SourceStatus, SourceUpdate, reason_for, reason_for_change};
use super::url::SourceKey;
use crate::backoff;

/// Scheduler settings.
#[derive(Debug, Clone)]
pub struct PollerConfig {
    /// Where mirrors live, and extra trusted roots.
    pub git: GitSettings,
    /// The first retry delay after a failed poll; doubled on each further failure.
    pub backoff_base: Duration,
    /// The longest retry delay.
    pub backoff_max: Duration,
    /// Relative jitter applied to every delay (0.1 = ±10 %).
    pub jitter: f64,
}

impl PollerConfig {
    /// The defaults for mirrors under `git.data_dir`.
    pub fn new(git: GitSettings) -> Self {
        Self {
            git,
            backoff_base: Duration::from_secs(5),
            backoff_max: Duration::from_secs(600),
            jitter: 0.1,
        }
    }

    /// The delay before the next poll of a repository.
    pub fn next_delay(&self, interval: Duration, failures: u32) -> Duration {
        let base = if failures == 0 {
            interval
        } else {
            backoff::doubling(self.backoff_base, self.backoff_max, failures)
        };
        base.mul_f64(1.0 + self.jitter * (2.0 * backoff::jitter() - 1.0))
    }
}

/// A handle to the scheduler; cheap to clone.
#[derive(Clone)]
pub struct Poller {
    inner: Arc<Inner>,
}

struct Inner {
    config: PollerConfig,
    provider: Option<Arc<dyn CredentialsProvider>>,
    updates: mpsc::UnboundedSender<SourceUpdate>,
    repos: Mutex<HashMap<SourceKey, Arc<Repo>>>,
    apps: Mutex<HashMap<String, SourceKey>>,
}

/// One repository: its mirror, subscribers and polling task.
struct Repo {
    key: SourceKey,
    mirror: Mutex<Arc<Mirror>>,
    credentials: Credentials,
    wake: Notify,
    state: Mutex<RepoState>,
    task: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct RepoState {
    subs: BTreeMap<String, Subscription>,
    failures: u32,
    polls: u64,
}

struct Subscription {
    reference: GitRef,
    interval: Duration,
    revision: Option<String>,
    status: Option<SourceStatus>,
}

/// Counters of one repository's polling, for status pages and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepoStats {
    /// Completed polls (successful or not).
    pub polls: u64,
    /// Consecutive failed polls.
    pub failures: u32,
    /// Apps subscribed.
    pub subscribers: usize,
}

impl Poller {
    /// A scheduler and the receiving end of its update channel; fetches use the credentials
    /// given to [`Poller::subscribe`].
    pub fn new(config: PollerConfig) -> (Self, mpsc::UnboundedReceiver<SourceUpdate>) {
        Self::build(config, None)
    }

    /// A scheduler whose fetches ask `provider` for the repository's registered credentials
    /// (falling back to those given to [`Poller::subscribe`] for unregistered repositories).
    pub fn with_provider(
        config: PollerConfig,
        provider: Arc<dyn CredentialsProvider>,
    ) -> (Self, mpsc::UnboundedReceiver<SourceUpdate>) {
        Self::build(config, Some(provider))
    }

    fn build(
        config: PollerConfig,
        provider: Option<Arc<dyn CredentialsProvider>>,
    ) -> (Self, mpsc::UnboundedReceiver<SourceUpdate>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = Inner {
            config,
            provider,
            updates: tx,
            repos: Mutex::new(HashMap::new()),
            apps: Mutex::new(HashMap::new()),
        };
        (
            Self {
                inner: Arc::new(inner),
            },
            rx,
        )
    }

    /// A sender into the update channel, for other sources of the same Apps (e.g.
    /// [`super::directory::watch`]) so the reconciler reads one stream.
    pub fn sender(&self) -> mpsc::UnboundedSender<SourceUpdate> {
        self.inner.updates.clone()
    }

    /// Subscribes App `app` to `source`; the repository is polled right away (its mirror is
    /// shared with every other App using it). Re-subscribing replaces the previous source.
    /// `credentials` are used when this call creates the repository's mirror, and for fetches
    /// unless the poller's provider has registered ones. Must be called inside a tokio runtime.
    pub async fn subscribe(
        &self,
        app: &str,
        source: &GitSource,
        credentials: Credentials,
    ) -> Result<(), GitError> {
        self.unsubscribe(app);
        let key = source.url.key.clone();
        let existing = self.inner.repos.lock().get(&key).cloned();
        let repo = match existing {
            Some(repo) => repo,
            None => {
                let settings = self.inner.config.git.clone();
                let url = source.url.clone();
                let creds = credentials.clone();
                let mirror =
                    tokio::task::spawn_blocking(move || Mirror::open(&settings, url, creds))
                        .await
                        .map_err(|e| GitError::Mirror {
                            dir: self.inner.config.git.data_dir.clone(),
                            message: e.to_string(),
                        })??;
                let repo = Arc::new(Repo {
                    key: key.clone(),
                    mirror: Mutex::new(Arc::new(mirror)),
                    credentials,
                    wake: Notify::new(),
                    state: Mutex::new(RepoState::default()),
                    task: Mutex::new(None),
                });
                let mut repos = self.inner.repos.lock();
                let repo = repos.entry(key.clone()).or_insert(repo).clone();
                let mut task = repo.task.lock();
                if task.is_none() {
                    *task = Some(tokio::spawn(run(repo.clone(), self.inner.clone())));
                }
                drop(task);
                repo
            }
        };
        repo.state.lock().subs.insert(
            app.to_string(),
            Subscription {
                reference: source.reference.clone(),
                interval: source.interval,
                revision: None,
                status: None,
            },
        );
        self.inner.apps.lock().insert(app.to_string(), key);
        repo.wake.notify_one();
        Ok(())
    }

    /// Removes App `app`'s subscription; a repository without Apps stops being polled (its
    /// mirror stays on disk for a later subscriber).
    pub fn unsubscribe(&self, app: &str) {
        let Some(key) = self.inner.apps.lock().remove(app) else {
            return;
        };
        let mut repos = self.inner.repos.lock();
        let Some(repo) = repos.get(&key).cloned() else {
            return;
        };
        let empty = {
            let mut state = repo.state.lock();
            state.subs.remove(app);
            state.subs.is_empty()
        };
        if empty {
            repos.remove(&key);
            if let Some(task) = repo.task.lock().take() {
                task.abort();
            }
        }
    }

    /// Asks for an immediate poll of the repository `key`; `false` if no App uses it.
    pub fn trigger(&self, key: &SourceKey) -> bool {
        match self.inner.repos.lock().get(key) {
            Some(repo) => {
                repo.wake.notify_one();
                true
            }
            None => false,
        }
    }

    /// Whether some App subscribed to the repository `key` (it is polled).
    pub fn polls(&self, key: &SourceKey) -> bool {
        self.inner.repos.lock().contains_key(key)
    }

    /// The author's email address of the commit `revision` in the mirror of App `app`'s
    /// repository; `None` when the App has no Git source here, or the revision is not a
    /// commit of the mirror.
    pub async fn commit_author(&self, app: &str, revision: &str) -> Option<String> {
        let commit = ObjectId::from_hex(revision.as_bytes()).ok()?;
        let key = self.inner.apps.lock().get(app).cloned()?;
        let repo = self.inner.repos.lock().get(&key).cloned()?;
        let mirror = repo.mirror.lock().clone();
        tokio::task::spawn_blocking(move || mirror.author_email(commit).ok())
            .await
            .ok()
            .flatten()
    }

    /// The last status reported for App `app`.
    pub fn status(&self, app: &str) -> Option<SourceStatus> {
        let key = self.inner.apps.lock().get(app).cloned()?;
        let repo = self.inner.repos.lock().get(&key).cloned()?;
        let state = repo.state.lock();
        state.subs.get(app).and_then(|s| s.status.clone())
    }

    /// Polling counters of the repository `key`.
    pub fn stats(&self, key: &SourceKey) -> Option<RepoStats> {
        let repo = self.inner.repos.lock().get(key).cloned()?;
        let state = repo.state.lock();
        Some(RepoStats {
            polls: state.polls,
            failures: state.failures,
            subscribers: state.subs.len(),
        })
    }
}

/// The polling loop of one repository.
async fn run(repo: Arc<Repo>, inner: Arc<Inner>) {
    loop {
        // Wait for the first subscriber's wake-up (or a webhook) before the first poll.
        let delay = {
            let state = repo.state.lock();
            let interval = state
                .subs
                .values()
                .map(|s| s.interval)
                .min()
                .unwrap_or(DEFAULT_INTERVAL);
            inner.config.next_delay(interval, state.failures)
        };
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = repo.wake.notified() => {}
        }
        poll(&repo, &inner).await;
    }
}

/// What a poll found for one App.
struct AppResult {
    app: String,
    outcome: Result<(String, Option<Snapshot>), GitError>,
}

/// The credentials of the next fetch: the provider's registered ones, else the subscriber's.
async fn current_credentials(repo: &Repo, inner: &Inner) -> Result<Credentials, GitError> {
    let Some(provider) = &inner.provider else {
        return Ok(repo.credentials.clone());
    };
    match provider.credentials(&repo.key).await {
        Ok(registered) => Ok(registered.unwrap_or_else(|| repo.credentials.clone())),
        Err(e) => Err(GitError::Fetch {
            url: repo.key.to_string(),
            message: e.to_string(),
        }),
    }
}

/// One poll: fetch, resolve every App's ref, update statuses and notify.
async fn poll(repo: &Arc<Repo>, inner: &Arc<Inner>) {
    let mirror = repo.mirror.lock().clone();
    let credentials = current_credentials(repo, inner).await;
    let wanted: Vec<(String, GitRef, Option<String>)> = repo
        .state
        .lock()
        .subs
        .iter()
        .map(|(app, s)| (app.clone(), s.reference.clone(), s.revision.clone()))
        .collect();
    let job_mirror = mirror.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let fetched = job_mirror.fetch_with(&credentials?)?;
        // Apps at the same commit share one snapshot (and one repository handle).
        let mut snapshots: HashMap<gix::ObjectId, Snapshot> = HashMap::new();
        let results = wanted
            .into_iter()
            .map(|(app, reference, last)| {
                let outcome = job_mirror.resolve(&reference).and_then(|id| {
                    let revision = id.to_string();
                    if last.as_deref() == Some(revision.as_str()) {
                        return Ok((revision, None));
                    }
                    let snapshot = match snapshots.get(&id) {
                        Some(s) => s.clone(),
                        None => {
                            let s = job_mirror.snapshot(id)?;
                            snapshots.insert(id, s.clone());
                            s
                        }
                    };
                    Ok((revision, Some(snapshot)))
                });
                AppResult { app, outcome }
            })
            .collect::<Vec<_>>();
        Ok::<_, GitError>((fetched, results))
    })
    .await;
    let result = joined.unwrap_or_else(|e| {
        Err(GitError::Fetch {
            url: mirror.url().fetch_url.clone(),
            message: format!("poll task failed: {e}"),
        })
    });
    let corrupt = match &result {
        Err(e) => matches!(e, GitError::Corrupt { .. }),
        Ok((_, results)) => results
            .iter()
            .any(|r| matches!(r.outcome, Err(GitError::Corrupt { .. }))),
    };
    if corrupt {
        recreate_mirror(repo, inner).await;
    }
    let mut state = repo.state.lock();
    state.polls += 1;
    match &result {
        Ok(_) => state.failures = 0,
        Err(_) => state.failures += 1,
    }
    let failures = state.failures;
    let interval = state
        .subs
        .values()
        .map(|s| s.interval)
        .min()
        .unwrap_or(DEFAULT_INTERVAL);
    let next_poll = inner.config.next_delay(interval, failures);
    match result {
        Ok((fetched, results)) => {
            for r in results {
                if let Some(sub) = state.subs.get_mut(&r.app) {
                    apply_result(repo, inner, &r.app, sub, r.outcome, &fetched, next_poll);
                }
            }
        }
        Err(error) => {
            let reason = reason_for(&error);
            let message = error.to_string();
            let apps: Vec<String> = state.subs.keys().cloned().collect();
            for app in apps {
                if let Some(sub) = state.subs.get_mut(&app) {
                    let status = SourceStatus {
                        source_key: repo.key.clone(),
                        revision: sub.revision.clone(),
                        reason,
                        message: message.clone(),
                        failures,
                        next_poll,
                    };
                    publish(inner, &app, sub, status, None);
                }
            }
        }
    }
}

/// Updates one App after a successful fetch.
fn apply_result(
    repo: &Repo,
    inner: &Inner,
    app: &str,
    sub: &mut Subscription,
    outcome: Result<(String, Option<Snapshot>), GitError>,
    fetched: &FetchOutcome,
    next_poll: Duration,
) {
    let ref_name = sub.reference.ref_name();
    let change = fetched
        .changes
        .iter()
        .find(|c| Some(&c.name) == ref_name.as_ref());
    let (status, snapshot) = match outcome {
        Ok((revision, snapshot)) => {
            let (reason, message) = match (&snapshot, change) {
                (Some(_), change) => reason_for_change(change),
                // Unchanged revision: keep a force-push/tag-move note until the next move.
                (None, _) => match &sub.status {
                    Some(s) if !s.reason.is_error() => (s.reason, s.message.clone()),
                    _ => (
                        Reason::Fetched,
                        format!("{} is at {revision}", sub.reference),
                    ),
                },
            };
            sub.revision = Some(revision.clone());
            (
                SourceStatus {
                    source_key: repo.key.clone(),
                    revision: Some(revision),
                    reason,
                    message,
                    failures: 0,
                    next_poll,
                },
                snapshot,
            )
        }
        Err(error) => {
            let deleted = change.filter(|c| c.kind == ChangeKind::Deleted);
            let (reason, message) = match (&error, deleted) {
                (GitError::RefNotFound { .. }, Some(c)) => reason_for_change(Some(c)),
                (GitError::RefNotFound { .. }, None)
                    if sub.status.as_ref().map(|s| s.reason) == Some(Reason::RefDeleted) =>
                {
                    let s = sub.status.as_ref().map(|s| s.message.clone());
                    (Reason::RefDeleted, s.unwrap_or_default())
                }
                _ => (reason_for(&error), error.to_string()),
            };
            (
                SourceStatus {
                    source_key: repo.key.clone(),
                    revision: sub.revision.clone(),
                    reason,
                    message,
                    failures: 0,
                    next_poll,
                },
                None,
            )
        }
    };
    publish(inner, app, sub, status, snapshot);
}

/// Records `status` and notifies the App when its revision or its state changed.
fn publish(
    inner: &Inner,
    app: &str,
    sub: &mut Subscription,
    status: SourceStatus,
    snapshot: Option<Snapshot>,
) {
    let changed = match &sub.status {
        None => true,
        Some(old) => {
            old.reason != status.reason
                || old.message != status.message
                || old.revision != status.revision
                || (old.failures == 0) != (status.failures == 0)
        }
    };
    sub.status = Some(status.clone());
    if changed || snapshot.is_some() {
        // A closed channel means the daemon is shutting down; nothing to notify.
        let _ = inner.updates.send(SourceUpdate {
            app: app.to_string(),
            status,
            snapshot,
        });
    }
}

/// Replaces a corrupted mirror by a fresh one (the next poll fetches everything again).
async fn recreate_mirror(repo: &Arc<Repo>, inner: &Arc<Inner>) {
    let old = repo.mirror.lock().clone();
    let settings = inner.config.git.clone();
    let credentials = repo.credentials.clone();
    let fresh = tokio::task::spawn_blocking(move || {
        let dir = old.dir().to_path_buf();
        let url = old.url().clone();
        drop(old);
        std::fs::remove_dir_all(&dir).map_err(|e| GitError::Mirror {
            dir: dir.clone(),
            message: e.to_string(),
        })?;
        Mirror::open(&settings, url, credentials)
    })
    .await;
    match fresh {
        Ok(Ok(mirror)) => {
            *repo.mirror.lock() = Arc::new(mirror);
            repo.wake.notify_one();
        }
        Ok(Err(e)) => {
            tracing::warn!(repo = %repo.key, error = %e, "cannot re-create corrupted mirror")
        }
        Err(e) => tracing::warn!(repo = %repo.key, error = %e, "cannot re-create corrupted mirror"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_jitter_and_back_off_exponentially() {
        let config = PollerConfig::new(GitSettings::default());
        for _ in 0..50 {
            let d = config.next_delay(Duration::from_secs(60), 0);
            assert!(
                d >= Duration::from_secs(54) && d <= Duration::from_secs(66),
                "{d:?}"
            );
        }
        let within = |d: Duration, secs: f64| {
            let s = d.as_secs_f64();
            s >= secs * 0.9 - 1e-9 && s <= secs * 1.1 + 1e-9
        };
        assert!(within(config.next_delay(Duration::from_secs(60), 1), 5.0));
        assert!(within(config.next_delay(Duration::from_secs(60), 2), 10.0));
        assert!(within(config.next_delay(Duration::from_secs(60), 4), 40.0));
        assert!(within(
            config.next_delay(Duration::from_secs(60), 30),
            600.0
        ));
    }
}
