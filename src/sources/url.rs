//! Repository URL normalisation: every spelling of one repository maps to one [`SourceKey`].
//!
//! `https://Host:443/org/repo.git/`, `https://host/org/repo` and `https://host/org/repo/` are the
//! same repository, as are `ssh://git@host:22/org/repo` and `git@host:org/repo.git`. The key is
//! what mirrors, pollers and webhooks share, so that one repository is fetched once for every
//! App that uses it and a push event finds it whichever URL the forge reports.

use std::fmt;

/// The canonical identity of a repository: scheme, lower-cased host, non-default port and path
/// without user, trailing `/` or `.git` (local paths keep their exact directory name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct SourceKey(String);

impl SourceKey {
    /// The key as a string (`https://host/org/repo`, `ssh://host/org/repo`, `file:///abs/path`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key of a directory source on another host (an operator's `spec.source.path`, as
    /// a server lists it): it never matches a source this process follows.
    pub fn elsewhere(path: &std::path::Path) -> SourceKey {
        SourceKey(format!("elsewhere:{}", path.display()))
    }

    /// Short stable hex digest of the key, used to name the repository's mirror on disk.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        hex::encode(&Sha256::digest(self.0.as_bytes())[..12])
    }
}

impl fmt::Display for SourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The transport a repository URL uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `https://`: anonymous or with credentials.
    Https,
    /// `http://`: anonymous only; credentials are never sent over it.
    Http,
    /// `ssh://` or scp-like `user@host:path`.
    Ssh,
    /// `git://`: the anonymous git daemon protocol.
    Git,
    /// `file://` or an absolute local path (gix spawns `git-upload-pack` for these).
    File,
}

/// A validated repository URL: what to fetch from and its [`SourceKey`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoUrl {
    /// The URL handed to the Git transport (scp-like and plain paths are kept as given).
    pub fetch_url: String,
    /// The transport.
    pub scheme: Scheme,
    /// The canonical key shared by every spelling of this repository.
    pub key: SourceKey,
}

/// Why a repository URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("repoURL {url:?}: {reason}")]
pub struct UrlError {
    /// The URL as given, its user part (which may hold a password or token) shown as `***`.
    pub url: String,
    /// What is wrong with it.
    pub reason: String,
}

impl UrlError {
    fn new(input: &str, reason: impl Into<String>) -> UrlError {
        let url = match userinfo(input) {
            Some(range) => format!("{}***{}", &input[..range.start], &input[range.end..]),
            None => input.to_string(),
        };
        UrlError {
            url,
            reason: reason.into(),
        }
    }
}

/// Where a URL's user part is: before the authority's last `@` (`scheme://user:pw@host/…`),
/// or before the first `@` of an scp-like `user@host:path`.
fn userinfo(url: &str) -> Option<std::ops::Range<usize>> {
    match url.find("://") {
        Some(i) => {
            let start = i + 3;
            let end = url[start..].find('/').map_or(url.len(), |j| start + j);
            url[start..end].rfind('@').map(|at| start..start + at)
        }
        None => url
            .find('@')
            .filter(|&at| !url[..at].contains('/'))
            .map(|at| 0..at),
    }
}

