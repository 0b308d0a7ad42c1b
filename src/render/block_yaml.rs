//! A fast reader for the plain block-style YAML that Kubernetes manifests almost always are:
//! block mappings and sequences, plain, single- and double-quoted one-line scalars, literal
//! and folded block scalars, comments and `---` separators.
//!
//! It builds exactly the values serde-saphyr builds with the renderer's options (see
//! [`super::parse`]): the same YAML 1.2 core-schema resolution of plain scalars (only
//! `true`/`false` are booleans, `null`/`~`/empty are null), the same key order, empty
//! documents skipped. Whenever a file holds anything it does not reproduce exactly — anchors,
//! aliases, tags, flow collections other than `[]`/`{}`, complex or duplicate keys,
//! directives, tabs in indentation, multi-line plain or quoted scalars, rare escapes or number
//! spellings, anything malformed — it declines (`None`) and the caller parses the whole file
//! with serde-saphyr, so every error and edge case is reported word for word as before.
//! It never guesses: a decline costs time, never a different value.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Most nested collections accepted (serde-saphyr refuses depths past 64).
const MAX_DEPTH: usize = 60;
/// Most nodes (scalars and collections) accepted in one file; well under the library's budget
/// so that a file the library would refuse for its size is never accepted here.
const MAX_NODES: usize = 1_000_000;
/// Most documents accepted in one file (the library's budget is larger).
const MAX_DOCUMENTS: usize = 4_000;
/// Longest implicit key accepted (the library's scanner looks at most 1,024 characters ahead).
const MAX_KEY_CHARS: usize = 1_000;

/// Why the fast reader gave up on a file (which is then left to serde-saphyr).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decline(pub &'static str);

impl std::fmt::Display for Decline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

type Read<T> = Result<T, Decline>;

/// The documents of `text` (empty and null documents skipped, as serde-saphyr skips them), or
/// `None` when the file holds anything this reader does not reproduce exactly.
pub fn documents(text: &str) -> Option<Vec<Value>> {
    read(text).ok()
}

/// As [`documents`], but saying why the reader declines (for tests and diagnostics).
pub fn read(text: &str) -> Result<Vec<Value>, Decline> {
    read_noting_empty_values(text).map(|(docs, _)| docs)
}

/// As [`read`], and whether any mapping value of the text is written empty (`key:` with
/// nothing after it, read as null). kustomize drops such fields, not explicit `null`s, from
/// objects a strategic merge patch touches (see [`super::parse::empty_values`]); a file
/// without any needs no second look.
pub fn read_noting_empty_values(text: &str) -> Result<(Vec<Value>, bool), Decline> {
    if !plain_characters(text) {
        return Err(Decline(
            "a carriage return, control or non-printable character",
        ));
    }
    // A final line break ends the last line; it does not start another.
    let ends_with_newline = text.ends_with('\n');
    let lines: Vec<&str> = match text.strip_suffix('\n').unwrap_or(text) {
        _ if text.is_empty() => Vec::new(),
        body => body.split('\n').collect(),
    };
    let shapes: Vec<Shape> = lines.iter().map(|line| Shape::of(line)).collect();
    let mut docs = Vec::new();
    let mut tally = Tally::default();
    let mut start = 0;
    let mut count = 1;
    for (i, line) in lines.iter().enumerate() {
        // Markers and directives start at column 0 with a character other than a blank.
        if shapes[i].indent != 0 || shapes[i].kind != Kind::Content {
            continue;
        }
        if line.starts_with("...") && separated(&line[3..]) || line.starts_with('%') {
            return Err(Decline("a directive or document end marker"));
        }
        if line.starts_with("---") && separated(&line[3..]) {
            if !rest_is_comment(&line[3..]) {
                return Err(Decline("content on a document start line"));
            }
            count += 1;
            if count > MAX_DOCUMENTS {
                return Err(Decline("too many documents"));
            }
            document(
                (&lines, &shapes),
                start,
                i,
                ends_with_newline,
                &mut tally,
                &mut docs,
            )?;
            start = i + 1;
        }
    }
    document(
        (&lines, &shapes),
        start,
        lines.len(),
        ends_with_newline,
        &mut tally,
        &mut docs,
    )?;
    Ok((docs, tally.empty_values))
}

/// What the documents of one text have read so far.
#[derive(Debug, Default)]
struct Tally {
    /// Nodes read (see [`MAX_NODES`]).
    nodes: usize,
    /// Whether a mapping value was written empty.
    empty_values: bool,
}

/// Whether `text` holds only characters this reader handles: no carriage returns, no control
/// characters other than tab and line feed, none of the characters YAML forbids or treats
/// as line breaks (NEL, the Unicode line and paragraph separators) and no byte-order mark.
fn plain_characters(text: &str) -> bool {
    // Whole chunks are checked without stopping at the first failure, so that the check
    // runs on vectors.
    if text.as_bytes().chunks(64).all(|chunk| {
        chunk.iter().fold(true, |ok, &b| {
            ok & (b == b'\t' || b == b'\n' || (0x20..=0x7E).contains(&b))
        })
    }) {
        return true;
    }
    let ascii_ok = |b: u8| b == b'\t' || b == b'\n' || (0x20..0x7F).contains(&b) || b >= 0x80;
    if !text.bytes().all(ascii_ok) {
        return false;
    }
    text.is_ascii()
        || text.chars().all(|c| {
            !matches!(
                c,
                '\u{80}'
                    ..='\u{9F}' | '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}'
            )
        })
    // Surrogates cannot occur in a `str`; everything else from U+00A0 up is printable.
}

