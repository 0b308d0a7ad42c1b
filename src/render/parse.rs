//! YAML/JSON input parsing with hard budgets, so that hostile files (huge inputs, document
//! storms, alias bombs) fail fast with a clear error instead of exhausting the process.
//!
//! Scalars are resolved as kustomize's kyaml (go-yaml v3) does: only `true`/`false` are
//! booleans (`yes`, `on` stay strings) and `012` is octal.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use super::{RenderError, block_yaml, split};

/// Largest file the renderer reads (bytes).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Most documents accepted in one file.
const MAX_DOCUMENTS: usize = 20_000;
/// Most YAML nodes accepted in one file.
const MAX_NODES: usize = 5_000_000;
/// Most events replayed from aliases in one file (alias-bomb guard).
const MAX_ALIAS_REPLAY: usize = 100_000;

/// The parser's options for one of `shares` equal parts of a file (1: the whole file): each
/// part gets its share of the file's budgets.
fn options(shares: usize) -> serde_saphyr::Options {
    let shares = shares.max(1);
    let mut options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: MAX_DOCUMENTS / shares,
            max_nodes: MAX_NODES / shares,
            max_events: MAX_NODES * 2 / shares,
        },
        strict_booleans: true,
        legacy_octal_numbers: true,
    };
    options.alias_limits.max_total_replayed_events = MAX_ALIAS_REPLAY / shares;
    // Comments are never rendered: recognised, but their text is not kept.
    options.emit_comments = false;
    options
}

/// Parses every document of a YAML (or JSON) file; empty documents are skipped.
pub fn documents(file: &str, bytes: &[u8]) -> Result<Vec<Value>, RenderError> {
    documents_noting_empty_values(file, bytes).map(|(docs, _)| docs)
}

/// As [`documents`], and whether a mapping value may be written empty (`key:`) in the file:
/// `false` only when the fast reader read it all and met none, so that no [`Source`] need
/// be kept for it.
pub fn documents_noting_empty_values(
    file: &str,
    bytes: &[u8],
) -> Result<(Vec<Value>, bool), RenderError> {
    let text = text(file, bytes)?;
    let empty_values = AtomicBool::new(false);
    let fast_read = |run: &str| {
        let (docs, empty) = block_yaml::read_noting_empty_values(run).ok()?;
        empty_values.fetch_or(empty, Ordering::Relaxed);
        Some(docs)
    };
    let fast = in_parallel(text, |run, _| fast_read(run)).or_else(|| fast_read(text));
    let read_fast = fast.is_some();
    let library = || {
        in_parallel(text, |run, shares| {
            serde_saphyr::from_multiple_with_options::<Value>(run, options(shares)).ok()
        })
    };
    let mut docs = match fast.or_else(library) {
        Some(docs) => docs,
        None => library_documents(text).map_err(|message| RenderError::Yaml {
            file: file.to_string(),
            message,
        })?,
    };
    clip_block_scalar_at_eof(text, &mut docs);
    Ok((docs, !read_fast || empty_values.into_inner()))
}

/// The documents of `text` as serde-saphyr reads them with the renderer's options and budgets
/// (the whole text at once); the error is the first line of its message. This is the reference
/// [`block_yaml`], the fast reader, is compared with, and what reads the files it declines.
pub fn library_documents(text: &str) -> Result<Vec<Value>, String> {
    serde_saphyr::from_multiple_with_options::<Value>(text, options(1))
        .map_err(|e| first_line(&e.to_string()))
}

/// Smallest file parsed on several threads (below this, threads cost more than they save).
const PARALLEL_BYTES: usize = 256 * 1024;
/// Most threads parsing one file.
const MAX_PARALLEL: usize = 4;

/// The documents of a large multi-document `text`, read as runs of whole documents (see
/// [`split::document_runs`]) on several threads by `read` (given the run and how many runs
/// share the file's budgets). `None` when the file is small, cannot be cut, or any run fails:
/// the caller then reads it whole, which gives the same documents (the documents of a file are
/// independent) and reports a failure exactly as a sequential parse does.
fn in_parallel<F>(text: &str, read: F) -> Option<Vec<Value>>
where
    F: Fn(&str, usize) -> Option<Vec<Value>> + Sync,
{
    if text.len() < PARALLEL_BYTES {
        return None;
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_PARALLEL);
    let runs = split::document_runs(text, threads)?;
    let (read, shares) = (&read, runs.len());
    let parsed: Vec<Option<Vec<Value>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|run| scope.spawn(move || read(run, shares)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().ok().flatten())
            .collect()
    });
    let mut docs = Vec::new();
    for run in parsed {
        docs.extend(run?);
    }
    Some(docs)
}