/// Parses and normalises a repository URL.
///
/// Credentials never travel in a URL, where every viewer of an App, every log line and every
/// error would show them: a password (`user:password@`) is refused for every transport, and
/// any user part for `https://`, `http://` and `git://` (`https://TOKEN@host` is a common way to
/// send a token). They belong in the repository credentials registry (`wardn repos add`), which
/// seals them. An ssh user (`git@host:org/repo`) is a login name, not a secret, and is kept.
pub fn parse_repo_url(input: &str) -> Result<RepoUrl, UrlError> {
    let fail = |reason: &str| UrlError::new(input, reason);
    let url = input.trim();
    if url.is_empty() {
        return Err(fail("must not be empty"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail("must not contain whitespace or control characters"));
    }
    let user = userinfo(url).map(|range| &url[range]);
    if user.is_some_and(|user| user.contains(':')) {
        return Err(fail(
            "must not contain a password; register it as the repository's credentials (wardn repos add)",
        ));
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        let scheme_lc = scheme.to_ascii_lowercase();
        let (kind, default_port) = match scheme_lc.as_str() {
            "https" => (Scheme::Https, Some(443)),
            "http" => (Scheme::Http, Some(80)),
            "ssh" | "git+ssh" | "ssh+git" => (Scheme::Ssh, Some(22)),
            "git" => (Scheme::Git, Some(9418)),
            "file" => (Scheme::File, None),
            _ => {
                return Err(fail(
                    "unsupported scheme (use https, http, ssh, git, file or an absolute path)",
                ));
            }
        };
        if user.is_some() && matches!(kind, Scheme::Https | Scheme::Http | Scheme::Git) {
            return Err(fail(
                "must not contain a user name or token (https, http and git URLs); register it as the repository's credentials (wardn repos add)",
            ));
        }
        if kind == Scheme::File {
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            return local(input, path, url.to_string());
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        let (host, port) = split_port(host_port).map_err(fail)?;
        if host.is_empty() {
            return Err(fail("has no host"));
        }
        let port = port.filter(|p| Some(*p) != default_port);
        let scheme_name = match kind {
            Scheme::Ssh => "ssh",
            _ => scheme_lc.as_str(),
        };
        let key = remote_key(scheme_name, host, port, path).map_err(fail)?;
        return Ok(RepoUrl {
            fetch_url: url.to_string(),
            scheme: kind,
            key,
        });
    }
    if url.starts_with('/') {
        return local(input, url, url.to_string());
    }
    // scp-like syntax: [user@]host:path (a colon before any slash).
    if let Some((authority, path)) = url.split_once(':')
        && !authority.contains('/')
        && !authority.is_empty()
    {
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if host.is_empty() {
            return Err(fail("has no host"));
        }
        let key = remote_key("ssh", host, None, &format!("/{path}")).map_err(fail)?;
        return Ok(RepoUrl {
            fetch_url: url.to_string(),
            scheme: Scheme::Ssh,
            key,
        });
    }
    Err(fail(
        "is neither a URL (https://, ssh://, file://), an scp-like user@host:path nor an absolute path",
    ))
}

/// Splits `host[:port]` (IPv6 hosts in brackets), validating the port.
fn split_port(host_port: &str) -> Result<(&str, Option<u16>), &'static str> {
    let (host, port) = if let Some(end) = host_port.strip_prefix('[').and_then(|s| s.find(']')) {
        let host = &host_port[..end + 2];
        let rest = &host_port[end + 2..];
        (host, rest.strip_prefix(':'))
    } else {
        match host_port.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            p.parse::<u16>()
                .map_err(|_| "invalid port (a number up to 65535)")?,
        ),
    };
    Ok((host, port))
}

/// Builds the key of a remote repository.
fn remote_key(
    scheme: &str,
    host: &str,
    port: Option<u16>,
    path: &str,
) -> Result<SourceKey, &'static str> {
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return Err("path must not contain . or .. segments");
    }
    if let Some(last) = segments.last_mut() {
        *last = last.strip_suffix(".git").unwrap_or(last);
        if last.is_empty() {
            segments.pop();
        }
    }
    if segments.is_empty() {
        return Err("has no repository path");
    }
    let host = host.to_ascii_lowercase();
    let port = port.map(|p| format!(":{p}")).unwrap_or_default();
    Ok(SourceKey(format!(
        "{scheme}://{host}{port}/{}",
        segments.join("/")
    )))
}

