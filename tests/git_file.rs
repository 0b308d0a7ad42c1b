//! Git mirrors over local paths and file:// URLs (gix spawns `git-upload-pack`), against real
//! repositories made with the `git` CLI.

mod support;

use support::Upstream;
use wardn::render::tree::{EntryKind, TreeError};
use wardn::sources::credentials::Credentials;
use wardn::sources::git::{ChangeKind, GitError, GitSettings, Mirror};
use wardn::sources::spec::GitRef;
use wardn::sources::url::parse_repo_url;

fn settings(data: &std::path::Path) -> GitSettings {
    GitSettings {
        data_dir: data.to_path_buf(),
        extra_roots_pem: None,
        ..GitSettings::default()
    }
}

fn mirror(data: &std::path::Path, url: &str) -> Mirror {
    Mirror::open(
        &settings(data),
        parse_repo_url(url).unwrap(),
        Credentials::Anonymous,
    )
    .unwrap()
}

fn kinds(outcome: &wardn::sources::git::FetchOutcome) -> Vec<(String, ChangeKind)> {
    outcome
        .changes
        .iter()
        .map(|c| (c.name.clone(), c.kind.clone()))
        .collect()
}

#[test]
fn fetch_resolve_and_read_files_without_worktree() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    let c1 = up.commit(
        &[
            ("apps/a/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("apps/a/cm.yaml", "kind: ConfigMap\n"),
        ],
        "one",
    );
    std::os::unix::fs::symlink("a/cm.yaml", up.dir.join("apps/link.yaml")).unwrap();
    std::os::unix::fs::symlink("../../../etc/passwd", up.dir.join("apps/escape")).unwrap();
    let c2 = up.commit(&[], "links");
    let data = tmp.path().join("data");
    let m = mirror(&data, &format!("file://{}", up.url()));
    assert!(m.dir().starts_with(data.join("repos")));
    assert!(m.dir().to_string_lossy().ends_with(".git"));

    let first = m.fetch().unwrap();
    assert_eq!(
        kinds(&first),
        [("refs/heads/main".to_string(), ChangeKind::Created)]
    );
    let id = m.resolve(&GitRef::Branch("main".into())).unwrap();
    assert_eq!(id.to_string(), c2);
    let snap = m.snapshot(id).unwrap();
    assert_eq!(snap.revision, c2);
    assert_eq!(snap.source_key.as_str(), format!("file://{}", up.url()));
    let tree = &snap.tree;
    assert_eq!(
        tree.read_file("apps/a/cm.yaml", 1 << 20).unwrap(),
        b"kind: ConfigMap\n"
    );
    assert_eq!(
        tree.read_file("apps/link.yaml", 1 << 20).unwrap(),
        b"kind: ConfigMap\n"
    );
    assert!(matches!(
        tree.read_file("apps/escape", 100),
        Err(TreeError::Forbidden { .. })
    ));
    assert_eq!(
        tree.real_path("apps/link.yaml").unwrap().as_deref(),
        Some("apps/a/cm.yaml")
    );
    assert_eq!(tree.real_path("apps/a").unwrap().as_deref(), Some("apps/a"));
    assert_eq!(tree.real_path("apps/none").unwrap(), None);
    assert!(matches!(
        tree.read_file("apps/nope", 100),
        Err(TreeError::NotFound(_))
    ));
    assert!(matches!(
        tree.read_file("apps/a/cm.yaml", 3),
        Err(TreeError::TooLarge { .. })
    ));
    assert_eq!(tree.kind("apps").unwrap(), Some(EntryKind::Dir));
    assert_eq!(tree.kind("apps/a/cm.yaml").unwrap(), Some(EntryKind::File));
    assert_eq!(tree.kind("apps/a/cm.yaml/x").unwrap(), None);
    let names: Vec<_> = tree
        .read_dir("apps")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["a", "link.yaml"]);
    // The mirror is bare: no checked-out files.
    assert!(!m.dir().join("apps").exists());

    // No change: nothing fetched, nothing reported.
    assert!(m.fetch().unwrap().changes.is_empty());
    // A pinned commit resolves while it is in the mirror.
    assert_eq!(
        m.resolve(&GitRef::Commit(c1.clone())).unwrap().to_string(),
        c1
    );
}

