//! Scale-out (`--shards auto`): replicas hold Leases in the management cluster (kubesim),
//! share the destination clusters in balanced shares, and write only under claims published
//! in their Leases. In-process: membership, claims and fencing against kubesim's Leases,
//! checked with the real kubectl. As processes: three replicas on one throwaway PostgreSQL
//! spread the Apps, a Held plan approved through a replica that does not own it is applied
//! once by its owner (as are a sync, a refresh, a diff and an unpin), each replica loads only
//! the Apps of its own clusters, and after one replica is SIGKILLed its clusters move and
//! every App converges, with no object written by two replicas out of turn (kubesim's write
//! log names each request's replica); each replica holds only its share's statuses and lists
//! every App's from the store; a promotion whose source another replica renders pins the
//! digest the source's Pods run, and an automatic one is made once, by the target's owner.

mod common;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::PostParams;
use kubesim::{Cluster, ClusterConfig};
use reqwest::Client;
use serde_json::{Value, json};
use support::postgres::Postgres;
use support::replica::Process;
use support::running::login;
use support::workloads::{deployed_image, pod_digests, write_workload};
use wardn::shard::claims::CLAIMS_ANNOTATION;
use wardn::shard::membership::{LEASE_LABEL, Membership, ShardConfig, ShardError};
use wardn::shard::{balance, rendezvous};

const PASSWORD: &str = "correct horse battery staple";

/// Polls the async `check` every 200 ms until it holds (three minutes at most).
async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..900 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out waiting for {what}");
}

async fn sim(name: &str, namespaces: &[&str]) -> Cluster {
    kubesim::install_crypto_provider();
    Cluster::start(ClusterConfig {
        name: name.to_string(),
        namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
        ready_delay: Duration::ZERO,
        ..ClusterConfig::default()
    })
    .await
    .unwrap()
}

/// The balanced assignment of `clusters` over `replicas`: replica → its clusters.
fn balanced(replicas: &[&str], clusters: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut shares: BTreeMap<String, Vec<String>> = replicas
        .iter()
        .map(|r| (r.to_string(), Vec::new()))
        .collect();
    let assigned = balance::assign(
        replicas.iter().copied(),
        clusters.iter().map(String::as_str),
    );
    for (cluster, replica) in assigned {
        shares.entry(replica).or_default().push(cluster);
    }
    shares
}

/// The share of `replica` in [`balanced`].
fn share_of(replicas: &[&str], clusters: &[String], replica: &str) -> BTreeSet<String> {
    balanced(replicas, clusters)[replica]
        .iter()
        .cloned()
        .collect()
}

/// Tells each of `memberships` that its Apps deploy to `clusters`.
fn set_clusters(memberships: &[&Membership], clusters: &[String]) {
    for m in memberships {
        m.set_clusters(clusters.iter().cloned().collect());
    }
}

/// The clusters (of `clusters`) `membership` may write to now.
fn owned(membership: &Membership, clusters: &[String]) -> BTreeSet<String> {
    clusters
        .iter()
        .filter(|c| membership.fence(c).is_ok())
        .cloned()
        .collect()
}

