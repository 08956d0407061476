//! Cancelling a running download from another thread, then resuming it.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use backlot::Status;
use common::{wait_until, TempDir};

#[test]
fn a_download_cancelled_from_another_thread_ends_with_cancelled_and_resumes_later() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("cancel");
    // 400 kB/s: the pack takes several seconds, time enough to cancel it on the way.
    let manager = Arc::new(env.config(&dir.container()).bandwidth_limit(400_000).open().unwrap());
    let arrived = Arc::new(AtomicU64::new(0));

    let installer = {
        let (manager, arrived, pack) = (manager.clone(), arrived.clone(), env.pack.clone());
        thread::spawn(move || {
            manager.ensure_local_availability(
                &pack,
                Some(&mut |done: u64, _| arrived.store(done.max(1), Ordering::SeqCst)),
            )
        })
    };
    assert!(wait_until(30, || arrived.load(Ordering::SeqCst) > 0), "the download started");
    manager.cancel(&env.pack).unwrap();
    let error = installer.join().unwrap().expect_err("a cancelled download is an Err");
    assert_eq!(error.kind(), Status::Cancelled, "{error}");
    assert_eq!(error.name, "BACKLOT_ERR_CANCELLED");
    assert!(manager.installed_packs().unwrap().is_empty(), "nothing was installed");
    assert_eq!(manager.cancel("NothingRunning").map_err(|e| e.kind()), Ok(()), "cancel with nothing running is Ok");
    drop(manager);

    // Without the limit, on the same container: the rest arrives and the pack installs.
    let manager = env.open(&dir.container());
    manager.ensure_local_availability(&env.pack, None).unwrap();
    let big = env.file("big.bin");
    assert!(manager.contents(&big, None).unwrap() == env.source_file(&big));
}
