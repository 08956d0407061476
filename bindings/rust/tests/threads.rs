//! One manager shared by eight threads (an `Arc`), as the header allows.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;

use common::TempDir;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn eight_threads_read_files_at_once_on_one_manager() {
    assert_send_sync::<backlot::Manager>();
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("threads");
    let manager = Arc::new(env.open(&dir.container()));
    manager.ensure_local_availability(&env.pack, None).unwrap();

    let small_path = env.file("1.txt");
    let big_path = env.file("big.bin");
    let small = Arc::new(env.source_file(&small_path));
    let big = Arc::new(env.source_file(&big_path));
    let start = Arc::new(Barrier::new(8));
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let (manager, small, big, start) = (manager.clone(), small.clone(), big.clone(), start.clone());
            let (small_path, big_path) = (small_path.clone(), big_path.clone());
            thread::spawn(move || {
                start.wait();
                for round in 0..6 {
                    let got = manager.contents(&small_path, None).unwrap_or_else(|e| panic!("thread {i}: {e}"));
                    assert!(got == *small, "thread {i} round {round}: {small_path}");
                    let got = manager.contents(&big_path, None).unwrap_or_else(|e| panic!("thread {i}: {e}"));
                    assert!(got == *big, "thread {i} round {round}: {big_path} ({} bytes)", got.len());
                    // A failure on each thread: its own error, not another thread's.
                    let missing = format!("missing-{i}.txt");
                    let error = manager.contents(&missing, None).unwrap_err();
                    assert!(error.message.contains(&missing), "thread {i}: {}", error.message);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a thread failed");
    }
}

#[test]
fn eight_threads_install_the_same_pack_at_once() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("threads-install");
    let manager = Arc::new(env.open(&dir.container()));
    let expected = Arc::new(env.source_file(&env.file("big.bin")));
    let start = Arc::new(Barrier::new(8));
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let (manager, expected, start) = (manager.clone(), expected.clone(), start.clone());
            let (pack, path) = (env.pack.clone(), env.file("big.bin"));
            thread::spawn(move || {
                start.wait();
                let mut last = (0, 0);
                manager
                    .ensure_local_availability(&pack, Some(&mut |d: u64, t: u64| last = (d, t)))
                    .unwrap_or_else(|e| panic!("thread {i}: {e}"));
                assert_eq!(last.0, last.1, "thread {i}");
                assert!(manager.contents(&path, None).unwrap() == *expected, "thread {i}");
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a thread failed");
    }
    assert_eq!(manager.installed_packs().unwrap(), vec![env.pack.clone()]);
}