/// A clipped block scalar (`|`, `>`) whose last line ends the file without a line break has
/// no final newline in kustomize's parser (go-yaml); this one adds one. The scalar is the last
/// one of the last document (maps keep their order), recognised by its last line being the
/// file's last line.
fn clip_block_scalar_at_eof(text: &str, docs: &mut [Value]) {
    let Some(last_line) = text.rsplit('\n').next().map(str::trim) else {
        return;
    };
    if text.ends_with('\n') || last_line.is_empty() {
        return;
    }
    let mut node = match docs.last_mut() {
        Some(doc) => doc,
        None => return,
    };
    loop {
        node = match node {
            Value::Object(map) => match map.values_mut().next_back() {
                Some(child) => child,
                None => return,
            },
            Value::Array(items) => match items.last_mut() {
                Some(child) => child,
                None => return,
            },
            Value::String(s) => {
                let content = s.strip_suffix('\n');
                let ends_with_last_line = content
                    .and_then(|c| c.rsplit('\n').next())
                    .is_some_and(|line| line.trim() == last_line);
                if ends_with_last_line {
                    s.pop();
                }
                return;
            }
            _ => return,
        };
    }
}

/// Where each document of `text` has mapping values written empty (`key:` with nothing
/// after it): the JSON pointers of those values, one list per document `documents` returns.
/// kustomize drops such fields (not explicit `null`s) from an object a strategic merge patch
/// touches, and the parsed values cannot tell the two apart. `None` when the documents cannot
/// be matched up reliably (complex keys, an unexpected layout): then nothing is dropped.
pub fn empty_values(text: &str) -> Option<Vec<Vec<String>>> {
    use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

    enum Frame {
        Map { path: String, key: Option<String> },
        Seq { path: String, index: usize },
    }
    fn escape(key: &str) -> String {
        key.replace('~', "~0").replace('/', "~1")
    }
    /// The pointer of the next value in the innermost collection (`None` at the root).
    fn child(frames: &[Frame]) -> Option<String> {
        match frames.last()? {
            Frame::Map { path, key } => Some(format!("{path}/{}", escape(key.as_deref()?))),
            Frame::Seq { path, index } => Some(format!("{path}/{index}")),
        }
    }
    fn advance(frames: &mut [Frame]) {
        match frames.last_mut() {
            Some(Frame::Map { key, .. }) => *key = None,
            Some(Frame::Seq { index, .. }) => *index += 1,
            None => {}
        }
    }
    let expecting_key =
        |frames: &[Frame]| matches!(frames.last(), Some(Frame::Map { key: None, .. }));

    let mut docs = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut skipped_root = false;
    for event in Parser::new_from_str(text) {
        let (event, span) = event.ok()?;
        match event {
            Event::DocumentStart(..) => {
                current = Vec::new();
                skipped_root = false;
            }
            Event::DocumentEnd if !skipped_root => docs.push(std::mem::take(&mut current)),
            Event::Scalar(value, style, _, tag) => {
                if expecting_key(&frames) {
                    if let Some(Frame::Map { key, .. }) = frames.last_mut() {
                        *key = Some(value.into_owned());
                    }
                    continue;
                }
                // The parser reports an empty value as `~`, but spanning no text.
                let empty = span.is_empty() && matches!(style, ScalarStyle::Plain) && tag.is_none();
                match child(&frames) {
                    Some(ptr) if empty && matches!(frames.last(), Some(Frame::Map { .. })) => {
                        current.push(ptr);
                    }
                    None => {
                        skipped_root = matches!(style, ScalarStyle::Plain)
                            && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
                    }
                    _ => {}
                }
                advance(&mut frames);
            }
            Event::Alias(_) => {
                if expecting_key(&frames) {
                    return None;
                }
                advance(&mut frames);
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if expecting_key(&frames) {
                    return None;
                }
                let path = child(&frames).unwrap_or_default();
                frames.push(if matches!(event, Event::MappingStart(..)) {
                    Frame::Map { path, key: None }
                } else {
                    Frame::Seq { path, index: 0 }
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                frames.pop();
                advance(&mut frames);
            }
            _ => {}
        }
    }
    Some(docs)
}

/// A file's text, kept for its documents holding null values: which of those nulls were
/// written empty (`key:`, see [`empty_values`]) is worked out once, and only when a strategic
/// merge patch touches one of them (most objects are never patched, and a second parse of
/// every file would cost as much as the first).
#[derive(Debug)]
pub struct Source {
    text: String,
    documents: usize,
    empties: OnceLock<Option<Vec<Vec<String>>>>,
}

impl Source {
    /// Keeps `text`, which [`documents`] parsed into `documents` documents.
    pub fn new(text: String, documents: usize) -> Self {
        Self {
            text,
            documents,
            empties: OnceLock::new(),
        }
    }

    /// The JSON pointers of the values document `index` wrote empty (none when the file's
    /// documents cannot be matched up reliably).
    pub fn empty_values(&self, index: usize) -> Vec<String> {
        self.empties
            .get_or_init(|| empty_values(&self.text).filter(|e| e.len() == self.documents))
            .as_ref()
            .and_then(|e| e.get(index))
            .cloned()
            .unwrap_or_default()
    }
}

/// Whether `value` holds a null anywhere (only then can a field have been written empty).
pub fn has_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.values().any(has_null),
        Value::Array(items) => items.iter().any(has_null),
        _ => false,
    }
}

