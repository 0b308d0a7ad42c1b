//! The command box's language: a few read-only kubectl verbs, parsed from one line.
//!
//! ```text
//! get RESOURCE [NAME] [-n NS | --namespace NS | --namespace=NS | -A | --all-namespaces]
//! describe RESOURCE NAME [-n NS]
//! logs POD [-n NS] [-c CONTAINER | --container CONTAINER] [--tail N]
//! ```
//!
//! Anything else (other verbs, other flags, quoting) is refused with the word at fault named:
//! the box reads, it never writes.

/// The longest command line accepted, in bytes.
pub const MAX_COMMAND_BYTES: usize = 512;

/// The largest `--tail` accepted.
pub const MAX_TAIL_LINES: u32 = 10_000;

/// A read verb of the command box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// A table of one object or a list.
    Get,
    /// One object's metadata, spec and status (Secret values hidden).
    Describe,
    /// A container's log, where the cluster serves it.
    Logs,
}

/// A parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The verb.
    pub verb: Verb,
    /// The resource as typed (`pods`, `po`, `deployment.apps`…); `pods` for logs.
    pub resource: String,
    /// The object's name (required by describe and logs).
    pub name: Option<String>,
    /// `-n`; `None` means `default`, unless `all_namespaces`.
    pub namespace: Option<String>,
    /// `-A`.
    pub all_namespaces: bool,
    /// `-c` (logs).
    pub container: Option<String>,
    /// `--tail` (logs).
    pub tail: Option<u32>,
}

/// Why a command line is refused (400, naming the word).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("command: {0}")]
pub struct CommandError(pub String);

fn refuse(reason: impl Into<String>) -> CommandError {
    CommandError(reason.into())
}

/// Whether `word` can be a Kubernetes name or resource (no path or query characters).
fn plain(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 253
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && word != "."
        && word != ".."
}

impl Command {
    /// Parses one command line (a leading `kubectl` is allowed).
    pub fn parse(line: &str) -> Result<Command, CommandError> {
        if line.len() > MAX_COMMAND_BYTES {
            return Err(refuse(format!("longer than {MAX_COMMAND_BYTES} bytes")));
        }
        let mut words = line.split_whitespace().peekable();
        if words.peek() == Some(&"kubectl") {
            words.next();
        }
        let verb = match words.next() {
            Some("get") => Verb::Get,
            Some("describe") => Verb::Describe,
            Some("logs") => Verb::Logs,
            Some(other) => {
                return Err(refuse(format!(
                    "verb {other:?} is not offered: the command box runs get, describe and logs (read-only)"
                )));
            }
            None => return Err(refuse("empty: type e.g. get pods -n NAMESPACE")),
        };
        let mut positional = Vec::new();
        let mut command = Command {
            verb,
            resource: String::new(),
            name: None,
            namespace: None,
            all_namespaces: false,
            container: None,
            tail: None,
        };
        while let Some(word) = words.next() {
            let (flag, inline) = match word.split_once('=') {
                Some((flag, value)) if word.starts_with('-') => (flag, Some(value)),
                _ => (word, None),
            };
            let mut value = |name: &str| -> Result<String, CommandError> {
                let value = inline
                    .map(str::to_string)
                    .or_else(|| words.next().map(str::to_string))
                    .ok_or_else(|| refuse(format!("{name} needs a value")))?;
                if plain(&value) {
                    Ok(value)
                } else {
                    Err(refuse(format!("{name} value {value:?} is not a name")))
                }
            };
            match flag {
                "-n" | "--namespace" => command.namespace = Some(value(flag)?),
                "-A" | "--all-namespaces" if verb == Verb::Get => command.all_namespaces = true,
                "-c" | "--container" if verb == Verb::Logs => {
                    command.container = Some(value(flag)?)
                }
                "--tail" if verb == Verb::Logs => {
                    let text = value(flag)?;
                    let tail = text
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n <= MAX_TAIL_LINES)
                        .ok_or_else(|| {
                            refuse(format!("--tail {text:?} is not 0..={MAX_TAIL_LINES}"))
                        })?;
                    command.tail = Some(tail);
                }
                other if other.starts_with('-') => {
                    return Err(refuse(format!("flag {other:?} is not offered here")));
                }
                other if plain(other) => positional.push(other.to_string()),
                other => return Err(refuse(format!("{other:?} is not a name"))),
            }
        }
        let mut positional = positional.into_iter();
        if verb == Verb::Logs {
            command.resource = "pods".into();
            command.name = Some(
                positional
                    .next()
                    .ok_or_else(|| refuse("logs needs a Pod name"))?,
            );
        } else {
            command.resource = positional
                .next()
                .ok_or_else(|| refuse("a resource is needed, e.g. pods"))?;
            command.name = positional.next();
        }
        if let Some(extra) = positional.next() {
            return Err(refuse(format!("unexpected word {extra:?}")));
        }
        if verb == Verb::Describe && command.name.is_none() {
            return Err(refuse("describe needs a name"));
        }
        if command.all_namespaces && (command.namespace.is_some() || command.name.is_some()) {
            return Err(refuse("-A goes with neither -n nor a name"));
        }
        Ok(command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        let c = Command::parse("kubectl get pods -n demo").unwrap();
        assert_eq!(
            (c.verb, c.resource.as_str(), c.namespace.as_deref()),
            (Verb::Get, "pods", Some("demo"))
        );
        let c = Command::parse("get deploy web --namespace=demo").unwrap();
        assert_eq!(c.name.as_deref(), Some("web"));
        let c = Command::parse("logs web-1 -n demo -c app --tail 20").unwrap();
        assert_eq!(
            (c.resource.as_str(), c.container.as_deref(), c.tail),
            ("pods", Some("app"), Some(20))
        );
        assert!(Command::parse("get pods -A").unwrap().all_namespaces);
    }

    #[test]
    fn writes_and_odd_words_are_refused() {
        for line in [
            "",
            "delete pods web -n demo",
            "apply -f x.yaml",
            "get pods -n ../kube-system",
            "get pods/../secrets",
            "get pods -o yaml",
            "get pods -n",
            "describe pods",
            "get pods a b",
            "logs",
            "logs web --tail 99999999",
            "get pods -A -n demo",
            "get pods ;rm",
            "exec web -- sh",
        ] {
            assert!(Command::parse(line).is_err(), "{line:?}");
        }
        let long = format!("get pods {}", "a".repeat(600));
        assert!(Command::parse(&long).is_err());
    }
}