/// Whether `rest` (what follows an indicator) is empty or starts with a space or tab.
fn separated(rest: &str) -> bool {
    rest.is_empty() || rest.starts_with([' ', '\t'])
}

/// Whether `rest` is blank or blank followed by a comment.
fn rest_is_comment(rest: &str) -> bool {
    let trimmed = rest.trim_start_matches(' ');
    trimmed.is_empty() || (trimmed.len() < rest.len() && trimmed.starts_with('#'))
}

/// Reads the document of lines `from..to` (of the text's lines and their shapes) into `docs`
/// (nothing when it is empty or null).
fn document(
    (lines, shapes): (&[&str], &[Shape]),
    from: usize,
    to: usize,
    ends_with_newline: bool,
    tally: &mut Tally,
    docs: &mut Vec<Value>,
) -> Read<()> {
    let mut reader = Reader {
        lines: &lines[from..to],
        shapes: &shapes[from..to],
        // The text's last line has no line break when the text does not end with one.
        unterminated_last: to == lines.len() && !ends_with_newline,
        pos: 0,
        nodes: tally.nodes,
        empty_values: false,
        depth: 0,
        entries: Vec::new(),
    };
    let Some(indent) = reader.next_content()? else {
        return Ok(());
    };
    let value = reader.node(reader.pos, indent, -1)?;
    if reader.next_content()?.is_some() {
        return Err(Decline("content after the document's root node"));
    }
    tally.nodes = reader.nodes;
    tally.empty_values |= reader.empty_values;
    if !value.is_null() {
        docs.push(value);
    }
    Ok(())
}

/// A cursor over one document's lines.
struct Reader<'a> {
    lines: &'a [&'a str],
    /// The shape of each of `lines`.
    shapes: &'a [Shape],
    /// Whether the last of `lines` ends the text without a line break.
    unterminated_last: bool,
    /// The line being read.
    pos: usize,
    nodes: usize,
    /// Whether a mapping value was written empty.
    empty_values: bool,
    depth: usize,
    /// The entries of the mappings being read, innermost last: a mapping is built once its
    /// entries are known, with room for exactly them.
    entries: Vec<(String, Value)>,
}

/// The number of leading spaces of `line` (deep manifests are indented by dozens: eight
/// bytes are compared at a time).
fn indent_of(line: &str) -> usize {
    const SPACES: [u8; 8] = [b' '; 8];
    let bytes = line.as_bytes();
    let mut n = 0;
    while bytes.get(n..n + 8) == Some(&SPACES[..]) {
        n += 8;
    }
    while bytes.get(n) == Some(&b' ') {
        n += 1;
    }
    n
}

/// A line's leading spaces and what follows them, worked out once per line: the reader looks
/// at the line after each value from every collection that value ends.
#[derive(Debug, Clone, Copy)]
struct Shape {
    indent: usize,
    kind: Kind,
}

/// What follows a line's leading spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Nothing: the line is blank.
    Blank,
    /// A comment.
    Comment,
    /// A tab.
    Tab,
    /// Anything else.
    Content,
}

impl Shape {
    fn of(line: &str) -> Shape {
        let indent = indent_of(line);
        let kind = match line.as_bytes().get(indent) {
            None => Kind::Blank,
            Some(b'#') => Kind::Comment,
            Some(b'\t') => Kind::Tab,
            Some(_) => Kind::Content,
        };
        Shape { indent, kind }
    }

    /// Neither blank nor a comment.
    fn continues(self) -> bool {
        matches!(self.kind, Kind::Tab | Kind::Content)
    }
}

impl<'a> Reader<'a> {
    /// Moves to the next line that is neither blank nor a comment and returns its indent
    /// (`None` at the document's end). Tabs in indentation decline.
    fn next_content(&mut self) -> Read<Option<usize>> {
        while let Some(shape) = self.shapes.get(self.pos) {
            match shape.kind {
                Kind::Tab => return Err(Decline("a tab in indentation")),
                Kind::Content => return Ok(Some(shape.indent)),
                Kind::Blank | Kind::Comment => self.pos += 1,
            }
        }
        Ok(None)
    }

