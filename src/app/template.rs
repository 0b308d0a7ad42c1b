//! Destination templates: `spec.destination.cluster` may be a Go-template-style expression
//! evaluated against the App itself, e.g.
//! `{{ if eq .metadata.labels.env "prod" }}prod{{ else }}staging{{ end }}`.
//!
//! The language is the part of Go's `text/template` that routing needs, and nothing that can
//! loop or recurse: text, `{{ pipeline }}` actions, `if` / `else if` / `else` / `end`, trim
//! markers (`{{-`, `-}}`), field paths (`.metadata.labels.env`; a missing field is empty),
//! string, number and boolean literals, parentheses, pipes (`.x | default "eu"` passes the
//! left value as the last argument) and the functions `eq`, `ne`, `and`, `or`, `not`,
//! `default`, `lower`, `upper`, `printf` (`%s %d %v %q %%`) and `index`. Evaluation is linear
//! in the template's length; templates are capped at [`MAX_TEMPLATE_BYTES`] and nesting at
//! [`MAX_DEPTH`], so no App can make the daemon loop or overflow its stack.

use serde_json::Value;

/// The longest template accepted.
pub const MAX_TEMPLATE_BYTES: usize = 4096;
/// The deepest nesting of `if` blocks and parentheses accepted.
pub const MAX_DEPTH: usize = 16;

/// The functions a template may call.
pub const FUNCTIONS: [&str; 10] = [
    "eq", "ne", "and", "or", "not", "default", "lower", "upper", "printf", "index",
];

/// Why a template cannot be parsed or evaluated; `column` counts characters from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("template column {column}: {message}")]
pub struct TemplateError {
    /// Where in the template (characters, from 1).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// Whether `text` is a template (holds an action) rather than a plain value.
pub fn is_template(text: &str) -> bool {
    text.contains("{{")
}

/// A parsed template, ready to evaluate against any number of Apps.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    nodes: Vec<Node>,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Action(Pipeline),
    If {
        branches: Vec<(Pipeline, Vec<Node>)>,
        otherwise: Vec<Node>,
    },
}

/// Commands joined by `|`; each one's value is the last argument of the next.
#[derive(Debug, Clone, PartialEq)]
struct Pipeline {
    column: usize,
    commands: Vec<Command>,
}

/// One command of a pipeline: a function call, or a value (only first in a pipeline).
#[derive(Debug, Clone, PartialEq)]
enum Command {
    Call(String, Vec<Operand>),
    Value(Operand),
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Field(Vec<String>),
    Literal(Value),
    Group(Pipeline),
}

/// A word of a command as parsed, before the command's shape is checked.
enum Item {
    Function(String),
    Operand(Operand),
}

impl Template {
    /// Parses `text`; errors name the column and the cause (an unknown function, an unclosed
    /// action, a missing `end`, an unsupported action such as `range`).
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        if text.len() > MAX_TEMPLATE_BYTES {
            return Err(TemplateError {
                column: 1,
                message: format!("longer than {MAX_TEMPLATE_BYTES} bytes"),
            });
        }
        let pieces = split(text)?;
        let mut parser = Parser {
            pieces: pieces.into_iter().peekable(),
            depth: 0,
        };
        let (nodes, end) = parser.block()?;
        let (column, keyword) = match end {
            BlockEnd::Eof => return Ok(Template { nodes }),
            BlockEnd::End(column) => (column, "end"),
            BlockEnd::Else(column) | BlockEnd::ElseIf(column, _) => (column, "else"),
        };
        Err(TemplateError {
            column,
            message: format!("unexpected {{{{{keyword}}}}} outside {{{{if}}}}"),
        })
    }

    /// Evaluates the template with `data` as `.`.
    pub fn render(&self, data: &Value) -> Result<String, TemplateError> {
        let mut out = String::new();
        render_nodes(&self.nodes, data, &mut out)?;
        Ok(out)
    }
}

/// A piece of template text: plain text, or an action's inside with its column.
enum Piece {
    Text(String),
    Action { column: usize, tokens: Vec<Token> },
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Field(Vec<String>),
    Literal(Value),
    Open,
    Close,
    Pipe,
}

