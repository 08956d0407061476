//! The C interface exactly as `include/backlot/backlot.h` (ABI version 2) declares it: every
//! constant, struct and function, hand-written. Use it for what the safe wrapper does not cover;
//! every rule of the header applies (statuses, the thread's last error, `backlot_free`, the
//! `size` member of the structs that may grow).
//!
//! The header's `_init` functions (`backlot_config_init`, …) are `static inline` functions of the
//! header, not symbols of the library: each calls its `_init_size` function with the struct's size
//! as the caller's header has it. From Rust, call the `_init_size` function with this module's
//! struct size, `size_of::<T>()`, as the safe wrapper does: the library fills exactly that many
//! bytes with its defaults (bytes past its own struct zeroed) and stores that size.
//!
//! C's `size_t` is `usize`, `int` is [`c_int`], `double` is `f64`; a nullable function pointer is
//! `Option<unsafe extern "C" fn …>`.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_int, c_void};
use std::marker::{PhantomData, PhantomPinned};

/// The version of the interface: raised when a function or a struct member is added.
pub const BACKLOT_ABI_VERSION: c_int = 2;

// ---- Status codes ------------------------------------------------------------------------------

/// What a call did: [`BACKLOT_OK`] or one of the codes below. The numbers never change.
pub type backlot_status = i32;

pub const BACKLOT_OK: backlot_status = 0;
pub const BACKLOT_ERR_INVALID_ARGUMENT: backlot_status = 1;
pub const BACKLOT_ERR_CLOSED_HANDLE: backlot_status = 2;
pub const BACKLOT_ERR_INTERNAL: backlot_status = 3;

pub const BACKLOT_ERR_USAGE: backlot_status = 10;
pub const BACKLOT_ERR_INVALID_MANIFEST: backlot_status = 11;
pub const BACKLOT_ERR_INVALID_JSON: backlot_status = 12;
pub const BACKLOT_ERR_INVALID_PACK_ID: backlot_status = 13;
pub const BACKLOT_ERR_INVALID_SOURCE: backlot_status = 14;
pub const BACKLOT_ERR_INVALID_INPUT: backlot_status = 15;
pub const BACKLOT_ERR_CORRUPT_ARCHIVE: backlot_status = 16;
pub const BACKLOT_ERR_IO: backlot_status = 17;
pub const BACKLOT_ERR_ALREADY_EXISTS: backlot_status = 18;
pub const BACKLOT_ERR_LIBRARY: backlot_status = 19;
pub const BACKLOT_ERR_CHECK_FAILED: backlot_status = 20;
pub const BACKLOT_ERR_UNTRUSTED: backlot_status = 21;
pub const BACKLOT_ERR_CONFLICT: backlot_status = 22;
pub const BACKLOT_ERR_NOT_FOUND: backlot_status = 23;
pub const BACKLOT_ERR_FORBIDDEN: backlot_status = 24;
pub const BACKLOT_ERR_QUOTA_EXCEEDED: backlot_status = 25;
pub const BACKLOT_ERR_CANCELLED: backlot_status = 26;
pub const BACKLOT_ERR_STALE_CATALOG: backlot_status = 27;
pub const BACKLOT_ERR_UNAVAILABLE: backlot_status = 28;
pub const BACKLOT_ERR_TLS: backlot_status = 29;

pub const BACKLOT_ERR_ASSET_PACK_NOT_FOUND: backlot_status = 40;
pub const BACKLOT_ERR_FILE_NOT_FOUND: backlot_status = 41;

/// Apple's `BAErrorCode` values are at `BACKLOT_ERR_BA_BASE + Apple's number`.
pub const BACKLOT_ERR_BA_BASE: backlot_status = 1000;

/// `BACKLOT_ERR_BA(apple_code)`: the status of Apple's `BAErrorCode` `apple_code`.
pub const fn BACKLOT_ERR_BA(apple_code: i32) -> backlot_status {
    BACKLOT_ERR_BA_BASE + apple_code
}

