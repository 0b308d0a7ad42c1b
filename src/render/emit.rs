//! A YAML emitter that reproduces, byte for byte, what kustomize prints: its objects go
//! through `sigs.k8s.io/yaml.JSONToYAML`, i.e. go-yaml v2's `Marshal` of a
//! `map[interface{}]interface{}`. So keys are sorted with go-yaml v2's "natural" order,
//! strings are quoted by YAML 1.1 resolution rules, long scalars are folded at 80 columns,
//! multi-line strings become literal blocks and sequences sit at their key's indentation.
//!
//! The code mirrors the relevant parts of go-yaml v2's `emitterc.go` (state: column, indent,
//! whitespace, indention) so that the line-folding decisions match exactly.

use serde_json::{Map, Value};

use super::scalar;

/// go-yaml v2's default line width.
const BEST_WIDTH: usize = 80;
/// go-yaml v2's indentation step.
const BEST_INDENT: i64 = 2;
/// Longest key go-yaml v2 still writes as a simple (`key: value`) key.
const MAX_SIMPLE_KEY: usize = 128;

/// Serialises one document (an object) as go-yaml v2 would, ending with a newline.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    append_yaml(&mut out, value);
    out
}

/// Appends one document to `out`, as [`to_yaml`] writes it.
fn append_yaml(out: &mut String, value: &Value) {
    let start = out.len();
    let mut e = Emitter {
        out: std::mem::take(out),
        column: 0,
        indent: -1,
        whitespace: true,
        indention: true,
    };
    e.node(value, Ctx::default());
    if e.column != 0 || e.out.len() == start {
        e.out.push('\n');
    }
    *out = e.out;
}

/// Writes [`documents_to_yaml`]'s text to `out` one document at a time, so that the whole
/// text is never held in memory at once.
pub fn write_documents(values: &[Value], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut buf = String::new();
    for (i, v) in values.iter().enumerate() {
        buf.clear();
        if i > 0 {
            buf.push_str("---\n");
        }
        append_yaml(&mut buf, v);
        out.write_all(buf.as_bytes())?;
    }
    Ok(())
}

/// Serialises documents separated by `---` lines, like kustomize's `AsYaml`.
pub fn documents_to_yaml(values: &[Value]) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        append_yaml(&mut out, v);
    }
    out
}

/// Where a node is being written.
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    /// The node is a value of a block mapping.
    mapping: bool,
    /// The node is a simple mapping key.
    simple_key: bool,
}

