//! The label selector tokenizer and parser (apimachinery `labels.Lexer` and `labels.Parser`):
//! the query-string form (`?labelSelector=`), e.g. `app=web,tier in (a,b),!canary`, read
//! into a [`LabelSelector`] with the grammar of apimachinery `pkg/labels/selector.go`.

use super::error::SelectorError;
use super::labels::{LabelSelector, Operator, Requirement};
use super::validation::label_key_error;

/// A token of the label selector lexer (apimachinery `labels.Token`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Identifier(String),
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    OpenParen,
    CloseParen,
    Comma,
    In,
    NotIn,
    End,
}

impl Token {
    /// The literal text, as apimachinery quotes it in `found '…'` messages.
    fn literal(&self) -> &str {
        match self {
            Token::Identifier(text) => text,
            Token::Bang => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::GreaterThan => ">",
            Token::LessThan => "<",
            Token::OpenParen => "(",
            Token::CloseParen => ")",
            Token::Comma => ",",
            Token::In => "in",
            Token::NotIn => "notin",
            Token::End => "",
        }
    }
}

/// Whether a byte ends an identifier (apimachinery's whitespace and special symbols).
fn is_special(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\r' | '\n' | '!' | '=' | '(' | ')' | ',' | '<' | '>'
    )
}

/// Splits a label selector string into tokens.
fn tokenize(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let next_is_eq = chars.peek().is_some_and(|(_, n)| *n == '=');
        let token = match c {
            ' ' | '\t' | '\r' | '\n' => continue,
            '!' if next_is_eq => {
                chars.next();
                Token::NotEquals
            }
            '!' => Token::Bang,
            '=' if next_is_eq => {
                chars.next();
                Token::DoubleEquals
            }
            '=' => Token::Equals,
            '>' => Token::GreaterThan,
            '<' => Token::LessThan,
            '(' => Token::OpenParen,
            ')' => Token::CloseParen,
            ',' => Token::Comma,
            _ => {
                let mut end = start + c.len_utf8();
                while let Some((index, next)) = chars.peek().copied() {
                    if is_special(next) {
                        break;
                    }
                    end = index + next.len_utf8();
                    chars.next();
                }
                match &input[start..end] {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    word => Token::Identifier(word.to_string()),
                }
            }
        };
        tokens.push(token);
    }
    tokens
}

impl LabelSelector {
    /// Parses the query-string form (`?labelSelector=`), e.g. `app=web,tier in (a,b),!canary`.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        Parser::new(selector).parse()
    }
}

/// A recursive-descent parser over the tokens (apimachinery `labels.Parser`).
struct Parser {
    tokens: Vec<Token>,
    position: usize,
}

/// `found 'LITERAL', expected: WHAT`.
fn found(token: &Token, expected: &str) -> String {
    format!("found '{}', expected: {expected}", token.literal())
}

impl Token {
    /// The identifier this token stands for where a key or value is expected: `in` and
    /// `notin` are plain words there (apimachinery's `Values` parser context).
    fn as_word(&self) -> Option<&str> {
        match self {
            Token::Identifier(word) => Some(word),
            Token::In => Some("in"),
            Token::NotIn => Some("notin"),
            _ => None,
        }
    }
}

impl Parser {
    fn new(input: &str) -> Self {
        Parser {
            tokens: tokenize(input),
            position: 0,
        }
    }

    fn peek(&self) -> &Token {
        self.tokens.get(self.position).unwrap_or(&Token::End)
    }

    fn next(&mut self) -> Token {
        let token = self.peek().clone();
        self.position += 1;
        token
    }

    fn parse(mut self) -> Result<LabelSelector, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let token = self.peek();
            if token.as_word().is_some() || *token == Token::Bang {
                let requirement = self.parse_requirement().map_err(|error| {
                    SelectorError::Label(format!("unable to parse requirement: {error}"))
                })?;
                requirements.push(requirement);
                match self.next() {
                    Token::End => break,
                    Token::Comma => {
                        let after = self.peek();
                        if after.as_word().is_none() && *after != Token::Bang {
                            return Err(SelectorError::Label(found(after, "identifier after ','")));
                        }
                    }
                    other => {
                        return Err(SelectorError::Label(found(
                            &other,
                            "',' or 'end of string'",
                        )));
                    }
                }
            } else if *token == Token::End {
                break;
            } else {
                return Err(SelectorError::Label(found(
                    token,
                    "!, identifier, or 'end of string'",
                )));
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let mut token = self.next();
        let negated = token == Token::Bang;
        if negated {
            token = self.next();
        }
        let Some(key) = token.as_word().map(str::to_string) else {
            return Err(found(&token, "identifier"));
        };
        if let Some(error) = label_key_error(&key, "") {
            return Err(error);
        }
        if negated {
            return Requirement::new(&key, Operator::DoesNotExist, Vec::new());
        }
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Requirement::new(&key, Operator::Exists, Vec::new());
        }
        let operator = match self.next() {
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::NotEquals => Operator::NotEquals,
            Token::In => Operator::In,
            Token::NotIn => Operator::NotIn,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            other => return Err(found(&other, "in, notin, =, ==, !=, gt, lt")),
        };
        let values = if matches!(operator, Operator::In | Operator::NotIn) {
            self.parse_value_set()?
        } else {
            vec![self.parse_exact_value()?]
        };
        Requirement::new(&key, operator, values)
    }

    /// `(a,b,c)`; empty members (`()`, `(a,)`, `(,a)`) stand for the empty value.
    fn parse_value_set(&mut self) -> Result<Vec<String>, String> {
        let open = self.next();
        if open != Token::OpenParen {
            return Err(format!("found '{}' expected: '('", open.literal()));
        }
        let first = self.peek().clone();
        if first == Token::CloseParen {
            self.next();
            return Ok(vec![String::new()]);
        }
        if first.as_word().is_none() && first != Token::Comma {
            return Err(found(&first, "',', ')' or identifier"));
        }
        let mut values = Vec::new();
        loop {
            let token = self.next();
            if let Some(word) = token.as_word() {
                values.push(word.to_string());
                match self.peek() {
                    Token::Comma => continue,
                    Token::CloseParen => {
                        self.next();
                        break;
                    }
                    other => return Err(found(other, "',' or ')'")),
                }
            } else if token == Token::Comma {
                if values.is_empty() {
                    values.push(String::new());
                }
                match self.peek() {
                    Token::CloseParen => {
                        values.push(String::new());
                        self.next();
                        break;
                    }
                    Token::Comma => values.push(String::new()),
                    _ => {}
                }
            } else {
                return Err(found(&token, "',', or identifier"));
            }
        }
        values.sort();
        values.dedup();
        Ok(values)
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; absent (`a=`) means the empty value.
    fn parse_exact_value(&mut self) -> Result<String, String> {
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Ok(String::new());
        }
        let token = self.next();
        token
            .as_word()
            .map(str::to_string)
            .ok_or_else(|| found(&token, "identifier"))
    }
}
