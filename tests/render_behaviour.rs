//! Renderer behaviour beyond output equality: recorded inputs, safety limits, error chains,
//! and the `wardn render` command.

use std::fs;
use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};
use wardn::render::{DirTree, render};

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

#[test]
fn inputs_cover_files_listings_and_probes() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "app/kustomization.yaml",
        "resources:\n- cm.yaml\n",
    );
    write(dir.path(), "app/cm.yaml", CM);
    let tree = DirTree::new(dir.path()).unwrap();
    let rendered = render(&tree, "app").unwrap();
    let keys: Vec<&str> = rendered.inputs.keys().map(String::as_str).collect();
    assert!(keys.contains(&"app/kustomization.yaml"), "{keys:?}");
    assert!(keys.contains(&"app/cm.yaml"), "{keys:?}");
    // The absence of the other kustomization names is an input too: adding one changes the result.
    assert!(keys.contains(&"app/kustomization.yml?"), "{keys:?}");
    assert_eq!(
        rendered.inputs["app/cm.yaml"],
        hex::encode(Sha256::digest(CM.as_bytes()))
    );
    assert_eq!(
        rendered.digest,
        hex::encode(Sha256::digest(rendered.yaml.as_bytes()))
    );
    assert_eq!(rendered.objects.len(), 1);
}

#[test]
fn plain_directory_listing_is_an_input() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "m/b.yaml", CM);
    write(dir.path(), "m/a.yaml", &CM.replace("name: a", "name: z"));
    let tree = DirTree::new(dir.path()).unwrap();
    let first = render(&tree, "m").unwrap();
    // Lexical file order, no sorting: a.yaml (z) before b.yaml (a).
    assert_eq!(first.objects[0]["metadata"]["name"], "z");
    assert!(first.inputs.contains_key("m/"));
    write(dir.path(), "m/c.yaml", &CM.replace("name: a", "name: c"));
    let second = render(&tree, "m").unwrap();
    assert_ne!(first.inputs["m/"], second.inputs["m/"]);
    assert_eq!(second.objects.len(), 3);
}

#[test]
fn errors_name_the_file_chain() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "base/kustomization.yaml",
        "resources:\n- gone.yaml\n",
    );
    write(
        dir.path(),
        "overlay/kustomization.yaml",
        "resources:\n- ../base\n",
    );
    let tree = DirTree::new(dir.path()).unwrap();
    let err = render(&tree, "overlay").unwrap_err().to_string();
    assert!(err.contains("overlay/kustomization.yaml"), "{err}");
    assert!(err.contains("base/kustomization.yaml"), "{err}");
    assert!(
        err.contains("base/gone.yaml: no such file or directory"),
        "{err}"
    );
}

#[test]
fn remote_resources_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "kustomization.yaml",
        "resources:\n- https://github.com/org/repo//deploy?ref=v1\n",
    );
    let tree = DirTree::new(dir.path()).unwrap();
    let err = render(&tree, "").unwrap_err().to_string();
    assert!(err.contains("remote resource"), "{err}");
}

#[test]
fn symlinks_out_of_the_tree_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "secret.yaml", CM);
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "kustomization.yaml",
        "resources:\n- leak.yaml\n",
    );
    std::os::unix::fs::symlink(
        outside.path().join("secret.yaml"),
        dir.path().join("leak.yaml"),
    )
    .unwrap();
    let tree = DirTree::new(dir.path()).unwrap();
    let err = render(&tree, "").unwrap_err().to_string();
    assert!(
        err.contains("security; file 'leak.yaml' is not in or below '.'"),
        "{err}"
    );
}

#[test]
fn yaml_bombs_fail_fast_naming_the_file() {
    let mut bomb = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
    );
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "kustomization.yaml",
        "resources:\n- bomb.yaml\n",
    );
    write(dir.path(), "bomb.yaml", &bomb);
    let tree = DirTree::new(dir.path()).unwrap();
    // Fully expanded this is 10^12 nodes: the alias budget must stop it.
    let err = render(&tree, "").unwrap_err().to_string();
    assert!(err.contains("bomb.yaml"), "{err}");
}

#[test]
fn oversized_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "kustomization.yaml", "resources:\n- big.yaml\n");
    let big = format!("{CM}  pad: \"{}\"\n", "x".repeat(17 * 1024 * 1024));
    write(dir.path(), "big.yaml", &big);
    let tree = DirTree::new(dir.path()).unwrap();
    let err = render(&tree, "").unwrap_err().to_string();
    assert!(err.contains("over the limit"), "{err}");
}

#[test]
fn cli_renders_yaml_and_json() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "kustomization.yaml",
        "namePrefix: p-\nresources:\n- cm.yaml\n",
    );
    write(dir.path(), "cm.yaml", CM);
    let bin = env!("CARGO_BIN_EXE_wardn");
    let out = Command::new(bin)
        .args(["render", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  name: p-a\n"
    );
    let out = Command::new(bin)
        .args(["render", "--json", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let objects: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(objects[0]["metadata"]["name"], "p-a");
    let out = Command::new(bin)
        .args(["render", dir.path().join("nope").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn rendering_vars_and_configurations_is_stable_over_many_runs() {
    // The kubebuilder-style tree (configurations merged upward, vars bound per level and
    // substituted at the top): the 300th render is the first one, inputs included.
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/render/kubebuilder-config");
    let tree = DirTree::new(&case).unwrap();
    let first = render(&tree, "config/default").unwrap();
    assert!(
        first
            .yaml
            .contains("guestbook-webhook-service.guestbook-system.svc")
    );
    for _ in 0..299 {
        let again = render(&tree, "config/default").unwrap();
        assert_eq!(again.digest, first.digest);
        assert_eq!(again.inputs, first.inputs);
    }
}
