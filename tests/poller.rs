//! The polling scheduler against real repositories: shared mirrors, notifications, force-push,
//! moved tag, deleted branch, unreachable remote, a corrupted mirror and packs removed between
//! fetches.

mod support;

use std::time::Duration;

use support::{Upstream, damage_packs};
use tokio::sync::mpsc::UnboundedReceiver;
use wardn::sources::credentials::Credentials;
use wardn::sources::git::GitSettings;
use wardn::sources::poller::{Poller, PollerConfig};
use wardn::sources::spec::{GitRef, GitSource};
use wardn::sources::status::{Reason, SourceUpdate};
use wardn::sources::url::parse_repo_url;

/// A poller that only polls when triggered (hour-long intervals and backoff).
fn poller(data: &std::path::Path) -> (Poller, UnboundedReceiver<SourceUpdate>) {
    let mut config = PollerConfig::new(GitSettings {
        data_dir: data.to_path_buf(),
        extra_roots_pem: None,
        ..GitSettings::default()
    });
    config.backoff_base = Duration::from_secs(3600);
    config.backoff_max = Duration::from_secs(7200);
    Poller::new(config)
}

fn source(url: &str, reference: GitRef) -> GitSource {
    GitSource {
        url: parse_repo_url(url).unwrap(),
        reference,
        path: String::new(),
        interval: Duration::from_secs(3600),
    }
}

