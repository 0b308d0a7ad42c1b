//! One daemon per data directory: `wardn serve` takes an exclusive lock on `DATA/wardn.lock`
//! for as long as it runs, so a second daemon on the same SQLite file and Git mirrors refuses
//! to start and names the running one. The lock is the operating system's (released when the
//! process ends, however it ends), so a crashed daemon never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::DaemonError;

/// The lock file's name inside the data directory.
pub const LOCK_FILE: &str = "wardn.lock";

/// A held lock on a data directory; dropping it releases the lock.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

impl DataDirLock {
    /// Locks `data_dir` (created if missing) for this process, recording its pid and `listen`
    /// address for whoever finds it locked.
    pub fn acquire(data_dir: &Path, listen: SocketAddr) -> Result<DataDirLock, DaemonError> {
        let io = |path: PathBuf| move |source| DaemonError::DataDir { path, source };
        std::fs::create_dir_all(data_dir).map_err(io(data_dir.to_path_buf()))?;
        let path = data_dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(path.clone()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(DaemonError::DataDirInUse {
                    path,
                    holder: if holder.is_empty() {
                        "a process that has not written its pid yet".to_string()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(DaemonError::DataDir { path, source });
            }
        }
        let record = format!("pid {}, listening on {listen}\n", std::process::id());
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(record.as_bytes()))
            .map_err(io(path))?;
        Ok(DataDirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_a_released_one_is_free() {
        let dir = tempfile::tempdir().unwrap();
        let listen: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let first = DataDirLock::acquire(dir.path(), listen).unwrap();
        let err = DataDirLock::acquire(dir.path(), listen).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        assert!(message.contains("127.0.0.1:8080"), "{message}");
        drop(first);
        DataDirLock::acquire(dir.path(), listen).expect("free after release");
    }
}