/// Splits `text` into text and actions, applying trim markers.
fn split(text: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(start) = rest.find("{{") {
        let mut literal = rest[..start].to_string();
        let mut inner_start = start + 2;
        if rest[inner_start..].starts_with('-') {
            literal = literal.trim_end().to_string();
            inner_start += 1;
        }
        let column = column_of(text, offset + start);
        let Some(len) = rest[inner_start..].find("}}") else {
            return Err(TemplateError {
                column,
                message: "unclosed action: missing }}".into(),
            });
        };
        let mut inner = &rest[inner_start..inner_start + len];
        let mut after = inner_start + len + 2;
        let trim_after = inner.ends_with('-') && inner.len() > 1;
        if trim_after {
            inner = &inner[..inner.len() - 1];
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        let tokens = lex(inner).map_err(|message| TemplateError { column, message })?;
        pieces.push(Piece::Action { column, tokens });
        if trim_after {
            let trimmed = rest[after..].trim_start();
            after = rest.len() - trimmed.len();
        }
        offset += after;
        rest = &rest[after..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

fn column_of(text: &str, byte: usize) -> usize {
    text[..byte].chars().count() + 1
}

/// The tokens of one action's inside.
fn lex(inner: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = inner.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | '|' => {
                chars.next();
                tokens.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    _ => Token::Pipe,
                });
            }
            '"' | '`' => {
                chars.next();
                let mut value = String::new();
                let mut closed = false;
                while let Some((_, ch)) = chars.next() {
                    match ch {
                        ch if ch == c => {
                            closed = true;
                            break;
                        }
                        '\\' if c == '"' => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, 't')) => value.push('\t'),
                            Some((_, e @ ('"' | '\\'))) => value.push(e),
                            _ => return Err("invalid escape in string literal".into()),
                        },
                        ch => value.push(ch),
                    }
                }
                if !closed {
                    return Err("unterminated string literal".into());
                }
                tokens.push(Token::Literal(Value::String(value)));
            }
            _ => {
                let end = inner[i..]
                    .find(|ch: char| ch.is_whitespace() || "()|\"`".contains(ch))
                    .map_or(inner.len(), |n| i + n);
                let word = &inner[i..end];
                while chars.peek().is_some_and(|&(j, _)| j < end) {
                    chars.next();
                }
                tokens.push(word_token(word)?);
            }
        }
    }
    Ok(tokens)
}

fn word_token(word: &str) -> Result<Token, String> {
    if word == "." {
        return Ok(Token::Field(Vec::new()));
    }
    if let Some(path) = word.strip_prefix('.') {
        let parts: Vec<String> = path.split('.').map(str::to_string).collect();
        if parts.iter().any(String::is_empty) {
            return Err(format!("invalid field path {word:?}"));
        }
        return Ok(Token::Field(parts));
    }
    match word {
        "true" => return Ok(Token::Literal(Value::Bool(true))),
        "false" => return Ok(Token::Literal(Value::Bool(false))),
        "nil" => return Ok(Token::Literal(Value::Null)),
        _ => {}
    }
    if word.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return serde_json::from_str::<serde_json::Number>(word)
            .map(|n| Token::Literal(Value::Number(n)))
            .map_err(|_| format!("invalid number {word:?}"));
    }
    if word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Ok(Token::Word(word.to_string()));
    }
    Err(format!("unexpected {word:?}"))
}

struct Parser {
    pieces: std::iter::Peekable<std::vec::IntoIter<Piece>>,
    depth: usize,
}

/// What ended a block of nodes.
enum BlockEnd {
    /// The end of the template.
    Eof,
    /// `{{end}}` at this column.
    End(usize),
    /// `{{else}}` at this column.
    Else(usize),
    /// `{{else if COND}}` at this column.
    ElseIf(usize, Vec<Token>),
}

