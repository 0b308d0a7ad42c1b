//! The renderer's fast YAML reader (`wardn::render::block_yaml`) against serde-saphyr, the
//! library it stands in for (`wardn::render::library_documents`): on every YAML file of the
//! fixtures, on thousands of mutated documents, and over many repeated reads. The fast reader
//! must either decline a file or give exactly the library's documents, and must decline every
//! file the library refuses. A file it reads must also be said to hold a mapping value written
//! empty (`key:`) exactly when the library's event scan (`wardn::render::empty_values`) finds
//! one: without one, the renderer keeps no copy of the file for strategic merge patches.

use std::fs;
use std::path::{Path, PathBuf};

use wardn::render::{block_yaml, empty_values, library_documents};

/// Every `*.yaml` / `*.yml` file under `fixtures/`, sorted.
fn fixture_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(&path, out);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "yaml" || e == "yml")
            {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
        &mut files,
    );
    files.sort();
    files
}

/// What the fast reader made of `text` compared with the library.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Both read the same documents.
    Same,
    /// The fast reader declined (the library then reads the file).
    Declined,
}

/// Reads `text` both ways; panics (naming `what`) when the fast reader accepts a text the
/// library refuses or reads differently.
fn compare(what: &str, text: &str) -> Verdict {
    let fast = block_yaml::documents(text);
    let library = library_documents(text);
    match (fast, library) {
        (None, _) => Verdict::Declined,
        (Some(fast), Ok(library)) => {
            assert!(
                fast == library,
                "{what}: the fast reader read\n{fast:#?}\nthe library\n{library:#?}\ntext:\n{text}"
            );
            let (_, fast_empty) = block_yaml::read_noting_empty_values(text).expect("read");
            // Where the library's scan cannot match its documents up, nothing is dropped
            // either way.
            if let Some(library_empty) = empty_values(text) {
                let library_empty = library_empty.iter().any(|doc| !doc.is_empty());
                assert_eq!(
                    fast_empty, library_empty,
                    "{what}: values written empty (fast reader, library) differ\n{text}"
                );
            }
            Verdict::Same
        }
        (Some(fast), Err(err)) => {
            panic!("{what}: the library refuses it ({err}), the fast reader read {fast:?}\n{text}")
        }
    }
}

/// The text of a fixture file as the renderer sees it (a leading byte-order mark dropped), or
/// `None` when it is not UTF-8.
fn fixture_text(path: &Path) -> Option<String> {
    let bytes = fs::read(path).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    Some(text.strip_prefix('\u{FEFF}').unwrap_or(&text).to_string())
}

#[test]
fn fixtures_read_as_the_library_reads_them() {
    let files = fixture_files();
    assert!(files.len() > 500, "only {} fixture files", files.len());
    let (mut read, mut declined, mut docs, mut declined_docs) = (0, 0, 0usize, 0usize);
    let mut declined_names = Vec::new();
    for path in &files {
        let Some(text) = fixture_text(path) else {
            continue;
        };
        let what = path.display().to_string();
        let count = library_documents(&text).map_or(0, |d| d.len());
        docs += count;
        match compare(&what, &text) {
            Verdict::Same => read += 1,
            Verdict::Declined => {
                declined += 1;
                declined_docs += count;
                let why = block_yaml::read(&text).err().map(|d| d.to_string());
                declined_names.push(format!(
                    "{what} ({count} documents): {}",
                    why.unwrap_or_default()
                ));
            }
        }
    }
    println!(
        "fixture files: {} read by the fast reader, {declined} declined; documents: {docs}, {declined_docs} in declined files ({:.2}%)",
        read,
        100.0 * declined_docs as f64 / docs.max(1) as f64
    );
    for name in &declined_names {
        println!("declined: {name}");
    }
    assert!(docs > 1000, "only {docs} documents");
    assert!(
        declined_docs * 100 < docs * 3,
        "the fast reader declines too much: {declined_docs} of {docs} documents"
    );
}

/// A small deterministic pseudo-random generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Fragments a mutation inserts: YAML indicators, quotes, escapes, comments, tabs, line
/// breaks, document markers, number and null spellings, unicode (including characters YAML
/// forbids or treats as breaks).
const FRAGMENTS: &[&str] = &[
    ":",
    ": ",
    "-",
    "- ",
    "#",
    " #",
    "'",
    "\"",
    "''",
    "\\",
    "\\n",
    "\\u00e9",
    "\\x41",
    "\\ud800",
    "\t",
    "\n",
    "\n  ",
    "\n    ",
    "\n- ",
    "\n---\n",
    "\n...\n",
    "---",
    "|",
    "|-",
    "|+",
    ">",
    ">-",
    "|2",
    "&a ",
    "*a",
    "!!str ",
    "!t ",
    "[",
    "]",
    "{",
    "}",
    "[]",
    "{}",
    ",",
    "?",
    "? ",
    "%",
    "@",
    "`",
    "~",
    "null",
    "true",
    "False",
    "yes",
    "0",
    "012",
    "0x1F",
    "0o7",
    "1_0",
    "1e3",
    "1e999",
    ".5",
    "+1",
    "-1",
    "-.inf",
    ".nan",
    "99999999999999999999",
    "-9223372036854775809",
    "1.5",
    "é",
    "\u{85}",
    "\u{2028}",
    "\u{FEFF}",
    "\u{7}",
    "\r",
    "\r\n",
    "<<",
    "a: b",
    "k: v\n",
    " ",
    "  ",
    "日本",
];

