//! File-system watching with debounce, shared by directory sources and the `--apps` directory:
//! events are collapsed into bursts, so a burst of writes (an editor saving, `git checkout`) is
//! handled once.
//!
//! Every watch goes through one process-wide `notify` watcher: Linux limits inotify instances
//! per user (128 by default) but not watches (hundreds of thousands), so a watcher per
//! directory App would stop a daemon with a hundred Directory Apps from starting.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::Watcher;
use parking_lot::Mutex;
use tokio::sync::mpsc;

/// How long file events are collected before a burst is reported.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Who wants events under which path.
struct Subscriber {
    path: PathBuf,
    recursive: bool,
    events: mpsc::UnboundedSender<()>,
}

impl Subscriber {
    /// Whether an event on `changed` concerns this subscriber.
    fn wants(&self, changed: &Path) -> bool {
        changed == self.path
            || if self.recursive {
                changed.starts_with(&self.path)
            } else {
                changed.parent() == Some(self.path.as_path())
            }
    }
}

type Subscribers = Arc<Mutex<HashMap<u64, Subscriber>>>;

/// The process-wide watcher, the paths it watches (with how many subscribers and whether
/// recursively) and the subscribers its callback dispatches to.
struct Shared {
    watcher: notify::RecommendedWatcher,
    watched: HashMap<PathBuf, (usize, bool)>,
    subscribers: Subscribers,
    next_id: u64,
}

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

fn mode(recursive: bool) -> notify::RecursiveMode {
    if recursive {
        notify::RecursiveMode::Recursive
    } else {
        notify::RecursiveMode::NonRecursive
    }
}

impl Shared {
    fn new() -> Result<Shared, notify::Error> {
        let subscribers: Subscribers = Arc::default();
        let dispatch = Arc::clone(&subscribers);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            // Reads (opening a file to render it) are not changes.
            if event.kind.is_access() {
                return;
            }
            for subscriber in dispatch.lock().values() {
                if event.paths.iter().any(|p| subscriber.wants(p)) {
                    // The receiver is gone only while its watch is being dropped.
                    let _ = subscriber.events.send(());
                }
            }
        })?;
        Ok(Shared {
            watcher,
            watched: HashMap::new(),
            subscribers,
            next_id: 0,
        })
    }

    /// Makes sure `path` is watched, recursively when `recursive` (upgrading a shallow watch).
    fn add_path(&mut self, path: &Path, recursive: bool) -> Result<(), notify::Error> {
        match self.watched.get_mut(path) {
            Some((count, deep)) if *deep || !recursive => {
                *count += 1;
                Ok(())
            }
            Some((count, deep)) => {
                self.watcher.unwatch(path)?;
                self.watcher.watch(path, mode(true))?;
                *count += 1;
                *deep = true;
                Ok(())
            }
            None => {
                self.watcher.watch(path, mode(recursive))?;
                self.watched.insert(path.to_path_buf(), (1, recursive));
                Ok(())
            }
        }
    }

    /// Drops one subscriber's interest in `path`; unwatches it when nobody is left.
    fn remove_path(&mut self, path: &Path) {
        let Some((count, _)) = self.watched.get_mut(path) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.watched.remove(path);
            if let Err(e) = self.watcher.unwatch(path) {
                tracing::debug!(path = %path.display(), error = %e, "unwatch failed");
            }
        }
    }
}

/// A running watch; dropping it stops watching.
pub struct Debounced {
    id: u64,
    path: PathBuf,
    events: mpsc::UnboundedReceiver<()>,
}

/// Watches `path` (recursively when `recursive`).
pub fn watch(path: &Path, recursive: bool) -> Result<Debounced, notify::Error> {
    let mut shared = SHARED.lock();
    let shared = match &mut *shared {
        Some(shared) => shared,
        none => none.insert(Shared::new()?),
    };
    shared.add_path(path, recursive)?;
    let (sender, events) = mpsc::unbounded_channel();
    let id = shared.next_id;
    shared.next_id += 1;
    shared.subscribers.lock().insert(
        id,
        Subscriber {
            path: path.to_path_buf(),
            recursive,
            events: sender,
        },
    );
    Ok(Debounced {
        id,
        path: path.to_path_buf(),
        events,
    })
}

impl Drop for Debounced {
    fn drop(&mut self) {
        if let Some(shared) = SHARED.lock().as_mut() {
            shared.subscribers.lock().remove(&self.id);
            shared.remove_path(&self.path);
        }
    }
}

impl Debounced {
    /// Waits for the next burst of events: the first event, then [`DEBOUNCE`] for the rest of
    /// the burst. `false` when the watcher is gone.
    pub async fn next_burst(&mut self) -> bool {
        if self.events.recv().await.is_none() {
            return false;
        }
        tokio::time::sleep(DEBOUNCE).await;
        while self.events.try_recv().is_ok() {}
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscribers_get_events_under_their_path_only() {
        let (events, _rx) = mpsc::unbounded_channel();
        let deep = Subscriber {
            path: PathBuf::from("/srv/a"),
            recursive: true,
            events: events.clone(),
        };
        assert!(deep.wants(Path::new("/srv/a")));
        assert!(deep.wants(Path::new("/srv/a/x/y.yaml")));
        assert!(!deep.wants(Path::new("/srv/ab/y.yaml")));
        let shallow = Subscriber {
            path: PathBuf::from("/srv/a"),
            recursive: false,
            events,
        };
        assert!(shallow.wants(Path::new("/srv/a/y.yaml")));
        assert!(!shallow.wants(Path::new("/srv/a/x/y.yaml")));
    }

    /// More watches than Linux's default inotify instance limit (128 per user), each woken
    /// only by changes under its own directory.
    #[tokio::test]
    async fn many_watches_share_one_watcher_and_see_only_their_own_changes() {
        let root = tempfile::tempdir().unwrap();
        let mut watches = Vec::new();
        for i in 0..200 {
            let dir = root.path().join(format!("app-{i}"));
            std::fs::create_dir_all(dir.join("sub")).unwrap();
            watches.push((dir.clone(), watch(&dir, true).unwrap()));
        }
        // Setting up recursive watches may itself report events; start from quiet channels.
        tokio::time::sleep(DEBOUNCE * 2).await;
        for (_, w) in &mut watches {
            while w.events.try_recv().is_ok() {}
        }
        std::fs::write(watches[150].0.join("sub/file.yaml"), "a: 1\n").unwrap();
        assert!(watches[150].1.next_burst().await);
        // Nobody else was woken (their channels are empty even after the debounce).
        for (i, (_, w)) in watches.iter_mut().enumerate() {
            if i != 150 {
                assert!(w.events.try_recv().is_err(), "watch {i} was woken");
            }
        }
        // A dropped watch stops; the others keep working.
        let (dir, dropped) = watches.remove(0);
        drop(dropped);
        std::fs::write(dir.join("x.yaml"), "b: 2\n").unwrap();
        std::fs::write(watches[0].0.join("y.yaml"), "c: 3\n").unwrap();
        assert!(watches[0].1.next_burst().await);
    }
}