    /// Counts one more node, declining past the budget.
    fn count(&mut self) -> Read<()> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Decline("too many nodes"));
        }
        Ok(())
    }

    /// The node starting at column `col` of line `line` (its first character is neither a
    /// space nor `#`), inside a collection indented `parent` (-1 at the root).
    fn node(&mut self, line: usize, col: usize, parent: isize) -> Read<Value> {
        let text = &self.lines[line][col..];
        if text.starts_with('-') && separated(&text[1..]) {
            return self.nested(|r| r.sequence(line, col));
        }
        if let Some(first) = key(text)? {
            let first = (first.0.into_owned(), first.1);
            return self.nested(|r| r.mapping(line, col, first));
        }
        self.scalar(line, col, parent)
    }

    /// Reads a collection one level deeper, declining past [`MAX_DEPTH`].
    fn nested(&mut self, read: impl FnOnce(&mut Self) -> Read<Value>) -> Read<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Decline("nesting too deep"));
        }
        self.count()?;
        let value = read(self)?;
        self.depth -= 1;
        Ok(value)
    }

    /// A block sequence whose first `-` is at column `indent` of line `line`.
    fn sequence(&mut self, line: usize, indent: usize) -> Read<Value> {
        let mut items = Vec::new();
        self.pos = line;
        loop {
            let text = &self.lines[self.pos][indent + 1..];
            let item = if rest_is_comment(text) {
                self.pos += 1;
                self.value_below(indent, false)?
            } else {
                let spaces = indent_of(text);
                if text[spaces..].starts_with('\t') {
                    return Err(Decline("a tab after a sequence entry"));
                }
                self.node(self.pos, indent + 1 + spaces, indent as isize)?
            };
            items.push(item);
            match self.next_content()? {
                Some(next) if next == indent && self.entry_at(indent) => {}
                Some(next) if next > indent => {
                    return Err(Decline("a line indented deeper after a sequence entry"));
                }
                _ => {
                    // No spare capacity kept for the whole render.
                    items.shrink_to_fit();
                    return Ok(Value::Array(items));
                }
            }
        }
    }

    /// Whether the current line has a sequence entry (`- `) at column `indent`.
    fn entry_at(&self, indent: usize) -> bool {
        let text = &self.lines[self.pos][indent..];
        text.starts_with('-') && separated(&text[1..])
    }

    /// The value written on the lines after an entry or key that has none on its own line:
    /// a node indented more than `indent`, a sequence at `indent` itself when the owner is a
    /// mapping key (`compact`), or null.
    fn value_below(&mut self, indent: usize, compact: bool) -> Read<Value> {
        match self.next_content()? {
            Some(next) if next > indent => self.node(self.pos, next, indent as isize),
            Some(next) if compact && next == indent && self.entry_at(indent) => {
                self.nested(|r| r.sequence(r.pos, indent))
            }
            _ => {
                self.count()?;
                // Only a mapping key's value may be compact; a sequence entry's is not noted.
                self.empty_values |= compact;
                Ok(Value::Null)
            }
        }
    }

    /// A block mapping whose first key is at column `indent` of line `line`, already read as
    /// `first` (the key and the offset just past its `:`).
    fn mapping(&mut self, line: usize, indent: usize, first: (String, usize)) -> Read<Value> {
        let base = self.entries.len();
        let mut first = Some(first);
        self.pos = line;
        loop {
            let (name, after) = match first.take() {
                Some(first) => first,
                None => {
                    let text = &self.lines[self.pos][indent..];
                    let Some((name, after)) = key(text)? else {
                        return Err(Decline("a line that is not a mapping key"));
                    };
                    (name.into_owned(), after)
                }
            };
            self.count()?;
            let col = indent + after;
            let rest = &self.lines[self.pos][col..];
            let value = if rest_is_comment(rest) {
                self.pos += 1;
                self.value_below(indent, true)?
            } else {
                let spaces = indent_of(rest);
                if spaces == 0 || rest[spaces..].starts_with('\t') {
                    return Err(Decline("a tab after a key"));
                }
                let text = &rest[spaces..];
                // A mapping on a key's line (`a: b: c`, `a: "b": c`) needs no look here: it
                // is text after a quoted scalar or a `: ` in a plain one, which `scalar`
                // declines.
                if text.starts_with('-') && separated(&text[1..]) {
                    return Err(Decline("a collection on a key's line"));
                }
                self.scalar(self.pos, col + spaces, indent as isize)?
            };
            self.entries.push((name, value));
            match self.next_content()? {
                Some(next) if next == indent => {}
                Some(next) if next > indent => {
                    return Err(Decline("a line indented deeper after a mapping value"));
                }
                _ => {
                    let mut map = Map::with_capacity(self.entries.len() - base);
                    for (name, value) in self.entries.drain(base..) {
                        if map.insert(name, value).is_some() {
                            return Err(Decline("a duplicate key"));
                        }
                    }
                    return Ok(Value::Object(map));
                }
            }
        }
    }

    /// The scalar (or `[]`/`{}`) starting at column `col` of line `line`, in a collection
    /// indented `parent`. Leaves `pos` on the line after it.
    fn scalar(&mut self, line: usize, col: usize, parent: isize) -> Read<Value> {
        self.count()?;
        let text = &self.lines[line][col..];
        let first = text.chars().next().ok_or(Decline("an empty scalar"))?;
        let (value, rest) = match first {
            '"' | '\'' => {
                let q = quoted(self.lines, line, col, Some(parent))?;
                if q.line != line {
                    return self.after_multi_line_quoted(q, parent);
                }
                (Value::String(q.value), &text[q.end - col..])
            }
            '|' | '>' => return self.block_scalar(line, col, parent),
            '[' | '{' => {
                let mut at = 0;
                let value = self.flow(text, &mut at)?;
                (value, &text[at..])
            }
            _ => {
                let plain = plain_scalar(text)?;
                let rest = &text[plain.len()..];
                if rest.trim_start_matches([' ', '\t']).is_empty() {
                    // No comment: the scalar may go on over more indented lines.
                    let folded = self.plain_continuation(plain, line + 1, parent)?;
                    let value = resolve_plain(folded.as_deref().unwrap_or(plain));
                    return value.ok_or(Decline("a plain scalar spelling left to the library"));
                }
                let value = resolve_plain(plain)
                    .ok_or(Decline("a plain scalar spelling left to the library"))?;
                (value, rest)
            }
        };
        if !rest_is_comment(rest) {
            return Err(Decline("text after a scalar"));
        }
        self.pos = line + 1;
        self.nothing_deeper(parent)?;
        Ok(value)
    }

    /// The flow node (`[…]`, `{…}` or a scalar) at byte `at` of `text`, a line's rest; `at`
    /// is left just past it. Only one-line flow collections of plain and quoted scalars are
    /// read: no comments, no `:` in plain scalars, no single-pair mappings in sequences, no
    /// empty values and no trailing commas (the library decides those).
    fn flow(&mut self, text: &str, at: &mut usize) -> Read<Value> {
        let bytes = text.as_bytes();
        let skip = |at: &mut usize| {
            while bytes.get(*at) == Some(&b' ') {
                *at += 1;
            }
        };
        skip(at);
        let open = *bytes
            .get(*at)
            .ok_or(Decline("a multi-line flow collection"))?;
        if !matches!(open, b'[' | b'{') {
            self.count()?;
            return flow_scalar(text, at, false);
        }
        self.nested(|r| {
            *at += 1;
            let close = if open == b'[' { b']' } else { b'}' };
            let mut items = Vec::new();
            let mut map = Map::new();
            skip(at);
            if bytes.get(*at) == Some(&close) {
                *at += 1;
            } else {
                loop {
                    if open == b'[' {
                        items.push(r.flow(text, at)?);
                    } else {
                        r.count()?;
                        let Value::String(key) = flow_scalar(text, at, true)? else {
                            return Err(Decline("a flow mapping key that is no string"));
                        };
                        if bytes.get(*at) != Some(&b':')
                            || bytes.get(*at + 1) != Some(&b' ')
                            || map.contains_key(&key)
                            || key == "<<"
                        {
                            return Err(Decline("a flow mapping entry left to the library"));
                        }
                        *at += 1;
                        skip(at);
                        if matches!(bytes.get(*at), None | Some(b',' | b'}')) {
                            return Err(Decline("an empty flow mapping value"));
                        }
                        let value = r.flow(text, at)?;
                        map.insert(key, value);
                    }
                    skip(at);
                    match bytes.get(*at) {
                        Some(&b',') => {
                            *at += 1;
                            skip(at);
                            if matches!(bytes.get(*at), Some(b']' | b'}')) {
                                return Err(Decline("a trailing comma in a flow collection"));
                            }
                        }
                        Some(&c) if c == close => {
                            *at += 1;
                            break;
                        }
                        _ => return Err(Decline("a flow collection left to the library")),
                    }
                }
            }
            Ok(if open == b'[' {
                Value::Array(items)
            } else {
                Value::Object(map)
            })
        })
    }

    /// The value of quoted scalar `q` that closed on a later line than it opened: what
    /// follows its closing quote must be blank or a comment, and no more indented line may
    /// follow. Leaves `pos` on the line after it.
    fn after_multi_line_quoted(&mut self, q: Quoted, parent: isize) -> Read<Value> {
        if !rest_is_comment(&self.lines[q.line][q.end..]) {
            return Err(Decline("text after a scalar"));
        }
        self.pos = q.line + 1;
        self.nothing_deeper(parent)?;
        Ok(Value::String(q.value))
    }

    /// A more indented line right after a one-line or quoted scalar or a comment (the line at
    /// `pos`) is an error; the library reports it.
    fn nothing_deeper(&self, parent: isize) -> Read<()> {
        match self.shapes.get(self.pos) {
            Some(next) if next.continues() && next.indent as isize > parent => {
                Err(Decline("a line indented deeper after a scalar"))
            }
            _ => Ok(()),
        }
    }

    /// The lines from `from` on that continue the plain scalar `first` (indented more than
    /// `parent`), folded as YAML folds them: a single line break becomes a space, `n` blank
    /// lines become `n` line breaks. `None` when no line continues it. Leaves `pos` on the
    /// line after the last one read.
    fn plain_continuation(
        &mut self,
        first: &str,
        from: usize,
        parent: isize,
    ) -> Read<Option<String>> {
        let mut folded: Option<String> = None;
        let mut blanks = 0;
        let mut at = from;
        self.pos = from;
        while let Some(&Shape { indent, kind }) = self.shapes.get(at) {
            match kind {
                Kind::Blank => {
                    blanks += 1;
                    at += 1;
                    continue;
                }
                Kind::Tab => return Err(Decline("a tab in a plain scalar's continuation")),
                Kind::Comment => break,
                Kind::Content if indent as isize <= parent => break,
                Kind::Content => {}
            }
            let content = &self.lines[at][indent..];
            if matches!(content.as_bytes(), [b'-' | b'?' | b':', next, ..] if *next == b' ')
                || matches!(content, "-" | "?" | ":")
            {
                return Err(Decline(
                    "an indicator starting a plain scalar's continuation",
                ));
            }
            let bytes = content.as_bytes();
            let mut end = bytes.len();
            for (i, &b) in bytes.iter().enumerate() {
                match b {
                    b':' if matches!(bytes.get(i + 1), None | Some(b' ' | b'\t')) => {
                        return Err(Decline("a `: ` in a plain scalar's continuation"));
                    }
                    b'#' if i > 0 && matches!(bytes[i - 1], b' ' | b'\t') => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            let text = content[..end].trim_end_matches([' ', '\t']);
            let out = folded.get_or_insert_with(|| first.to_string());
            if blanks == 0 {
                out.push(' ');
            }
            for _ in 0..blanks {
                out.push('\n');
            }
            out.push_str(text);
            blanks = 0;
            at += 1;
            self.pos = at;
            if end < bytes.len() {
                // A comment ends the scalar.
                break;
            }
        }
        if let Some(out) = folded.as_mut() {
            out.shrink_to_fit();
        }
        Ok(folded)
    }

    /// A literal (`|`) or folded (`>`) block scalar whose header is at column `col` of line
    /// `line`, in a collection indented `parent`; libyaml's scanning rules, explicit
    /// indentation indicators declined.
    fn block_scalar(&mut self, line: usize, col: usize, parent: isize) -> Read<Value> {
        let header = &self.lines[line][col..];
        let literal = header.starts_with('|');
        let (chomp, rest) = match header[1..].chars().next() {
            Some('-') => (Chomp::Strip, &header[2..]),
            Some('+') => (Chomp::Keep, &header[2..]),
            _ => (Chomp::Clip, &header[1..]),
        };
        if !rest_is_comment(rest) {
            return Err(Decline("text after a block scalar header"));
        }
        let first_content = line + 1;
        // The content's indentation: that of its first non-blank line; leading blank lines
        // may not be longer (the library would then read it otherwise).
        let mut indent = None;
        let mut longest_blank = 0;
        for shape in &self.shapes[first_content..] {
            match shape.kind {
                Kind::Blank => longest_blank = longest_blank.max(shape.indent),
                Kind::Tab => return Err(Decline("a tab in a block scalar's indentation")),
                Kind::Comment | Kind::Content => {
                    indent = Some(shape.indent);
                    break;
                }
            }
        }
        let indent = match indent {
            Some(n) if n as isize > parent && n >= longest_blank && n > 0 => n,
            _ => return Err(Decline("a block scalar's indentation left to the library")),
        };
        let mut out = String::new();
        let mut leading_break = false;
        let mut trailing_breaks = 0usize;
        let mut leading_blank = false;
        let mut i = first_content;
        let mut started = false;
        while let Some(shape) = self.shapes.get(i) {
            if shape.indent < indent {
                match shape.kind {
                    Kind::Blank => {
                        trailing_breaks += 1;
                        i += 1;
                        continue;
                    }
                    Kind::Tab => {
                        return Err(Decline("a tab in a block scalar's indentation"));
                    }
                    Kind::Comment | Kind::Content => break,
                }
            }
            let content = &self.lines[i][indent..];
            if started && content.trim_start_matches([' ', '\t']).is_empty() && !content.is_empty()
            {
                // A line of only blanks past the indentation: content for libyaml, but rare
                // enough not to reproduce.
                return Err(Decline(
                    "a blank block scalar line longer than its indentation",
                ));
            }
            if content.is_empty() {
                trailing_breaks += 1;
                i += 1;
                continue;
            }
            let trailing_blank = content.starts_with([' ', '\t']);
            if started {
                if !literal && leading_break && !leading_blank && !trailing_blank {
                    if trailing_breaks == 0 {
                        out.push(' ');
                    }
                } else if leading_break {
                    out.push('\n');
                }
            }
            for _ in 0..trailing_breaks {
                out.push('\n');
            }
            trailing_breaks = 0;
            leading_blank = trailing_blank;
            out.push_str(content);
            leading_break = true;
            started = true;
            i += 1;
        }
        if !started || (self.unterminated_last && i == self.lines.len()) {
            return Err(Decline("an empty block scalar or one ending the file"));
        }
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => out.push('\n'),
            Chomp::Keep => {
                out.push('\n');
                for _ in 0..trailing_breaks {
                    out.push('\n');
                }
            }
        }
        self.pos = i;
        // Built by pushing: give back the spare capacity (the library's strings have none).
        out.shrink_to_fit();
        Ok(Value::String(out))
    }
}

