//! Probes shared through the store: registries of several processes over one store (a real
//! SQLite file; a real PostgreSQL database) probe each registered kubesim cluster once per
//! interval between them, show each other's results and registrations, take over the probes
//! of a replica that died, and never both probe one cluster in one round — over a thousand
//! rounds of a simulated clock.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim::{Cluster, ClusterConfig};
use wardn::clusters::connect::Connectivity;
use wardn::clusters::probes::{ProbePreference, ProbeSchedule};
use wardn::clusters::registry::{RegisterRequest, Registry, UpdateRequest};
use wardn::seal::Sealer;
use wardn::store::Store;

use support::postgres::Postgres;
use support::{Backend, TestDb};

/// Registries of `replicas` processes over one store, and `clusters` kubesim clusters
/// registered through the first (`c0`, `c1`, …).
struct Fleet {
    registries: Vec<Arc<Registry>>,
    clusters: Vec<Cluster>,
    db: TestDb,
}

async fn fleet(backend: &Backend<'_>, case: &str, replicas: usize, clusters: usize) -> Fleet {
    kubesim::install_crypto_provider();
    let db = backend.database(case);
    let sealer = Sealer::new(&support::server::KEY, None);
    let mut registries = Vec::new();
    for _ in 0..replicas {
        let store = Store::connect(&db.url).await.unwrap();
        registries.push(Arc::new(Registry::new(
            store,
            sealer.clone(),
            Duration::from_secs(5),
        )));
    }
    let mut sims = Vec::new();
    for index in 0..clusters {
        let name = format!("c{index}");
        let cluster = Cluster::start(ClusterConfig {
            name: name.clone(),
            nodes: 1 + index,
            ..ClusterConfig::default()
        })
        .await
        .unwrap();
        registries[0]
            .register("admin", request(&name, &cluster))
            .await
            .unwrap();
        sims.push(cluster);
    }
    Fleet {
        registries,
        clusters: sims,
        db,
    }
}

fn request(name: &str, cluster: &Cluster) -> RegisterRequest {
    RegisterRequest {
        name: name.to_string(),
        server_url: cluster.url(),
        kubeconfig: cluster.kubeconfig(),
        namespaces: Vec::new(),
        allow_insecure_tls: false,
    }
}

fn everyone() -> ProbePreference {
    Arc::new(|_: &str| true)
}

const SECOND: i64 = 1000;

/// One round of every registry at `now_ms`, at the same time: the clusters each probed.
async fn round_of_all(
    fleet: &Fleet,
    schedule: &ProbeSchedule,
    prefers: &ProbePreference,
    now_ms: i64,
) -> Vec<Vec<String>> {
    let rounds = fleet
        .registries
        .iter()
        .map(|registry| registry.probe_due(schedule, prefers, now_ms));
    futures_util::future::join_all(rounds)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// Each cluster's connectivity as `registry` lists it.
async fn seen_by(registry: &Registry) -> BTreeMap<String, (Connectivity, Option<u64>)> {
    registry
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|view| (view.name, (view.status.status, view.status.node_count)))
        .collect()
}

