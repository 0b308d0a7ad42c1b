//! File-system watching with debounce, shared by directory sources and the `--apps` directory:
//! a `notify` watcher whose events are collapsed into bursts, so a burst of writes (an editor
//! saving, `git checkout`) is handled once.

use std::path::Path;
use std::time::Duration;

use notify::Watcher;
use tokio::sync::mpsc;

/// How long file events are collected before a burst is reported.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// A running watch; dropping it stops watching.
pub struct Debounced {
    _watcher: notify::RecommendedWatcher,
    events: mpsc::UnboundedReceiver<()>,
}

/// Watches `path` (recursively when `recursive`).
pub fn watch(path: &Path, recursive: bool) -> Result<Debounced, notify::Error> {
    let (events_tx, events) = mpsc::unbounded_channel::<()>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            // The receiver is gone only when the watch is being dropped.
            let _ = events_tx.send(());
        }
    })?;
    let mode = if recursive {
        notify::RecursiveMode::Recursive
    } else {
        notify::RecursiveMode::NonRecursive
    };
    watcher.watch(path, mode)?;
    Ok(Debounced {
        _watcher: watcher,
        events,
    })
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