/// Block scalar chomping (`-`, none, `+`).
enum Chomp {
    Strip,
    Clip,
    Keep,
}

/// Whether `c` may not start a plain scalar (or key) this reader accepts.
fn indicator(c: char) -> bool {
    matches!(
        c,
        '-' | '?'
            | ':'
            | ','
            | '['
            | ']'
            | '{'
            | '}'
            | '#'
            | '&'
            | '*'
            | '!'
            | '|'
            | '>'
            | '\''
            | '"'
            | '%'
            | '@'
            | '`'
            | '\t'
            | ' '
    )
}

/// If `text` starts with a mapping key (`key:` followed by a blank or the line's end): the
/// key and the offset just past its `:`. `Ok(None)` when it does not; a decline when it might
/// in a way this reader does not handle.
fn key(text: &str) -> Read<Option<(Cow<'_, str>, usize)>> {
    let (name, len, plain) = match text.chars().next() {
        Some('"' | '\'') => {
            // A quoted scalar not closed on its line is no key (keys are one line long).
            let Ok(q) = quoted(&[text], 0, 0, None) else {
                return Ok(None);
            };
            (Cow::Owned(q.value), q.end, false)
        }
        Some('?') if separated(&text[1..]) => return Err(Decline("a complex key")),
        Some(c) if indicator(c) => return Ok(None),
        Some(_) => {
            let Some(end) = plain_key_end(text) else {
                return Ok(None);
            };
            let name = text[..end].trim_end_matches(' ');
            if name
                .bytes()
                .any(|b| matches!(b, b'\t' | b'[' | b']' | b'{' | b'}' | b','))
            {
                return Err(Decline("a key with tabs or flow indicators"));
            }
            (Cow::Borrowed(name), end, true)
        }
        None => return Ok(None),
    };
    let after = &text[len..];
    let spaces = indent_of(after);
    let rest = &after[spaces..];
    if !(rest.starts_with(':') && separated(&rest[1..])) {
        // A quoted scalar followed by something other than `:` and a blank: a plain value, a
        // comment, or an error; the caller reads it as a scalar.
        return Ok(None);
    }
    let colon = len + spaces + 1;
    if colon > MAX_KEY_CHARS || (plain && matches!(&*name, "~" | "null" | "Null" | "NULL" | "<<")) {
        return Err(Decline("an overlong, null or merge key"));
    }
    Ok(Some((name, colon)))
}

