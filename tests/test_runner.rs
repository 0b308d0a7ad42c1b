//! `make test`'s runner, `scripts/run-tests.py`, against a stand-in cargo: every test binary
//! cargo builds runs once, in its package's directory, with the arguments given after `--`,
//! several at a time; a failing binary fails the run and is named while the others still run;
//! a failed build fails the run before anything runs; the doc tests run last. (The runner
//! passing a run that failed would let a broken main land, so it is tested like the rest.)

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCRIPT: &str = "scripts/run-tests.py";

/// A workspace of stand-in test binaries and a stand-in cargo naming them.
struct Workspace {
    dir: tempfile::TempDir,
}

/// One stand-in test binary: it logs its name, directory and arguments, then exits with
/// `status`. With `meet` it first waits (at most 60 s, then fails) until `meet` binaries
/// have started, which only binaries run at the same time can do.
struct Binary {
    name: String,
    status: i32,
    meet: Option<usize>,
}

impl Binary {
    fn passing(name: &str) -> Binary {
        Binary {
            name: name.into(),
            status: 0,
            meet: None,
        }
    }
}

fn write_executable(path: &Path, text: &str) {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

impl Workspace {
    /// Writes the binaries (each in a package directory of its own) and a cargo whose
    /// `test --no-run` names them as test artifacts, besides a bench and a non-test binary
    /// that must not run, and exits with `build_status`. The cargo logs each of its command
    /// lines with the clippy variables it was given.
    fn new(binaries: &[Binary], build_status: i32) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir(root.join("started")).unwrap();
        let mut messages = vec!["   Compiling a line that is not JSON".to_string()];
        for binary in binaries {
            let package = root.join(format!("pkg-{}", binary.name));
            fs::create_dir(&package).unwrap();
            let executable = root.join(format!("{}-0123abcd", binary.name));
            let meet = binary.meet.map_or(String::new(), |count| {
                format!(
                    "for _ in $(seq 600); do [ $(ls {started} | wc -l) -ge {count} ] && break; \
                     sleep 0.1; done\n[ $(ls {started} | wc -l) -ge {count} ] || exit 3\n",
                    started = root.join("started").display()
                )
            });
            write_executable(
                &executable,
                &format!(
                    "#!/bin/sh\ntouch {started}/{name}\n{meet}\
                     echo \"{name} $(/bin/pwd) $CARGO_MANIFEST_DIR $*\" >> {log}\n\
                     echo 'output of {name}'\nexit {status}\n",
                    started = root.join("started").display(),
                    name = binary.name,
                    log = root.join("ran.log").display(),
                    status = binary.status,
                ),
            );
            messages.push(
                serde_json::json!({
                    "reason": "compiler-artifact",
                    "executable": executable,
                    "profile": {"test": true},
                    "manifest_path": package.join("Cargo.toml"),
                    "target": {"name": binary.name},
                })
                .to_string(),
            );
        }
        // Artifacts that must not run, each leaving `NAME-ran` if it does: a bench built as a
        // test (`--all-targets`) and a binary that is not a test.
        for (name, test, target) in [
            (
                "bench",
                true,
                serde_json::json!({"name": "fleet", "kind": ["bench"]}),
            ),
            ("daemon", false, serde_json::json!({"name": "daemon"})),
        ] {
            let executable = root.join(name);
            write_executable(
                &executable,
                &format!("#!/bin/sh\ntouch {}/{name}-ran\n", root.display()),
            );
            messages.push(
                serde_json::json!({
                    "reason": "compiler-artifact",
                    "executable": executable,
                    "profile": {"test": test},
                    "manifest_path": root.join("Cargo.toml"),
                    "target": target,
                })
                .to_string(),
            );
        }
        messages.push(r#"{"reason":"build-finished","success":true}"#.into());
        fs::write(root.join("messages"), messages.join("\n") + "\n").unwrap();
        write_executable(
            &root.join("cargo"),
            &format!(
                "#!/bin/sh\n\
                 echo \"$* wrapper=$RUSTC_WORKSPACE_WRAPPER args=$CLIPPY_ARGS\" >> {cargo_log}\n\
                 case \"$*\" in\n\
                 *--no-run*) cat {messages}; exit {build_status} ;;\n\
                 *--doc*) echo \"doc $*\" >> {log}; exit 0 ;;\n\
                 esac\nexit 99\n",
                messages = root.join("messages").display(),
                log = root.join("ran.log").display(),
                cargo_log = root.join("cargo.log").display(),
            ),
        );
        Workspace { dir }
    }

    /// Runs the runner with `args` and this workspace's cargo.
    fn run(&self, args: &[&str]) -> Output {
        self.run_with_path(args, &std::env::var("PATH").unwrap_or_default())
    }

    /// Runs the runner with `args`, this workspace's cargo and `PATH` set to `path`.
    fn run_with_path(&self, args: &[&str], path: &str) -> Output {
        let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
        Command::new("python3")
            .arg(repository.join(SCRIPT))
            .args(args)
            .env("CARGO", self.dir.path().join("cargo"))
            .env("PATH", path)
            .env_remove("WARDN_TEST_JOBS")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("CLIPPY_ARGS")
            .output()
            .unwrap_or_else(|e| panic!("cannot run python3 {SCRIPT}: {e}"))
    }

    /// The command lines the stand-in cargo was run with, each with the clippy variables.
    fn cargo_calls(&self) -> Vec<String> {
        self.log_lines("cargo.log")
    }

    /// The lines the binaries and the doc-test step logged.
    fn ran(&self) -> Vec<String> {
        self.log_lines("ran.log")
    }

    /// The lines of log `file` in the workspace (none when nothing wrote it).
    fn log_lines(&self, file: &str) -> Vec<String> {
        fs::read_to_string(self.dir.path().join(file))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn package(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("pkg-{name}"))
    }
}

/// This process's `PATH` without the directories that hold `program`.
fn path_without(program: &str) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !dir.join(program).exists())
        .collect();
    std::env::join_paths(kept)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn transcript(output: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn every_test_binary_runs_once_in_its_package_with_the_given_arguments() {
    let workspace = Workspace::new(&[Binary::passing("alpha"), Binary::passing("beta")], 0);
    let output = workspace.run(&["--jobs", "2", "--", "--nocapture", "--test-threads=3"]);
    assert!(output.status.success(), "{}", transcript(&output));
    let mut ran = workspace.ran();
    ran.sort();
    let expected = |name: &str| {
        let package = workspace.package(name);
        let cwd = fs::canonicalize(&package).unwrap();
        format!(
            "{name} {} {} --nocapture --test-threads=3",
            cwd.display(),
            package.display()
        )
    };
    assert_eq!(
        ran,
        [
            expected("alpha"),
            expected("beta"),
            "doc test --workspace --doc -- --nocapture --test-threads=3".to_string(),
        ],
        "{}",
        transcript(&output)
    );
    assert!(
        !workspace.dir.path().join("daemon-ran").exists(),
        "a non-test binary ran"
    );
    assert!(
        !workspace.dir.path().join("bench-ran").exists(),
        "a bench ran"
    );
    for call in workspace.cargo_calls() {
        assert!(call.ends_with(" wrapper= args="), "{call}");
        assert!(!call.contains("--all-targets"), "{call}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("output of alpha"), "{stdout}");
}

#[test]
fn a_failing_binary_fails_the_run_by_name_and_the_others_still_run() {
    let mut binaries: Vec<Binary> = (0..6).map(|i| Binary::passing(&format!("b{i}"))).collect();
    binaries[1].status = 101;
    let workspace = Workspace::new(&binaries, 0);
    let output = workspace.run(&["--jobs", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", transcript(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let verdict = stdout
        .lines()
        .find(|line| line.starts_with("run-tests: FAILED"))
        .unwrap_or_else(|| panic!("no FAILED line: {stdout}"));
    assert!(verdict.contains("b1"), "{verdict}");
    assert!(
        !verdict.contains("b0") && !verdict.contains("b2"),
        "{verdict}"
    );
    assert_eq!(workspace.ran().len(), 6 + 1, "{}", transcript(&output));
}

#[test]
fn a_failed_build_fails_the_run_before_any_binary_runs() {
    let workspace = Workspace::new(&[Binary::passing("never")], 101);
    let output = workspace.run(&[]);
    assert!(!output.status.success(), "{}", transcript(&output));
    assert!(workspace.ran().is_empty(), "{:?}", workspace.ran());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("failed"), "{stderr}");
}

/// Four binaries that each wait until all four have started pass only when run four at a
/// time; two hundred run exactly once each.
#[test]
fn binaries_run_at_the_same_time_and_each_of_many_runs_once() {
    let meeting: Vec<Binary> = (0..4)
        .map(|i| Binary {
            name: format!("m{i}"),
            status: 0,
            meet: Some(4),
        })
        .collect();
    let workspace = Workspace::new(&meeting, 0);
    let output = workspace.run(&["--jobs", "4"]);
    assert!(output.status.success(), "{}", transcript(&output));

    let many: Vec<Binary> = (0..200)
        .map(|i| Binary::passing(&format!("n{i}")))
        .collect();
    let workspace = Workspace::new(&many, 0);
    let output = workspace.run(&[]);
    assert!(output.status.success(), "{}", transcript(&output));
    let mut names: Vec<String> = workspace
        .ran()
        .iter()
        .filter_map(|line| line.split(' ').next().map(str::to_string))
        .filter(|name| name != "doc")
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 200, "{}", transcript(&output));
    assert_eq!(workspace.ran().len(), 201);
}

#[test]
fn a_careless_jobs_value_is_refused() {
    let workspace = Workspace::new(&[Binary::passing("unused")], 0);
    for jobs in ["0", "-3", "many"] {
        let output = workspace.run(&["--jobs", jobs]);
        assert_eq!(
            output.status.code(),
            Some(2),
            "--jobs {jobs}: {}",
            transcript(&output)
        );
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("--jobs"),
            "--jobs {jobs}: {}",
            transcript(&output)
        );
        assert!(workspace.ran().is_empty());
    }
}

/// `--clippy`: the build compiles every target (benches included, which then do not run)
/// through clippy's driver with `-D warnings`, and the doc tests run under the same variables
/// so that cargo reuses that build.
#[test]
fn with_clippy_every_cargo_call_lints_through_the_driver() {
    let workspace = Workspace::new(&[Binary::passing("alpha")], 0);
    let tools = workspace.dir.path().join("tools");
    fs::create_dir(&tools).unwrap();
    let driver = tools.join("clippy-driver");
    write_executable(&driver, "#!/bin/sh\nexit 0\n");
    let path = format!("{}:{}", tools.display(), path_without("clippy-driver"));
    let output = workspace.run_with_path(&["--clippy"], &path);
    assert!(output.status.success(), "{}", transcript(&output));

    let calls = workspace.cargo_calls();
    let suffix = format!(
        " wrapper={} args=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
        driver.display()
    );
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].contains("--no-run") && calls[0].contains("--all-targets"),
        "{calls:?}"
    );
    assert!(calls[1].contains("--doc"), "{calls:?}");
    for call in &calls {
        assert!(call.ends_with(&suffix), "{call}");
    }
    assert_eq!(workspace.ran().len(), 2, "{:?}", workspace.ran());
    assert!(
        !workspace.dir.path().join("bench-ran").exists(),
        "a bench ran"
    );
}

/// Without clippy's driver `--clippy` stops before building, saying what is missing.
#[test]
fn with_clippy_a_missing_driver_is_named_before_anything_runs() {
    let workspace = Workspace::new(&[Binary::passing("alpha")], 0);
    let output = workspace.run_with_path(&["--clippy"], &path_without("clippy-driver"));
    assert!(!output.status.success(), "{}", transcript(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("clippy-driver"), "{stderr}");
    assert!(
        workspace.cargo_calls().is_empty(),
        "{:?}",
        workspace.cargo_calls()
    );
    assert!(workspace.ran().is_empty(), "{:?}", workspace.ran());
}
