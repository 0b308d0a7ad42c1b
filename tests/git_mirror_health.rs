//! Git mirrors stay healthy across many fetches: every fetch adds a pack, and the mirror must
//! keep fetching (and reading) however many there are; a mirror damaged between fetches is
//! repaired. Fixture repositories are made with the `git` CLI.

mod support;

use std::path::Path;

use support::{Upstream, damage_packs};
use wardn::sources::credentials::Credentials;
use wardn::sources::git::{GitError, GitSettings, MIN_SLOTS, Maintenance, Mirror, PACK_LIMIT};
use wardn::sources::spec::GitRef;
use wardn::sources::url::parse_repo_url;

fn mirror(data: &Path, url: &str) -> Mirror {
    let settings = GitSettings {
        data_dir: data.to_path_buf(),
        extra_roots_pem: None,
        ..GitSettings::default()
    };
    Mirror::open(
        &settings,
        parse_repo_url(url).unwrap(),
        Credentials::Anonymous,
    )
    .unwrap()
}

/// Packs on disk, counted independently of wardn.
fn pack_count(mirror: &Mirror) -> usize {
    std::fs::read_dir(mirror.dir().join("objects/pack"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "idx")
        })
        .count()
}

/// Commits a new version of `app/cm.yaml`; returns the commit and the content.
fn commit_round(up: &Upstream, i: usize) -> (String, String) {
    let content = format!("round: {i}\n");
    let c = up.commit(&[("app/cm.yaml", &content)], &format!("round {i}"));
    (c, content)
}

/// Commits `n` times upstream, fetching after each commit; every fetch must bring the new
/// revision and the snapshot must read it. Returns the most packs seen after a fetch.
fn fetch_after_each_commit(m: &Mirror, up: &Upstream, n: usize) -> usize {
    let main = GitRef::Branch("main".into());
    let mut max_packs = 0;
    for i in 1..=n {
        let (c, content) = commit_round(up, i);
        let outcome = m
            .fetch()
            .unwrap_or_else(|e| panic!("fetch {i} failed ({} packs): {e}", pack_count(m)));
        assert_eq!(outcome.changes.len(), 1, "fetch {i}");
        let id = m.resolve(&main).unwrap();
        assert_eq!(id.to_string(), c, "fetch {i}");
        let snap = m.snapshot(id).unwrap();
        assert_eq!(
            snap.tree.read_file("app/cm.yaml", 100).unwrap(),
            content.as_bytes(),
            "fetch {i}"
        );
        max_packs = max_packs.max(pack_count(m));
        assert!(m.slots() > pack_count(m), "fetch {i}: {} slots", m.slots());
    }
    max_packs
}

fn fixture(tmp: &Path) -> (Upstream, Mirror) {
    let up = Upstream::init(&tmp.join("up"));
    up.commit(
        &[("app/cm.yaml", "round: 0\n"), ("app/other.yaml", "x: 1\n")],
        "zero",
    );
    let m = mirror(&tmp.join("data"), &up.url());
    m.fetch().unwrap();
    (up, m)
}

/// Before the fix, fetch 32 failed with "The object database has too few index slots,
/// current=32, needed=1" (one pack per fetch, 32 slots) and every fetch after it too.
#[test]
fn three_hundred_fetches_in_a_row_keep_the_pack_count_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let (up, m) = fixture(tmp.path());
    let started = std::time::Instant::now();
    let max_packs = fetch_after_each_commit(&m, &up, 300);
    eprintln!(
        "300 fetches in {:.1} s, at most {max_packs} packs",
        started.elapsed().as_secs_f64()
    );
    assert!(max_packs <= PACK_LIMIT + 1, "{max_packs} packs");
    assert_eq!(m.slots(), MIN_SLOTS);
}