/// Output scalar styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Emitter {
    out: String,
    column: usize,
    indent: i64,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_str(&mut self, s: &str) {
        self.out.push_str(s);
        self.column += s.chars().count();
    }

    /// [`Self::write_str`] of a part of a text known to be ASCII (`ascii`): its columns are
    /// its bytes.
    fn write_part(&mut self, s: &str, ascii: bool) {
        if ascii {
            self.out.push_str(s);
            self.column += s.len();
        } else {
            self.write_str(s);
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        // The spaces up to the indent, a run at a time.
        const SPACES: &str = "                                ";
        while self.column < indent {
            let run = (indent - self.column).min(SPACES.len());
            self.out.push_str(&SPACES[..run]);
            self.column += run;
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        self.write_str(ind);
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    /// go-yaml's `increase_indent`; returns the previous indent to restore.
    fn increase_indent(&mut self, flow: bool, indentless: bool) -> i64 {
        let saved = self.indent;
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
        saved
    }

    fn node(&mut self, value: &Value, ctx: Ctx) {
        match value {
            Value::Object(map) if !map.is_empty() => self.block_mapping(map),
            Value::Array(items) if !items.is_empty() => self.block_sequence(items, ctx),
            Value::Object(_) => self.flow_empty("{}"),
            Value::Array(_) => self.flow_empty("[]"),
            Value::String(s) => self.string_scalar(s, ctx),
            Value::Null => self.scalar("null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Value::Number(n) => self.scalar(&scalar::format_number(n), Style::Plain, ctx),
        }
    }

    fn flow_empty(&mut self, text: &str) {
        self.write_indicator(&text[..1], true, true, false);
        self.write_indicator(&text[1..], false, false, false);
    }

    fn block_mapping(&mut self, map: &Map<String, Value>) {
        let saved = self.increase_indent(false, false);
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        scalar::sort_natural(&mut entries, |(key, _)| key.as_str());
        for (key, value) in entries {
            self.write_indent();
            // go-yaml's `check_simple_key`; the key's analysis serves its writing too.
            let a = analyze(key);
            if key.len() <= MAX_SIMPLE_KEY && !a.multiline {
                self.string_scalar_analyzed(
                    key,
                    &a,
                    Ctx {
                        mapping: true,
                        simple_key: true,
                    },
                );
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.string_scalar_analyzed(
                    key,
                    &a,
                    Ctx {
                        mapping: true,
                        simple_key: false,
                    },
                );
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(
                value,
                Ctx {
                    mapping: true,
                    simple_key: false,
                },
            );
        }
        self.indent = saved;
    }

    fn block_sequence(&mut self, items: &[Value], ctx: Ctx) {
        let saved = self.increase_indent(false, ctx.mapping && !self.indention);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Ctx::default());
        }
        self.indent = saved;
    }

    fn string_scalar(&mut self, s: &str, ctx: Ctx) {
        self.string_scalar_analyzed(s, &analyze(s), ctx);
    }

    /// [`Self::string_scalar`] of `s`, whose [`analyze`] result is `a`.
    fn string_scalar_analyzed(&mut self, s: &str, a: &Analysis, ctx: Ctx) {
        let style = if a.multiline && s.contains('\n') {
            Style::Literal
        } else if scalar::resolves_to_string(s) {
            Style::Plain
        } else {
            Style::Double
        };
        self.scalar_analyzed(s, a, style, ctx);
    }

    fn scalar(&mut self, s: &str, requested: Style, ctx: Ctx) {
        self.scalar_analyzed(s, &analyze(s), requested, ctx);
    }

    /// Writes `s` (whose [`analyze`] result is `a`) in the `requested` style or the one
    /// go-yaml falls back to.
    fn scalar_analyzed(&mut self, s: &str, a: &Analysis, requested: Style, ctx: Ctx) {
        let mut style = requested;
        if ctx.simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (s.is_empty() && ctx.simple_key)) {
            style = Style::Single;
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::Double;
        }
        let saved = self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(s, allow_breaks),
            Style::Single => self.write_single(s, allow_breaks),
            Style::Double => self.write_double(s, allow_breaks),
            Style::Literal => self.write_literal(s),
        }
        self.indent = saved;
    }

    fn write_plain(&mut self, s: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        // A text ending before the width has no space to fold at: written as it is.
        if !allow_breaks || self.column + s.len() <= BEST_WIDTH + 1 {
            self.write_str(s);
            self.whitespace = false;
            self.indention = false;
            return;
        }
        // The words between spaces are written as they are; a space is folded into a line
        // break when the line is past the width, and neither follows nor precedes a space.
        let ascii = s.is_ascii();
        let mut words = s.split(' ').peekable();
        if let Some(word) = words.next().filter(|w| !w.is_empty()) {
            self.write_part(word, ascii);
            self.indention = false;
        }
        let mut spaces = false;
        while let Some(word) = words.next() {
            let next_space = word.is_empty() && words.peek().is_some();
            if allow_breaks && !spaces && self.column > BEST_WIDTH && !next_space {
                self.write_indent();
            } else {
                self.put(' ');
            }
            spaces = true;
            if !word.is_empty() {
                self.write_part(word, ascii);
                self.indention = false;
                spaces = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, s: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let mut chars = s.chars().peekable();
        let mut first = true;
        let mut spaces = false;
        let mut breaks = false;
        while let Some(c) = chars.next() {
            if c == ' ' {
                let next = chars.peek().copied();
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && !first
                    && next.is_some()
                    && next != Some(' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if scalar::is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
            first = false;
        }
        self.write_indicator("'", false, false, false);
    }

    /// go-yaml's `write_break`: a newline, or another line-break character copied as is.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_double(&mut self, s: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let mut chars = s.chars().peekable();
        let mut first = true;
        let mut spaces = false;
        while let Some(c) = chars.next() {
            if !scalar::is_printable(c)
                || c == '\u{FEFF}'
                || scalar::is_break(c)
                || c == '"'
                || c == '\\'
            {
                self.put('\\');
                match escape_letter(c) {
                    Some(l) => self.put(l),
                    None => {
                        let v = c as u32;
                        let (prefix, digits) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(prefix);
                        self.write_str(&format!("{v:0digits$X}"));
                    }
                }
                spaces = false;
            } else if c == ' ' {
                let next = chars.peek().copied();
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !first && next.is_some() {
                    self.write_indent();
                    if next == Some(' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
            first = false;
        }
        self.write_indicator("\"", false, false, false);
    }

    fn write_literal(&mut self, s: &str) {
        self.write_indicator("|", true, false, false);
        if s.chars()
            .next()
            .is_some_and(|c| c == ' ' || scalar::is_break(c))
        {
            self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
        }
        let mut from_end = s.chars().rev();
        let chomp = match (from_end.next(), from_end.next()) {
            (None, _) => Some("-"),
            (Some(last), _) if !scalar::is_break(last) => Some("-"),
            (Some(_), None) => Some("+"),
            (Some(_), Some(prev)) if scalar::is_break(prev) => Some("+"),
            _ => None,
        };
        if let Some(ch) = chomp {
            self.write_indicator(ch, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut rest = s;
        // In ASCII text the only breaks are `\n` and `\r`, found by a byte search.
        let ascii = s.is_ascii();
        let line_end = |rest: &str| {
            if ascii {
                rest.bytes().position(|b| b == b'\n' || b == b'\r')
            } else {
                rest.find(scalar::is_break)
            }
        };
        while let Some(c) = rest.chars().next() {
            if scalar::is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
                rest = &rest[c.len_utf8()..];
            } else {
                if breaks {
                    self.write_indent();
                    breaks = false;
                }
                // The rest of the line, up to the next break, as it is.
                let end = line_end(rest).unwrap_or(rest.len());
                self.write_part(&rest[..end], ascii);
                self.indention = false;
                rest = &rest[end..];
            }
        }
    }
}

fn escape_letter(c: char) -> Option<char> {
    Some(match c {
        '\0' => '0',
        '\u{7}' => 'a',
        '\u{8}' => 'b',
        '\t' => 't',
        '\n' => 'n',
        '\u{b}' => 'v',
        '\u{c}' => 'f',
        '\r' => 'r',
        '\u{1b}' => 'e',
        '"' => '"',
        '\\' => '\\',
        '\u{85}' => 'N',
        '\u{a0}' => '_',
        '\u{2028}' => 'L',
        '\u{2029}' => 'P',
        _ => return None,
    })
}

/// The subset of go-yaml's `analyze_scalar` results the emitter needs.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// The bytes [`analyze`] skips after the first character: graphic ASCII other than `:` and
/// `#`, the only ones of it whose meaning depends on their neighbours.
const ORDINARY: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0x21;
    while b < 0x7F {
        table[b] = b != b':' as usize && b != b'#' as usize;
        b += 1;
    }
    table
};

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut previous_space, mut previous_break) =
        (false, false, false, false);
    let (mut line_breaks, mut special) = (false, false);
    let mut preceded_by_ws = true;
    let bytes = s.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        // Most characters of long values (rule expressions, embedded JSON) are graphic ASCII
        // other than the indicators that matter after the first character: a run of them only
        // resets the space and break trackers.
        if at > 0 && ORDINARY[usize::from(bytes[at])] {
            at += 1;
            while bytes.get(at).is_some_and(|&b| ORDINARY[usize::from(b)]) {
                at += 1;
            }
            previous_space = false;
            previous_break = false;
            preceded_by_ws = false;
            continue;
        }
        // A space, line feed, `:` or `#` neither first nor last (the words of descriptions,
        // the lines and keys of embedded JSON): what the general case below does for it.
        if at > 0 && at + 1 < bytes.len() {
            let next = bytes[at + 1];
            match bytes[at] {
                b' ' => {
                    break_space |= previous_break;
                    previous_space = true;
                    previous_break = false;
                    preceded_by_ws = true;
                    at += 1;
                    continue;
                }
                b'\n' => {
                    line_breaks = true;
                    space_break |= previous_space;
                    previous_space = false;
                    previous_break = true;
                    preceded_by_ws = true;
                    at += 1;
                    continue;
                }
                b':' => {
                    block_indicators |= next == b' ' || next == b'\t';
                    previous_space = false;
                    previous_break = false;
                    preceded_by_ws = false;
                    at += 1;
                    continue;
                }
                b'#' => {
                    block_indicators |= preceded_by_ws;
                    previous_space = false;
                    previous_break = false;
                    preceded_by_ws = false;
                    at += 1;
                    continue;
                }
                _ => {}
            }
        }
        let Some(c) = s[at..].chars().next() else {
            break;
        };
        let first = at == 0;
        at += c.len_utf8();
        let next = s[at..].chars().next();
        let last = next.is_none();
        let followed_by_ws = matches!(next, None | Some(' ' | '\t'));
        if first {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_ws => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_ws => block_indicators = true,
                '#' if preceded_by_ws => block_indicators = true,
                _ => {}
            }
        }
        if !scalar::is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if first {
                leading_space = true;
            }
            if last {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if scalar::is_break(c) {
            line_breaks = true;
            if first {
                leading_break = true;
            }
            if last {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = matches!(c, ' ' | '\t') || scalar::is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_quotes_and_indents_like_go_yaml_v2() {
        let v = json!({"metadata": {"name": "a", "labels": {"y": "yes", "n": "1"}},
                       "spec": {"args": ["true", " sp", "a: b", "multi\nline\n", "x\ny"], "e": [], "m": {}}});
        assert_eq!(
            to_yaml(&v),
            "metadata:\n  labels:\n    \"n\": \"1\"\n    \"y\": \"yes\"\n  name: a\nspec:\n  args:\n  - \"true\"\n  - ' sp'\n  - 'a: b'\n  - |\n    multi\n    line\n  - |-\n    x\n    y\n  e: []\n  m: {}\n"
        );
    }

    #[test]
    fn folds_long_plain_strings_at_80_columns() {
        let long = "word ".repeat(30);
        let v = json!({"k": long.trim_end()});
        let out = to_yaml(&v);
        assert!(out.lines().all(|l| l.len() < 90), "{out}");
        assert!(out.lines().nth(1).unwrap().starts_with("  word"));
    }
}
