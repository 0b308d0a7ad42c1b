//! The scheduler: a work queue of App keys drained by a bounded pool of workers. A key is
//! reconciled by at most one worker at a time; a key enqueued while it is queued is coalesced,
//! and one enqueued while it runs is run again afterwards, so no wake-up is lost. Delayed
//! wake-ups ([`Scheduler::enqueue_after`]: retry backoff, periodic resync, debounced drift
//! events) keep the earliest pending deadline per key.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

struct State<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    running: HashSet<K>,
    dirty: HashSet<K>,
    /// The pending delayed wake-up of each key (its earliest deadline).
    delayed: HashMap<K, Instant>,
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
                delayed: HashMap::new(),
                closed: false,
            })),
            notify: Arc::new(Notify::new()),
        }
    }

    /// Asks for a reconcile of `key`: queued once however often it is asked; if it is running,
    /// it runs again when the current run ends.
    pub fn enqueue(&self, key: K) {
        let mut s = self.state.lock();
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

    /// Asks for a reconcile of `key` in `delay` (then as [`Scheduler::enqueue`]). A key has at
    /// most one pending delayed wake-up, at the earliest deadline asked for: a later deadline
    /// is dropped because the pass at the earlier one reconciles the then-current state, and
    /// whoever asked again after that pass asks afresh. Dropped once the scheduler is closed.
    pub fn enqueue_after(&self, key: K, delay: Duration) {
        let deadline = Instant::now() + delay;
        {
            let mut s = self.state.lock();
            if s.closed || s.delayed.get(&key).is_some_and(|d| *d <= deadline) {
                return;
            }
            s.delayed.insert(key.clone(), deadline);
        }
        // The timer holds the state weakly, so a dropped scheduler ends it at its deadline.
        let state = Arc::downgrade(&self.state);
        let notify = Arc::downgrade(&self.notify);
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            Scheduler::fire(state, notify, key, deadline);
        });
    }

    /// A delayed wake-up's deadline passed: enqueue `key` unless an earlier wake-up replaced
    /// this one (that one enqueues it) or the scheduler is gone.
    fn fire(state: Weak<Mutex<State<K>>>, notify: Weak<Notify>, key: K, deadline: Instant) {
        let (Some(state), Some(notify)) = (state.upgrade(), notify.upgrade()) else {
            return;
        };
        let this = Scheduler { state, notify };
        {
            let mut s = this.state.lock();
            if s.delayed.get(&key) != Some(&deadline) {
                return;
            }
            s.delayed.remove(&key);
        }
        this.enqueue(key);
    }

    /// How many keys have a delayed wake-up pending.
    pub fn delayed_count(&self) -> usize {
        self.state.lock().delayed.len()
    }

    /// How many keys wait for a worker (the queue depth metric).
    pub fn queue_depth(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Stops the workers once the queue is drained.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    fn take(&self) -> Option<K> {
        let mut s = self.state.lock();
        let key = s.queue.pop_front()?;
        s.queued.remove(&key);
        s.running.insert(key.clone());
        Some(key)
    }

    /// Takes the next key as a worker would and finishes it at once (tests of code that
    /// enqueues, without running workers).
    #[cfg(test)]
    pub(crate) fn take_for_test(&self) -> Option<K> {
        let key = self.take()?;
        self.finish(&key);
        Some(key)
    }

    fn finish(&self, key: &K) {
        let mut s = self.state.lock();
        s.running.remove(key);
        if s.dirty.remove(key) && s.queued.insert(key.clone()) {
            s.queue.push_back(key.clone());
            drop(s);
            self.notify.notify_one();
        }
    }

    fn is_closed(&self) -> bool {
        let s = self.state.lock();
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
                let gate = gate.lock().take();
                let started = started_tx.clone();
                async move {
                    r.lock().push(key);
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
        assert_eq!(*runs.lock(), ["a", "a"]);
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
                        let mut g = a.lock();
                        g.0 += 1;
                        g.1 = g.1.max(g.0);
                        let per = g.2.entry(key).or_default();
                        *per += 1;
                        if *per > 1 {
                            g.3 = true;
                        }
                    }
                    tokio::task::yield_now().await;
                    let mut g = a.lock();
                    g.0 -= 1;
                    if let Some(per) = g.2.get_mut(&key) {
                        *per -= 1;
                    }
                }
            })
            .await;
        let g = active.lock();
        assert!(g.1 <= 3, "at most 3 workers at once, saw {}", g.1);
        assert!(!g.3, "a key ran twice at once");
        assert_eq!(g.0, 0);
    }

    /// Waits (polling, no timing assertion) until `sched` has a queued key.
    async fn until_queued(sched: &Scheduler<&'static str>) {
        while sched.queue_depth() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn delayed_wake_up_fires_once_at_the_earliest_deadline() {
        let sched: Scheduler<&'static str> = Scheduler::new();
        sched.enqueue_after("a", Duration::from_secs(3600));
        assert_eq!(sched.delayed_count(), 1);
        assert_eq!(sched.queue_depth(), 0, "not before its deadline");
        sched.enqueue_after("a", Duration::from_millis(20));
        sched.enqueue_after("a", Duration::from_secs(1800));
        assert_eq!(sched.delayed_count(), 1, "one pending wake-up per key");
        until_queued(&sched).await;
        assert_eq!(
            sched.delayed_count(),
            0,
            "the earliest deadline fired; the later ones were dropped"
        );
        assert_eq!(sched.take_for_test(), Some("a"));
        assert_eq!(sched.queue_depth(), 0);
    }

    #[tokio::test]
    async fn delayed_wake_up_while_running_reruns_and_is_dropped_after_close() {
        let sched: Scheduler<&'static str> = Scheduler::new();
        sched.enqueue("a");
        assert_eq!(sched.take(), Some("a"));
        sched.enqueue_after("a", Duration::from_millis(10));
        while sched.delayed_count() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            sched.queue_depth(),
            0,
            "running: marked dirty, not queued twice"
        );
        sched.finish(&"a");
        assert_eq!(
            sched.queue_depth(),
            1,
            "the wake-up during the run is not lost"
        );
        assert_eq!(sched.take_for_test(), Some("a"));
        sched.close();
        sched.enqueue_after("b", Duration::ZERO);
        assert_eq!(
            sched.delayed_count(),
            0,
            "closed: delayed wake-ups are dropped"
        );
    }
}