/// Where the `:` that ends a plain key starts (the first `:` followed by a blank or the
/// line's end), unless a comment comes first.
fn plain_key_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b':' if matches!(bytes.get(i + 1), None | Some(b' ' | b'\t')) => return Some(i),
            b'#' if i > 0 && matches!(bytes[i - 1], b' ' | b'\t') => return None,
            _ => {}
        }
    }
    None
}

/// The plain scalar at the start of `text`: up to a comment or the line's end, trailing
/// blanks excluded. Declines on what a plain value may not hold (`: `, a leading indicator).
fn plain_scalar(text: &str) -> Read<&str> {
    let first = text.chars().next().ok_or(Decline("an empty scalar"))?;
    // `-` followed by a non-blank starts a plain scalar (`-1`, `-v`); other indicators do not.
    let dash_scalar = first == '-' && !separated(&text[1..]);
    if indicator(first) && !dash_scalar {
        return Err(Decline("a plain scalar starting with an indicator"));
    }
    let bytes = text.as_bytes();
    let mut end = bytes.len();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b':' if matches!(bytes.get(i + 1), None | Some(b' ' | b'\t')) => {
                return Err(Decline("a `: ` in a plain value"));
            }
            b'#' if i > 0 && matches!(bytes[i - 1], b' ' | b'\t') => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let plain = text[..end].trim_end_matches([' ', '\t']);
    Ok(plain)
}