extern "C" {
    /// The calling thread's last failure: its message (never NULL; "" before any failure).
    pub fn backlot_last_error_message() -> *const c_char;
    /// The status of the calling thread's last failure (`BACKLOT_OK` before any).
    pub fn backlot_last_error_status() -> backlot_status;
    /// The name of a status; a static string.
    pub fn backlot_status_name(status: backlot_status) -> *const c_char;
    /// Frees a buffer the library allocated (NULL does nothing).
    pub fn backlot_free(buffer: *mut c_void);
    /// The library's version, a static string.
    pub fn backlot_version() -> *const c_char;
}

// ---- The manager -------------------------------------------------------------------------------

/// `backlot_manager`: an opaque handle (an entry of the library's table, never followed).
#[repr(C)]
#[derive(Debug)]
pub struct backlot_manager {
    _private: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct backlot_config {
    /// Set by [`backlot_config_init_size`]: the size it was given, `size_of::<backlot_config>()`.
    pub size: usize,
    pub container_path: *const c_char,
    pub catalog_url: *const c_char,
    pub trusted_key_path: *const c_char,
    pub ca_path: *const c_char,
    pub app: *const c_char,
    pub channel: *const c_char,
    pub bandwidth_limit: u64,
    pub stall_timeout: u32,
    pub retries: i32,
    /// 1: the device sends no report of what it holds and how its installs end; 0 (the default): it does.
    pub no_reports: i32,
    /// What picks a pack's variant ("textureFormat=astc+etc2,deviceTier=high"; a key left out is
    /// detected), or null: detected.
    pub device_profile: *const c_char,
}

/// Progress of a download: bytes installed so far, and in all; on the thread that called.
pub type backlot_progress_fn =
    Option<unsafe extern "C" fn(context: *mut c_void, completed_bytes: u64, total_bytes: u64)>;

// Apple's AssetPack.Status bits.
pub const BACKLOT_PACK_DOWNLOAD_AVAILABLE: u32 = 1 << 0;
pub const BACKLOT_PACK_UPDATE_AVAILABLE: u32 = 1 << 1;
pub const BACKLOT_PACK_UP_TO_DATE: u32 = 1 << 2;
pub const BACKLOT_PACK_OUT_OF_DATE: u32 = 1 << 3;
pub const BACKLOT_PACK_OBSOLETE: u32 = 1 << 4;
pub const BACKLOT_PACK_DOWNLOADING: u32 = 1 << 5;
pub const BACKLOT_PACK_DOWNLOADED: u32 = 1 << 6;

#[repr(C)]
#[derive(Debug)]
pub struct backlot_pack_info {
    /// Set by [`backlot_pack_info_init_size`].
    pub size: usize,
    /// Owned by the struct: [`backlot_pack_info_clear`] frees it.
    pub id: *mut c_char,
    pub version: i64,
    pub download_size: u64,
    pub status: u32,
}

// ---- Status updates ----------------------------------------------------------------------------

pub const BACKLOT_UPDATE_BEGAN: i32 = 1;
pub const BACKLOT_UPDATE_DOWNLOADING: i32 = 2;
pub const BACKLOT_UPDATE_PAUSED: i32 = 3;
pub const BACKLOT_UPDATE_FINISHED: i32 = 4;
pub const BACKLOT_UPDATE_FAILED: i32 = 5;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct backlot_status_update {
    /// `sizeof(backlot_status_update)` of the library that sent it.
    pub size: usize,
    pub kind: i32,
    /// Valid during the call only.
    pub pack_id: *const c_char,
    pub completed_bytes: u64,
    pub total_bytes: u64,
    pub error: backlot_status,
    /// Valid during the call only.
    pub error_message: *const c_char,
}

/// Called for each update, in order and one at a time per subscription, on a thread of the
/// library's (not always the same one).
pub type backlot_status_fn = Option<unsafe extern "C" fn(context: *mut c_void, update: *const backlot_status_update)>;

// ---- URL downloads -----------------------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct backlot_url_download {
    /// Set by [`backlot_url_download_init_size`].
    pub size: usize,
    pub identifier: *const c_char,
    pub url: *const c_char,
    pub file_size: i64,
    pub essential: i32,
    pub priority: i64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct backlot_download_delegate {
    /// Set by [`backlot_download_delegate_init_size`].
    pub size: usize,
    pub began: Option<unsafe extern "C" fn(context: *mut c_void, identifier: *const c_char)>,
    pub paused: Option<unsafe extern "C" fn(context: *mut c_void, identifier: *const c_char)>,
    pub wrote: Option<
        unsafe extern "C" fn(
            context: *mut c_void,
            identifier: *const c_char,
            bytes_written: i64,
            total_written: i64,
            total_expected: i64,
        ),
    >,
    pub failed: Option<
        unsafe extern "C" fn(
            context: *mut c_void,
            identifier: *const c_char,
            error: backlot_status,
            message: *const c_char,
        ),
    >,
    pub finished:
        Option<unsafe extern "C" fn(context: *mut c_void, identifier: *const c_char, file_path: *const c_char)>,
}

/// The body run under exclusive control; what it returns is what the call returns.
pub type backlot_exclusive_fn = Option<unsafe extern "C" fn(context: *mut c_void) -> backlot_status>;

extern "C" {
    /// Fills the first `size` bytes of `config` with its defaults (NULL strings, no limit, 60 s,
    /// 4 retries; bytes past the library's struct zeroed) and sets `config.size` to `size`.
    pub fn backlot_config_init_size(config: *mut backlot_config, size: usize);
    pub fn backlot_manager_open(config: *const backlot_config, out: *mut *mut backlot_manager) -> backlot_status;
    pub fn backlot_manager_close(manager: *mut backlot_manager);
    pub fn backlot_device_id(manager: *mut backlot_manager, out: *mut *mut c_char) -> backlot_status;
    pub fn backlot_device_profile(manager: *mut backlot_manager, out: *mut *mut c_char) -> backlot_status;

    pub fn backlot_ensure_local_availability(
        manager: *mut backlot_manager,
        pack_id: *const c_char,
        progress: backlot_progress_fn,
        context: *mut c_void,
    ) -> backlot_status;
    pub fn backlot_ensure_latest_availability(
        manager: *mut backlot_manager,
        pack_id: *const c_char,
        progress: backlot_progress_fn,
        context: *mut c_void,
    ) -> backlot_status;
    pub fn backlot_cancel(manager: *mut backlot_manager, pack_id: *const c_char) -> backlot_status;
    pub fn backlot_check_for_updates(
        manager: *mut backlot_manager,
        updating_ids: *mut *mut *mut c_char,
        count: *mut usize,
    ) -> backlot_status;
    pub fn backlot_remove(manager: *mut backlot_manager, pack_id: *const c_char) -> backlot_status;

    pub fn backlot_contents(
        manager: *mut backlot_manager,
        path: *const c_char,
        pack_id: *const c_char,
        data: *mut *mut u8,
        length: *mut usize,
    ) -> backlot_status;
    pub fn backlot_descriptor(
        manager: *mut backlot_manager,
        path: *const c_char,
        pack_id: *const c_char,
        fd: *mut c_int,
    ) -> backlot_status;
    pub fn backlot_path(
        manager: *mut backlot_manager,
        path: *const c_char,
        pack_id: *const c_char,
        out: *mut *mut c_char,
    ) -> backlot_status;

    /// Fills the first `size` bytes with the initial state (`id` NULL) and sets `info.size` to `size`.
    pub fn backlot_pack_info_init_size(info: *mut backlot_pack_info, size: usize);
    pub fn backlot_pack_info_clear(info: *mut backlot_pack_info);
    pub fn backlot_asset_pack(
        manager: *mut backlot_manager,
        pack_id: *const c_char,
        info: *mut backlot_pack_info,
    ) -> backlot_status;
    pub fn backlot_all_asset_packs(
        manager: *mut backlot_manager,
        ids: *mut *mut *mut c_char,
        count: *mut usize,
    ) -> backlot_status;
    pub fn backlot_installed_packs(
        manager: *mut backlot_manager,
        ids: *mut *mut *mut c_char,
        count: *mut usize,
    ) -> backlot_status;

    pub fn backlot_subscribe(
        manager: *mut backlot_manager,
        pack_id: *const c_char,
        callback: backlot_status_fn,
        context: *mut c_void,
        out: *mut u64,
    ) -> backlot_status;
    /// Once it returns, the subscription's callback is not called again, even when it is called
    /// from another subscription's callback (it then waits for a call of this one that is
    /// running); called from the subscription's own callback, it does not wait for that call.
    pub fn backlot_unsubscribe(manager: *mut backlot_manager, subscription: u64) -> backlot_status;

    /// Fills the first `size` bytes with the defaults (NULL strings, `file_size` -1, not
    /// essential, priority 0) and sets `download.size` to `size`.
    pub fn backlot_url_download_init_size(download: *mut backlot_url_download, size: usize);
    pub fn backlot_schedule_download(
        manager: *mut backlot_manager,
        download: *const backlot_url_download,
    ) -> backlot_status;
    pub fn backlot_start_foreground_download(
        manager: *mut backlot_manager,
        download: *const backlot_url_download,
    ) -> backlot_status;
    pub fn backlot_cancel_download(manager: *mut backlot_manager, identifier: *const c_char) -> backlot_status;
    pub fn backlot_current_downloads(
        manager: *mut backlot_manager,
        identifiers: *mut *mut *mut c_char,
        count: *mut usize,
    ) -> backlot_status;

    /// Fills the first `size` bytes with NULL members and sets `delegate.size` to `size`.
    pub fn backlot_download_delegate_init_size(delegate: *mut backlot_download_delegate, size: usize);
    /// Copies the delegate; NULL removes it. Once it returns (and once `backlot_manager_close`
    /// returns), no function of the previous delegate runs any more, so its context may be
    /// freed; called from within a delegate function, it does not wait for that one.
    pub fn backlot_set_download_delegate(
        manager: *mut backlot_manager,
        delegate: *const backlot_download_delegate,
        context: *mut c_void,
    ) -> backlot_status;

    /// Runs `body` on the calling thread holding the container's exclusive control; returns what
    /// `body` returns (a status other than `BACKLOT_OK` is then the thread's last error), or
    /// `BACKLOT_ERR_UNAVAILABLE` when the control was not acquired within `timeout` seconds.
    pub fn backlot_with_exclusive_control(
        manager: *mut backlot_manager,
        timeout: f64,
        body: backlot_exclusive_fn,
        context: *mut c_void,
    ) -> backlot_status;
}

#[cfg(test)]
mod layout {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    // The C layout of the header's structs on an LP64 target (Linux, macOS: 64-bit pointers and
    // size_t). tests/abi.rs checks what the library's _init_size functions write into them.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn structs_have_the_headers_layout() {
        assert_eq!(size_of::<backlot_config>(), 88);
        assert_eq!(offset_of!(backlot_config, container_path), 8);
        assert_eq!(offset_of!(backlot_config, channel), 48);
        assert_eq!(offset_of!(backlot_config, bandwidth_limit), 56);
        assert_eq!(offset_of!(backlot_config, stall_timeout), 64);
        assert_eq!(offset_of!(backlot_config, retries), 68);
        assert_eq!(offset_of!(backlot_config, no_reports), 72);
        assert_eq!(offset_of!(backlot_config, device_profile), 80);

