//! Invalid arguments: caught by the binding (an interior NUL) or refused by the library (its
//! INVALID_ARGUMENT, USAGE and INVALID_INPUT paths); closed and forged handles.

mod common;

use std::ffi::CStr;
use std::ptr;

use backlot::{sys, Config, Status, UrlDownload};
use common::TempDir;

fn assert_invalid(result: backlot::Result<impl std::fmt::Debug>, mentions: &str) {
    let error = result.expect_err("an invalid argument is an Err");
    assert_eq!(error.status, sys::BACKLOT_ERR_INVALID_ARGUMENT, "{error}");
    assert_eq!(error.kind(), Status::InvalidArgument);
    assert_eq!(error.name, "BACKLOT_ERR_INVALID_ARGUMENT");
    assert!(error.message.contains(mentions), "{:?} mentions {mentions:?}", error.message);
}

#[test]
fn strings_with_an_interior_nul_are_errors_not_panics() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("nul");
    let manager = env.open(&dir.container());
    let bad = "Lev\0els";
    assert_invalid(manager.ensure_local_availability(bad, None), "pack_id holds a NUL byte at byte 3");
    assert_invalid(manager.ensure_latest_availability(bad, Some(&mut |_: u64, _: u64| {})), "pack_id");
    assert_invalid(manager.cancel(bad), "pack_id");
    assert_invalid(manager.remove(bad), "pack_id");
    assert_invalid(manager.asset_pack(bad), "pack_id");
    assert_invalid(manager.contents("Levels/1\0.txt", None), "path holds a NUL byte at byte 8");
    assert_invalid(manager.contents("Levels/1.txt", Some(bad)), "pack_id");
    assert_invalid(manager.descriptor("a\0", None), "path");
    assert_invalid(manager.path("a\0", None), "path");
    assert_invalid(manager.subscribe(Some(bad), |_| {}), "pack_id");
    assert_invalid(manager.cancel_download("x\0y"), "identifier");
    assert_invalid(manager.schedule_download(&UrlDownload::new("a\0", "https://127.0.0.1/")), "identifier");
    assert_invalid(env.config(&dir.container()).catalog_url("https://x/\0").open(), "catalog_url");
    assert_invalid(env.config(&dir.path().join("c\0d")).open(), "container_path");
}

#[test]
fn the_library_refuses_bad_configurations() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("config");
    let container = dir.container();

    // Required members missing: the library's own INVALID_ARGUMENT, with its message.
    assert_invalid(Config::new().open(), "container_path");
    assert_invalid(env.config(&container).catalog_url("").container_path("").open(), "container_path");
    assert_invalid(Config::new().container_path(&container).trusted_key_path(&env.root_pub).open(), "catalog_url");
    assert_invalid(Config::new().container_path(&container).catalog_url(&env.catalog_url).open(), "trusted_key_path");
    assert_invalid(env.config(&container).retries(5000).open(), "retries");

    // A URL that is not a catalog's, an app or channel that is not the URL's: USAGE.
    let error = env.config(&container).catalog_url("https://127.0.0.1:1/not/a/catalog").open().unwrap_err();
    assert_eq!(error.kind(), Status::Usage, "{error}");
    let error = env.config(&container).app("com.example.other").open().unwrap_err();
    assert_eq!(error.kind(), Status::Usage, "{error}");
    assert!(error.message.contains("com.example.other"), "{error}");
    let error = env.config(&container).channel("no-such-channel").open().unwrap_err();
    assert_eq!(error.kind(), Status::Usage, "{error}");

    // A key file that is not a public key: INVALID_INPUT.
    let error = env.config(&container).trusted_key_path(&env.ca).open().unwrap_err();
    assert_eq!(error.kind(), Status::InvalidInput, "{error}");

    // The URL's own app and channel, given again, are fine.
    let parts: Vec<&str> = env.catalog_url.rsplit('/').collect(); // catalog.json, CHANNEL, APP, …
    let manager = env
        .config(&container)
        .app(parts[2])
        .channel(parts[1])
        .stall_timeout(std::time::Duration::from_millis(1500))
        .retries(0)
        .open();
    assert!(manager.is_ok(), "{:?}", manager.err());
}

