//! URL downloads (BADownloadManager) with a delegate, and exclusive control.
//!
//! The download fetches BACKLOT_TEST_DOWNLOAD_URL when set, else the channel's catalog (a JSON
//! file the server has in any case).

mod common;

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backlot::{ba, DownloadDelegate, Error, Status, UrlDownload};
use common::{wait_until, TempDir};

#[derive(Default)]
struct Log {
    began: Vec<String>,
    wrote: u64,
    finished: Vec<(String, Vec<u8>)>,
    failed: Vec<(String, String)>,
}

struct Recorder(Arc<Mutex<Log>>);

impl DownloadDelegate for Recorder {
    fn began(&self, identifier: &str) {
        self.0.lock().unwrap().began.push(identifier.to_string());
    }
    fn wrote(&self, _identifier: &str, bytes: i64, _total: i64, _expected: i64) {
        self.0.lock().unwrap().wrote += bytes.max(0) as u64;
    }
    fn failed(&self, identifier: &str, error: &Error) {
        self.0.lock().unwrap().failed.push((identifier.to_string(), error.to_string()));
    }
    fn finished(&self, identifier: &str, file: &Path) {
        // Read before returning: the file is deleted afterwards.
        let bytes = std::fs::read(file).unwrap_or_default();
        self.0.lock().unwrap().finished.push((identifier.to_string(), bytes));
    }
}

#[test]
fn a_url_download_runs_and_its_delegate_is_told() {
    let Some(env) = common::env() else { return };
    let url = std::env::var("BACKLOT_TEST_DOWNLOAD_URL").unwrap_or_else(|_| env.catalog_url.clone());
    let dir = TempDir::new("downloads");
    let manager = env.open(&dir.container());
    let log = Arc::new(Mutex::new(Log::default()));
    manager.set_download_delegate(Recorder(log.clone())).unwrap();

    let download = UrlDownload::new("keys", &url);
    let error = manager.cancel_download("keys").unwrap_err();
    assert_eq!(error.kind(), Status::Ba(ba::DOWNLOAD_NOT_SCHEDULED), "{error}");
    manager.schedule_download(&download).unwrap();
    let again = manager.schedule_download(&download).unwrap_err();
    assert_eq!(again.kind(), Status::Ba(ba::DOWNLOAD_ALREADY_SCHEDULED), "{again}");
    assert_eq!(again.status, backlot::sys::BACKLOT_ERR_BA(100));
    assert_eq!(manager.current_downloads().unwrap(), vec!["keys".to_string()]);

    manager.start_foreground_download(&download).unwrap();
    assert!(
        wait_until(60, || {
            let l = log.lock().unwrap();
            !l.finished.is_empty() || !l.failed.is_empty()
        }),
        "the download ends"
    );
    {
        let l = log.lock().unwrap();
        assert!(l.failed.is_empty(), "{:?}", l.failed);
        assert_eq!(l.finished.len(), 1);
        let (identifier, bytes) = &l.finished[0];
        assert_eq!(identifier, "keys");
        assert!(bytes.len() > 10 && bytes.contains(&b'{'), "the delegate read the file ({} bytes)", bytes.len());
        assert_eq!(l.began, vec!["keys".to_string()]);
    }
    assert!(manager.current_downloads().unwrap().is_empty(), "a finished download is not current");

    // Scheduled, then cancelled.
    let other = UrlDownload::new("cancelled", &url);
    manager.schedule_download(&other).unwrap();
    manager.cancel_download("cancelled").unwrap();
    assert!(manager.current_downloads().unwrap().is_empty());

    // Replaced and removed delegates; the manager's drop removes the last one.
    manager.set_download_delegate(Recorder(Arc::new(Mutex::new(Log::default())))).unwrap();
    manager.remove_download_delegate().unwrap();
    manager.set_download_delegate(Recorder(log.clone())).unwrap();
    drop(manager);
    assert_eq!(Arc::strong_count(&log), 1, "the delegates were freed");
}

#[test]
fn exclusive_control_runs_the_body_and_gives_its_result() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("exclusive");
    let manager = Arc::new(env.open(&dir.container()));

    assert_eq!(manager.with_exclusive_control(Some(Duration::from_secs(5)), || 42).unwrap(), 42);
    let mut ran = false;
    manager.with_exclusive_control(None, || ran = true).unwrap();
    assert!(ran);
    // Re-entrant on one thread.
    let nested =
        manager.with_exclusive_control(None, || manager.with_exclusive_control(Some(Duration::ZERO), || "in")).unwrap();
    assert_eq!(nested.unwrap(), "in");

    // Held by another thread: a single attempt here fails with UNAVAILABLE.
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let manager = manager.clone();
        std::thread::spawn(move || {
            manager
                .with_exclusive_control(None, || {
                    held_tx.send(()).unwrap();
                    let _ = release_rx.recv_timeout(Duration::from_secs(30));
                })
                .unwrap()
        })
    };
    held_rx.recv().unwrap();
    let busy = manager.with_exclusive_control(Some(Duration::ZERO), || ()).unwrap_err();
    assert_eq!(busy.kind(), Status::Unavailable, "{busy}");
    assert!(!busy.message.is_empty());
    release_tx.send(()).unwrap();
    holder.join().unwrap();

    // A panic in the body resumes here, and the control was released.
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        manager
            .with_exclusive_control(None, || -> () { panic!("a panic under exclusive control (expected by the test)") })
    }));
    assert!(outcome.is_err(), "the panic reaches the caller");
    let other = manager.clone();
    let after =
        std::thread::spawn(move || other.with_exclusive_control(Some(Duration::from_secs(5)), || 7)).join().unwrap();
    assert_eq!(after.unwrap(), 7, "released after the panic");
}

