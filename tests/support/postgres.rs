//! A throwaway PostgreSQL server for tests: initdb + pg_ctl from Debian's packages in a temp
//! directory, listening on 127.0.0.1 on a free port, run as the `postgres` user when the tests
//! run as root. Missing PostgreSQL is a loud failure, never a skip.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A running PostgreSQL server, stopped (by its data directory's PID) when dropped.
pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_postgres: bool,
}

fn find_bin() -> PathBuf {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    candidates.sort();
    candidates.pop().unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): \
             run `apt-get install -y postgresql` (.ci/run does this)"
        )
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl Postgres {
    /// Initialises and starts a server; panics with the server's log if that fails.
    pub fn start() -> Postgres {
        let bin = find_bin();
        let dir = tempfile::Builder::new()
            .prefix("wardn-pg")
            .tempdir()
            .unwrap();
        let as_postgres = is_root();
        if as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "chown of the PostgreSQL temp dir failed");
        }
        let pg = Postgres {
            bin,
            dir,
            port: free_port(),
            as_postgres,
        };
        let data = pg.data_dir();
        pg.run_tool(
            "initdb",
            &["-D", &data, "-U", "wardn", "--auth=trust", "-E", "UTF8"],
        );
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            pg.port,
            pg.dir.path().display()
        );
        let log = pg.dir.path().join("server.log").display().to_string();
        pg.run_tool(
            "pg_ctl",
            &["-D", &data, "-o", &options, "-l", &log, "-w", "start"],
        );
        pg
    }

    fn data_dir(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn command(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn run_tool(&self, tool: &str, args: &[&str]) -> String {
        let output = self.command(tool).args(args).output().unwrap();
        if !output.status.success() {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            panic!(
                "{tool} failed: {}\n{}\nserver log:\n{log}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Creates a fresh database and returns its URL.
    pub fn create_database(&self, name: &str) -> String {
        self.run_tool(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "wardn",
                "-d",
                "postgres",
                "-c",
                &format!("CREATE DATABASE {name}"),
            ],
        );
        format!("postgres://wardn@127.0.0.1:{}/{name}", self.port)
    }

    /// A plain-text `pg_dump` of a database.
    pub fn dump(&self, name: &str) -> String {
        self.run_tool(
            "pg_dump",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "wardn",
                name,
            ],
        )
    }

    /// Runs one SQL statement with psql (to tamper with data in tests).
    pub fn psql(&self, database: &str, sql: &str) -> String {
        self.run_tool(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "wardn",
                "-d",
                database,
                "-At",
                "-c",
                sql,
            ],
        )
    }

    /// The server's directory (for diagnostics).
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data_dir();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}
