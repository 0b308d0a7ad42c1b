//! The load restrictor against symlinks, differential with `kubectl kustomize` (kubectl 1.32,
//! kustomize v5.5.0): for every kind of path a kustomization names, a symlink resolving outside
//! the kustomization root (relative target elsewhere in the repository, or absolute target
//! outside it) is refused by both, never followed; a symlink staying inside is followed by both.
//! A Directory source's pinned snapshot of the same tree renders exactly as the directory does.

use std::fs;
use std::path::Path;
use std::process::Command;

use wardn::render::{DirTree, render};
use wardn::sources::directory::snapshot_directory;

/// The reference kustomize (kubectl 1.32 embeds kustomize v5.5.0).
const KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.32";

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: v\n";
const SMP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: patched\n";
const JSON6902: &str = "- op: replace\n  path: /data/k\n  value: patched\n";
const REPLACEMENT: &str = "source: {kind: ConfigMap, name: cm, fieldPath: data.k}\ntargets:\n- select: {kind: ConfigMap}\n  fieldPaths: [data.j]\n";

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// wardn's render of `repo/app` (`Err` holds the message), read from the directory and from
/// a Directory source's pinned snapshot of it, which must agree.
fn render_app(repo: &Path) -> Result<String, String> {
    let on_disk = render(&DirTree::new(repo).unwrap(), "app")
        .map(|r| r.yaml)
        .map_err(|e| e.to_string());
    let pinned = snapshot_directory(repo).unwrap();
    let through_snapshot = render(pinned.tree.as_ref(), "app")
        .map(|r| r.yaml)
        .map_err(|e| e.to_string());
    assert_eq!(
        through_snapshot, on_disk,
        "the pinned snapshot renders differently"
    );
    on_disk
}

/// Where a symlink points.
#[derive(Clone, Copy, Debug)]
enum Escape {
    /// A relative target elsewhere in the repository (`../other/…`).
    Relative,
    /// An absolute target outside the repository.
    Absolute,
}

/// Lays out `repo/app/kustomization.yaml` (text `kustomization`) with `app/<link>` a symlink
/// to a file holding `content` outside `app`, renders `repo/app` with wardn (the tree rooted
/// at `repo`) and kustomize, and returns both results (`Err` holds the message).
fn both(
    kustomization: &str,
    link: &str,
    content: &str,
    escape: Escape,
) -> (Result<String, String>, Result<String, String>) {
    let tmp = tempfile::tempdir().unwrap();
    let tmp = tmp.path();
    let repo = tmp.join("repo");
    write(&repo, "app/kustomization.yaml", kustomization);
    write(&repo, "app/cm.yaml", CM);
    write(&repo, "other/target", content);
    write(tmp, "outside/target", content);
    let target = match escape {
        Escape::Relative => {
            let depth = link.matches('/').count() + 1;
            format!("{}other/target", "../".repeat(depth))
        }
        Escape::Absolute => tmp.join("outside/target").display().to_string(),
    };
    let link_path = repo.join("app").join(link);
    fs::create_dir_all(link_path.parent().unwrap()).unwrap();
    if link_path.exists() {
        fs::remove_file(&link_path).unwrap();
    }
    std::os::unix::fs::symlink(&target, &link_path).unwrap();
    let ours = render_app(&repo);
    let out = Command::new(KUBECTL)
        .arg("kustomize")
        .arg(repo.join("app"))
        .output()
        .unwrap();
    let theirs = if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    };
    (ours, theirs)
}

/// Both refuse, kustomize with its load-restrictor message and wardn with the same words
/// naming the link (tree paths instead of absolute ones).
fn assert_refused(kustomization: &str, link: &str, content: &str) {
    for escape in [Escape::Relative, Escape::Absolute] {
        let (ours, theirs) = both(kustomization, link, content, escape);
        let theirs = theirs.expect_err("kustomize must refuse");
        assert!(
            theirs.contains("security; file '") && theirs.contains("is not in or below"),
            "{escape:?} {link}: kustomize: {theirs}"
        );
        let ours = ours.expect_err("wardn must refuse");
        let want = format!("security; file 'app/{link}' is not in or below 'app'");
        assert!(ours.contains(&want), "{escape:?} {link}: wardn: {ours}");
    }
}