/// Replicas `ids` joining the fleet of `kube_config` with a Lease of `lease_secs` seconds.
async fn join<const N: usize>(
    kube_config: &kube::Config,
    lease_secs: u64,
    ids: [&str; N],
) -> [Arc<Membership>; N] {
    let mut members = Vec::new();
    for id in ids {
        let config = ShardConfig::new(id, "wardn", Duration::from_secs(lease_secs)).unwrap();
        members.push(
            Membership::start(kube_config.clone(), config)
                .await
                .unwrap(),
        );
    }
    match members.try_into() {
        Ok(members) => members,
        Err(_) => unreachable!("one membership per id"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_on_kubesim_share_clusters_fence_writes_and_refuse_a_duplicate_replica() {
    let mgmt = common::start(&["wardn"]).await;
    let client = mgmt.cluster.client().await.unwrap();
    let kube_config = mgmt.cluster.config().await.unwrap();
    let config = |id: &str| ShardConfig::new(id, "wardn", Duration::from_secs(3)).unwrap();
    let [a, b] = join(&kube_config, 3, ["a", "b"]).await;
    let clusters: Vec<String> = (0..40).map(|i| format!("cluster-{i}")).collect();
    set_clusters(&[&a, &b], &clusters);

    // Both settle and see each other; every cluster has exactly one writer, the one the
    // balanced assignment names: 20 each.
    until("both replicas own their share", || async {
        let (mine, theirs) = (owned(&a, &clusters), owned(&b, &clusters));
        mine.len() + theirs.len() == clusters.len() && mine.is_disjoint(&theirs)
    })
    .await;
    let share_a = share_of(&["a", "b"], &clusters, "a");
    assert_eq!(share_a.len(), 20);
    for cluster in &clusters {
        let owner = if share_a.contains(cluster) { "a" } else { "b" };
        let writer = if a.fence(cluster).is_ok() { "a" } else { "b" };
        assert_eq!(owner, writer, "{cluster}");
        // The quick check the per-App scans use agrees with the fence, on both sides.
        assert_eq!(a.owns(cluster), owner == "a", "{cluster}");
        assert_eq!(b.owns(cluster), owner == "b", "{cluster}");
        assert_eq!(b.owns(cluster), b.fence(cluster).is_ok(), "{cluster}");
        assert_eq!(a.view().owner(cluster), Some(owner), "{cluster}");
        assert_eq!(b.view().owner(cluster), Some(owner), "{cluster}");
        // The prober's pick is the owner too.
        assert_eq!(
            (a.is_owner(cluster), b.is_owner(cluster)),
            (owner == "a", owner == "b")
        );
    }
    // A registered cluster no App deploys to has exactly one prober, its rendezvous owner.
    let orphans: Vec<String> = (0..20).map(|i| format!("unused-{i}")).collect();
    for orphan in &orphans {
        assert_ne!(a.is_owner(orphan), b.is_owner(orphan), "{orphan}");
        assert!(
            !a.owns(orphan) && !b.owns(orphan),
            "{orphan}: nobody writes there"
        );
    }
    assert!(orphans.iter().any(|o| a.is_owner(o)) && orphans.iter().any(|o| b.is_owner(o)));
    let refused = b.fence(&clusters.iter().find(|c| a.owns(c)).unwrap().clone());
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("owned by replica a")
    );

    // The real kubectl lists the Leases by their label, holders and durations as written.
    let listed = mgmt.kubectl(
        &[
            "get",
            "leases",
            "-n",
            "wardn",
            "-l",
            &format!("{LEASE_LABEL}=true"),
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.holderIdentity}/{.spec.leaseDurationSeconds} {end}",
        ],
        None,
    );
    assert_eq!(listed.trim(), "wardn-shard-a=a/3 wardn-shard-b=b/3");
    // Each Lease publishes its replica's claims: exactly the clusters it writes to.
    let annotation = CLAIMS_ANNOTATION.replace('.', "\\.");
    let published = mgmt.kubectl(
        &[
            "get",
            "lease",
            "wardn-shard-a",
            "-n",
            "wardn",
            "-o",
            &format!("jsonpath={{.metadata.annotations.{annotation}}}"),
        ],
        None,
    );
    let claimed: BTreeSet<String> = published
        .trim()
        .split(',')
        .map(|entry| entry.split_once('=').unwrap().0.to_string())
        .collect();
    assert_eq!(claimed, share_a, "{published}");

    // Hostile: a second process with the same replica id is refused while the first lives.
    let err = Membership::start(kube_config.clone(), config("a"))
        .await
        .err()
        .expect("a duplicate replica id is refused");
    assert!(matches!(err, ShardError::Duplicate { .. }), "{err}");
    assert!(err.to_string().contains("--replica-id"), "{err}");

    // Optimistic concurrency on Leases, as a real API server: a stale resourceVersion is 409.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "wardn");
    let stale = leases.get("wardn-shard-b").await.unwrap();
    until("b renews its Lease", || async {
        leases
            .get("wardn-shard-b")
            .await
            .unwrap()
            .metadata
            .resource_version
            != stale.metadata.resource_version
    })
    .await;
    let conflict = leases
        .replace("wardn-shard-b", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        conflict.to_string().contains("409") || conflict.to_string().contains("modified"),
        "{conflict}"
    );

    // Leaving deletes the Lease: the other takes every cluster without waiting for expiry.
    b.leave().await;
    assert!(
        b.fence(&clusters[0]).is_err(),
        "a replica that left writes nothing"
    );
    until("a owns every cluster", || async {
        owned(&a, &clusters).len() == clusters.len()
    })
    .await;
    a.leave().await;
    assert!(leases.get_opt("wardn-shard-a").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_never_route_more_than_their_share() {
    let mgmt = common::start(&["wardn"]).await;
    let kube_config = mgmt.cluster.config().await.unwrap();
    let config = |id: &str| ShardConfig {
        renew_every: Duration::from_secs(1),
        ..ShardConfig::new(id, "wardn", Duration::from_secs(3)).unwrap()
    };
    let clusters: Vec<String> = (0..40).map(|i| format!("cluster-{i}")).collect();
    let share = |id: &str| share_of(&["a", "b", "c"], &clusters, id);
    let routed = |m: &Membership| -> BTreeSet<String> {
        clusters
            .iter()
            .filter(|c| m.routes_here(c))
            .cloned()
            .collect()
    };
    // a starts alone and sees only itself at first; b and c follow well within a renewal period.
    let a = Membership::start(kube_config.clone(), config("a"))
        .await
        .unwrap();
    set_clusters(&[&a], &clusters);
    assert!(routed(&a).is_empty(), "nothing is routed before settling");
    let b = Membership::start(kube_config.clone(), config("b"))
        .await
        .unwrap();
    let c = Membership::start(kube_config.clone(), config("c"))
        .await
        .unwrap();
    set_clusters(&[&b, &c], &clusters);
    let (share_a, share_b, share_c) = (share("a"), share("b"), share("c"));
    // Until every replica routes its share, none routes a cluster outside it.
    let mut polls = 0;
    loop {
        let (ra, rb, rc) = (routed(&a), routed(&b), routed(&c));
        assert!(ra.is_subset(&share_a), "a routed {ra:?} beyond {share_a:?}");
        assert!(rb.is_subset(&share_b), "b routed {rb:?} beyond {share_b:?}");
        assert!(rc.is_subset(&share_c), "c routed {rc:?} beyond {share_c:?}");
        if ra == share_a && rb == share_b && rc == share_c {
            break;
        }
        polls += 1;
        assert!(polls < 3_000, "the replicas never routed their shares");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for m in [a, b, c] {
        m.leave().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_renewals_keep_ownership_tasks_and_leases_steady() {
    let mgmt = common::start(&["wardn"]).await;
    let client = mgmt.cluster.client().await.unwrap();
    let kube_config = mgmt.cluster.config().await.unwrap();
    // Renewed every 20 ms (the Lease still lasts 3 s, so a slow tick never loses it).
    let config = |id: &str| ShardConfig {
        renew_every: Duration::from_millis(20),
        ..ShardConfig::new(id, "wardn", Duration::from_secs(3)).unwrap()
    };
    let a = Membership::start(kube_config.clone(), config("a"))
        .await
        .unwrap();
    let b = Membership::start(kube_config.clone(), config("b"))
        .await
        .unwrap();
    let clusters: Vec<String> = (0..40).map(|i| format!("cluster-{i}")).collect();
    set_clusters(&[&a, &b], &clusters);
    let expected_a = share_of(&["a", "b"], &clusters, "a");
    until("both replicas own their share", || async {
        owned(&a, &clusters) == expected_a && owned(&b, &clusters).len() + expected_a.len() == 40
    })
    .await;

    // Every renewal of a publishes a view: at each of the next 1,000, both replicas are live,
    // a owns exactly its share and b the rest (no flapping), and the number of live tasks does
    // not grow with the renewals after the first hundred (no task leaked per renewal).
    let leases: Api<Lease> = Api::namespaced(client.clone(), "wardn");
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let threads = || {
        std::fs::read_dir("/proc/self/task")
            .map(|d| d.count())
            .unwrap_or_default()
    };
    let mut views = a.subscribe();
    let mut tasks_at_100 = 0;
    let mut threads_at_100 = 0;
    for renewal in 1..=1000 {
        views.changed().await.unwrap();
        let ids: Vec<String> = views
            .borrow_and_update()
            .replicas
            .iter()
            .map(|r| r.id.clone())
            .collect();
        assert_eq!(ids, ["a", "b"], "renewal {renewal}");
        assert_eq!(owned(&a, &clusters), expected_a, "renewal {renewal}");
        let routed: BTreeSet<String> = clusters
            .iter()
            .filter(|c| a.routes_here(c))
            .cloned()
            .collect();
        assert_eq!(routed, expected_a, "renewal {renewal}: a loads its share");
        let theirs = owned(&b, &clusters);
        assert!(
            theirs.is_disjoint(&expected_a) && theirs.len() + expected_a.len() == 40,
            "renewal {renewal}: b owns {theirs:?}"
        );
        if renewal == 100 {
            tasks_at_100 = tasks();
            threads_at_100 = threads();
        }
    }
    // Requests in flight (kubesim serving a's and b's renewal threads) make the count vary by
    // a few; a task or connection leaked per renewal would add 900. Each replica renews on one
    // thread of its own for good: no thread is started per renewal either.
    assert!(
        tasks() < tasks_at_100 + 50,
        "{} tasks after 1,000 renewals, {tasks_at_100} after 100",
        tasks()
    );
    assert!(
        threads() < threads_at_100 + 5,
        "{} threads after 1,000 renewals, {threads_at_100} after 100",
        threads()
    );
    // The store of membership (the Leases) holds exactly the two replicas' Leases.
    let listed = leases.list(&Default::default()).await.unwrap();
    let names: Vec<String> = listed
        .items
        .iter()
        .filter_map(|l| l.metadata.name.clone())
        .collect();
    assert_eq!(names, ["wardn-shard-a", "wardn-shard-b"]);
    a.leave().await;
    b.leave().await;
}

/// Settings for replica `id` with a 1 s Lease renewed every 250 ms: claims take effect
/// 750 ms after they are published.
fn quick(id: &str) -> ShardConfig {
    ShardConfig {
        lease_duration: Duration::from_secs(1),
        renew_every: Duration::from_millis(250),
        ..ShardConfig::new(id, "wardn", Duration::from_secs(3)).unwrap()
    }
}

/// Cluster → the replicas (of `replicas`, by id) that may write to it now.
fn writers_now(
    replicas: &[(&str, &Membership)],
    clusters: &[String],
) -> BTreeMap<String, Vec<String>> {
    clusters
        .iter()
        .map(|c| {
            let writers = replicas
                .iter()
                .filter(|(_, m)| m.owns(c))
                .map(|(id, _)| id.to_string())
                .collect();
            (c.clone(), writers)
        })
        .collect()
}

/// Three replicas share 12 clusters on which plain rendezvous hashing is uneven: each holds
/// four. A hostile Lease (a live "replica" publishing garbage claims) blocks only its own
/// rendezvous share, and never makes two writers; once it is gone every cluster has its
/// writer again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shares_are_balanced_where_rendezvous_alone_is_not() {
    let ids = ["a", "b", "c"];
    // Names on which rendezvous gives one replica at least two more than another.
    let clusters: Vec<String> = (0..)
        .map(|round| {
            (0..12)
                .map(|i| format!("shard-{round}-{i}"))
                .collect::<Vec<String>>()
        })
        .find(|names| {
            let loads: Vec<usize> = ids
                .iter()
                .map(|id| {
                    names
                        .iter()
                        .filter(|c| rendezvous::owner(ids, c) == Some(*id))
                        .count()
                })
                .collect();
            loads.iter().max().unwrap() - loads.iter().min().unwrap() >= 2
        })
        .unwrap();
    let mgmt = common::start(&["wardn"]).await;
    let kube_config = mgmt.cluster.config().await.unwrap();
    let mut members = Vec::new();
    for id in ids {
        members.push(
            Membership::start(kube_config.clone(), quick(id))
                .await
                .unwrap(),
        );
    }
    let refs: Vec<&Membership> = members.iter().map(|m| m.as_ref()).collect();
    set_clusters(&refs, &clusters);
    let replicas: Vec<(&str, &Membership)> =
        ids.iter().copied().zip(refs.iter().copied()).collect();
    until("every cluster has one writer", || async {
        writers_now(&replicas, &clusters)
            .values()
            .all(|w| w.len() == 1)
    })
    .await;
    let mut loads: BTreeMap<String, usize> = BTreeMap::new();
    for writers in writers_now(&replicas, &clusters).values() {
        *loads.entry(writers[0].clone()).or_default() += 1;
    }
    assert_eq!(
        loads.values().copied().collect::<Vec<_>>(),
        [4, 4, 4],
        "{loads:?}"
    );

    // Hostile: a live Lease whose claims are garbage counts as an earlier release's replica.
    let client = mgmt.cluster.client().await.unwrap();
    let leases: Api<Lease> = Api::namespaced(client, "wardn");
    let hostile = Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("wardn-shard-mallory".into()),
            labels: Some([(LEASE_LABEL.to_string(), "true".to_string())].into()),
            annotations: Some(
                [(
                    CLAIMS_ANNOTATION.to_string(),
                    "shard=everything,,=\u{0}".to_string(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::coordination::v1::LeaseSpec {
            holder_identity: Some("mallory".into()),
            lease_duration_seconds: Some(3600),
            renew_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                jiff::Timestamp::now(),
            )),
            ..Default::default()
        }),
    };
    leases
        .create(&PostParams::default(), &hostile)
        .await
        .unwrap();
    let with_mallory = ["a", "b", "c", "mallory"];
    let blocked: BTreeSet<String> = clusters
        .iter()
        .filter(|c| rendezvous::owner(with_mallory, c) == Some("mallory"))
        .cloned()
        .collect();
    assert!(!blocked.is_empty());
    until("mallory's rendezvous share has no writer", || async {
        let writers = writers_now(&replicas, &clusters);
        for (cluster, w) in &writers {
            assert!(w.len() <= 1, "{cluster}: {w:?}");
        }
        blocked.iter().all(|c| writers[c].is_empty())
    })
    .await;
    for (cluster, writers) in writers_now(&replicas, &clusters) {
        assert!(writers.len() <= 1, "{cluster}: {writers:?}");
    }
    leases
        .delete("wardn-shard-mallory", &Default::default())
        .await
        .unwrap();
    until("every cluster has one writer again", || async {
        writers_now(&replicas, &clusters)
            .values()
            .all(|w| w.len() == 1)
    })
    .await;
    for m in &members {
        m.leave().await;
    }
}

/// Never two writers while the replicas' cluster sets differ: three replicas each see a
/// common set plus clusters only some of them see (an App one replica has read and another
/// not yet), changing every few steps; at each of 1,000 steps no cluster has two replicas
/// that may write to it. With the sets left different, every cluster any replica sees then
/// gets exactly one writer (the replicas publish their clusters in their Leases).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_whose_cluster_sets_differ_never_both_write_to_a_cluster() {
    let ids = ["a", "b", "c"];
    let mgmt = common::start(&["wardn"]).await;
    let kube_config = mgmt.cluster.config().await.unwrap();
    // Started together, so their renewals run nearly in step: two of them often add a claim
    // on one cluster before either has listed the other's.
    let members: Vec<_> = futures_util::future::join_all(
        ids.iter()
            .map(|id| Membership::start(kube_config.clone(), quick(id))),
    )
    .await
    .into_iter()
    .map(Result::unwrap)
    .collect();
    let refs: Vec<&Membership> = members.iter().map(|m| m.as_ref()).collect();
    let replicas: Vec<(&str, &Membership)> =
        ids.iter().copied().zip(refs.iter().copied()).collect();
    let mut all: Vec<String> = (0..10).map(|i| format!("c-{i}")).collect();
    // A deterministic generator (xorshift) for the sets.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let mut owned_steps = 0;
    let mut max_writers = 0;
    let mut sets: Vec<BTreeSet<String>> = vec![BTreeSet::new(); refs.len()];
    for step in 0..1000 {
        // Every 20 steps a new cluster appears to every replica, and each replica sees each
        // of the others but the first 5 with probability 3/4: their balanced assignments
        // differ, and several may want the new cluster at once.
        if step % 20 == 0 {
            all.push(format!("x-{step}"));
            for (m, set) in refs.iter().zip(sets.iter_mut()) {
                *set = all
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i < 5 || *i == all.len() - 1 || next(4) != 0)
                    .map(|(_, c)| c.clone())
                    .collect();
                m.set_clusters(set.clone());
            }
        }
        let writers = writers_now(&replicas, &all);
        for (cluster, w) in &writers {
            assert!(w.len() <= 1, "step {step}: {cluster} has writers {w:?}");
            max_writers = max_writers.max(w.len());
        }
        if writers.values().any(|w| !w.is_empty()) {
            owned_steps += 1;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    println!("1,000 steps: {owned_steps} with at least one writer");
    // The sets still differ, but every replica divides the clusters any of them publishes:
    // each of those gets exactly one writer, in balanced shares.
    let union: Vec<String> = sets
        .iter()
        .flatten()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(
        sets.iter().any(|set| set.len() < union.len()),
        "the sets differ"
    );
    until("every cluster any replica sees has one writer", || async {
        writers_now(&replicas, &union)
            .values()
            .all(|w| w.len() == 1)
    })
    .await;
    let mut loads: BTreeMap<String, usize> = BTreeMap::new();
    for writers in writers_now(&replicas, &union).values() {
        *loads.entry(writers[0].clone()).or_default() += 1;
    }
    let (max, min) = (loads.values().max().unwrap(), loads.values().min().unwrap());
    assert!(loads.len() == 3 && max - min <= 1, "{loads:?}");
    assert_eq!(max_writers, 1, "the run saw writers at all");
    for m in &members {
        m.leave().await;
    }
}

/// A replica that crashes (its Lease left to expire, as after a SIGKILL) loses its clusters
/// to the survivor within the Lease duration and the claims' wait: with the default 15 s
/// Lease, renewed every 5 s, 25 s at most. The figure is printed, not asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_replicas_clusters_are_taken_over_with_the_default_lease() {
    let mgmt = common::start(&["wardn"]).await;
    let kube_config = mgmt.cluster.config().await.unwrap();
    let [a, b] = join(&kube_config, 15, ["a", "b"]).await;
    let clusters: Vec<String> = (0..10).map(|i| format!("cluster-{i}")).collect();
    set_clusters(&[&a, &b], &clusters);
    until("both own their share", || async {
        owned(&a, &clusters).len() == 5 && owned(&b, &clusters).len() == 5
    })
    .await;
    // Crash: dropped without leaving, its Lease stays until it expires.
    drop(b);
    let crashed = std::time::Instant::now();
    until("a owns every cluster", || async {
        owned(&a, &clusters).len() == clusters.len()
    })
    .await;
    println!(
        "takeover with the default 15 s Lease: {:.1} s after the crash",
        crashed.elapsed().as_secs_f64()
    );
    a.leave().await;
}

/// A replica whose runtime is blocked for longer than its Lease keeps the Lease held: it is
/// renewed on a thread of its own (an overloaded replica used to fence itself off at every
/// late renewal, so it wrote nothing until its load dropped).
#[tokio::test(flavor = "current_thread")]
async fn a_replica_whose_runtime_is_blocked_keeps_renewing_its_lease() {
    // kubesim on a runtime of its own: blocking this one must not stop the API server.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mgmt = common::start(&["wardn"]).await;
            tx.send(mgmt.cluster.kubeconfig()).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&rx.recv().unwrap()).unwrap();
    let kube_config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    // A 9 s Lease, renewed every 3 s: held until 6 s after the start of the last renewal.
    let config = ShardConfig::new("a", "wardn", Duration::from_secs(9)).unwrap();
    let a = Membership::start(kube_config, config).await.unwrap();
    set_clusters(&[&a], &["cluster-0".to_string()]);
    until("a settles and owns the cluster", || async {
        a.fence("cluster-0").is_ok()
    })
    .await;
    // This runtime (the replica's main one) blocked twice as long as one renewal holds.
    std::thread::sleep(Duration::from_secs(12));
    let fenced = a.fence("cluster-0");
    assert!(fenced.is_ok(), "not renewed while blocked: {fenced:?}");
    assert!(a.owns("cluster-0"));
    a.leave().await;
    assert!(
        a.fence("cluster-0").is_err(),
        "a replica that left writes nothing"
    );
    assert!(!a.owns("cluster-0"), "nor owns anything");
}

/// One App file: `name` deploys ConfigMap `name` from `source` to `cluster`'s `team`.
fn app_file(name: &str, cluster: &str, source: &std::path::Path, approval: bool) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: fleet\n\
         spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
         \x20 destination:\n    cluster: {cluster}\n    namespace: team\n\
         \x20 syncPolicy:\n    automated: true\n    requiresApproval: {approval}\n",
        source.display()
    )
}

fn write_source(dir: &std::path::Path, name: &str, version: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("configmap.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  version: \"{version}\"\n"
        ),
    )
    .unwrap();
}

