//! Real repositories for the source integration tests: real repositories made with the `git` CLI.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `git` in `dir` and returns its trimmed stdout; panics with stderr on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A working repository (non-bare) on branch `main`, used as the "remote".
pub struct Upstream {
    pub dir: PathBuf,
}

impl Upstream {
    /// Creates an empty repository in `dir`.
    pub fn init(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        git(dir, &["init", "-q", "-b", "main"]);
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// Writes `files` (path → content) and commits them; returns the commit id.
    pub fn commit(&self, files: &[(&str, &str)], message: &str) -> String {
        for (path, content) in files {
            let p = self.dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        git(&self.dir, &["add", "-A"]);
        git(&self.dir, &["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }

    /// Removes `path` and commits; returns the commit id.
    pub fn remove(&self, path: &str, message: &str) -> String {
        git(&self.dir, &["rm", "-rq", path]);
        git(&self.dir, &["commit", "-q", "-m", message]);
        self.head()
    }

    /// The current commit id.
    pub fn head(&self) -> String {
        git(&self.dir, &["rev-parse", "HEAD"])
    }

    /// Runs any git command here.
    pub fn git(&self, args: &[&str]) -> String {
        git(&self.dir, args)
    }

    /// The repository's path as a string (a plain-path repoURL).
    pub fn url(&self) -> String {
        self.dir.display().to_string()
    }

    /// Pushes `main` to the bare repository `root/name`, creating it (and `root`) first if
    /// needed, as a server would serve it; returns its path.
    pub fn push_to_bare(&self, root: &Path, name: &str) -> PathBuf {
        let bare = root.join(name);
        if !bare.join("HEAD").is_file() {
            std::fs::create_dir_all(root).unwrap();
            git(root, &["init", "-q", "--bare", name]);
        }
        self.git(&["push", "-q", bare.to_str().unwrap(), "main"]);
        bare
    }
}

/// Removes (`remove`: packs and indices, `remove-idx`: indices) or overwrites (`garble`)
/// every pack of every mirror under `data`.
pub fn damage_packs(data: &Path, damage: &str) {
    for repo in std::fs::read_dir(data.join("repos")).unwrap() {
        let pack_dir = repo.unwrap().path().join("objects/pack");
        for entry in std::fs::read_dir(&pack_dir).unwrap() {
            let path = entry.unwrap().path();
            let ext = path.extension().unwrap().to_string_lossy().to_string();
            match (damage, ext.as_str()) {
                ("remove", _) | ("remove-idx", "idx") => std::fs::remove_file(&path).unwrap(),
                ("garble", "pack") => {
                    let mut bytes = std::fs::read(&path).unwrap();
                    let end = bytes.len() - 20;
                    bytes[12..end].fill(0xff);
                    std::fs::write(&path, bytes).unwrap();
                }
                _ => {}
            }
        }
    }
}