impl Parser {
    /// Nodes up to an `else`, `else if` or `end`, or the end of the template.
    fn block(&mut self) -> Result<(Vec<Node>, BlockEnd), TemplateError> {
        let mut nodes = Vec::new();
        while let Some(piece) = self.pieces.next() {
            let (column, tokens) = match piece {
                Piece::Text(text) => {
                    nodes.push(Node::Text(text));
                    continue;
                }
                Piece::Action { column, tokens } => (column, tokens),
            };
            let error = |message: String| TemplateError { column, message };
            let keyword = match tokens.first() {
                Some(Token::Word(w)) => w.as_str(),
                _ => "",
            };
            match keyword {
                "if" => nodes.push(self.if_block(column, &tokens[1..])?),
                "end" if tokens.len() == 1 => return Ok((nodes, BlockEnd::End(column))),
                "end" => return Err(error("unexpected tokens after end".into())),
                "else" => {
                    return match tokens.get(1) {
                        None => Ok((nodes, BlockEnd::Else(column))),
                        Some(Token::Word(w)) if w == "if" => {
                            Ok((nodes, BlockEnd::ElseIf(column, tokens[2..].to_vec())))
                        }
                        Some(_) => Err(error("unexpected tokens after else".into())),
                    };
                }
                "range" | "with" | "define" | "template" | "block" | "break" | "continue" => {
                    return Err(error(format!("{{{{{keyword}}}}} is not supported")));
                }
                _ => nodes.push(Node::Action(pipeline(column, &tokens, 0)?)),
            }
        }
        Ok((nodes, BlockEnd::Eof))
    }

    /// An `if` whose condition tokens follow the keyword, up to its `end`.
    fn if_block(&mut self, column: usize, condition: &[Token]) -> Result<Node, TemplateError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(TemplateError {
                column,
                message: format!("nested deeper than {MAX_DEPTH}"),
            });
        }
        let mut branches = vec![(pipeline(column, condition, 0)?, Vec::new())];
        let mut otherwise = None;
        loop {
            let (nodes, end) = self.block()?;
            match &mut otherwise {
                Some(slot) => *slot = nodes,
                None => {
                    if let Some(last) = branches.last_mut() {
                        last.1 = nodes;
                    }
                }
            }
            let after_else = |at: usize, what: &str| TemplateError {
                column: at,
                message: format!("{{{{{what}}}}} after {{{{else}}}}"),
            };
            match end {
                BlockEnd::Eof => {
                    return Err(TemplateError {
                        column,
                        message: "{{if}} without {{end}}".into(),
                    });
                }
                BlockEnd::End(_) => break,
                BlockEnd::Else(at) if otherwise.is_some() => return Err(after_else(at, "else")),
                BlockEnd::Else(_) => otherwise = Some(Vec::new()),
                BlockEnd::ElseIf(at, _) if otherwise.is_some() => {
                    return Err(after_else(at, "else if"));
                }
                BlockEnd::ElseIf(at, tokens) => {
                    branches.push((pipeline(at, &tokens, 0)?, Vec::new()));
                }
            }
        }
        self.depth -= 1;
        Ok(Node::If {
            branches,
            otherwise: otherwise.unwrap_or_default(),
        })
    }
}