        assert_eq!(size_of::<backlot_pack_info>(), 40);
        assert_eq!(offset_of!(backlot_pack_info, status), 32);

        assert_eq!(size_of::<backlot_status_update>(), 56);
        assert_eq!(offset_of!(backlot_status_update, kind), 8);
        assert_eq!(offset_of!(backlot_status_update, pack_id), 16);
        assert_eq!(offset_of!(backlot_status_update, error), 40);
        assert_eq!(offset_of!(backlot_status_update, error_message), 48);

        assert_eq!(size_of::<backlot_url_download>(), 48);
        assert_eq!(offset_of!(backlot_url_download, file_size), 24);
        assert_eq!(offset_of!(backlot_url_download, essential), 32);
        assert_eq!(offset_of!(backlot_url_download, priority), 40);

        assert_eq!(size_of::<backlot_download_delegate>(), 48);
        assert_eq!(offset_of!(backlot_download_delegate, finished), 40);
        assert_eq!(align_of::<backlot_config>(), 8);
    }

    #[test]
    fn ba_codes_are_at_1000_plus_apples_number() {
        assert_eq!(BACKLOT_ERR_BA(101), 1101);
        assert_eq!(BACKLOT_ERR_BA(0), BACKLOT_ERR_BA_BASE);
    }
}