#[test]
fn resource_file() {
    assert_refused("resources:\n- leak.yaml\n", "leak.yaml", CM);
}

#[test]
fn resource_file_under_a_symlinked_directory() {
    // `app/sub` is a real directory; the file in it is the link.
    assert_refused("resources:\n- sub/leak.yaml\n", "sub/leak.yaml", CM);
}

#[test]
fn patch_file() {
    assert_refused(
        "resources:\n- cm.yaml\npatches:\n- path: leak.yaml\n",
        "leak.yaml",
        SMP,
    );
}

#[test]
fn patches_strategic_merge_file() {
    assert_refused(
        "resources:\n- cm.yaml\npatchesStrategicMerge:\n- leak.yaml\n",
        "leak.yaml",
        SMP,
    );
}

#[test]
fn patches_json6902_file() {
    assert_refused(
        "resources:\n- cm.yaml\npatchesJson6902:\n- target: {version: v1, kind: ConfigMap, name: cm}\n  path: leak.yaml\n",
        "leak.yaml",
        JSON6902,
    );
}

#[test]
fn generator_files() {
    assert_refused(
        "configMapGenerator:\n- name: g\n  files:\n  - leak.txt\n",
        "leak.txt",
        "secret\n",
    );
    assert_refused(
        "secretGenerator:\n- name: g\n  files:\n  - key=leak.txt\n",
        "leak.txt",
        "secret\n",
    );
}

#[test]
fn generator_envs() {
    assert_refused(
        "configMapGenerator:\n- name: g\n  envs:\n  - leak.env\n",
        "leak.env",
        "A=1\n",
    );
    assert_refused(
        "secretGenerator:\n- name: g\n  env: leak.env\n",
        "leak.env",
        "A=1\n",
    );
}

#[test]
fn replacements_file() {
    assert_refused(
        "resources:\n- cm.yaml\nreplacements:\n- path: leak.yaml\n",
        "leak.yaml",
        REPLACEMENT,
    );
}

#[test]
fn component_files() {
    // The component's directory is a real one inside the root; its resource is the link.
    let kust = "resources:\n- cm.yaml\ncomponents:\n- comp\n";
    for escape in [Escape::Relative, Escape::Absolute] {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        write(&repo, "app/kustomization.yaml", kust);
        write(&repo, "app/cm.yaml", CM);
        write(
            &repo,
            "app/comp/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: leak.yaml\n",
        );
        write(&repo, "other/target", SMP);
        write(tmp.path(), "outside/target", SMP);
        let target = match escape {
            Escape::Relative => "../../other/target".to_string(),
            Escape::Absolute => tmp.path().join("outside/target").display().to_string(),
        };
        std::os::unix::fs::symlink(target, repo.join("app/comp/leak.yaml")).unwrap();
        let err = render(&DirTree::new(&repo).unwrap(), "app")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("security; file 'app/comp/leak.yaml' is not in or below 'app/comp'"),
            "{err}"
        );
        let out = Command::new(KUBECTL)
            .arg("kustomize")
            .arg(repo.join("app"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("security; file '"));
    }
}