/// Parses a single-document file (a kustomization, a patch).
pub fn document(file: &str, bytes: &[u8]) -> Result<Value, RenderError> {
    let mut docs = documents(file, bytes)?;
    match docs.len() {
        0 => Ok(Value::Null),
        1 => Ok(docs.remove(0)),
        n => Err(RenderError::Yaml {
            file: file.to_string(),
            message: format!("expected one document, found {n}"),
        }),
    }
}

/// The file's bytes as UTF-8 text (a leading byte-order mark is dropped).
pub fn text<'a>(file: &str, bytes: &'a [u8]) -> Result<&'a str, RenderError> {
    let text = std::str::from_utf8(bytes).map_err(|e| RenderError::Yaml {
        file: file.to_string(),
        message: format!("not valid UTF-8: {e}"),
    })?;
    Ok(text.strip_prefix('\u{FEFF}').unwrap_or(text))
}

/// [`text`] for bytes the caller gives up: the same text, without a copy (a byte-order mark
/// is cut off in place).
pub fn owned_text(file: &str, bytes: Vec<u8>) -> Result<String, RenderError> {
    let mut text = String::from_utf8(bytes).map_err(|e| RenderError::Yaml {
        file: file.to_string(),
        message: format!("not valid UTF-8: {}", e.utf8_error()),
    })?;
    if text.starts_with('\u{FEFF}') {
        text.drain(..'\u{FEFF}'.len_utf8());
    }
    Ok(text)
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or(s).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_scalar_ending_the_file_loses_its_final_newline() {
        let docs = documents("a.yaml", b"a: |\n  x\n  y").unwrap();
        assert_eq!(docs[0]["a"], "x\ny");
        let docs = documents("a.yaml", b"a: |\n  x\n  y\n").unwrap();
        assert_eq!(docs[0]["a"], "x\ny\n");
        let docs = documents("a.yaml", b"a: |\n  x\nb: \"y\\n\"").unwrap();
        assert_eq!(docs[0]["a"], "x\n");
        assert_eq!(docs[0]["b"], "y\n");
    }

    #[test]
    fn owned_text_is_text_without_a_copy() {
        let bom = "\u{FEFF}a: 1\n";
        assert_eq!(owned_text("a.yaml", bom.into()).unwrap(), "a: 1\n");
        assert_eq!(
            owned_text("a.yaml", bom.into()).unwrap(),
            text("a.yaml", bom.as_bytes()).unwrap()
        );
        let err = owned_text("a.yaml", vec![b'a', 0xFF])
            .unwrap_err()
            .to_string();
        assert_eq!(err, text("a.yaml", &[b'a', 0xFF]).unwrap_err().to_string());
    }

    #[test]
    fn empty_values_are_told_from_explicit_nulls() {
        let text = "a:\nb: null\nc: ~\nd:\n  e:\n  f: ''\n  g: [x, {h: }]\n---\n---\nl:\n  - m:\n    n: 1\n";
        let docs = documents("a.yaml", text.as_bytes()).unwrap();
        let empties = empty_values(text).unwrap();
        assert_eq!(docs.len(), empties.len());
        assert_eq!(empties[0], ["/a", "/d/e", "/d/g/1/h"]);
        assert_eq!(empties[1], ["/l/0/m"]);
        assert_eq!(empty_values("? [a]\n: b\n"), None);
    }

    #[test]
    fn kyaml_scalar_resolution() {
        let docs = documents("a.yaml", b"a: yes\nb: 012\nc: 0x1F\n---\n---\nd: true\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["a"], "yes");
        assert_eq!(docs[0]["b"], 10);
        assert_eq!(docs[0]["c"], 31);
        assert_eq!(docs[1]["d"], true);
    }

    #[test]
    fn alias_bombs_fail_fast() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut prev = 'a';
        for c in 'b'..='k' {
            bomb.push_str(&format!(
                "{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
            prev = c;
        }
        let err = documents("bomb.yaml", bomb.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("bomb.yaml"), "{err}");
    }

    /// A file large enough to be parsed in parallel: `count` documents with block scalars
    /// holding `---`-like lines, anchors and aliases, comments and a final unterminated line.
    fn large_file(count: usize) -> String {
        let mut text = String::from("# leading comment\n");
        for i in 0..count {
            text.push_str(&format!(
                "---\nkind: ConfigMap\nmetadata:\n  name: cm{i} # comment\n  labels: &l\n    a: \"{i}\"\ndata:\n  script: |\n    ---x\n    --- indented\n\n    done\n  other: *l\n  folded: >-\n    a\n    b\n---\n# an empty document\n"
            ));
        }
        text.push_str("--- \nlast: |\n  x");
        text
    }

    #[test]
    fn large_files_parse_in_parallel_as_they_parse_whole() {
        let text = large_file(3000);
        assert!(text.len() >= PARALLEL_BYTES);
        let parallel = in_parallel(&text, |run, shares| {
            serde_saphyr::from_multiple_with_options::<Value>(run, options(shares)).ok()
        })
        .expect("parsed in parallel");
        let whole = serde_saphyr::from_multiple_with_options::<Value>(&text, options(1)).unwrap();
        assert_eq!(parallel, whole);
        let docs = documents("big.yaml", text.as_bytes()).unwrap();
        assert_eq!(docs.len(), 3001);
        assert_eq!(docs[2999]["metadata"]["name"], "cm2999");
        assert_eq!(docs[1234]["data"]["script"], "---x\n--- indented\n\ndone\n");
        assert_eq!(docs[1234]["data"]["other"]["a"], "1234");
        assert_eq!(docs[3000]["last"], "x");
    }

    #[test]
    fn large_plain_files_are_read_in_parallel_by_the_fast_reader() {
        let text =
            "---\nkind: ConfigMap\nmetadata:\n  name: cm # c\ndata:\n  a: |\n    ---x\n  b: '1'\n"
                .repeat(4000);
        assert!(text.len() >= PARALLEL_BYTES);
        let fast = in_parallel(&text, |run, _| block_yaml::documents(run)).expect("read");
        assert_eq!(Ok(fast), library_documents(&text));
    }

    #[test]
    fn large_hostile_files_fail_as_they_fail_whole() {
        // A document-start line inside a quoted scalar, an alias to an anchor of another
        // document (and run) and a document storm over the budget: the outcome, error message
        // included, is the whole file's.
        let mut quoted = large_file(1000);
        quoted.push_str("\n---\na: \"open\n---\nclosed\"\n");
        quoted.push_str(&large_file(1000));
        let mut alias = String::from("first: &only 1\n");
        alias.push_str(&large_file(1500));
        alias.push_str("\n---\nx: *only\n");
        let storm = "---\naaaaaaaaaaaa: 1\n".repeat(MAX_DOCUMENTS + 1);
        for text in [quoted, alias, storm] {
            assert!(text.len() >= PARALLEL_BYTES);
            assert!(in_parallel(&text, |run, _| block_yaml::documents(run)).is_none());
            let whole = serde_saphyr::from_multiple_with_options::<Value>(&text, options(1))
                .map_err(|e| format!("big.yaml: {}", first_line(&e.to_string())));
            let ours = documents("big.yaml", text.as_bytes()).map_err(|e| e.to_string());
            assert!(whole.is_err());
            assert_eq!(ours, whole);
        }
    }

    #[test]
    fn parallel_parsing_is_stable_over_many_runs() {
        let text = large_file(1200);
        let first = documents("big.yaml", text.as_bytes()).unwrap();
        for _ in 0..30 {
            assert_eq!(documents("big.yaml", text.as_bytes()).unwrap(), first);
        }
    }

    #[test]
    fn bad_yaml_names_the_file() {
        let err = documents("x.yaml", b"a: [unclosed\n").unwrap_err();
        assert!(err.to_string().starts_with("x.yaml:"), "{err}");
    }
}