async fn shared_rounds(backend: Backend<'_>) {
    let fleet = fleet(&backend, "shared_rounds", 3, 4).await;
    let schedule = ProbeSchedule::every(Duration::from_secs(30));
    let everyone = everyone();
    let t0 = 1_000_000 * SECOND;

    // Three server replicas' rounds at the same moment: each cluster probed once, by one.
    let probed = round_of_all(&fleet, &schedule, &everyone, t0).await;
    let mut all: Vec<String> = probed.concat();
    all.sort();
    assert_eq!(all, ["c0", "c1", "c2", "c3"], "{probed:?}");
    // A second round within the interval probes nothing.
    let again = round_of_all(&fleet, &schedule, &everyone, t0 + 20 * SECOND).await;
    assert!(again.iter().all(Vec::is_empty), "{again:?}");
    // …but shows every replica every result, whoever took it (and the registrations made
    // through the first replica).
    for registry in &fleet.registries {
        let seen = seen_by(registry).await;
        let expected: BTreeMap<String, (Connectivity, Option<u64>)> = (0..4)
            .map(|i| {
                (
                    format!("c{i}"),
                    (Connectivity::Connected, Some(i as u64 + 1)),
                )
            })
            .collect();
        assert_eq!(seen, expected);
    }
    // An interval on, each is probed once again.
    let probed = round_of_all(&fleet, &schedule, &everyone, t0 + 30 * SECOND).await;
    assert_eq!(probed.concat().len(), 4, "{probed:?}");

    // A cluster going away: whoever probes it records the cause, and every replica shows it.
    fleet.clusters[3].stop().await;
    round_of_all(&fleet, &schedule, &everyone, t0 + 60 * SECOND).await;
    round_of_all(&fleet, &schedule, &everyone, t0 + 61 * SECOND).await;
    for registry in &fleet.registries {
        let view = registry.get("c3").await.unwrap();
        assert_eq!(view.status.status, Connectivity::Disconnected, "{view:?}");
        assert!(view.status.error.is_some_and(|e| !e.is_empty()));
    }

    // A registration changed through the second replica: the others drop the old result at
    // their next round, and the changed cluster is probed at once (not an interval later).
    fleet.registries[1]
        .update(
            "admin",
            "c3",
            UpdateRequest {
                server_url: Some(fleet.clusters[2].url()),
                kubeconfig: Some(fleet.clusters[2].kubeconfig()),
                ..UpdateRequest::default()
            },
        )
        .await
        .unwrap();
    let probed = round_of_all(&fleet, &schedule, &everyone, t0 + 62 * SECOND).await;
    assert_eq!(probed.concat(), ["c3"], "{probed:?}");
    round_of_all(&fleet, &schedule, &everyone, t0 + 63 * SECOND).await;
    for registry in &fleet.registries {
        let view = registry.get("c3").await.unwrap();
        assert_eq!(view.server_url, fleet.clusters[2].url());
        assert_eq!(
            (view.status.status, view.status.node_count),
            (Connectivity::Connected, Some(3))
        );
    }

    // A cluster registered through the third replica and one removed through the first:
    // every replica's list follows at its next round.
    let extra = Cluster::start(ClusterConfig {
        name: "extra".into(),
        ..ClusterConfig::default()
    })
    .await
    .unwrap();
    fleet.registries[2]
        .register("admin", request("extra", &extra))
        .await
        .unwrap();
    fleet.registries[0].remove("admin", "c0").await.unwrap();
    // Before any round, each replica answers for the new cluster (from the store) and no
    // longer for the removed one when asked by name; their lists follow at the next round.
    for registry in &fleet.registries {
        let view = registry.get("extra").await.unwrap();
        assert_eq!(view.server_url, extra.url());
        assert!(
            view.status
                .error
                .is_some_and(|e| e.contains("not probed yet"))
        );
    }
    assert!(fleet.registries[0].get("c0").await.is_err());
    round_of_all(&fleet, &schedule, &everyone, t0 + 64 * SECOND).await;
    round_of_all(&fleet, &schedule, &everyone, t0 + 65 * SECOND).await;
    for registry in &fleet.registries {
        let names: Vec<String> = seen_by(registry).await.into_keys().collect();
        assert_eq!(names, ["c1", "c2", "c3", "extra"]);
        assert_eq!(
            registry.get("extra").await.unwrap().status.status,
            Connectivity::Connected
        );
        assert!(registry.get("c0").await.is_err());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_a_sqlite_file_probe_each_cluster_once_and_share_the_results() {
    shared_rounds(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sharing_postgres_probe_each_cluster_once_and_share_the_results() {
    let pg = Postgres::start();
    shared_rounds(Backend::Postgres(&pg)).await;
}

/// A xorshift generator: the rounds' order and the clock's steps, reproducible.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Which replica owns each cluster at each moment of the simulated clock, as a sharded
/// fleet's Leases would say: cluster `cN` is replica `N % 3`'s while it lives; when it dies,
/// nobody owns its clusters for [`UNOWNED_MS`] (its Lease has not expired yet), then replica 1.
struct Ownership {
    clock: std::sync::atomic::AtomicI64,
    alive: parking_lot::Mutex<[bool; 3]>,
    died_at: parking_lot::Mutex<Option<i64>>,
}

/// How long a dead replica's clusters stay unowned in [`a_thousand_rounds`].
const UNOWNED_MS: i64 = 100 * SECOND;

impl Ownership {
    fn home(cluster: &str) -> usize {
        cluster[1..].parse::<usize>().unwrap() % 3
    }

    fn owner(&self, cluster: &str) -> Option<usize> {
        let home = Ownership::home(cluster);
        if self.alive.lock()[home] {
            return Some(home);
        }
        let now = self.clock.load(std::sync::atomic::Ordering::SeqCst);
        let died_at = (*self.died_at.lock()).unwrap_or(now);
        (now - died_at >= UNOWNED_MS).then_some(1)
    }
}

/// A sharded fleet of three over a thousand rounds of a simulated clock (steps of 1–10 s, each
/// live replica taking a round, in a random order). While a cluster has a live owner, only the
/// owner probes it, no more than the interval plus half a tick apart. No two probes of one
/// cluster are ever closer than the interval less half a tick. Replica 0 dies a third of the way
/// in: while its cluster is unowned, the others take its probes over once they are an interval
/// overdue; then its new owner does. Near the end it comes back and takes its own again.
async fn a_thousand_rounds(backend: Backend<'_>) {
    use std::sync::atomic::Ordering::SeqCst;
    let fleet = fleet(&backend, "thousand_rounds", 3, 3).await;
    let schedule = ProbeSchedule::every(Duration::from_secs(30));
    let interval = 30 * SECOND;
    let half_tick = 5 * SECOND;
    let ownership = Arc::new(Ownership {
        clock: std::sync::atomic::AtomicI64::new(5_000_000 * SECOND),
        alive: parking_lot::Mutex::new([true; 3]),
        died_at: parking_lot::Mutex::new(None),
    });
    let preferences: Vec<ProbePreference> = (0..3)
        .map(|replica| {
            let ownership = Arc::clone(&ownership);
            Arc::new(move |cluster: &str| ownership.owner(cluster) == Some(replica))
                as ProbePreference
        })
        .collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut last: BTreeMap<String, (i64, usize)> = BTreeMap::new();
    let mut probes_by = [0usize; 3];
    let mut unowned_takeovers = 0;
    for step in 0..1000 {
        let step_ms = (1 + rng.below(10) as i64) * SECOND;
        let now = ownership.clock.fetch_add(step_ms, SeqCst) + step_ms;
        if step == 333 {
            ownership.alive.lock()[0] = false;
            *ownership.died_at.lock() = Some(now);
        }
        if step == 900 {
            ownership.alive.lock()[0] = true;
        }
        let alive = *ownership.alive.lock();
        let mut order: Vec<usize> = (0..3).filter(|&r| alive[r]).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for replica in order {
            let probed = fleet.registries[replica]
                .probe_due(&schedule, &preferences[replica], now)
                .await
                .unwrap();
            for cluster in probed {
                probes_by[replica] += 1;
                let owned = ownership.owner(&cluster) == Some(replica);
                if !owned {
                    unowned_takeovers += 1;
                }
                if let Some(&(previous, by)) = last.get(&cluster) {
                    let gap = now - previous;
                    // An owner probes once due; anyone else only an interval after that.
                    let earliest = match owned {
                        true => interval - half_tick,
                        false => 2 * interval - half_tick,
                    };
                    assert!(
                        gap >= earliest,
                        "step {step}: {cluster} probed by {replica} (owner: {owned}) {gap} ms after {by}"
                    );
                    // An owner that probed last probes again within a tick of it falling due.
                    if owned && by == replica {
                        assert!(
                            gap <= interval + half_tick,
                            "step {step}: {cluster} unprobed by its owner for {gap} ms"
                        );
                    }
                } else {
                    assert!(
                        owned,
                        "step {step}: first probe of {cluster} by a non-owner"
                    );
                }
                last.insert(cluster, (now, replica));
            }
        }
        // Nothing is ever left unprobed longer than an unowned cluster may be.
        for (cluster, &(at, _)) in &last {
            assert!(
                now - at <= 2 * interval + half_tick,
                "step {step}: {cluster} last probed {} ms ago",
                now - at
            );
        }
    }
    assert!(probes_by.iter().all(|&n| n > 20), "{probes_by:?}");
    assert!(
        unowned_takeovers >= 1,
        "the unowned cluster's probes were never taken over"
    );
    assert_eq!(last.len(), 3);
    // Every replica, even the one that was gone, shows every cluster connected.
    for registry in &fleet.registries {
        registry
            .probe_due(&schedule, &preferences[0], ownership.clock.load(SeqCst))
            .await
            .unwrap();
        let seen = seen_by(registry).await;
        assert_eq!(seen.len(), 3);
        assert!(
            seen.values()
                .all(|(status, _)| *status == Connectivity::Connected),
            "{seen:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_rounds_of_a_sharded_fleet_on_sqlite() {
    a_thousand_rounds(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_rounds_of_a_sharded_fleet_on_postgres() {
    let pg = Postgres::start();
    a_thousand_rounds(Backend::Postgres(&pg)).await;
}

/// A tampered or corrupt stored result is skipped (logged), never fatal: the round goes on, the
/// other results show, and the next probe's result replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_stored_result_is_skipped_and_replaced() {
    let fleet = fleet(&Backend::Sqlite, "corrupt", 2, 2).await;
    let schedule = ProbeSchedule::every(Duration::from_secs(30));
    let everyone = everyone();
    let t0 = 7_000_000 * SECOND;
    round_of_all(&fleet, &schedule, &everyone, t0).await;
    support::execute(
        &fleet.db.url,
        "UPDATE cluster_probes SET status = '{\"status\": 7', probed_ms = probed_ms + 1 \
         WHERE name = 'c0'",
    )
    .await;
    let fresh = Arc::new(Registry::new(
        Store::connect(&fleet.db.url).await.unwrap(),
        Sealer::new(&support::server::KEY, None),
        Duration::from_secs(5),
    ));
    let probed = fresh
        .probe_due(&schedule, &everyone, t0 + SECOND)
        .await
        .unwrap();
    assert!(probed.is_empty(), "{probed:?}");
    let seen = seen_by(&fresh).await;
    assert_eq!(
        seen["c0"],
        (Connectivity::Disconnected, None),
        "not probed yet"
    );
    assert_eq!(seen["c1"], (Connectivity::Connected, Some(2)));
    let probed = fresh
        .probe_due(&schedule, &everyone, t0 + 30 * SECOND)
        .await
        .unwrap();
    assert_eq!(probed, ["c0", "c1"]);
    assert_eq!(
        seen_by(&fresh).await["c0"],
        (Connectivity::Connected, Some(1))
    );
}