#[test]
fn kustomization_file_itself() {
    // kustomize's loader refuses the file, so it finds no kustomization; so does wardn.
    for escape in [Escape::Relative, Escape::Absolute] {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        write(&repo, "app/cm.yaml", CM);
        write(&repo, "other/target", "resources:\n- cm.yaml\n");
        write(tmp.path(), "outside/target", "resources:\n- cm.yaml\n");
        let target = match escape {
            Escape::Relative => "../other/target".to_string(),
            Escape::Absolute => tmp.path().join("outside/target").display().to_string(),
        };
        std::os::unix::fs::symlink(target, repo.join("app/kustomization.yaml")).unwrap();
        let out = Command::new(KUBECTL)
            .arg("kustomize")
            .arg(repo.join("app"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        let theirs = String::from_utf8_lossy(&out.stderr);
        assert!(theirs.contains("unable to find one of"), "{theirs}");
        // wardn refuses it the same way (never rendering the directory as plain manifests,
        // which would silently skip the kustomization), and never reads the link.
        let tree = DirTree::new(&repo).unwrap();
        let err = render(&tree, "app").unwrap_err().to_string();
        assert!(
            err.contains("unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory 'app'"),
            "{escape:?}: {err}"
        );
        // Reached as a resource of another kustomization: refused by both too.
        write(&repo, "top/kustomization.yaml", "resources:\n- ../app\n");
        let out = Command::new(KUBECTL)
            .arg("kustomize")
            .arg(repo.join("top"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("unable to find one of"));
        let err = render(&tree, "top").unwrap_err().to_string();
        assert!(err.contains("unable to find one of"), "{escape:?}: {err}");
    }
}

#[test]
fn symlinks_staying_inside_the_root_are_followed_by_both() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(
        &repo,
        "app/kustomization.yaml",
        "resources:\n- link.yaml\n- base\n",
    );
    write(&repo, "app/sub/cm.yaml", CM);
    std::os::unix::fs::symlink("sub/cm.yaml", repo.join("app/link.yaml")).unwrap();
    // A directory entry may point anywhere in the repository: its files are then checked
    // against where it really is.
    write(
        &repo,
        "other/kustomization.yaml",
        "resources:\n- cm.yaml\nnamePrefix: other-\n",
    );
    write(&repo, "other/cm.yaml", CM);
    std::os::unix::fs::symlink("../other", repo.join("app/base")).unwrap();
    let ours = render_app(&repo).unwrap();
    let out = Command::new(KUBECTL)
        .arg("kustomize")
        .arg(repo.join("app"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ours, String::from_utf8(out.stdout).unwrap());
}

#[test]
fn a_file_reached_through_a_symlinked_directory_is_refused_by_both() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(
        &repo,
        "app/kustomization.yaml",
        "resources:\n- base/cm.yaml\n",
    );
    write(&repo, "other/cm.yaml", CM);
    std::os::unix::fs::symlink("../other", repo.join("app/base")).unwrap();
    let err = render_app(&repo).unwrap_err();
    assert!(
        err.contains("security; file 'app/base/cm.yaml' is not in or below 'app'"),
        "{err}"
    );
    let out = Command::new(KUBECTL)
        .arg("kustomize")
        .arg(repo.join("app"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("security; file '"));
}

#[test]
fn retargeting_a_symlink_changes_the_recorded_inputs() {
    // Same bytes either way, so only the recorded real path can tell the two trees apart:
    // a render cache must not reuse the first result once the link leads out of the root.
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(&repo, "app/kustomization.yaml", "resources:\n- link.yaml\n");
    write(&repo, "app/cm.yaml", CM);
    write(&repo, "other/cm.yaml", CM);
    std::os::unix::fs::symlink("cm.yaml", repo.join("app/link.yaml")).unwrap();
    let tree = DirTree::new(&repo).unwrap();
    let first = render(&tree, "app").unwrap();
    let fingerprint = wardn::render::InputsFingerprint::of(&first.inputs);
    assert!(fingerprint.unchanged(&tree));
    fs::remove_file(repo.join("app/link.yaml")).unwrap();
    std::os::unix::fs::symlink("../other/cm.yaml", repo.join("app/link.yaml")).unwrap();
    assert!(!fingerprint.unchanged(&tree));
    assert!(render(&tree, "app").is_err());
}

#[test]
fn configurations_file() {
    assert_refused(
        "resources:\n- cm.yaml\nconfigurations:\n- leak.yaml\n",
        "leak.yaml",
        "nameReference: []\n",
    );
}

#[test]
fn transformer_and_generator_config_files() {
    assert_refused(
        "resources:\n- cm.yaml\ntransformers:\n- leak.yaml\n",
        "leak.yaml",
        "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: l\nlabels:\n  a: b\nfieldSpecs:\n- path: metadata/labels\n  create: true\n",
    );
    assert_refused(
        "generators:\n- leak.yaml\n",
        "leak.yaml",
        "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: g\nliterals:\n- a=b\n",
    );
}