/// The pipeline of an action's tokens; `depth` counts enclosing parentheses.
fn pipeline(column: usize, tokens: &[Token], depth: usize) -> Result<Pipeline, TemplateError> {
    let error = |message: String| TemplateError { column, message };
    if depth > MAX_DEPTH {
        return Err(error(format!("nested deeper than {MAX_DEPTH}")));
    }
    let mut items: Vec<Vec<Item>> = vec![Vec::new()];
    let mut i = 0;
    while i < tokens.len() {
        let operand = match &tokens[i] {
            Token::Pipe => {
                items.push(Vec::new());
                i += 1;
                continue;
            }
            Token::Open => {
                let close = matching_close(&tokens[i..])
                    .ok_or_else(|| error("unclosed left paren".into()))?;
                let inner = pipeline(column, &tokens[i + 1..i + close], depth + 1)?;
                i += close;
                Item::Operand(Operand::Group(inner))
            }
            Token::Close => return Err(error("unexpected right paren".into())),
            Token::Field(path) => Item::Operand(Operand::Field(path.clone())),
            Token::Literal(value) => Item::Operand(Operand::Literal(value.clone())),
            Token::Word(name) if FUNCTIONS.contains(&name.as_str()) => Item::Function(name.clone()),
            Token::Word(name) if ["if", "else", "end"].contains(&name.as_str()) => {
                return Err(error(format!("unexpected {name:?} in an expression")));
            }
            Token::Word(name) => {
                return Err(error(format!(
                    "function {name:?} not defined (known: {})",
                    FUNCTIONS.join(", ")
                )));
            }
        };
        if let Some(command) = items.last_mut() {
            command.push(operand);
        }
        i += 1;
    }
    let mut commands = Vec::with_capacity(items.len());
    for (n, command) in items.into_iter().enumerate() {
        let mut words = command.into_iter();
        let command = match (words.next(), words.len()) {
            (None, _) => return Err(error("missing value in pipeline".into())),
            (Some(Item::Function(name)), _) => {
                let args = words
                    .map(|word| match word {
                        Item::Operand(operand) => Ok(operand),
                        Item::Function(_) => Err(error(
                            "a function used as an argument must be in parentheses".into(),
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Command::Call(name, args)
            }
            (Some(Item::Operand(value)), 0) if n == 0 => Command::Value(value),
            (Some(Item::Operand(_)), 0) => {
                return Err(error(
                    "only a function can follow | (it gets the value as its last argument)".into(),
                ));
            }
            (Some(Item::Operand(_)), _) => {
                return Err(error(
                    "arguments given to a value that is not a function".into(),
                ));
            }
        };
        commands.push(command);
    }
    Ok(Pipeline { column, commands })
}

/// The index in `tokens` (which starts with `(`) of its matching `)`.
fn matching_close(tokens: &[Token]) -> Option<usize> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate() {
        match token {
            Token::Open => depth += 1,
            Token::Close => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn render_nodes(nodes: &[Node], data: &Value, out: &mut String) -> Result<(), TemplateError> {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Action(pipeline) => out.push_str(&printed(&evaluate(pipeline, data)?)),
            Node::If {
                branches,
                otherwise,
            } => {
                let mut chosen = otherwise;
                for (condition, body) in branches {
                    if truthy(&evaluate(condition, data)?) {
                        chosen = body;
                        break;
                    }
                }
                render_nodes(chosen, data, out)?;
            }
        }
    }
    Ok(())
}

fn evaluate(pipeline: &Pipeline, data: &Value) -> Result<Value, TemplateError> {
    let mut piped: Option<Value> = None;
    for command in &pipeline.commands {
        let value = match command {
            Command::Call(name, args) => {
                let mut values = args
                    .iter()
                    .map(|a| operand(a, data))
                    .collect::<Result<Vec<_>, _>>()?;
                values.extend(piped.take());
                call(name, &values).map_err(|message| TemplateError {
                    column: pipeline.column,
                    message,
                })?
            }
            Command::Value(value) => operand(value, data)?,
        };
        piped = Some(value);
    }
    Ok(piped.unwrap_or(Value::Null))
}

fn operand(operand: &Operand, data: &Value) -> Result<Value, TemplateError> {
    Ok(match operand {
        Operand::Field(path) => path
            .iter()
            .try_fold(data, |v, key| v.get(key))
            .cloned()
            .unwrap_or(Value::Null),
        Operand::Literal(value) => value.clone(),
        Operand::Group(pipeline) => evaluate(pipeline, data)?,
    })
}

/// Calls built-in function `name`.
fn call(name: &str, args: &[Value]) -> Result<Value, String> {
    let arity = |ok: bool, wanted: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{name}: wants {wanted} argument(s), got {}",
                args.len()
            ))
        }
    };
    match name {
        "eq" => {
            arity(args.len() >= 2, "2 or more")?;
            Ok(Value::Bool(args[1..].iter().any(|b| same(&args[0], b))))
        }
        "ne" => {
            arity(args.len() == 2, "2")?;
            Ok(Value::Bool(!same(&args[0], &args[1])))
        }
        "and" => {
            arity(!args.is_empty(), "1 or more")?;
            Ok(args
                .iter()
                .find(|v| !truthy(v))
                .unwrap_or(&args[args.len() - 1])
                .clone())
        }
        "or" => {
            arity(!args.is_empty(), "1 or more")?;
            Ok(args
                .iter()
                .find(|v| truthy(v))
                .unwrap_or(&args[args.len() - 1])
                .clone())
        }
        "not" => {
            arity(args.len() == 1, "1")?;
            Ok(Value::Bool(!truthy(&args[0])))
        }
        "default" => {
            arity(args.len() == 2, "2 (default VALUE-IF-EMPTY VALUE)")?;
            Ok(if truthy(&args[1]) { &args[1] } else { &args[0] }.clone())
        }
        "lower" | "upper" => {
            arity(args.len() == 1, "1")?;
            let text = printed(&args[0]);
            Ok(Value::String(if name == "lower" {
                text.to_lowercase()
            } else {
                text.to_uppercase()
            }))
        }
        "printf" => {
            arity(!args.is_empty(), "1 or more")?;
            printf(&printed(&args[0]), &args[1..]).map(Value::String)
        }
        "index" => {
            arity(!args.is_empty(), "1 or more")?;
            Ok(args[1..]
                .iter()
                .try_fold(&args[0], |v, key| match key {
                    Value::String(k) => v.get(k),
                    Value::Number(n) => n.as_u64().and_then(|i| v.get(i as usize)),
                    _ => None,
                })
                .cloned()
                .unwrap_or(Value::Null))
        }
        _ => Err(format!("function {name:?} not defined")),
    }
}

