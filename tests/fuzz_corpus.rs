//! The cargo-fuzz targets of `fuzz/`, compiled here as modules, replay their seed corpora:
//! every saved input (seeds and the inputs that once found a bug) still holds the target's
//! property, and the targets keep compiling against the library as it changes, in the same
//! build as every other test instead of a second check of the fuzz workspace.

use std::fs;
use std::path::Path;

#[path = "../fuzz/fuzz_targets/kubeconfig.rs"]
mod kubeconfig;

#[path = "../fuzz/fuzz_targets/render_tree.rs"]
mod render_tree;

/// Runs `check` on every file of `fuzz/corpus/<target>`; returns how many it ran.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    inputs.sort();
    for input in &inputs {
        let bytes = fs::read(input).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        // A panic names the input it came from.
        let outcome = std::panic::catch_unwind(|| check(&bytes));
        assert!(
            outcome.is_ok(),
            "{target}: input {} failed",
            input.display()
        );
    }
    inputs.len()
}

#[test]
fn the_kubeconfig_corpus_holds_the_property() {
    assert!(replay("kubeconfig", kubeconfig::check) >= 3);
}

#[test]
fn the_render_tree_corpus_holds_the_property() {
    assert!(replay("render_tree", render_tree::check) >= 70);
}

/// Inputs no seed has: empty, only separators, invalid UTF-8, a NUL-cut tree whose every part
/// is hostile YAML. Both targets take them without panicking.
#[test]
fn hostile_inputs_hold_the_property() {
    let inputs: [&[u8]; 6] = [
        b"",
        b"\0\0\0\0\0",
        b"\xff\xfe\x00\x80",
        b"resources: [a.yaml]\0kind: [\0patches: {\0resources: [../../..]",
        b"apiVersion: v1\nkind: Config\nclusters: &a [*a]",
        b"*anchor\0&x [*x]\0!!binary AAAA\0---\n...\n---",
    ];
    for input in inputs {
        kubeconfig::check(input);
        render_tree::check(input);
    }
}