/// The value of a one-line plain scalar as serde-saphyr resolves it into a `serde_json::Value`
/// with `strict_booleans` and `legacy_octal_numbers`; `None` for spellings not reproduced
/// here (a leading `+`, underscores, `.inf`/`.nan`, integers past 64 bits, infinite floats).
fn resolve_plain(s: &str) -> Option<Value> {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        _ => {}
    }
    let string = || Some(Value::String(s.to_string()));
    let (negative, unsigned) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let bytes = unsigned.as_bytes();
    match bytes {
        [b'0'..=b'9', ..] => {}
        [b'.', ..] => return resolve_dot(s, unsigned),
        // No number has two signs (`--port=80`).
        [b'+' | b'-', ..] if negative => return string(),
        [] | [b'+', ..] => return None,
        _ => return string(),
    }
    if s.contains('_') {
        return None;
    }
    // An integer of `digits` (already checked to be digits of `radix`); past 64 bits the
    // library reads a float or refuses, which is not reproduced here.
    let integer = |digits: &str, radix: u32| -> Option<Value> {
        let magnitude = i128::from(u64::from_str_radix(digits, radix).ok()?);
        if negative {
            i64::try_from(-magnitude).ok().map(Value::from)
        } else {
            u64::try_from(magnitude).ok().map(Value::from)
        }
    };
    let all_in = |digits: &[u8], radix: u32| {
        !digits.is_empty() && digits.iter().all(|&b| char::from(b).is_digit(radix))
    };
    match bytes {
        // Upper-case radix prefixes stay strings in the library.
        [b'0', b'X' | b'O' | b'B', ..] => string(),
        [b'0', prefix @ (b'x' | b'o' | b'b'), digits @ ..] => {
            let radix = match prefix {
                b'x' => 16,
                b'o' => 8,
                _ => 2,
            };
            // Not a float either (Rust's parser reads no radix prefix): a string.
            if all_in(digits, radix) {
                integer(&unsigned[2..], radix)
            } else {
                string()
            }
        }
        // Legacy octal (`0755`); with an 8 or 9 the library reads a float.
        [b'0', digits @ ..] if all_in(digits, 8) => integer(&unsigned[1..], 8),
        [b'1'..=b'9', ..] | [b'0'] if all_in(bytes, 10) => integer(unsigned, 10),
        _ => match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Some(Value::from(v)),
            Ok(_) => None,
            Err(_) => string(),
        },
    }
}

