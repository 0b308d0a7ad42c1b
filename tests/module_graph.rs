//! Module imports flow one way: `scripts/check-module-cycles.py` finds no cycle between the
//! top-level modules of wardn and kubesim, nor between sibling submodules of any folder. The
//! checker is also run on a small tree with a deliberate cycle, to show it can fail.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const SCRIPT: &str = "scripts/check-module-cycles.py";

/// Runs the checker from the repository root with `args`.
fn check(args: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new("python3")
        .arg(root.join(SCRIPT))
        .args(args)
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {SCRIPT}: {e}"))
}

/// The checker's stdout and stderr, for failure messages.
fn transcript(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn no_module_cycles() {
    let output = check(&[]);
    assert!(
        output.status.success(),
        "{SCRIPT} found a module cycle (or failed), {}\n{}",
        output.status,
        transcript(&output)
    );
}

#[test]
fn the_checker_fails_on_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("folder")).unwrap();
    fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod folder;\n").unwrap();
    // Top level: a -> b through a grouped use, b -> a through an inline path.
    fs::write(
        src.join("a.rs"),
        "use crate::{b::B, folder};\npub fn f() {}\n",
    )
    .unwrap();
    fs::write(
        src.join("b.rs"),
        "pub struct B;\nfn g() { crate::a::f() }\n",
    )
    .unwrap();
    // Siblings: x -> y, and y -> x through the parent's re-export.
    fs::write(src.join("folder/mod.rs"), "mod x;\nmod y;\npub use x::X;\n").unwrap();
    fs::write(src.join("folder/x.rs"), "use super::y::Y;\npub struct X;\n").unwrap();
    fs::write(src.join("folder/y.rs"), "use super::X;\npub struct Y;\n").unwrap();

    let root = src.to_str().unwrap();
    let output = check(&["--root", root]);
    let text = transcript(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("cycle in ") && text.contains("a -> b -> a"),
        "{text}"
    );
    assert!(text.contains("x -> y -> x"), "{text}");

    // Without the back edges, the same tree passes.
    fs::write(src.join("b.rs"), "pub struct B;\n").unwrap();
    fs::write(src.join("folder/y.rs"), "pub struct Y;\n").unwrap();
    let output = check(&["--root", root]);
    assert!(output.status.success(), "{}", transcript(&output));
}