/// Validates a local repository path (which must be absolute) and builds its key.
fn local(input: &str, path: &str, fetch_url: String) -> Result<RepoUrl, UrlError> {
    if !path.starts_with('/') {
        return Err(UrlError::new(
            input,
            "local repository paths must be absolute",
        ));
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return Err(UrlError::new(
            input,
            "path must not contain . or .. segments",
        ));
    }
    Ok(RepoUrl {
        fetch_url,
        scheme: Scheme::File,
        key: SourceKey(format!("file:///{}", segments.join("/"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(url: &str) -> String {
        parse_repo_url(url).unwrap().key.0
    }

    #[test]
    fn https_spellings_share_one_key() {
        let want = "https://github.com/org/repo";
        for url in [
            "https://github.com/org/repo",
            "https://github.com/org/repo.git",
            "https://github.com/org/repo/",
            "https://GitHub.COM/org/repo.git/",
            "HTTPS://github.com:443/org/repo",
            "https://github.com//org/repo",
        ] {
            assert_eq!(key(url), want, "{url}");
        }
        assert_eq!(
            key("https://git.example.com:8443/a/b"),
            "https://git.example.com:8443/a/b"
        );
        assert_ne!(key("https://host/org/Repo"), key("https://host/org/repo"));
    }

    #[test]
    fn ssh_and_scp_like_share_one_key() {
        let want = "ssh://github.com/org/repo";
        for url in [
            "ssh://git@github.com/org/repo",
            "ssh://git@github.com:22/org/repo.git",
            "git@github.com:org/repo.git",
            "git@GITHUB.com:org/repo",
            "github.com:org/repo/",
        ] {
            assert_eq!(key(url), want, "{url}");
        }
        assert_eq!(parse_repo_url("git@h:o/r").unwrap().scheme, Scheme::Ssh);
        assert_eq!(key("ssh://git@h:2222/o/r"), "ssh://h:2222/o/r");
    }

    #[test]
    fn local_paths_keep_their_directory_name() {
        assert_eq!(key("/srv/git/repo.git"), "file:///srv/git/repo.git");
        assert_eq!(key("file:///srv/git/repo.git/"), "file:///srv/git/repo.git");
        assert_eq!(key("/srv//git/repo"), "file:///srv/git/repo");
        assert_eq!(parse_repo_url("/srv/r").unwrap().scheme, Scheme::File);
    }

    #[test]
    fn credentials_in_urls_are_refused_and_never_quoted() {
        const SECRET: &str = "tok-Qz7vK2";
        for (url, reason) in [
            ("https://user:tok-Qz7vK2@github.com/org/repo", "password"),
            (
                "https://tok-Qz7vK2@github.com/org/repo",
                "user name or token",
            ),
            (
                "HTTPS://tok-Qz7vK2@github.com/org/repo",
                "user name or token",
            ),
            ("http://u:tok-Qz7vK2@h/o/r", "password"),
            ("git://tok-Qz7vK2@h/o/r", "user name or token"),
            ("ssh://git:tok-Qz7vK2@h/o/r", "password"),
            ("git:tok-Qz7vK2@h:o/r.git", "password"),
            ("file://u:tok-Qz7vK2@localhost/srv/r", "password"),
            ("https://u:tok-Qz7vK2@h:99999/o/r", "password"),
            (" https://u:tok-Qz7vK2@h/o/r ", "password"),
            ("https://u:tok-Qz7vK2@h/o r", "whitespace"),
            ("https://a@b:tok-Qz7vK2@h/o/r", "password"),
        ] {
            let err = parse_repo_url(url).unwrap_err();
            assert!(err.reason.contains(reason), "{url}: {err}");
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains(SECRET), "{url}: {shown}");
            assert!(err.url.contains("***"), "{url}: {shown}");
        }
        // An ssh login name is not a secret.
        assert_eq!(
            parse_repo_url("ssh://git@h/o/r").unwrap().fetch_url,
            "ssh://git@h/o/r"
        );
        assert_eq!(parse_repo_url("git@h:o/r").unwrap().fetch_url, "git@h:o/r");
    }

    #[test]
    fn mutated_urls_never_keep_or_quote_their_credentials() {
        // Long run, hostile: 10,000 random edits of URLs carrying a secret in every place a
        // careless writer puts one. Parsing never panics; an accepted URL holds no password,
        // over https, http and git no user part at all, and its key none; a refusal never
        // quotes the user part, and its reason never quotes the URL.
        const SECRET: &str = "tok-Qz7vK2";
        let bases = [
            "https://x-access-token:tok-Qz7vK2@github.com/org/repo.git",
            "https://tok-Qz7vK2@git.example.com:8443/org/repo",
            "ssh://git:tok-Qz7vK2@[::1]:2222/org/repo",
            "git:tok-Qz7vK2@github.com:org/repo.git",
            "http://u:tok-Qz7vK2@h/o/r",
        ];
        let pieces = [
            "@",
            ":",
            "/",
            "://",
            "https",
            "ssh",
            "git",
            "git@",
            "[",
            "]",
            "%40",
            " ",
            "\0",
            "é",
            ".git",
            "..",
            "localhost",
            SECRET,
            "file://",
        ];
        let mut rng = crate::test_rng::Rng(0x005e_ed0f_ba5e);
        let (mut accepted, mut refused) = (0, 0);
        for step in 0..10_000 {
            let mut url = bases[step % bases.len()].to_string();
            rng.mutate(&mut url, &pieces);
            match parse_repo_url(&url) {
                Ok(parsed) => {
                    accepted += 1;
                    let user = userinfo(&parsed.fetch_url).map(|r| &parsed.fetch_url[r]);
                    assert!(!user.is_some_and(|u| u.contains(':')), "step {step}: {url}");
                    if matches!(parsed.scheme, Scheme::Https | Scheme::Http | Scheme::Git) {
                        assert_eq!(user, None, "step {step}: {url}");
                    }
                    assert_eq!(userinfo(parsed.key.as_str()), None, "step {step}: {url}");
                }
                Err(err) => {
                    refused += 1;
                    assert!(!err.reason.contains(SECRET), "step {step}: {url}: {err}");
                    if let Some(range) = userinfo(&url) {
                        let outside = format!("{}{}", &url[..range.start], &url[range.end..]);
                        assert_eq!(
                            err.url.contains(SECRET),
                            outside.contains(SECRET),
                            "step {step}: {url}: {err}"
                        );
                    }
                }
            }
        }
        assert!(
            accepted > 1_000 && refused > 1_000,
            "{accepted} accepted, {refused} refused"
        );
    }

    #[test]
    fn bad_urls_are_refused_with_a_reason() {
        for (url, reason) in [
            ("", "empty"),
            ("ftp://host/repo", "unsupported scheme"),
            ("https:///repo", "no host"),
            ("https://host", "no repository path"),
            ("https://host:99999/a", "invalid port"),
            ("relative/path", "neither a URL"),
            ("file://relative", "absolute"),
            ("https://host/a/../b", ". or .."),
            ("https://host/a b", "whitespace"),
        ] {
            let err = parse_repo_url(url).unwrap_err().to_string();
            assert!(err.contains(reason), "{url}: {err}");
        }
    }
}
