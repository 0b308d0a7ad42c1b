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
        ..GitSettings::default()
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

/// A writer replaces a file a thousand times while snapshots are taken and rendered: every
/// render that succeeds has exactly the content its revision names (before snapshots were
/// pinned, a render read whatever was on disk by then, under the revision hashed earlier).
#[test]
fn a_snapshot_renders_only_the_content_its_revision_names_while_files_change() {
    const WRITES: u32 = 1_000;
    let config_map = |value: u32| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: \"{value}\"\n")
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        "resources: [cm.yaml]\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("cm.yaml"), config_map(0)).unwrap();
    // The revision of each content, from a directory nobody writes to (a revision hashes
    // relative paths and content only).
    let reference = tempfile::tempdir().unwrap();
    std::fs::write(
        reference.path().join("kustomization.yaml"),
        "resources: [cm.yaml]\n",
    )
    .unwrap();
    let revision_of = |value: u32| {
        std::fs::write(reference.path().join("cm.yaml"), config_map(value)).unwrap();
        snapshot_directory(reference.path()).unwrap().revision
    };

    let root = dir.path().to_path_buf();
    let staging = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
    let writer = std::thread::spawn(move || {
        for value in 1..=WRITES {
            // Replaced whole (rename from beside the directory), as `git checkout` does.
            let staged = staging.path().join("cm.yaml");
            std::fs::write(&staged, config_map(value)).unwrap();
            std::fs::rename(&staged, root.join("cm.yaml")).unwrap();
        }
    });
    let (mut rendered, mut refused) = (0, 0);
    while !writer.is_finished() {
        let snapshot = snapshot_directory(dir.path()).unwrap();
        match wardn::render::render(snapshot.tree.as_ref(), "") {
            Ok(out) => {
                let value: u32 = out.objects[0]["data"]["v"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(snapshot.revision, revision_of(value), "rendered v={value}");
                rendered += 1;
            }
            Err(e) => {
                assert!(e.source_changed(), "{e}");
                refused += 1;
            }
        }
    }
    writer.join().unwrap();
    assert!(rendered > 0, "{rendered} rendered, {refused} refused");
}