/// Documents mutations start from: manifests in the shapes the corpus has.
const SEEDS: &[&str] = &[
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm # the name\n  labels:\n    app: \"web\"\n    tier: 'front'\ndata:\n  script: |\n    #!/bin/sh\n    echo hi\n\n    exit 0\n  folded: >-\n    one\n    two\n\n      indented\n    three\n  empty:\n",
    "kind: Deployment\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.25\n        args:\n          - --port=8080\n          - -v\n        ports:\n        - containerPort: 80\n          protocol: TCP\n        resources: {}\n      volumes: []\n---\n# second\nkind: Service\nspec:\n  ports:\n  - port: 80\n    targetPort: 8080\n",
    "- a\n- - b\n  - c\n- d: 1\n  e: 2.5\n- \"x\\ty\"\n-\n- ~\n",
    "args: [\"sh\", -c, 'echo hi']\nsel: {app: web, \"k\": 'v', n: [1, 2.5, {}, [ ]]}\nmodes: [ReadWriteOnce]\n",
    "spec:\n  description: \"a long\n    quoted \\\"text\\\"\n\n    with\\\n    \\ escapes\"\n  plain: one\n    two\n\n    three\n  single: 'it''s\n    folded'\n",
    "a:\n  b:\n    c:\n      d: [] # deep\n  f: |+\n    keep\n\n\ng: -7\nh: 0\ni: 1e3\nj: 10.0.0.1\n",
];

/// Applies 1–4 random edits to `seed`: insert a fragment, delete a span, duplicate a line,
/// truncate, or nest deeper.
fn mutate(rng: &mut Rng, seed: &str) -> String {
    let mut text = seed.to_string();
    for _ in 0..1 + rng.below(4) {
        let mut at = rng.below(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        match rng.below(10) {
            0..=5 => {
                let fragment = rng.pick(FRAGMENTS);
                text.insert_str(at, fragment);
            }
            6 => {
                let mut end = (at + rng.below(8)).min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.replace_range(at..end, "");
            }
            7 => {
                let lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let line = lines[rng.below(lines.len())].to_string();
                    text.insert_str(at, &format!("{line}\n"));
                }
            }
            8 => text.truncate(at),
            _ => {
                let depth = 1 + rng.below(40);
                let nested: String = (0..depth)
                    .map(|d| format!("{}k{d}:\n", "  ".repeat(d)))
                    .collect();
                text.insert_str(0, &format!("{nested}{}v: 1\n", "  ".repeat(depth)));
            }
        }
    }
    text
}

#[test]
fn mutated_documents_never_read_differently() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut same, mut declined) = (0, 0);
    for round in 0..6000 {
        let seed = SEEDS[round % SEEDS.len()];
        let text = mutate(&mut rng, seed);
        match compare(&format!("mutation {round}"), &text) {
            Verdict::Same => same += 1,
            Verdict::Declined => declined += 1,
        }
    }
    println!("mutated documents: {same} read alike, {declined} declined");
    // Both outcomes occur: the mutations exercise acceptance and refusal alike.
    assert!(
        same > 500 && declined > 500,
        "{same} read, {declined} declined"
    );
}

#[test]
fn huge_scalars_and_deep_nesting_read_alike_or_decline() {
    let long = "x".repeat(1 << 20);
    let texts = [
        format!("a: {long}\n"),
        format!("a: \"{long}\"\n"),
        format!("a: |\n  {long}\n  {long}\n"),
        format!("{long}: 1\n"),
        (0..200)
            .map(|d| format!("{}- \n", "  ".repeat(d)))
            .collect(),
        (0..70).map(|d| format!("{}k:\n", " ".repeat(d))).collect(),
        "a: 1\n".to_string() + &"---\nb: 2\n".repeat(25_000),
    ];
    for (i, text) in texts.iter().enumerate() {
        compare(&format!("large text {i}"), text);
    }
}

/// Largest file the long run reads (1,000 reads of it stay quick in a debug build).
const LONG_RUN_BYTES: usize = 256 * 1024;

#[test]
fn a_large_fixture_reads_the_same_a_thousand_times() {
    let (_, text) = fixture_files()
        .into_iter()
        .filter_map(|p| fixture_text(&p).map(|t| (t.len(), t)))
        .filter(|(len, t)| *len <= LONG_RUN_BYTES && block_yaml::documents(t).is_some())
        .max_by_key(|(len, _)| *len)
        .expect("a fixture the fast reader reads");
    assert!(text.len() > 64 * 1024, "only {} bytes", text.len());
    let first = block_yaml::documents(&text).expect("read");
    assert_eq!(Ok(first.clone()), library_documents(&text));
    for round in 0..1000 {
        assert!(
            block_yaml::documents(&text).as_ref() == Some(&first),
            "read {round} differs"
        );
    }
}