/// While a snapshot is alive nothing is repacked (a render may be reading it): the handle's
/// slots grow with the packs instead, the held snapshot stays readable, and the repack
/// happens once it is dropped. A mirror re-opened (a restart) with many packs on disk gets
/// slots for them.
#[test]
fn a_live_snapshot_defers_the_repack_and_slots_follow_the_packs() {
    let tmp = tempfile::tempdir().unwrap();
    let (up, m) = fixture(tmp.path());
    let first = m.resolve(&GitRef::Branch("main".into())).unwrap();
    let held = m.snapshot(first).unwrap();
    let max_packs = fetch_after_each_commit(&m, &up, 70);
    assert!(max_packs > 64, "{max_packs} packs: nothing repacked");
    assert!(m.slots() > 64, "{} slots", m.slots());
    assert_eq!(
        held.tree.read_file("app/cm.yaml", 100).unwrap(),
        b"round: 0\n"
    );

    // A restart: the new handle is sized to the packs on disk.
    let packs = pack_count(&m);
    let reopened = mirror(&tmp.path().join("data"), &up.url());
    assert!(reopened.slots() >= 2 * packs, "{} slots", reopened.slots());
    drop(reopened);

    drop(held);
    match m.maintain().unwrap() {
        Maintenance::Repacked { before, after } => {
            assert_eq!(before, packs);
            assert!(after <= 2, "{after} packs after the repack");
        }
        other => panic!("expected a repack, got {other:?}"),
    }
    // Every object is still there, and fetching goes on.
    let snap = m.snapshot(first).unwrap();
    assert_eq!(
        snap.tree.read_file("app/other.yaml", 100).unwrap(),
        b"x: 1\n"
    );
    drop(snap);
    let (c, _) = commit_round(&up, 71);
    m.fetch().unwrap();
    assert_eq!(
        m.resolve(&GitRef::Branch("main".into()))
            .unwrap()
            .to_string(),
        c
    );
}

/// A commit that only a force-pushed-away history held survives the repack (the mirror
/// never loses an object it had; Apps may pin such commits).
#[test]
fn repacks_keep_unreachable_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let (up, m) = fixture(tmp.path());
    let (orphan, _) = commit_round(&up, 1);
    m.fetch().unwrap();
    up.git(&["reset", "-q", "--hard", "HEAD~1"]);
    up.commit(&[("app/cm.yaml", "rewritten: true\n")], "rewritten");
    m.fetch().unwrap();
    fetch_after_each_commit(&m, &up, PACK_LIMIT + 2);
    assert!(pack_count(&m) <= PACK_LIMIT + 1);
    let id = m.resolve(&GitRef::Commit(orphan.clone())).unwrap();
    assert_eq!(id.to_string(), orphan);
    let snap = m.snapshot(id).unwrap();
    assert_eq!(
        snap.tree.read_file("app/cm.yaml", 100).unwrap(),
        b"round: 1\n"
    );
}

/// Packs removed or damaged between fetches: the fetch reports the mirror (not the remote)
/// as corrupted, which is what makes the poller re-create it.
#[test]
fn removed_or_damaged_packs_are_reported_as_a_corrupted_mirror() {
    for damage in ["remove", "remove-idx", "garble"] {
        let tmp = tempfile::tempdir().unwrap();
        let (up, m) = fixture(tmp.path());
        drop(m);
        damage_packs(&tmp.path().join("data"), damage);
        commit_round(&up, 1);
        let m = mirror(&tmp.path().join("data"), &up.url());
        let err = m.fetch().unwrap_err();
        assert!(matches!(err, GitError::Corrupt { .. }), "{damage}: {err}");
        assert!(
            err.to_string().contains(&m.dir().display().to_string()),
            "{damage}: {err}"
        );
    }
}

/// The mirror's pack and index files this process maps, counted from `/proc/self/maps`
/// (each test has its own directory, so other tests' mirrors do not count).
fn mapped_files(m: &Mirror) -> usize {
    let dir = m.dir().join("objects/pack");
    let dir = dir.to_str().unwrap();
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains(dir))
        .count()
}

/// Packs are mapped only while read: a snapshot maps what its render reads through a store
/// of its own and unmaps it when its last clone is dropped (at 10,000 Apps polled hourly a
/// replica kept 11 MiB of pack and index mapped after its last render); the mirror's own
/// handle (fetch, resolve) is re-opened by maintenance, which leaves a live snapshot readable.
#[test]
fn packs_are_mapped_only_while_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (_up, m) = fixture(tmp.path());
    let main = GitRef::Branch("main".into());
    m.maintain().unwrap();
    assert_eq!(
        mapped_files(&m),
        0,
        "maintenance unmaps what the fetch read"
    );
    assert_eq!(
        m.maintain().unwrap(),
        Maintenance::None,
        "nothing left to release"
    );

    let id = m.resolve(&main).unwrap();
    let resolved = mapped_files(&m);
    assert!(resolved > 0, "resolving reads the commit");
    let snap = m.snapshot(id).unwrap();
    assert_eq!(
        snap.tree.read_file("app/cm.yaml", 100).unwrap(),
        b"round: 0\n"
    );
    assert!(
        mapped_files(&m) > resolved,
        "the snapshot maps through its own store"
    );

    // Maintenance releases the mirror's handle; the snapshot keeps its store and reads on.
    assert!(matches!(
        m.maintain().unwrap(),
        Maintenance::Released { files } if files > 0
    ));
    assert!(mapped_files(&m) > 0);
    assert_eq!(
        snap.tree.read_file("app/other.yaml", 100).unwrap(),
        b"x: 1\n"
    );
    let copy = snap.clone();
    drop(snap);
    assert!(mapped_files(&m) > 0, "a clone keeps the store");
    drop(copy);
    assert_eq!(mapped_files(&m), 0, "the last clone unmaps it");

    // A fetch with nothing new maps nothing.
    assert!(m.fetch().unwrap().changes.is_empty());
    assert_eq!(mapped_files(&m), 0);
}

