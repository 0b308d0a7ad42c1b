//! `Directory` sources: content-hash revisions and the notify watcher on real files.

use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use wardn::sources::directory::{snapshot_directory, watch};
use wardn::sources::git::GitSettings;
use wardn::sources::poller::{Poller, PollerConfig};
use wardn::sources::status::SourceUpdate;

async fn next(rx: &mut UnboundedReceiver<SourceUpdate>) -> SourceUpdate {
    tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .expect("an update within a minute")
        .expect("channel open")
}

#[test]
fn revision_is_a_content_hash() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/a.yaml"), "a: 1\n").unwrap();
    let r1 = snapshot_directory(dir.path()).unwrap();
    assert!(r1.revision.starts_with("sha256:"));
    assert_eq!(
        r1.source_key.as_str(),
        format!("file://{}", dir.path().canonicalize().unwrap().display())
    );
    // .git is ignored; content changes change the revision; restoring restores it.
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/HEAD"), "x").unwrap();
    assert_eq!(
        snapshot_directory(dir.path()).unwrap().revision,
        r1.revision
    );
    std::fs::write(dir.path().join("sub/a.yaml"), "a: 2\n").unwrap();
    let r2 = snapshot_directory(dir.path()).unwrap();
    assert_ne!(r2.revision, r1.revision);
    std::fs::write(dir.path().join("sub/a.yaml"), "a: 1\n").unwrap();
    assert_eq!(
        snapshot_directory(dir.path()).unwrap().revision,
        r1.revision
    );
    assert!(snapshot_directory(&dir.path().join("missing")).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_emits_a_snapshot_per_change() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cm.yaml"), "v: 1\n").unwrap();
    // Directory updates share the poller's channel, so the reconciler reads one stream.
    let data = tempfile::tempdir().unwrap();
    let (poller, mut rx) = Poller::new(PollerConfig::new(GitSettings {
        data_dir: data.path().to_path_buf(),
        extra_roots_pem: None,
    }));
    let _watch = watch("local-app", dir.path(), poller.sender()).unwrap();
    let first = next(&mut rx).await;
    assert_eq!(first.app, "local-app");
    let first = first.snapshot.unwrap();
    assert_eq!(first.tree.read_file("cm.yaml", 100).unwrap(), b"v: 1\n");

    std::fs::write(dir.path().join("cm.yaml"), "v: 2\n").unwrap();
    let second = next(&mut rx).await.snapshot.unwrap();
    assert_ne!(second.revision, first.revision);
    assert_eq!(second.tree.read_file("cm.yaml", 100).unwrap(), b"v: 2\n");

    std::fs::create_dir(dir.path().join("nested")).unwrap();
    std::fs::write(dir.path().join("nested/new.yaml"), "n: 1\n").unwrap();
    // The directory and the file may arrive as one change or two.
    let third = loop {
        let snap = next(&mut rx).await.snapshot.unwrap();
        if snap.tree.read_file("nested/new.yaml", 100).is_ok() {
            break snap;
        }
    };
    assert_eq!(
        third.tree.read_file("nested/new.yaml", 100).unwrap(),
        b"n: 1\n"
    );
    assert_eq!(
        third.revision,
        snapshot_directory(dir.path()).unwrap().revision
    );
}
