//! What the integration tests share: the test environment (a real `backlot serve` with a
//! published pack, named by environment variables) and temporary containers.
//!
//! A variable that is missing FAILS the test that needs it, naming the variable, unless
//! BACKLOT_ALLOW_SKIP=1 (then the test returns early, saying so on standard error).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use backlot::{Config, Manager};

/// Whether a missing variable skips rather than fails.
pub fn skipping_allowed() -> bool {
    std::env::var("BACKLOT_ALLOW_SKIP").map(|v| v == "1").unwrap_or(false)
}

/// An environment variable the test needs: None (with a note) only when skipping is allowed.
pub fn var(name: &str) -> Option<String> {
    match std::env::var(name) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if skipping_allowed() => {
            eprintln!("skipped: {name} is not set (BACKLOT_ALLOW_SKIP=1)");
            None
        }
        _ => panic!(
            "{name} is not set: these tests run against a live `backlot serve` (source the environment \
             that scripts/capi-test or /tmp/capi-manual/env.sh writes), or set BACKLOT_ALLOW_SKIP=1 to skip them"
        ),
    }
}

/// The server and the pack every test uses.
pub struct Env {
    pub catalog_url: String,
    pub root_pub: PathBuf,
    pub ca: PathBuf,
    pub source: PathBuf,
    pub pack: String,
}

/// The environment, or None when a variable is missing and skipping is allowed.
pub fn env() -> Option<Env> {
    Some(Env {
        catalog_url: var("BACKLOT_TEST_CATALOG_URL")?,
        root_pub: var("BACKLOT_TEST_ROOT_PUB")?.into(),
        ca: var("BACKLOT_TEST_CA")?.into(),
        source: var("BACKLOT_TEST_SOURCE")?.into(),
        pack: var("BACKLOT_TEST_PACK")?,
    })
}

impl Env {
    /// A configuration of this server over `container`.
    pub fn config(&self, container: &Path) -> Config {
        Config::new()
            .container_path(container)
            .catalog_url(&self.catalog_url)
            .trusted_key_path(&self.root_pub)
            .ca_path(&self.ca)
    }

    pub fn open(&self, container: &Path) -> Manager {
        self.config(container).open().unwrap_or_else(|e| panic!("the manager does not open: {e}"))
    }

    /// The bytes of a file of the pack's source folder (`Levels/1.txt`).
    pub fn source_file(&self, path: &str) -> Vec<u8> {
        let full = self.source.join(path);
        std::fs::read(&full).unwrap_or_else(|e| panic!("{} cannot be read: {e}", full.display()))
    }

    /// `Levels/1.txt` for the pack Levels.
    pub fn file(&self, name: &str) -> String {
        format!("{}/{name}", self.pack)
    }
}

/// A folder of its own under the system's temporary folder, removed (with everything in it)
/// when dropped. Declare it before the manager that uses it, so that the manager closes first.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "backlot-rust-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("{} cannot be made: {e}", path.display()));
        TempDir { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The container folder inside it (the library makes it).
    pub fn container(&self) -> PathBuf {
        self.path.join("container")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Waits until `done` holds, at most `seconds`; whether it did.
pub fn wait_until(seconds: u64, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}