/// Snapshots of one commit taken while an earlier one is alive share its store: at a cold
/// start every poll snapshots the commit for the Apps that subscribed since the last one, and
/// those snapshots wait for their renders together (a replica of four held 18 of them, 204
/// MiB of the same pack and index mapped over and over). Once they are gone, the next
/// snapshot opens a store of its own again, and a snapshot of another commit never shares.
#[test]
fn snapshots_of_one_commit_alive_together_share_one_mapping() {
    let tmp = tempfile::tempdir().unwrap();
    let (up, m) = fixture(tmp.path());
    let main = GitRef::Branch("main".into());
    let first_id = m.resolve(&main).unwrap();
    m.maintain().unwrap();
    assert_eq!(mapped_files(&m), 0);

    let first = m.snapshot(first_id).unwrap();
    assert_eq!(
        first.tree.read_file("app/cm.yaml", 100).unwrap(),
        b"round: 0\n"
    );
    let one = mapped_files(&m);
    assert!(one > 0);
    let waiting: Vec<_> = (0..50).map(|_| m.snapshot(first_id).unwrap()).collect();
    for snap in &waiting {
        assert_eq!(
            snap.tree.read_file("app/other.yaml", 100).unwrap(),
            b"x: 1\n"
        );
        assert_eq!(snap.revision, first.revision);
    }
    assert_eq!(
        mapped_files(&m),
        one,
        "fifty more snapshots map nothing more"
    );
    drop(first);
    drop(waiting);
    assert_eq!(mapped_files(&m), 0, "the last one unmaps the shared store");

    // Another commit gets a tree of its own, even while the first one's is alive.
    let old = m.snapshot(first_id).unwrap();
    let content = commit_round(&up, 1).1;
    m.fetch().unwrap();
    let new = m.snapshot(m.resolve(&main).unwrap()).unwrap();
    assert_ne!(new.revision, old.revision);
    assert_eq!(
        new.tree.read_file("app/cm.yaml", 100).unwrap(),
        content.as_bytes()
    );
    assert_eq!(
        old.tree.read_file("app/cm.yaml", 100).unwrap(),
        b"round: 0\n"
    );
}

/// A thousand render rounds (resolve, snapshot, read, drop, maintain) with a new commit
/// fetched every tenth: every round reads the current content, its snapshot's mappings go
/// with it, maintenance leaves nothing mapped, and no file descriptor on the mirror stays
/// open.
#[test]
fn a_thousand_render_rounds_read_correctly_and_leave_nothing_mapped() {
    let tmp = tempfile::tempdir().unwrap();
    let (up, m) = fixture(tmp.path());
    let main = GitRef::Branch("main".into());
    let mut content = "round: 0\n".to_string();
    for i in 1..=1_000 {
        if i % 10 == 0 {
            content = commit_round(&up, i).1;
            m.fetch().unwrap();
        }
        let id = m.resolve(&main).unwrap();
        let resolved = mapped_files(&m);
        let snap = m.snapshot(id).unwrap();
        assert_eq!(
            snap.tree.read_file("app/cm.yaml", 100).unwrap(),
            content.as_bytes(),
            "round {i}"
        );
        drop(snap);
        assert_eq!(
            mapped_files(&m),
            resolved,
            "round {i}: the snapshot's mappings stay"
        );
        m.maintain().unwrap();
        assert_eq!(
            mapped_files(&m),
            0,
            "round {i}: maintenance leaves mappings"
        );
    }
    let dir = m.dir().to_str().unwrap().to_string();
    let open_fds = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with(&dir))
        .count();
    assert_eq!(open_fds, 0, "file descriptors left open on the mirror");
}
