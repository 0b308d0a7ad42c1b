//! Cutting a large multi-document YAML file into runs of whole documents, so that
//! [`super::parse`] can parse them on several threads.
//!
//! A cut is made only before a line that starts with a document-start marker (`---` at
//! column 0 followed by a blank or the line's end). The YAML scanner treats such a line as
//! the start of a new document wherever it appears: it ends any plain or block scalar
//! (even one indented 0 at the root), and inside a quoted scalar or a flow collection it is
//! an error (which the caller detects, parsing the whole file again to report it). Files
//! with a directive line (`%…` at column 0) are never cut: a directive belongs to the
//! document after it.

/// At most `parts` runs of whole documents covering `text`, cut just before document-start
/// lines near equal shares of it; `None` when `text` cannot be cut (no such line, or a
/// directive somewhere).
pub fn document_runs(text: &str, parts: usize) -> Option<Vec<&str>> {
    if parts < 2 || text.starts_with('%') || text.contains("\n%") {
        return None;
    }
    let share = text.len() / parts;
    let mut runs = Vec::with_capacity(parts);
    let mut start = 0;
    for part in 1..parts {
        let target = (part * share).max(start);
        let Some(cut) = next_document_start(text, target) else {
            break;
        };
        if cut > start {
            runs.push(&text[start..cut]);
            start = cut;
        }
    }
    runs.push(&text[start..]);
    (runs.len() > 1).then_some(runs)
}

/// The byte offset of the first document-start line beginning at or after `from` (at a
/// line start, so never offset 0).
fn next_document_start(text: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from.saturating_sub(1);
    while !text.is_char_boundary(at) {
        at += 1;
    }
    while let Some(found) = text.get(at..)?.find("\n---") {
        let line = at + found + 1;
        match bytes.get(line + 3) {
            None | Some(b' ' | b'\t' | b'\n' | b'\r') => return Some(line),
            Some(_) => at = line,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_only_before_document_start_lines() {
        let text = "a: 1\n---\nb: |\n  ---x\n----\n--- # c\nc: 3\n---";
        let runs = document_runs(text, 8).unwrap();
        assert_eq!(runs.concat(), text);
        for run in &runs[1..] {
            assert!(
                run.starts_with("---\n") || run.starts_with("--- ") || run == &"---",
                "{run:?}"
            );
        }
        assert_eq!(runs.len(), 4, "{runs:?}");
    }

    #[test]
    fn leaves_uncuttable_files_whole() {
        assert_eq!(document_runs("a: 1\nb: 2\n", 2), None);
        assert_eq!(document_runs("a: 1\n----\nb: 2\n", 2), None);
        assert_eq!(document_runs("%YAML 1.2\n---\na: 1\n---\nb: 2\n", 2), None);
        assert_eq!(document_runs("a: 1\n---\nb: 2\n", 1), None);
        assert_eq!(document_runs("---\na: 1\n", 2), None);
    }

    #[test]
    fn every_run_ends_where_the_next_begins() {
        let text = "x: y\n---\n".repeat(1000);
        for parts in 2..6 {
            let runs = document_runs(&text, parts).unwrap();
            assert_eq!(runs.len(), parts);
            assert_eq!(runs.concat(), text);
        }
    }
}