#[test]
fn the_library_refuses_bad_url_downloads() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("bad-downloads");
    let manager = env.open(&dir.container());
    assert_invalid(manager.schedule_download(&UrlDownload::new("", "https://127.0.0.1/x")), "identifier is empty");
    assert_invalid(manager.schedule_download(&UrlDownload::new("x", "not a url")), "url");
    let mut too_big = UrlDownload::new("x", "https://127.0.0.1/x");
    too_big.file_size = Some(u64::MAX);
    assert_invalid(manager.start_foreground_download(&too_big), "file_size");
    let error = manager.cancel_download("never-scheduled").unwrap_err();
    assert_eq!(error.kind(), Status::Ba(backlot::ba::DOWNLOAD_NOT_SCHEDULED), "{error}");
    assert_eq!(error.status, 1101);
    assert_eq!(error.name, "BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED");
}

#[test]
fn null_forged_and_closed_handles_are_refused() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("handles");
    let manager = env.open(&dir.container());
    let raw = manager.as_raw();
    let mut ids: *mut *mut std::ffi::c_char = ptr::null_mut();
    let mut count = 0usize;
    // SAFETY: out pointers to locals; every handle value is refused or looked up, never followed.
    unsafe {
        assert_eq!(sys::backlot_installed_packs(raw, &mut ids, &mut count), sys::BACKLOT_OK);
        sys::backlot_free(ids.cast());
        assert_eq!(
            sys::backlot_installed_packs(ptr::null_mut(), &mut ids, &mut count),
            sys::BACKLOT_ERR_INVALID_ARGUMENT
        );
        assert!(ids.is_null() && count == 0, "out pointers are reset on a failure");
        let forged = 0x7777_0000_0042usize as *mut sys::backlot_manager;
        assert_eq!(sys::backlot_installed_packs(forged, &mut ids, &mut count), sys::BACKLOT_ERR_INVALID_ARGUMENT);
        assert_eq!(sys::backlot_installed_packs(raw, ptr::null_mut(), &mut count), sys::BACKLOT_ERR_INVALID_ARGUMENT);
        let message = CStr::from_ptr(sys::backlot_last_error_message()).to_string_lossy();
        assert!(!message.is_empty());
        assert_eq!(sys::backlot_last_error_status(), sys::BACKLOT_ERR_INVALID_ARGUMENT);
        // A config no _init_size call initialised (size 0).
        let mut config: sys::backlot_config = std::mem::zeroed();
        let mut out = ptr::null_mut();
        assert_eq!(sys::backlot_manager_open(&config, &mut out), sys::BACKLOT_ERR_INVALID_ARGUMENT);
        assert!(out.is_null());
        config.size = 8;
        assert_eq!(sys::backlot_manager_open(&config, &mut out), sys::BACKLOT_ERR_INVALID_ARGUMENT);
    }
    drop(manager);
    // SAFETY: as above, with the handle closed.
    unsafe {
        assert_eq!(sys::backlot_installed_packs(raw, &mut ids, &mut count), sys::BACKLOT_ERR_CLOSED_HANDLE);
        let error = backlot::Error::new(sys::backlot_last_error_status(), "");
        assert_eq!(error.kind(), Status::ClosedHandle);
        sys::backlot_manager_close(raw); // closing a closed handle does nothing
    }
}

#[test]
fn the_last_error_is_per_thread() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("last-error");
    let manager = std::sync::Arc::new(env.open(&dir.container()));
    assert!(manager.contents("one-missing-file", None).is_err());
    let other = manager.clone();
    std::thread::spawn(move || {
        // SAFETY: plain reads of this thread's last error.
        unsafe {
            assert_eq!(sys::backlot_last_error_status(), sys::BACKLOT_OK, "a new thread has no last error");
            assert_eq!(CStr::from_ptr(sys::backlot_last_error_message()).to_bytes(), b"");
        }
        let error = other.contents("another-missing-file", None).unwrap_err();
        assert!(error.message.contains("another-missing-file"), "{error}");
    })
    .join()
    .unwrap();
    // SAFETY: a plain read of this thread's last error.
    let message = unsafe { CStr::from_ptr(sys::backlot_last_error_message()).to_string_lossy().into_owned() };
    assert!(message.contains("one-missing-file"), "{message}");
}
