//! The differential corpus: every case under `fixtures/render/` rendered by wardn must match
//! the output captured from `kubectl kustomize` byte for byte (or, for error cases, fail
//! with a message containing the phrase in `expected-error.txt`).
//! Re-capture with `scripts/capture-render-fixtures.sh`.

use std::fs;
use std::path::Path;

use wardn::render::{DirTree, render};

/// The first differing line of two texts, with a little context, as a unified-ish diff.
fn first_difference(expected: &str, got: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let g: Vec<&str> = got.lines().collect();
    let i = e
        .iter()
        .zip(&g)
        .position(|(a, b)| a != b)
        .unwrap_or(e.len().min(g.len()));
    let from = i.saturating_sub(3);
    let mut out = format!("@@ line {} @@\n", i + 1);
    for line in &e[from..i.min(e.len())] {
        out.push_str(&format!("  {line}\n"));
    }
    for line in e.iter().skip(i).take(4) {
        out.push_str(&format!("- {line}\n"));
    }
    for line in g.iter().skip(i).take(4) {
        out.push_str(&format!("+ {line}\n"));
    }
    if expected.len() != got.len() && i >= e.len().min(g.len()) {
        out.push_str(
            "(one output is a prefix of the other, or they differ in trailing newlines)\n",
        );
    }
    out
}

fn check_case(dir: &Path) -> Result<(), String> {
    let target = fs::read_to_string(dir.join("target"))
        .map(|t| t.trim().to_string())
        .unwrap_or_default();
    let tree = DirTree::new(dir).map_err(|e| e.to_string())?;
    let result = render(&tree, &target);
    if let Ok(phrase) = fs::read_to_string(dir.join("expected-error.txt")) {
        let phrase = phrase.trim();
        return match result {
            Ok(_) => Err(format!(
                "rendered, but expected an error containing {phrase:?}"
            )),
            Err(e) if e.to_string().contains(phrase) => Ok(()),
            Err(e) => Err(format!("error {:?} lacks {phrase:?}", e.to_string())),
        };
    }
    let expected = fs::read_to_string(dir.join("expected.yaml")).map_err(|e| e.to_string())?;
    let rendered = result.map_err(|e| format!("render failed: {e}"))?;
    if rendered.yaml == expected {
        Ok(())
    } else {
        Err(first_difference(&expected, &rendered.yaml))
    }
}

#[test]
fn corpus_matches_kustomize_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/render");
    let mut cases: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 60, "only {} corpus cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = check_case(case) {
            failures.push((
                case.file_name().unwrap().to_string_lossy().into_owned(),
                why,
            ));
        }
    }
    if let Some((name, why)) = failures.first() {
        let names: Vec<&str> = failures.iter().map(|(n, _)| n.as_str()).collect();
        panic!(
            "{} of {} cases differ: {names:?}\nfirst mismatch, {name}:\n{why}",
            failures.len(),
            cases.len()
        );
    }
}