/// The value of a plain scalar whose digits start with `.`: a float when Rust's parser reads a
/// finite one (`.5`), a string when it reads none (`.metadata.name`); the special floats
/// (`.inf`, `.nan`) and overflowing spellings are left to the library.
fn resolve_dot(s: &str, unsigned: &str) -> Option<Value> {
    if matches!(
        unsigned,
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF"
    ) {
        return None;
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Some(Value::from(v)),
        Ok(_) => None,
        Err(_) => Some(Value::String(s.to_string())),
    }
}

/// The quoted or plain scalar at byte `at` of `text` inside a flow collection; `at` is left
/// just past it. Plain scalars end at `,`, `[`, `]`, `{` or `}` (and a mapping `key` at `:`);
/// one holding `:` or `#`, or starting with an indicator, declines.
fn flow_scalar(text: &str, at: &mut usize, key: bool) -> Read<Value> {
    let rest = &text[*at..];
    if rest.starts_with(['"', '\'']) {
        let q = quoted(&[rest], 0, 0, None)?;
        *at += q.end;
        return Ok(Value::String(q.value));
    }
    let end = rest
        .find([',', '[', ']', '{', '}', ':', '#'])
        .unwrap_or(rest.len());
    let plain = rest[..end].trim_end_matches(' ');
    let first = plain
        .chars()
        .next()
        .ok_or(Decline("an empty flow scalar"))?;
    let dash_scalar = first == '-' && plain.len() > 1 && !separated(&plain[1..]);
    let ends_at_colon = rest[end..].starts_with(':');
    if (ends_at_colon && !key)
        || rest[end..].starts_with('#')
        || plain.contains('\t')
        || (indicator(first) && !dash_scalar)
    {
        return Err(Decline("a flow scalar left to the library"));
    }
    *at += end;
    resolve_plain(plain).ok_or(Decline("a plain scalar spelling left to the library"))
}

/// Where a quoted scalar ends: its value, the line of its closing quote and the offset just
/// past that quote in the line.
struct Quoted {
    value: String,
    line: usize,
    end: usize,
}

/// The single- or double-quoted scalar whose opening quote is at column `col` of `lines[line]`.
/// With `parent` (the indent of the collection holding it) it may go on over lines indented
/// more than that, folded as libyaml folds them (trailing blanks dropped, leading blanks
/// skipped, a lone line break read as a space, `n` blank lines as `n` line breaks, an escaped
/// line break as nothing); without, it must close on its line. Only the common escapes are
/// decoded; any other declines.
fn quoted(lines: &[&str], line: usize, col: usize, parent: Option<isize>) -> Read<Quoted> {
    let unclosed = Decline("an unclosed or multi-line quoted scalar");
    let mut text = lines[line];
    let double = text[col..].starts_with('"');
    let mut at = line;
    let mut out = String::new();
    let mut chars = text[col + 1..].char_indices().peekable();
    let mut offset = col + 1;
    loop {
        // Blanks are kept only when content follows them on the same line.
        let mut blanks = 0..0;
        let mut escaped_break = false;
        while let Some((i, c)) = chars.next() {
            let i = i + offset;
            if c == ' ' || c == '\t' {
                if blanks.is_empty() {
                    blanks = i..i;
                }
                blanks.end = i + 1;
                continue;
            }
            out.push_str(&text[blanks.clone()]);
            blanks = 0..0;
            match c {
                '\'' if !double => {
                    if matches!(chars.peek(), Some((_, '\''))) {
                        chars.next();
                        out.push('\'');
                    } else {
                        out.shrink_to_fit();
                        return Ok(Quoted {
                            value: out,
                            line: at,
                            end: i + 1,
                        });
                    }
                }
                '"' if double => {
                    out.shrink_to_fit();
                    return Ok(Quoted {
                        value: out,
                        line: at,
                        end: i + 1,
                    });
                }
                '\\' if double => match chars.next() {
                    None => escaped_break = true,
                    Some((_, escape)) => out.push(unescape(escape, &mut chars)?),
                },
                c => out.push(c),
            }
        }
        // The line ends inside the scalar: fold it into the next line with content.
        let parent = parent.ok_or(unclosed)?;
        let mut breaks = 0;
        loop {
            at += 1;
            let next = lines.get(at).ok_or(unclosed)?;
            let trimmed = next.trim_start_matches(' ');
            if trimmed.starts_with('\t') {
                return Err(Decline("a tab starting a quoted scalar's line"));
            }
            if trimmed.trim_end_matches([' ', '\t']).is_empty() {
                breaks += 1;
                continue;
            }
            if (next.len() - trimmed.len()) as isize <= parent {
                return Err(Decline("a quoted scalar's line not indented"));
            }
            text = next;
            offset = next.len() - trimmed.len();
            break;
        }
        match (escaped_break, breaks) {
            (false, 0) => out.push(' '),
            (_, n) => (0..n).for_each(|_| out.push('\n')),
        }
        chars = text[offset..].char_indices().peekable();
    }
}