#[test]
fn fast_forward_force_push_tag_move_and_deleted_branch_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    let c1 = up.commit(&[("f", "1")], "one");
    up.git(&["tag", "-a", "v1", "-m", "release 1"]);
    up.git(&["branch", "feature"]);
    let m = mirror(&tmp.path().join("data"), &up.url());
    let created = kinds(&m.fetch().unwrap());
    assert_eq!(created.len(), 3, "{created:?}");

    let c2 = up.commit(&[("f", "2")], "two");
    assert_eq!(
        kinds(&m.fetch().unwrap()),
        [("refs/heads/main".into(), ChangeKind::FastForward)]
    );
    assert_eq!(
        m.resolve(&GitRef::Branch("main".into()))
            .unwrap()
            .to_string(),
        c2
    );

    // Force-push: rewrite main onto a sibling of c2.
    up.git(&["reset", "-q", "--hard", &c1]);
    let c3 = up.commit(&[("f", "3")], "rewritten");
    assert_eq!(
        kinds(&m.fetch().unwrap()),
        [("refs/heads/main".into(), ChangeKind::ForcePushed)]
    );
    assert_eq!(
        m.resolve(&GitRef::Branch("main".into()))
            .unwrap()
            .to_string(),
        c3
    );

    // Move the annotated tag; it resolves to the new commit (peeled).
    assert_eq!(
        m.resolve(&GitRef::Tag("v1".into())).unwrap().to_string(),
        c1
    );
    up.git(&["tag", "-f", "-a", "v1", "-m", "moved"]);
    assert_eq!(
        kinds(&m.fetch().unwrap()),
        [("refs/tags/v1".into(), ChangeKind::TagMoved)]
    );
    assert_eq!(
        m.resolve(&GitRef::Tag("v1".into())).unwrap().to_string(),
        c3
    );

    // Delete a branch: pruned from the mirror, resolving it says so.
    up.git(&["branch", "-D", "feature"]);
    assert_eq!(
        kinds(&m.fetch().unwrap()),
        [("refs/heads/feature".into(), ChangeKind::Deleted)]
    );
    let err = m.resolve(&GitRef::Branch("feature".into())).unwrap_err();
    assert!(matches!(err, GitError::RefNotFound { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("branch feature not found on the remote"),
        "{err}"
    );
    assert!(!m.local_refs().unwrap().contains_key("refs/heads/feature"));
}

#[test]
fn mirrors_are_shared_per_repository_key() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    up.commit(&[("f", "1")], "one");
    let data = tmp.path().join("data");
    let a = mirror(&data, &up.url());
    let b = mirror(&data, &format!("file://{}/", up.url()));
    assert_eq!(a.dir(), b.dir());
    a.fetch().unwrap();
    // The second handle sees what the first fetched, with no network round trip needed.
    assert!(b.local_refs().unwrap().contains_key("refs/heads/main"));
    assert!(b.fetch().unwrap().changes.is_empty());
}

#[test]
fn huge_files_are_fetched_and_limited() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    // Over the renderer's 16 MiB per-file limit.
    let big = "x".repeat(17 << 20);
    up.commit(
        &[("big.bin", big.as_str()), ("small.yaml", "a: 1\n")],
        "huge",
    );
    let m = mirror(&tmp.path().join("data"), &up.url());
    m.fetch().unwrap();
    let snap = m
        .snapshot(m.resolve(&GitRef::Branch("main".into())).unwrap())
        .unwrap();
    match snap.tree.read_file("big.bin", 1 << 20) {
        Err(TreeError::TooLarge { size, .. }) => assert_eq!(size, 17 << 20),
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert_eq!(
        snap.tree.read_file("big.bin", 32 << 20).unwrap().len(),
        17 << 20
    );
    assert_eq!(snap.tree.read_file("small.yaml", 100).unwrap(), b"a: 1\n");
}

#[test]
fn corrupted_mirror_objects_are_reported_as_corruption() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    up.commit(&[("f.yaml", "a: 1\n")], "one");
    let m = mirror(&tmp.path().join("data"), &up.url());
    m.fetch().unwrap();
    let id = m.resolve(&GitRef::Branch("main".into())).unwrap();
    // Damage every object in the mirror's pack (keep the header and trailer).
    let pack_dir = m.dir().join("objects/pack");
    for entry in std::fs::read_dir(&pack_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "pack") {
            let mut bytes = std::fs::read(&path).unwrap();
            let end = bytes.len() - 20;
            for b in &mut bytes[12..end] {
                *b = 0xff;
            }
            std::fs::write(&path, bytes).unwrap();
        }
    }
    let reopened = mirror(&tmp.path().join("data"), &up.url());
    let err = reopened.snapshot(id).unwrap_err();
    assert!(matches!(err, GitError::Corrupt { .. }), "{err}");
    assert!(
        err.to_string().contains("corrupted repository mirror"),
        "{err}"
    );
}

#[test]
fn unreachable_remotes_and_missing_refs_give_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let m = mirror(&tmp.path().join("data"), "/nonexistent/wardn/repo");
    let err = m.fetch().unwrap_err();
    assert!(matches!(err, GitError::Unreachable { .. }), "{err}");
    let up = Upstream::init(&tmp.path().join("up"));
    up.commit(&[("f", "1")], "one");
    let m = mirror(&tmp.path().join("data"), &up.url());
    m.fetch().unwrap();
    let missing = "0".repeat(39) + "1";
    let err = m.resolve(&GitRef::Commit(missing)).unwrap_err();
    assert!(
        err.to_string()
            .contains("no fetched branch or tag contains it"),
        "{err}"
    );
    let err = m.resolve(&GitRef::Tag("v9".into())).unwrap_err();
    assert!(err.to_string().contains("tag v9 not found"), "{err}");
    // ssh runs the system client in batch mode: a closed port is a clear error, never a prompt.
    let ssh = mirror(
        &tmp.path().join("data"),
        "ssh://git@127.0.0.1:1/org/repo.git",
    );
    let err = ssh.fetch().unwrap_err();
    assert!(err.to_string().contains("Connection refused"), "{err}");
    assert!(matches!(err, GitError::Unreachable { .. }), "{err}");
}

#[test]
fn credentials_are_refused_before_any_request_on_insecure_transports() {
    let tmp = tempfile::tempdir().unwrap();
    for url in ["http://127.0.0.1:9/org/repo", "/srv/repo"] {
        let err = Mirror::open(
            &settings(tmp.path()),
            parse_repo_url(url).unwrap(),
            Credentials::Bearer {
                token: "secret".into(),
            },
        )
        .unwrap_err();
        assert!(matches!(err, GitError::InsecureCredentials(_)), "{err}");
        assert!(err.to_string().contains("only sent over https"), "{err}");
        assert!(!err.to_string().contains("secret"));
    }
    assert!(!tmp.path().join("repos").exists());
}