/// `%s`, `%v` (the value as printed), `%d` (an integer), `%q` (a quoted string) and `%%`.
fn printf(format: &str, args: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let verb = chars.next().ok_or("printf: format ends with %")?;
        if verb == '%' {
            out.push('%');
            continue;
        }
        let arg = args
            .next()
            .ok_or_else(|| format!("printf: %{verb} has no argument"))?;
        match verb {
            's' | 'v' => out.push_str(&printed(arg)),
            'q' => out.push_str(&Value::String(printed(arg)).to_string()),
            'd' => match arg.as_i64() {
                Some(n) => out.push_str(&n.to_string()),
                None => return Err(format!("printf: %d of {arg}, not an integer")),
            },
            other => return Err(format!("printf: unsupported verb %{other}")),
        }
    }
    if args.next().is_some() {
        return Err("printf: more arguments than verbs".into());
    }
    Ok(out)
}

/// Go's truth: false, 0, nil and empty strings, lists and maps are false.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Equality, with numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// A value as the template prints it: strings raw, nothing for a missing value, JSON otherwise.
fn printed(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn app(env: &str) -> Value {
        json!({"metadata": {"name": "web", "labels": {"env": env, "region": "EU-West"}},
               "spec": {"destination": {"namespace": "shop"}, "replicas": 3}})
    }

    fn render(template: &str, data: &Value) -> Result<String, TemplateError> {
        Template::parse(template)?.render(data)
    }

    #[test]
    fn routes_by_label() {
        let t = r#"{{ if eq .metadata.labels.env "prod" }}prod{{ else }}staging{{ end }}"#;
        assert_eq!(render(t, &app("prod")).unwrap(), "prod");
        assert_eq!(render(t, &app("dev")).unwrap(), "staging");
        let chain = r#"{{- if eq .metadata.labels.env "prod" -}} prod
            {{- else if eq .metadata.labels.env "qa" "test" -}} qa
            {{- else -}} dev {{- end }}"#;
        assert_eq!(render(chain, &app("prod")).unwrap(), "prod");
        assert_eq!(render(chain, &app("test")).unwrap(), "qa");
        assert_eq!(render(chain, &app("x")).unwrap(), "dev");
    }

    #[test]
    fn functions_pipes_and_missing_fields() {
        let data = app("prod");
        let cases = [
            (r#"{{ .metadata.labels.region | lower }}"#, "eu-west"),
            (r#"{{ upper .metadata.labels.env }}"#, "PROD"),
            (r#"{{ .metadata.labels.zone | default "eu" }}"#, "eu"),
            (r#"{{ default "eu" .metadata.labels.env }}"#, "prod"),
            (
                r#"{{ printf "%s-%d" .metadata.name .spec.replicas }}"#,
                "web-3",
            ),
            (r#"{{ printf "%q%%" .metadata.name }}"#, "\"web\"%"),
            (r#"{{ index .metadata.labels "env" }}"#, "prod"),
            (r#"{{ index .metadata "labels" "nope" }}"#, ""),
            (r#"{{ .no.such.field }}"#, ""),
            (
                r#"{{ if and (ne .metadata.labels.env "dev") (not .spec.paused) }}y{{ end }}"#,
                "y",
            ),
            (r#"{{ or .metadata.labels.zone "z1" }}"#, "z1"),
            (r#"{{ eq .spec.replicas 3 }}"#, "true"),
            (r#"{{ `raw` }}-{{ "a\"b" }}"#, "raw-a\"b"),
            ("static-{{ .metadata.name }}", "static-web"),
        ];
        for (template, want) in cases {
            assert_eq!(render(template, &data).unwrap(), want, "{template}");
        }
    }

    #[test]
    fn errors_name_the_column_and_cause() {
        let cases = [
            ("{{ lookup .x }}", 1, "function \"lookup\" not defined"),
            ("ab{{ .x ", 3, "unclosed action"),
            ("{{ if .x }}y", 1, "{{if}} without {{end}}"),
            ("{{ end }}", 1, "outside {{if}}"),
            ("{{ range .x }}{{ end }}", 1, "{{range}} is not supported"),
            (
                "{{ define \"x\" }}{{ end }}",
                1,
                "{{define}} is not supported",
            ),
            (
                "{{ if .a }}{{ else }}{{ else }}{{ end }}",
                22,
                "{{else}} after {{else}}",
            ),
            ("{{ (eq .a }}", 1, "unclosed left paren"),
            ("{{ .a .b }}", 1, "not a function"),
            ("{{ .a | .b }}", 1, "only a function can follow |"),
            ("{{ \"abc }}", 1, "unterminated string"),
            ("{{ .a..b }}", 1, "invalid field path"),
            ("{{ eq lower .a }}", 1, "must be in parentheses"),
        ];
        for (template, column, cause) in cases {
            let error = render(template, &app("x")).unwrap_err();
            assert_eq!(error.column, column, "{template}: {error}");
            assert!(error.message.contains(cause), "{template}: {error}");
        }
        let runtime = render("{{ printf \"%d\" .metadata.name }}", &app("x")).unwrap_err();
        assert!(runtime.message.contains("not an integer"), "{runtime}");
        assert!(
            render("{{ eq .a }}", &app("x"))
                .unwrap_err()
                .message
                .contains("eq: wants 2 or more")
        );
    }

    /// What a careless or hostile App may send: huge, deeply nested or unbalanced templates
    /// are refused without exhausting the stack, and evaluation stays linear.
    #[test]
    fn hostile_templates_are_bounded() {
        let deep_ifs = "{{ if .a }}".repeat(MAX_DEPTH + 1) + &"{{ end }}".repeat(MAX_DEPTH + 1);
        assert!(
            render(&deep_ifs, &app("x"))
                .unwrap_err()
                .message
                .contains("nested deeper")
        );
        let deep_parens = format!("{{{{ {}.a{} }}}}", "(".repeat(200), ")".repeat(200));
        assert!(
            render(&deep_parens, &app("x"))
                .unwrap_err()
                .message
                .contains("nested deeper")
        );
        let long = "x".repeat(MAX_TEMPLATE_BYTES + 1);
        assert!(render(&long, &app("x")).is_err());
        for garbage in [
            "{{",
            "}}{{",
            "{{-}}",
            "{{ ) }}",
            "{{ | }}",
            "{{ 1e999 }}",
            "{{ - }}",
        ] {
            let _ = render(garbage, &app("x"));
        }
        // The 1,000th evaluation of a parsed template answers as the first.
        let t = Template::parse(r#"{{ if eq .metadata.labels.env "prod" }}prod{{ end }}"#).unwrap();
        for _ in 0..1000 {
            assert_eq!(t.render(&app("prod")).unwrap(), "prod");
        }
    }
}