/// The character a double-quoted escape (`\` then `escape`) stands for; `\x` and `\u` read
/// their hex digits from `chars`. Escapes other than the common ones decline.
fn unescape(escape: char, chars: &mut impl Iterator<Item = (usize, char)>) -> Read<char> {
    Ok(match escape {
        '\\' => '\\',
        '"' => '"',
        '/' => '/',
        ' ' => ' ',
        '\t' => '\t',
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        '0' => '\0',
        'a' => '\u{7}',
        'b' => '\u{8}',
        'e' => '\u{1b}',
        'f' => '\u{c}',
        'v' => '\u{b}',
        'x' | 'u' => {
            let digits = if escape == 'x' { 2 } else { 4 };
            let mut code = 0u32;
            for _ in 0..digits {
                let (_, d) = chars.next().ok_or(Decline("a short escape"))?;
                code = code * 16 + d.to_digit(16).ok_or(Decline("a bad hex escape"))?;
            }
            char::from_u32(code).ok_or(Decline("an escape outside Unicode"))?
        }
        _ => return Err(Decline("an escape left to the library")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_block_style_manifests() {
        let text = "# c\napiVersion: v1\nkind: List\nf: [a, 'b', {c: \"d\", e: [1, -2]}] # c\nd: a\n  b\n\n  c\nq: \"x \n\n   y\\\n  \\ z\"\nitems:\n- a: 1\n  b: \"x\\ty\"\n- - 'it''s'\n  - -2.5\nempty:\nnested:\n  list: []\n  map: {}\n  script: |\n    a\n\n     b\n  folded: >-\n    a\n    b\n\n    c\n---\n---\nnull\n";
        let docs = read(text).unwrap();
        assert_eq!(docs.len(), 1);
        let expected = serde_json::json!({
            "apiVersion": "v1", "kind": "List", "f": ["a", "b", {"c": "d", "e": [1, -2]}], "d": "a b\nc", "q": "x\ny z",
            "items": [{"a": 1, "b": "x\ty"}, ["it's", -2.5]],
            "empty": null,
            "nested": {"list": [], "map": {}, "script": "a\n\n b\n", "folded": "a b\nc"}
        });
        assert_eq!(docs[0], expected);
    }

    #[test]
    fn notes_mapping_values_written_empty() {
        for (text, empty) in [
            ("a:\nb: 1\n", true),
            ("a: # c\n", true),
            ("a:\n  b:\n", true),
            ("---\na: 1\n---\nb:\n", true),
            ("a: null\nb: ~\nc: ''\n", false),
            ("a:\n  null\n", false),
            ("a:\n- \n- x\n", false),
            ("- \n", false),
            ("a:\n- b:\n", true),
            ("a: {}\nb: []\n", false),
        ] {
            let (_, noted) = read_noting_empty_values(text).unwrap();
            assert_eq!(noted, empty, "{text:?}");
        }
    }

    #[test]
    fn resolves_plain_scalars_as_the_library() {
        for (s, v) in [
            ("yes", Value::from("yes")),
            ("0", Value::from(0)),
            ("-7", Value::from(-7)),
            ("1e3", Value::from(1000.0)),
            ("10.0.0.1", Value::from("10.0.0.1")),
            ("-inf", Value::from("-inf")),
            ("~", Value::Null),
            ("0755", Value::from(493)),
            ("-010", Value::from(-8)),
            ("089", Value::from(89.0)),
            ("0x1F", Value::from(31)),
            ("0X1F", Value::from("0X1F")),
            ("0xZZ", Value::from("0xZZ")),
            (".5", Value::from(0.5)),
            (".metadata.name", Value::from(".metadata.name")),
            ("--port=80", Value::from("--port=80")),
        ] {
            assert_eq!(resolve_plain(s), Some(v), "{s}");
        }
        for s in [
            "1_000",
            ".inf",
            "+1",
            "1e999",
            "99999999999999999999",
            "0x1_F",
        ] {
            assert_eq!(resolve_plain(s), None, "{s}");
        }
    }

    #[test]
    fn declines_what_it_does_not_reproduce() {
        for text in [
            "a: &x 1\n",
            "a: *x\n",
            "a: !!str 1\n",
            "a: [1,]\n",
            "a: [1\n  , 2]\n",
            "a: {b}\n",
            "a: [b: c]\n",
            "a: 1\na: 2\n",
            "? a\n: b\n",
            "%YAML 1.2\n---\na: 1\n",
            "a:\n\t- b\n",
            "a: b # c\n  d\n",
            "a: \"b\n c\"\nd: \"e\n\"f\n",
            "a: \"b\nc\"\n",
            "a: b: c\n",
            "a: |\n  x",
            "a\r\n",
            "<<: {}\n",
        ] {
            assert!(documents(text).is_none(), "{text:?}");
        }
    }
}