/// The `version` of ConfigMap `name` in `cluster`'s `team`, if it exists.
fn version(cluster: &Cluster, name: &str) -> Option<String> {
    cluster
        .get_object("v1", "ConfigMap", Some("team"), name)
        .and_then(|cm| cm["data"]["version"].as_str().map(str::to_string))
}

async fn get(process: &Process, cookie: &str, path: &str) -> Value {
    Client::new()
        .get(process.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A kubesim cluster with namespace `team` for each of `names`, by name.
async fn team_clusters(names: &[String]) -> BTreeMap<String, Cluster> {
    let mut clusters = BTreeMap::new();
    for name in names {
        clusters.insert(name.clone(), sim(name, &["team"]).await);
    }
    clusters
}

/// Replica `id` of a fleet with a 3 s Lease on `database`, reading the Apps of `apps`; its data
/// directory and log are in `work`.
fn spawn_replica(
    id: &str,
    work: &std::path::Path,
    database: &str,
    management: &std::path::Path,
    apps: &std::path::Path,
) -> Process {
    let args = [
        "--shards",
        "auto",
        "--replica-id",
        id,
        "--lease-duration",
        "3s",
        "--lease-namespace",
        "default",
        "--database-url",
        database,
        "--kubeconfig",
        management.to_str().unwrap(),
        "--apps",
        apps.to_str().unwrap(),
    ];
    let log = work.join(format!("{id}.log"));
    Process::spawn(&args, &work.join(id), PASSWORD, &log)
}

/// Registers `clusters` (namespace `team` allowed) through `process`, into the shared store.
async fn register(process: &Process, cookie: &str, clusters: &BTreeMap<String, Cluster>) {
    for (name, cluster) in clusters {
        let response = Client::new()
            .post(process.url("/api/v1/clusters"))
            .header("cookie", cookie)
            .json(&json!({"name": name, "server_url": cluster.url(),
                          "kubeconfig": cluster.kubeconfig(), "namespaces": ["team"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    }
}

/// Replica id → the clusters it owns, as `/api/v1/shards` on `process` reports.
async fn shards(process: &Process, cookie: &str) -> BTreeMap<String, Vec<String>> {
    let body = get(process, cookie, "/api/v1/shards").await;
    body["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let clusters = r["clusters"].as_array().unwrap();
            (
                r["replica"].as_str().unwrap().to_string(),
                clusters
                    .iter()
                    .map(|c| c.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

/// The value of gauge `name` of `process`'s own replica on its `/metrics`.
async fn gauge(process: &Process, name: &str) -> Option<usize> {
    let text = Client::new()
        .get(process.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// How many of `apps` (App name, cluster) deploy to the clusters of `share`.
fn apps_of(apps: &[(String, String)], share: &[String]) -> usize {
    apps.iter().filter(|(_, c)| share.contains(c)).count()
}

/// Waits until each of `processes` (with its replica id) loads and renders exactly the Apps of
/// its share in `assignment`, and holds their statuses and no others'.
async fn until_loaded(
    processes: &[(&str, &Process)],
    apps: &[(String, String)],
    assignment: &BTreeMap<String, Vec<String>>,
) {
    for (id, process) in processes {
        let share = apps_of(apps, &assignment[*id]);
        until("each replica loads only the Apps of its share", || async {
            gauge(process, "wardn_shard_loaded_apps").await == Some(share)
                && gauge(process, "wardn_shard_rendered_apps").await == Some(share)
                && gauge(process, "wardn_shard_held_statuses").await == Some(share)
        })
        .await;
    }
}

/// Waits until each of `processes` keeps clients for exactly the clusters of its share in
/// `assignment` that `apps` deploy to: it keeps no client for the others' (and drops those of
/// the clusters it hands over).
async fn until_clients_follow_shares(
    processes: &[(&str, &Process)],
    apps: &[(String, String)],
    assignment: &BTreeMap<String, Vec<String>>,
) {
    for (id, process) in processes {
        let deployed = assignment[*id]
            .iter()
            .filter(|c| apps.iter().any(|(_, cluster)| cluster == *c))
            .count();
        until(
            "each replica keeps clients of its own clusters only",
            || async { gauge(process, "wardn_shard_cluster_clients").await == Some(deployed) },
        )
        .await;
    }
}

/// The replica each write of `cluster` into namespace `team` came from, in order, with runs of
/// the same replica collapsed.
fn writers(cluster: &Cluster) -> Vec<String> {
    let mut runs: Vec<String> = Vec::new();
    for write in cluster.writes().iter().filter(|w| w.namespace == "team") {
        let replica = write
            .user_agent
            .split("(replica ")
            .nth(1)
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("a write without a replica: {write:?}"))
            .to_string();
        if runs.last() != Some(&replica) {
            runs.push(replica);
        }
    }
    runs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_spread_the_apps_hand_over_an_approval_and_survive_a_sigkill() {
    let pg = Postgres::start();
    let database = pg.create_database("shards");
    let mgmt = common::start(&["default"]).await;
    let names: Vec<String> = (0..6).map(|i| format!("east-{i}")).collect();
    let clusters = team_clusters(&names).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let mut objects: Vec<(String, String)> = Vec::new();
    for cluster in &names {
        for n in 0..2 {
            let name = format!("{cluster}-app-{n}");
            let source = work.path().join("sources").join(&name);
            write_source(&source, &name, "1");
            std::fs::write(
                apps.join(format!("{name}.yaml")),
                app_file(&name, cluster, &source, false),
            )
            .unwrap();
            objects.push((cluster.clone(), name));
        }
    }
    let gated_source = work.path().join("sources").join("gated");
    write_source(&gated_source, "gated", "1");
    std::fs::write(
        apps.join("gated.yaml"),
        app_file("gated", "east-0", &gated_source, true),
    )
    .unwrap();

    let replica = |id: &str| spawn_replica(id, work.path(), &database, &mgmt.kubeconfig, &apps);
    // r0 first, to register the clusters in the shared store; r1 and r2 join after.
    let r0 = replica("r0");
    let cookie = login(&r0.base, PASSWORD).await;
    register(&r0, &cookie, &clusters).await;
    let r1 = replica("r1");
    let mut r2 = replica("r2");
    let all = ["r0", "r1", "r2"];

    // Spread: every replica reports the same three live replicas and the balanced
    // assignment: two clusters each.
    let expected = balanced(&all, &names);
    assert!(expected.values().all(|c| c.len() == 2), "{expected:?}");
    for process in [&r0, &r1, &r2] {
        until("the three replicas agree on the shards", || async {
            shards(process, &cookie).await == expected
        })
        .await;
    }
    until("every App converges", || async {
        objects
            .iter()
            .all(|(cluster, name)| version(&clusters[cluster], name).as_deref() == Some("1"))
    })
    .await;
    // Each replica loads, renders and plans only the Apps of its own clusters.
    let mut every_app: Vec<(String, String)> = objects
        .iter()
        .map(|(cluster, name)| (name.clone(), cluster.clone()))
        .collect();
    every_app.push(("gated".to_string(), "east-0".to_string()));
    until_loaded(
        &[("r0", &r0), ("r1", &r1), ("r2", &r2)],
        &every_app,
        &expected,
    )
    .await;
    until_clients_follow_shares(
        &[("r0", &r0), ("r1", &r1), ("r2", &r2)],
        &every_app,
        &expected,
    )
    .await;
    // Each cluster is probed by its owner; every replica lists all of them connected, though
    // all were registered through r0 (registrations and results are shared through the store).
    for process in [&r0, &r1, &r2] {
        until("every replica shows every cluster connected", || async {
            let listed = get(process, &cookie, "/api/v1/clusters").await;
            support::connected_clusters(&listed) == names
        })
        .await;
    }
    // Holding only its share's statuses, each replica still lists every App's: the others'
    // are read from the store, as their owners wrote them.
    let mut phases: BTreeMap<String, String> = objects
        .iter()
        .map(|(_, name)| (name.clone(), "Synced".to_string()))
        .collect();
    phases.insert("gated".to_string(), "Held".to_string());
    for process in [&r0, &r1, &r2] {
        until("every replica lists every App's phase", || async {
            let listed = get(process, &cookie, "/api/v1/apps").await;
            let listed: BTreeMap<String, String> = listed["apps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| {
                    let phase = a["phase"].as_str().unwrap_or("none").to_string();
                    (a["name"].as_str().unwrap().to_string(), phase)
                })
                .collect();
            listed == phases
        })
        .await;
    }

    // Sync, refresh, diff and unpin through a replica that does not own the App (and has not
    // even rendered it) are handed to the owner through the store, which performs them.
    let owner_of = |assignment: &BTreeMap<String, Vec<String>>, cluster: &str| -> String {
        assignment
            .iter()
            .find(|(_, clusters)| clusters.iter().any(|c| c == cluster))
            .map(|(replica, _)| replica.clone())
            .unwrap()
    };
    let owner_1 = owner_of(&expected, "east-1");
    let owner_1 = owner_1.as_str();
    let stranger = [&r0, &r1, &r2][all.iter().position(|id| *id != owner_1).unwrap()];
    let before = clusters["east-1"].writes().len();
    write_source(
        &work.path().join("sources").join("east-1-app-0"),
        "east-1-app-0",
        "1b",
    );
    let post = |path: &'static str| {
        let url = stranger.url(&format!("/api/v1/apps/east-1/east-1-app-0/{path}"));
        let cookie = cookie.clone();
        async move {
            let response = Client::new()
                .post(url)
                .header("cookie", cookie)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            let status = response.status();
            let body: Value = response.json().await.unwrap();
            assert_eq!(status, 200, "{path}: {body}");
            body
        }
    };
    let refreshed = post("refresh").await;
    assert_eq!(refreshed["status"]["phase"], "Synced", "{refreshed}");
    until("the refreshed source is applied by the owner", || async {
        version(&clusters["east-1"], "east-1-app-0").as_deref() == Some("1b")
    })
    .await;
    let synced = post("sync").await;
    assert_eq!(synced["status"]["phase"], "Synced", "{synced}");
    let unpinned = post("unpin").await;
    assert_eq!(unpinned["status"]["phase"], "Synced", "{unpinned}");
    let diff = get(stranger, &cookie, "/api/v1/apps/east-1/east-1-app-0/diff").await;
    assert_eq!(diff["plan"]["objects"][0]["action"], "unchanged", "{diff}");
    let new_writes = clusters["east-1"].writes().split_off(before);
    assert!(!new_writes.is_empty());
    for write in &new_writes {
        assert!(
            write.user_agent.contains(&format!("(replica {owner_1})")),
            "written by the owner only: {write:?}"
        );
    }
    write_source(
        &work.path().join("sources").join("east-1-app-0"),
        "east-1-app-0",
        "1",
    );
    until("east-1-app-0 back at version 1", || async {
        version(&clusters["east-1"], "east-1-app-0").as_deref() == Some("1")
    })
    .await;

    // The Held plan: read through any replica (statuses live in the store), approved through
    // one that does not own east-0; its owner applies it, once.
    let owner = owner_of(&expected, "east-0");
    let (asked, other) = match owner.as_str() {
        "r0" => (&r1, &r2),
        "r1" => (&r2, &r0),
        _ => (&r0, &r1),
    };
    until("gated is Held, seen through another replica", || async {
        get(other, &cookie, "/api/v1/apps/east-0/gated").await["phase"] == "Held"
    })
    .await;
    let app = get(other, &cookie, "/api/v1/apps/east-0/gated").await;
    let hash = app["status"]["planHash"].as_str().unwrap().to_string();
    assert_eq!(
        version(&clusters["east-0"], "gated"),
        None,
        "Held: not applied"
    );
    let approve = || async {
        Client::new()
            .post(asked.url("/api/v1/apps/east-0/gated/approve"))
            .header("cookie", &cookie)
            .json(&json!({"plan_hash": hash}))
            .send()
            .await
            .unwrap()
    };
    let response = approve().await;
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Synced", "{body}");
    assert_eq!(version(&clusters["east-0"], "gated").as_deref(), Some("1"));
    let gated_writes = clusters["east-0"]
        .writes()
        .into_iter()
        .filter(|w| w.name == "gated" && w.resource == "configmaps")
        .collect::<Vec<_>>();
    assert_eq!(gated_writes.len(), 1, "applied once: {gated_writes:?}");
    assert!(
        gated_writes[0]
            .user_agent
            .contains(&format!("(replica {owner})"))
    );
    // Approving again: nothing is Held any more, refused by the owner.
    let again = approve().await;
    assert_eq!(again.status(), 409, "{}", again.text().await.unwrap());

    // SIGKILL r2: its clusters move to r0 and r1 within the Lease duration, a renewal
    // period and the claims' wait (the test waits longer, for its own polling); then every
    // source changes and every App converges.
    r2.kill();
    let killed = std::time::Instant::now();
    let survivors = ["r0", "r1"];
    let after = balanced(&survivors, &names);
    for process in [&r0, &r1] {
        until("the survivors take r2's clusters", || async {
            shards(process, &cookie).await == after
        })
        .await;
    }
    // Measured, not asserted: the survivors list r2's clusters as theirs (their claims take
    // effect two renewal periods later).
    println!(
        "r2's clusters listed as the survivors' with a 3 s Lease: {:.1} s after the SIGKILL",
        killed.elapsed().as_secs_f64()
    );
    until_loaded(&[("r0", &r0), ("r1", &r1)], &every_app, &after).await;
    for (cluster, name) in &objects {
        let source = work.path().join("sources").join(name);
        write_source(&source, name, "2");
        let _ = cluster;
    }
    until("every App converges after the kill", || async {
        objects
            .iter()
            .all(|(cluster, name)| version(&clusters[cluster], name).as_deref() == Some("2"))
    })
    .await;

    // Never two writers: on every cluster, each replica's writes form one run (a replica
    // that lost a cluster never wrote to it again).
    for (name, cluster) in &clusters {
        let runs = writers(cluster);
        let distinct: BTreeSet<&String> = runs.iter().collect();
        assert_eq!(
            distinct.len(),
            runs.len(),
            "{name}: writers interleaved: {runs:?}"
        );
        assert_eq!(
            runs.last(),
            Some(&owner_of(&after, name)),
            "{name}: {runs:?}"
        );
    }
    // r2 joins again: it takes back its share, which r0 and r1 unload.
    let r2 = replica("r2");
    for process in [&r0, &r1, &r2] {
        until("the three replicas agree on the shards again", || async {
            shards(process, &cookie).await == expected
        })
        .await;
    }
    until_loaded(
        &[("r0", &r0), ("r1", &r1), ("r2", &r2)],
        &every_app,
        &expected,
    )
    .await;
    until_clients_follow_shares(
        &[("r0", &r0), ("r1", &r1), ("r2", &r2)],
        &every_app,
        &expected,
    )
    .await;
    let metrics = Client::new()
        .get(r0.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let owned = expected["r0"].len();
    assert!(
        metrics.contains(&format!(
            "wardn_shard_owned_clusters{{replica=\"r0\"}} {owned}"
        )),
        "{metrics}"
    );
    drop((r0, r1, r2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_server_replicas_on_one_postgres_allow_only_the_documented_login_attempts() {
    use support::running::{client_from, login_status_at};
    use wardn::server::login_limit::{MAX_PER_ADDRESS, MAX_PER_USER};
    let pg = Postgres::start();
    let database = pg.create_database("logins");
    let work = tempfile::tempdir().unwrap();
    let replica = |id: &str| {
        let args = ["--role", "server", "--database-url", &database];
        let log = work.path().join(format!("{id}.log"));
        Process::spawn(&args, &work.path().join(id), PASSWORD, &log)
    };
    let replicas = [replica("s0"), replica("s1")];
    let base = |i: usize| replicas[i % 2].base.clone();

    // One address guessing one user's password, alternating between the replicas: only
    // MAX_PER_USER guesses are checked in all, not MAX_PER_USER per replica.
    let guesser = client_from([127, 0, 0, 3]);
    let mut statuses = Vec::new();
    for i in 0..4 * MAX_PER_USER {
        statuses.push(login_status_at(&guesser, &base(i), "admin", "wrong-password").await);
    }
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(
        (checked, limited),
        (MAX_PER_USER, 3 * MAX_PER_USER),
        "{statuses:?}"
    );
    // Even the right password is refused from that address now, on either replica.
    for i in 0..2 {
        assert_eq!(
            login_status_at(&guesser, &base(i), "admin", PASSWORD).await,
            429
        );
    }

    // One address trying many names, spread over both replicas at once: MAX_PER_ADDRESS in
    // all are checked.
    let sprayer = client_from([127, 0, 0, 4]);
    let tries = (0..3 * MAX_PER_ADDRESS).map(|i| {
        let (sprayer, base) = (&sprayer, base(i));
        async move { login_status_at(sprayer, &base, &format!("user{i}"), "wrong-password").await }
    });
    let statuses = futures_util::future::join_all(tries).await;
    let checked = statuses.iter().filter(|s| **s == 401).count();
    assert_eq!(checked, MAX_PER_ADDRESS, "{statuses:?}");

    // The real admin from another address logs in through either replica; a success
    // refunds its attempt, so it may log in again and again.
    let admin = client_from([127, 0, 0, 5]);
    for i in 0..3 * MAX_PER_USER {
        assert_eq!(
            login_status_at(&admin, &base(i), "admin", PASSWORD).await,
            200
        );
    }
}

/// Promotion across replicas. The source App deploys to r0's cluster, its targets to r1's,
/// which never renders the source: a promotion asked through r0 is handed to r1, which reads
/// the source's running workloads from the source's cluster (through its stored inventory) and
/// pins their digest; an autoPromote target is promoted by its owner alone, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_promotion_crosses_replicas_and_only_the_targets_owner_promotes() {
    let pg = Postgres::start();
    let database = pg.create_database("promotions");
    let mgmt = common::start(&["default"]).await;
    let names: Vec<String> = (0..2).map(|i| format!("west-{i}")).collect();
    let expected = balanced(&["r0", "r1"], &names);
    let (source_cluster, target_cluster) = (expected["r0"][0].clone(), expected["r1"][0].clone());
    let clusters = team_clusters(&names).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let repo = "ghcr.io/acme/web";
    for (name, cluster, tag, promotion) in [
        ("stage", &source_cluster, "1.28", String::new()),
        (
            "prod",
            &target_cluster,
            "1.27",
            format!("  promotion:\n    from: {source_cluster}/stage\n"),
        ),
        (
            "auto",
            &target_cluster,
            "1.0",
            format!("  promotion:\n    from: {source_cluster}/stage\n    autoPromote: true\n"),
        ),
    ] {
        let source = work.path().join("sources").join(name);
        write_workload(&source, name, &format!("{repo}:{tag}"));
        std::fs::write(
            apps.join(format!("{name}.yaml")),
            app_file(name, cluster, &source, false) + &promotion,
        )
        .unwrap();
    }
    let replica = |id: &str| spawn_replica(id, work.path(), &database, &mgmt.kubeconfig, &apps);
    let r0 = replica("r0");
    let r1 = replica("r1");
    let cookie = login(&r0.base, PASSWORD).await;
    // Both are members before a cluster is registered, so that the target's cluster is r1's
    // from the start: registered first, it was r0's until r1 joined, and on a loaded machine
    // r0 deployed there meanwhile.
    for process in [&r0, &r1] {
        until("both replicas are members", || async {
            shards(process, &cookie)
                .await
                .into_keys()
                .collect::<Vec<_>>()
                == ["r0", "r1"]
        })
        .await;
    }
    register(&r0, &cookie, &clusters).await;
    for process in [&r0, &r1] {
        until("the two replicas agree on the shards", || async {
            shards(process, &cookie).await == expected
        })
        .await;
    }
    let every_app = [
        ("stage".to_string(), source_cluster.clone()),
        ("prod".to_string(), target_cluster.clone()),
        ("auto".to_string(), target_cluster.clone()),
    ];
    until_loaded(&[("r0", &r0), ("r1", &r1)], &every_app, &expected).await;
    let (source, target) = (&clusters[&source_cluster], &clusters[&target_cluster]);
    until("stage's Pod runs a digest", || async {
        pod_digests(source, "team", "stage").len() == 1
    })
    .await;
    let digest = pod_digests(source, "team", "stage").pop_first().unwrap();
    let pinned = format!("{repo}@{digest}");

    // autoPromote: r1, which owns `auto`, promotes it from stage's running digest.
    until("auto promoted by its owner", || async {
        deployed_image(target, "team", "auto").as_deref() == Some(pinned.as_str())
    })
    .await;

    // Asked through r0, which owns the source but not the target: handed to r1.
    let response = Client::new()
        .post(r0.url(&format!(
            "/api/v1/apps/{source_cluster}/stage/promote?to={target_cluster}/prod"
        )))
        .header("cookie", &cookie)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Synced", "{body}");
    assert_eq!(
        body["status"]["promotedFrom"]["images"][0]["digest"],
        digest.as_str(),
        "{body}"
    );
    assert_eq!(
        deployed_image(target, "team", "prod").as_deref(),
        Some(pinned.as_str())
    );
    assert_eq!(
        writers(target),
        ["r1"],
        "only the target's owner writes there"
    );
    assert_eq!(
        writers(source),
        ["r0"],
        "only the source's owner writes there"
    );

    // Each automatic promotion is tried by the target's owner alone: one record, by wardn,
    // however many renewals and promotion rounds (one a second) pass.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for process in [&r0, &r1] {
        let history = get(
            process,
            &cookie,
            &format!("/api/v1/apps/{target_cluster}/auto/promotions"),
        )
        .await;
        let records = history["promotions"].as_array().unwrap();
        assert_eq!(records.len(), 1, "{history}");
        assert_eq!(
            history["promotedFrom"]["images"][0]["digest"],
            digest.as_str(),
            "{history}"
        );
    }
    drop((r0, r1));
}

/// A push webhook reaches the replica owning the Apps of its repository, whichever replica
/// the forge's delivery reaches: each replica polls only its own Apps' repositories, so the
/// other one hands the push over through the store. Both Apps (one per replica, one Git
/// repository, polled hourly) follow a push delivered to r0 and then one delivered to r1,
/// long before their next poll; a burst of 200 deliveries costs the owner a few hand-overs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_push_delivered_to_any_replica_reaches_the_owners_of_its_apps() {
    use support::Upstream;
    use wardn::sources::webhook::sign;

    let pg = Postgres::start();
    let database = pg.create_database("pushes");
    let mgmt = common::start(&["default"]).await;
    let names: Vec<String> = (0..2).map(|i| format!("push-{i}")).collect();
    let clusters = team_clusters(&names).await;
    let work = tempfile::tempdir().unwrap();
    let upstream = Upstream::init(&work.path().join("upstream"));
    let root = work.path().join("srv");
    let publish = |version: &str| {
        for name in &names {
            write_source(&upstream.dir.join(name), name, version);
        }
        upstream.commit(&[], &format!("version {version}"));
        upstream.push_to_bare(&root, "repo.git")
    };
    let bare = publish("1");
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    for name in &names {
        std::fs::write(
            apps.join(format!("{name}.yaml")),
            format!(
                "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: fleet\n\
                 spec:\n  source:\n    type: Git\n    git:\n      repoURL: {}\n      branch: main\n\
                 \x20     path: {name}\n      interval: 1h\n\
                 \x20 destination:\n    cluster: {name}\n    namespace: team\n\
                 \x20 syncPolicy:\n    automated: true\n",
                bare.display()
            ),
        )
        .unwrap();
    }

    let replica = |id: &str| spawn_replica(id, work.path(), &database, &mgmt.kubeconfig, &apps);
    let r0 = replica("r0");
    let cookie = login(&r0.base, PASSWORD).await;
    register(&r0, &cookie, &clusters).await;
    let hook = Client::new()
        .post(r0.url("/api/v1/repositories"))
        .header("cookie", &cookie)
        .json(&json!({"url": bare.to_str().unwrap(), "webhook_secret": "push-secret"}))
        .send()
        .await
        .unwrap();
    assert_eq!(hook.status(), 201, "{}", hook.text().await.unwrap());
    let r1 = replica("r1");
    let expected = balanced(&["r0", "r1"], &names);
    assert!(expected.values().all(|c| c.len() == 1), "{expected:?}");
    for process in [&r0, &r1] {
        until("the replicas agree on the shards", || async {
            shards(process, &cookie).await == expected
        })
        .await;
    }
    let converged = |wanted: &'static str| {
        let clusters = &clusters;
        let names = &names;
        move || async move {
            names
                .iter()
                .all(|name| version(&clusters[name], name).as_deref() == Some(wanted))
        }
    };
    until("every App deploys version 1", converged("1")).await;

    let body = json!({"repoURL": bare.to_str().unwrap()}).to_string();
    for (delivered_to, wanted) in [(&r0, "2"), (&r1, "3")] {
        publish(wanted);
        let answer = Client::new()
            .post(delivered_to.url("/api/v1/webhooks/git"))
            .header("content-type", "application/json")
            .header("x-wardn-signature", sign(b"push-secret", body.as_bytes()))
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
        until("both Apps follow the push", converged(wanted)).await;
    }

    // Hostile: a push for a repository no App of the fleet uses is ignored (202, though
    // signed with that repository's own secret), and one signed with another secret is
    // refused (401), by either replica; neither hands anything over.
    let handed_now = |id: &str| {
        std::fs::read_to_string(work.path().join(format!("{id}.log")))
            .unwrap()
            .matches("performing an operation handed over by another replica")
            .count()
    };
    let before = (handed_now("r0"), handed_now("r1"));
    let unused = json!({"repoURL": "https://git.example.com/org/unused"}).to_string();
    let registered = Client::new()
        .post(r0.url("/api/v1/repositories"))
        .header("cookie", &cookie)
        .json(&json!({"url": "https://git.example.com/org/unused", "webhook_secret": "unused-secret"}))
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), 201);
    for process in [&r0, &r1] {
        for (body, secret, status) in [
            (&unused, &b"unused-secret"[..], 202),
            (&body, &b"another-secret"[..], 401),
        ] {
            let answer = Client::new()
                .post(process.url("/api/v1/webhooks/git"))
                .header("content-type", "application/json")
                .header("x-wardn-signature", sign(secret, body.as_bytes()))
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), status, "{}", answer.text().await.unwrap());
        }
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!((handed_now("r0"), handed_now("r1")), before);

    // A burst: two hundred deliveries of one push to r0 at once cost r1 a few hand-overs, not
    // two hundred, and both Apps still follow it. (Sent one after another on a loaded machine,
    // the deliveries are spread over many hand-overs' time, and each may rightly start one.)
    let handed = || handed_now("r1");
    let before = handed();
    publish("4");
    let http = Client::new();
    let deliveries = (0..200).map(|_| {
        http.post(r0.url("/api/v1/webhooks/git"))
            .header("content-type", "application/json")
            .header("x-wardn-signature", sign(b"push-secret", body.as_bytes()))
            .body(body.clone())
            .send()
    });
    for answer in futures_util::future::join_all(deliveries).await {
        assert_eq!(answer.unwrap().status(), 200);
    }
    until("both Apps follow the burst", converged("4")).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let burst = handed() - before;
    assert!(
        (1..=20).contains(&burst),
        "{burst} hand-overs for 200 deliveries"
    );
}