/// The next update for `app` (others are skipped); waits as long as needed, up to a minute.
async fn next(rx: &mut UnboundedReceiver<SourceUpdate>, app: &str) -> SourceUpdate {
    loop {
        let update = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .expect("an update within a minute")
            .expect("channel open");
        if update.app == app {
            return update;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_share_one_mirror_and_follow_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    let c1 = up.commit(&[("a/x.yaml", "x: 1\n")], "one");
    up.git(&["tag", "v1"]);
    up.git(&["branch", "feature"]);
    let (poller, mut rx) = poller(&tmp.path().join("data"));
    let url = up.url();
    poller
        .subscribe(
            "main-app",
            &source(&url, GitRef::Branch("main".into())),
            Credentials::Anonymous,
        )
        .await
        .unwrap();
    let u = next(&mut rx, "main-app").await;
    assert_eq!(u.status.reason, Reason::Fetched);
    assert_eq!(u.snapshot.as_ref().unwrap().revision, c1);
    assert_eq!(
        u.snapshot.unwrap().tree.read_file("a/x.yaml", 100).unwrap(),
        b"x: 1\n"
    );

    // Other Apps on the same repository (another spelling) share the mirror and the task.
    let file_url = format!("file://{url}/");
    poller
        .subscribe(
            "tag-app",
            &source(&file_url, GitRef::Tag("v1".into())),
            Credentials::Anonymous,
        )
        .await
        .unwrap();
    assert_eq!(next(&mut rx, "tag-app").await.status.revision.unwrap(), c1);
    poller
        .subscribe(
            "feature-app",
            &source(&url, GitRef::Branch("feature".into())),
            Credentials::Anonymous,
        )
        .await
        .unwrap();
    assert_eq!(
        next(&mut rx, "feature-app").await.status.revision.unwrap(),
        c1
    );
    let key = parse_repo_url(&url).unwrap().key;
    assert_eq!(poller.stats(&key).unwrap().subscribers, 3);
    assert_eq!(
        std::fs::read_dir(tmp.path().join("data/repos"))
            .unwrap()
            .count(),
        1
    );

    // A new commit reaches the branch App only; the others' revisions did not change.
    let c2 = up.commit(&[("a/x.yaml", "x: 2\n")], "two");
    assert!(poller.trigger(&key));
    let u = next(&mut rx, "main-app").await;
    assert_eq!(u.snapshot.unwrap().revision, c2);
    assert_eq!(u.status.reason, Reason::Fetched);

    // Force-push.
    up.git(&["reset", "-q", "--hard", &c1]);
    let c3 = up.commit(&[("a/x.yaml", "x: 3\n")], "rewritten");
    poller.trigger(&key);
    let u = next(&mut rx, "main-app").await;
    assert_eq!(u.status.reason, Reason::ForcePushed);
    assert!(
        u.status.message.contains("force-pushed"),
        "{}",
        u.status.message
    );
    assert_eq!(u.snapshot.unwrap().revision, c3);

    // Tag moved.
    up.git(&["tag", "-f", "v1", &c3]);
    poller.trigger(&key);
    let u = next(&mut rx, "tag-app").await;
    assert_eq!(u.status.reason, Reason::TagMoved);
    assert_eq!(u.snapshot.unwrap().revision, c3);

    // Deleted branch: an error status, the last revision kept, no snapshot.
    up.git(&["branch", "-D", "feature"]);
    poller.trigger(&key);
    let u = next(&mut rx, "feature-app").await;
    assert_eq!(u.status.reason, Reason::RefDeleted);
    assert!(
        u.status.message.contains("deleted on the remote"),
        "{}",
        u.status.message
    );
    assert_eq!(u.status.revision.unwrap(), c1);
    assert!(u.snapshot.is_none());
    assert_eq!(
        poller.status("feature-app").unwrap().reason,
        Reason::RefDeleted
    );

    // Unsubscribing the last App stops polling the repository.
    for app in ["main-app", "tag-app", "feature-app"] {
        poller.unsubscribe(app);
    }
    assert!(!poller.trigger(&key));
    assert!(!poller.polls(&parse_repo_url(&url).unwrap().key));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_remote_backs_off_and_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("later");
    let (poller, mut rx) = poller(&tmp.path().join("data"));
    let url = path.display().to_string();
    let src = source(&url, GitRef::Branch("main".into()));
    poller
        .subscribe("app", &src, Credentials::Anonymous)
        .await
        .unwrap();
    let u = next(&mut rx, "app").await;
    assert_eq!(u.status.reason, Reason::Unreachable);
    assert_eq!(u.status.failures, 1);
    // Backoff: the next poll is scheduled an hour out (base) ± jitter, not at the interval.
    assert!(u.status.next_poll >= Duration::from_secs(3000));

    // The repository appears; a trigger (webhook) polls at once and the App recovers.
    let up = Upstream::init(&path);
    let c1 = up.commit(&[("f", "1")], "one");
    assert!(poller.trigger(&src.url.key));
    let u = next(&mut rx, "app").await;
    assert_eq!(u.status.reason, Reason::Fetched);
    assert_eq!(u.status.failures, 0);
    assert_eq!(u.snapshot.unwrap().revision, c1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_mirror_is_reported_and_recreated() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    let c1 = up.commit(&[("f.yaml", "a: 1\n")], "one");
    let data = tmp.path().join("data");
    let (poller, mut rx) = poller(&data);
    let src = source(&up.url(), GitRef::Branch("main".into()));
    poller
        .subscribe("a", &src, Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(next(&mut rx, "a").await.status.revision.unwrap(), c1);

    let pack_dir = std::fs::read_dir(data.join("repos"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("objects/pack");
    for entry in std::fs::read_dir(&pack_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "pack") {
            let mut bytes = std::fs::read(&path).unwrap();
            let end = bytes.len() - 20;
            bytes[12..end].fill(0xff);
            std::fs::write(&path, bytes).unwrap();
        }
    }
    // A new App needs the commit's objects: the damage is reported, the mirror re-created
    // and fetched again, and the App gets its snapshot.
    poller
        .subscribe("b", &src, Credentials::Anonymous)
        .await
        .unwrap();
    let u = next(&mut rx, "b").await;
    assert_eq!(u.status.reason, Reason::Corrupted, "{}", u.status.message);
    let u = next(&mut rx, "b").await;
    assert_eq!(u.status.reason, Reason::Fetched, "{}", u.status.message);
    let snap = u.snapshot.unwrap();
    assert_eq!(snap.revision, c1);
    assert_eq!(snap.tree.read_file("f.yaml", 100).unwrap(), b"a: 1\n");
}

/// Packs removed or overwritten between two fetches of a changed branch: the poll reports the
/// mirror as corrupted (not the remote as failing), re-creates it, fetches again at once and
/// the App gets the new revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packs_removed_between_fetches_are_repaired() {
    for damage in ["remove", "remove-idx", "garble"] {
        let tmp = tempfile::tempdir().unwrap();
        let up = Upstream::init(&tmp.path().join("up"));
        let c1 = up.commit(&[("f.yaml", "a: 1\n"), ("g.yaml", "b: 1\n")], "one");
        let data = tmp.path().join("data");
        let (poller, mut rx) = poller(&data);
        let src = source(&up.url(), GitRef::Branch("main".into()));
        poller
            .subscribe("a", &src, Credentials::Anonymous)
            .await
            .unwrap();
        assert_eq!(next(&mut rx, "a").await.status.revision.unwrap(), c1);

        damage_packs(&data, damage);
        let c2 = up.commit(&[("f.yaml", "a: 2\n")], "two");
        poller.trigger(&src.url.key);
        let u = next(&mut rx, "a").await;
        assert_eq!(
            u.status.reason,
            Reason::Corrupted,
            "{damage}: {}",
            u.status.message
        );
        let u = next(&mut rx, "a").await;
        assert_eq!(
            u.status.reason,
            Reason::Fetched,
            "{damage}: {}",
            u.status.message
        );
        let snap = u.snapshot.unwrap();
        assert_eq!(snap.revision, c2, "{damage}");
        assert_eq!(snap.tree.read_file("f.yaml", 100).unwrap(), b"a: 2\n");
        assert_eq!(snap.tree.read_file("g.yaml", 100).unwrap(), b"b: 1\n");
    }
}
