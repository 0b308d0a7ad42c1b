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
    /// The URL as given.
    pub url: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses and normalises a repository URL.
pub fn parse_repo_url(input: &str) -> Result<RepoUrl, UrlError> {
    let fail = |reason: &str| UrlError {
        url: input.to_string(),
        reason: reason.to_string(),
    };
    let url = input.trim();
    if url.is_empty() {
        return Err(fail("must not be empty"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail("must not contain whitespace or control characters"));
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
        if kind == Scheme::File {
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            return local(input, path, url.to_string());
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        let (host, port) = split_port(host_port).map_err(|r| fail(&r))?;
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
fn split_port(host_port: &str) -> Result<(&str, Option<u16>), String> {
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
                .map_err(|_| format!("invalid port {p:?}"))?,
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
        return Err(UrlError {
            url: input.to_string(),
            reason: "local repository paths must be absolute".to_string(),
        });
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.iter().any(|s| *s == "." || *s == "..") {
        return Err(UrlError {
            url: input.to_string(),
            reason: "path must not contain . or .. segments".to_string(),
        });
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
            "https://user:token@github.com/org/repo",
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
