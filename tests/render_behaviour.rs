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

#[test]
fn crd_field_specs_are_stable_over_many_runs() {
    // The CRD definitions' name references (followed through `$ref`s) and the overlay's
    // strategic merge patch: the 1,000th render is the first one.
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/render/crds-name-references");
    let tree = DirTree::new(&case).unwrap();
    let first = render(&tree, "overlay").unwrap();
    assert!(first.yaml.contains("name: prod-x-bee"), "{}", first.yaml);
    for _ in 0..999 {
        let again = render(&tree, "overlay").unwrap();
        assert_eq!(again.digest, first.digest);
    }
}

#[test]
fn hostile_crd_definitions_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "app/kustomization.yaml",
        "crds:\n- cycle.yaml\nresources:\n- cm.yaml\nnamePrefix: p-\n",
    );
    write(
        root,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
    );
    // A definition whose `$ref` leads back to itself: kustomize would recurse forever.
    write(
        root,
        "app/cycle.yaml",
        "a.Loop:\n  Schema:\n    properties:\n      kind: {}\n      apiVersion: {}\n      metadata: {}\n      spec: {$ref: a.Loop}\n",
    );
    let tree = DirTree::new(root).unwrap();
    let err = render(&tree, "app").unwrap_err().to_string();
    assert!(err.contains("cycle.yaml") && err.contains("$refs"), "{err}");
    // `$ref`s fanning out (each definition naming the next twice): exponential without a
    // budget.
    let mut fan = String::new();
    for i in 0..40 {
        let props = if i == 0 {
            "kind: {}\n      apiVersion: {}\n      metadata: {}\n      ".to_string()
        } else {
            String::new()
        };
        fan.push_str(&format!(
            "a.T{i}:\n  Schema:\n    properties:\n      {props}x: {{$ref: a.T{n}}}\n      y: {{$ref: a.T{n}}}\n",
            n = i + 1
        ));
    }
    write(root, "app/cycle.yaml", &fan);
    let err = render(&tree, "app").unwrap_err().to_string();
    assert!(err.contains("cycle.yaml") && err.contains("$refs"), "{err}");
    // Not a map of definitions.
    write(root, "app/cycle.yaml", "- a\n- b\n");
    let err = render(&tree, "app").unwrap_err().to_string();
    assert!(
        err.contains("unable to parse open API definition from 'cycle.yaml'"),
        "{err}"
    );
    // Malformed JSON.
    write(root, "app/cycle.yaml", "{\"a\": ");
    let err = render(&tree, "app").unwrap_err().to_string();
    assert!(err.contains("loading CRDs [cycle.yaml]"), "{err}");
    // A definitions file outside the kustomization's directory.
    write(root, "outside.yaml", "{}\n");
    write(
        root,
        "app/kustomization.yaml",
        "crds:\n- ../outside.yaml\nresources:\n- cm.yaml\n",
    );
    let err = render(&tree, "app").unwrap_err().to_string();
    assert!(
        err.contains("security; file 'outside.yaml' is not in or below 'app'"),
        "{err}"
    );
}

#[test]
fn custom_openapi_schemas_and_misspelt_helm_charts_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
    );
    write(root, "app/schema.json", "{\"definitions\": {}}\n");
    write(
        root,
        "app/kustomization.yaml",
        "resources:\n- cm.yaml\nopenapi:\n  path: schema.json\n",
    );
    let tree = DirTree::new(root).unwrap();
    let err = render(&tree, "app").unwrap_err().to_string();
    assert!(
        err.contains("app/kustomization.yaml: invalid Kustomization: openapi: the custom schema 'schema.json' is not supported"),
        "{err}"
    );
    // Both a version and a schema: kustomize's own refusal.
    write(
        root,
        "app/kustomization.yaml",
        "resources:\n- cm.yaml\nopenapi:\n  path: schema.json\n  version: v1.21.2\n",
    );
    let err = render(&tree, "app").unwrap_err().to_string();
    assert!(
        err.contains("builtin version and custom schema provided, cannot use both"),
        "{err}"
    );
    // A misspelt chart field: kustomize's unknown-field message, never a silent skip.
    write(
        root,
        "app/kustomization.yaml",
        "resources:\n- cm.yaml\nhelmCharts:\n- name: x\n  bogus: 1\n",
    );
    let err = render(&tree, "app").unwrap_err().to_string();
    assert!(err.contains("json: unknown field \"bogus\""), "{err}");
}

#[test]
fn files_parsed_side_by_side_keep_entry_order_and_the_first_failure() {
    // A kustomization's file entries are parsed on several threads: the objects still come
    // out in entry order (fifo), and of several broken files the first listed is reported.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut kust = String::from("sortOptions:\n  order: fifo\nresources:\n");
    for i in 0..40 {
        write(
            root,
            &format!("app/cm{i:02}.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i:02}\n"),
        );
        kust.push_str(&format!("- cm{i:02}.yaml\n"));
    }
    write(root, "app/kustomization.yaml", &kust);
    let tree = DirTree::new(root).unwrap();
    let first = render(&tree, "app").unwrap();
    let names: Vec<String> = first
        .objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = (0..40).map(|i| format!("cm{i:02}")).collect();
    assert_eq!(names, expected);
    for _ in 0..200 {
        assert_eq!(render(&tree, "app").unwrap().yaml, first.yaml);
    }
    write(root, "app/cm07.yaml", "a: [unclosed\n");
    write(root, "app/cm31.yaml", "apiVersion: v1\n");
    for _ in 0..50 {
        let err = render(&tree, "app").unwrap_err().to_string();
        assert!(err.contains("app/cm07.yaml"), "{err}");
    }
}

/// Keys go-yaml's order ranks in a cycle (`k3` < `k23` < `k2z2` < `k3`), as in the ConfigMap
/// the render fuzzer found (`fuzz/corpus/render_tree/cyclic-key-order`: a kustomization, NUL,
/// the ConfigMap): rendering it panicked in Rust's sort. kustomize writes such keys in an
/// order that changes from run to run (the odd key came out on line 6, 15 or 33 in eight
/// `kubectl kustomize` runs); wardn renders them, every key once, the same each time.
#[test]
fn keys_in_a_cyclic_order_render_the_same_every_time() {
    let found = fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/render_tree/cyclic-key-order"),
    )
    .unwrap();
    let mut files = found
        .split(|&b| b == 0)
        .map(|f| String::from_utf8(f.to_vec()).unwrap());
    let (kustomization, cm) = (files.next().unwrap(), files.next().unwrap());
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app/kustomization.yaml", &kustomization);
    write(dir.path(), "app/a.yaml", &cm);
    let tree = DirTree::new(dir.path()).unwrap();
    let first = render(&tree, "app").unwrap();
    let keys = |yaml: &str| -> Vec<String> {
        let mut keys: Vec<String> = yaml
            .lines()
            .filter_map(|line| {
                line.strip_prefix("  k")?
                    .split_once(':')
                    .map(|(k, _)| k.to_string())
            })
            .collect();
        keys.sort_unstable();
        keys
    };
    assert_eq!(keys(&first.yaml), keys(&cm));
    assert_eq!(keys(&cm).len(), 60);
    for _ in 0..100 {
        assert_eq!(render(&tree, "app").unwrap().yaml, first.yaml);
    }
}