/// A delegate whose `began` takes a while: set it, and a removal made meanwhile has to wait.
struct SlowBegin {
    entered: Arc<AtomicBool>,
    returned: Arc<AtomicBool>,
}

impl DownloadDelegate for SlowBegin {
    fn began(&self, _identifier: &str) {
        self.entered.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(300));
        self.returned.store(true, Ordering::SeqCst);
    }
}

/// The C delegate's calls, straight from the library.
static RAW_CALLS: AtomicUsize = AtomicUsize::new(0);
static RAW_RUNNING: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn raw_began(_context: *mut c_void, _identifier: *const c_char) {
    RAW_RUNNING.fetch_add(1, Ordering::SeqCst);
    RAW_CALLS.fetch_add(1, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(300));
    RAW_RUNNING.fetch_sub(1, Ordering::SeqCst);
}

unsafe extern "C" fn raw_other(_context: *mut c_void, _identifier: *const c_char) {
    RAW_CALLS.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn raw_wrote(_context: *mut c_void, _identifier: *const c_char, _: i64, _: i64, _: i64) {
    RAW_CALLS.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn raw_failed(_context: *mut c_void, _identifier: *const c_char, _: i32, _: *const c_char) {
    RAW_CALLS.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn raw_finished(_context: *mut c_void, _identifier: *const c_char, _file: *const c_char) {
    RAW_CALLS.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn once_the_delegate_is_removed_none_of_its_methods_runs_and_it_is_dropped() {
    let Some(env) = common::env() else { return };
    let url = std::env::var("BACKLOT_TEST_DOWNLOAD_URL").unwrap_or_else(|_| env.catalog_url.clone());
    let dir = TempDir::new("delegate-lifetime");
    let manager = env.open(&dir.container());

    // Through the binding: removed while `began` runs, it is dropped by the time removal returns.
    let (entered, returned) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    manager.set_download_delegate(SlowBegin { entered: entered.clone(), returned: returned.clone() }).unwrap();
    manager.start_foreground_download(&UrlDownload::new("slow-begin", &url)).unwrap();
    assert!(wait_until(30, || entered.load(Ordering::SeqCst)), "began is called");
    manager.remove_download_delegate().unwrap();
    assert!(returned.load(Ordering::SeqCst), "the removal returned while began was still running");
    assert_eq!(Arc::strong_count(&entered), 1, "the removed delegate was dropped");

    // Straight through the C interface: once backlot_set_download_delegate(NULL) returns, the
    // library calls none of the delegate's functions any more.
    // SAFETY: all-zero bytes are a valid delegate (NULL members), then initialised by the library
    // with this binding's size.
    let mut functions: backlot::sys::backlot_download_delegate = unsafe { std::mem::zeroed() };
    unsafe { backlot::sys::backlot_download_delegate_init_size(&mut functions, std::mem::size_of_val(&functions)) };
    functions.began = Some(raw_began);
    functions.paused = Some(raw_other);
    functions.wrote = Some(raw_wrote);
    functions.failed = Some(raw_failed);
    functions.finished = Some(raw_finished);
    // SAFETY: the struct is copied by the call; the context is unused.
    let status =
        unsafe { backlot::sys::backlot_set_download_delegate(manager.as_raw(), &functions, std::ptr::null_mut()) };
    assert_eq!(status, backlot::sys::BACKLOT_OK);
    manager.start_foreground_download(&UrlDownload::new("raw-slow-begin", &url)).unwrap();
    assert!(wait_until(30, || RAW_RUNNING.load(Ordering::SeqCst) > 0), "began is called");
    // SAFETY: NULL removes the delegate.
    let status = unsafe {
        backlot::sys::backlot_set_download_delegate(manager.as_raw(), std::ptr::null(), std::ptr::null_mut())
    };
    assert_eq!(status, backlot::sys::BACKLOT_OK);
    assert_eq!(RAW_RUNNING.load(Ordering::SeqCst), 0, "a delegate function runs after the delegate was removed");
    let calls = RAW_CALLS.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(RAW_CALLS.load(Ordering::SeqCst), calls, "a delegate function was called after it was removed");
}

unsafe extern "C" fn conflicting_body(context: *mut c_void) -> backlot::sys::backlot_status {
    // SAFETY: the context is the test's AtomicBool.
    (*context.cast::<AtomicBool>()).store(true, Ordering::SeqCst);
    backlot::sys::BACKLOT_ERR_CONFLICT
}

#[test]
fn a_failing_exclusive_control_body_is_the_threads_last_error() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("exclusive-error");
    let manager = env.open(&dir.container());
    let caller = std::thread::current().id();
    let ran_on = Mutex::new(None);
    manager.with_exclusive_control(None, || *ran_on.lock().unwrap() = Some(std::thread::current().id())).unwrap();
    assert_eq!(*ran_on.lock().unwrap(), Some(caller), "the body runs on the calling thread");

    let ran = AtomicBool::new(false);
    // SAFETY: the context outlives the call, which runs the body on this thread before returning.
    let status = unsafe {
        backlot::sys::backlot_with_exclusive_control(
            manager.as_raw(),
            5.0,
            Some(conflicting_body),
            (&ran as *const AtomicBool).cast_mut().cast(),
        )
    };
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(status, backlot::sys::BACKLOT_ERR_CONFLICT, "the body's status is returned");
    // SAFETY: plain reads of this thread's last error.
    let (recorded, message) = unsafe {
        let message = CStr::from_ptr(backlot::sys::backlot_last_error_message()).to_string_lossy().into_owned();
        (backlot::sys::backlot_last_error_status(), message)
    };
    assert_eq!(recorded, backlot::sys::BACKLOT_ERR_CONFLICT, "the body's status is the last error: {message}");
    assert!(message.contains("body"), "the last error says it was the body's: {message}");
}
