//! The scheduler: a work queue of App keys drained by a bounded pool of workers. A key is
//! reconciled by at most one worker at a time; a key enqueued while it is queued is coalesced,
//! and one enqueued while it runs is run again afterwards, so no wake-up is lost.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

struct State<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    running: HashSet<K>,
    dirty: HashSet<K>,
    closed: bool,
}

/// A deduplicating work queue with per-key mutual exclusion. Cheap to clone (shared).
pub struct Scheduler<K> {
    state: Arc<Mutex<State<K>>>,
    notify: Arc<Notify>,
}

impl<K> Clone for Scheduler<K> {
    fn clone(&self) -> Self {
        Scheduler {
            state: self.state.clone(),
            notify: self.notify.clone(),
        }
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> Default for Scheduler<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> Scheduler<K> {
    /// An empty, open queue.
    pub fn new() -> Self {
        Scheduler {
            state: Arc::new(Mutex::new(State {
                queue: VecDeque::new(),
                queued: HashSet::new(),
                running: HashSet::new(),
                dirty: HashSet::new(),
                closed: false,
            })),
            notify: Arc::new(Notify::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // A worker panicking mid-update cannot leave the sets inconsistent (each update is a
        // few set operations), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks for a reconcile of `key`: queued once however often it is asked; if it is running,
    /// it runs again when the current run ends.
    pub fn enqueue(&self, key: K) {
        let mut s = self.lock();
        if s.running.contains(&key) {
            s.dirty.insert(key);
            return;
        }
        if s.queued.insert(key.clone()) {
            s.queue.push_back(key);
            drop(s);
            self.notify.notify_one();
        }
    }

    /// How many keys wait for a worker (the queue depth metric).
    pub fn queue_depth(&self) -> usize {
        self.lock().queue.len()
    }

    /// Stops the workers once the queue is drained.
    pub fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    fn take(&self) -> Option<K> {
        let mut s = self.lock();
        let key = s.queue.pop_front()?;
        s.queued.remove(&key);
        s.running.insert(key.clone());
        Some(key)
    }

    fn finish(&self, key: &K) {
        let mut s = self.lock();
        s.running.remove(key);
        if s.dirty.remove(key) && s.queued.insert(key.clone()) {
            s.queue.push_back(key.clone());
            drop(s);
            self.notify.notify_one();
        }
    }

    fn is_closed(&self) -> bool {
        let s = self.lock();
        s.closed && s.queue.is_empty() && s.dirty.is_empty()
    }

    /// Runs `workers` workers calling `work(key)` until [`Scheduler::close`]; returns when all
    /// have stopped.
    pub async fn run<F, Fut>(&self, workers: usize, work: F)
    where
        F: Fn(K) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let work = Arc::new(work);
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| {
                let this = self.clone();
                let work = work.clone();
                tokio::spawn(async move { this.worker(work.as_ref()).await })
            })
            .collect();
        for h in handles {
            // A panicking work item ends only its worker; the others keep draining.
            let _ = h.await;
        }
    }

    async fn worker<F, Fut>(&self, work: &F)
    where
        F: Fn(K) -> Fut,
        Fut: Future<Output = ()>,
    {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before looking at the queue, so an enqueue in between wakes us.
            notified.as_mut().enable();
            if let Some(key) = self.take() {
                work(key.clone()).await;
                self.finish(&key);
                continue;
            }
            if self.is_closed() {
                self.notify.notify_waiters();
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use tokio::sync::{mpsc, oneshot};

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn coalesces_and_never_loses_a_wake_up_while_running() {
        let sched: Scheduler<&'static str> = Scheduler::new();
        let runs = Arc::new(Mutex::new(Vec::new()));
        let (started_tx, mut started_rx) = mpsc::unbounded_channel::<()>();
        let (gate_tx, gate_rx) = oneshot::channel::<()>();
        let gate = Arc::new(Mutex::new(Some(gate_rx)));
        let r = runs.clone();
        let s2 = sched.clone();
        let pool = tokio::spawn(async move {
            s2.run(2, move |key| {
                let r = r.clone();
                let gate = gate.lock().unwrap().take();
                let started = started_tx.clone();
                async move {
                    r.lock().unwrap().push(key);
                    let _ = started.send(());
                    if let Some(g) = gate {
                        let _ = g.await;
                    }
                }
            })
            .await
        });
        sched.enqueue("a");
        started_rx.recv().await.unwrap();
        // "a" is running (blocked on the gate): these must coalesce into exactly one re-run.
        for _ in 0..5 {
            sched.enqueue("a");
        }
        gate_tx.send(()).unwrap();
        started_rx.recv().await.unwrap();
        sched.close();
        pool.await.unwrap();
        assert_eq!(*runs.lock().unwrap(), ["a", "a"]);
        assert_eq!(sched.queue_depth(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn bounded_pool_and_one_run_per_key() {
        let sched: Scheduler<u32> = Scheduler::new();
        let active = Arc::new(Mutex::new((
            0usize,
            0usize,
            HashMap::<u32, usize>::new(),
            false,
        )));
        for k in 0..20 {
            sched.enqueue(k % 5);
        }
        assert_eq!(sched.queue_depth(), 5, "duplicates coalesce while queued");
        let a = active.clone();
        sched.close();
        sched
            .run(3, move |key| {
                let a = a.clone();
                async move {
                    {
                        let mut g = a.lock().unwrap();
                        g.0 += 1;
                        g.1 = g.1.max(g.0);
                        let per = g.2.entry(key).or_default();
                        *per += 1;
                        if *per > 1 {
                            g.3 = true;
                        }
                    }
                    tokio::task::yield_now().await;
                    let mut g = a.lock().unwrap();
                    g.0 -= 1;
                    if let Some(per) = g.2.get_mut(&key) {
                        *per -= 1;
                    }
                }
            })
            .await;
        let g = active.lock().unwrap();
        assert!(g.1 <= 3, "at most 3 workers at once, saw {}", g.1);
        assert!(!g.3, "a key ran twice at once");
        assert_eq!(g.0, 0);
    }
}
