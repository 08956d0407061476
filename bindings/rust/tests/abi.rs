//! The binding's structs against the library's `_init_size` functions: each writes exactly the
//! size it is given (a smaller size than the struct's: only that prefix; a larger one: the bytes
//! past the library's struct zeroed), never a byte more, and records that size in `size`; the
//! defaults are the header's; the library's struct is no larger than this binding's with members
//! that are not zero by default. Also the names of the statuses. No server needed.

use std::ffi::c_char;
use std::mem::{offset_of, size_of};
use std::ops::Range;

use backlot::{sys, Status};

/// Bytes of the buffer an `_init_size` call is made on, aligned for every struct of the header.
const ROOM: usize = 256;
/// What the buffer holds before the call: a byte no default is made of.
const MARK: u8 = 0xA5;

#[repr(C, align(16))]
struct Room([u8; ROOM]);

/// Runs `init(room, size)` on a buffer of `ROOM` bytes filled with `MARK`: the bytes after.
fn init_bytes<T>(init: unsafe extern "C" fn(*mut T, usize), size: usize) -> [u8; ROOM] {
    assert!(size <= ROOM);
    let mut room = Room([MARK; ROOM]);
    // SAFETY: the room is ROOM bytes (at least `size`), aligned to 16: what the call may write.
    unsafe { init((&mut room as *mut Room).cast(), size) };
    room.0
}

/// The struct made with the binding's own size, as the safe wrapper makes it.
fn init_struct<T>(init: unsafe extern "C" fn(*mut T, usize)) -> T {
    let bytes = init_bytes(init, size_of::<T>());
    // SAFETY: the first size_of::<T>() bytes are initialised, and any bytes are a valid value of
    // these structs (numbers, raw pointers, nullable function pointers, never called here).
    unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) }
}

/// The byte ranges of a struct's members, by name.
struct Members {
    name: &'static str,
    size: usize,
    members: Vec<(&'static str, Range<usize>)>,
}

/// `members!(Type { field: FieldType, … })`: the struct's size and its members' byte ranges.
macro_rules! members {
    ($t:ty { $($field:ident: $ft:ty),* $(,)? }) => {
        Members {
            name: stringify!($t),
            size: size_of::<$t>(),
            members: vec![$((stringify!($field), offset_of!($t, $field)..offset_of!($t, $field) + size_of::<$ft>())),*],
        }
    };
}

impl Members {
    /// Checks what `init(room, size)` writes, for every size from 0 to 3 times the struct's:
    /// nothing past `size`; `size` recorded (once the size member fits); each member byte inside
    /// `size` is the byte the call with the struct's own size writes; bytes past the struct zero.
    fn check<T>(&self, init: unsafe extern "C" fn(*mut T, usize)) {
        let name = self.name;
        assert_eq!(size_of::<T>(), self.size, "{name}");
        let full = init_bytes(init, self.size);
        assert_eq!(usize::from_ne_bytes(full[..8].try_into().unwrap()), self.size, "{name}: size recorded");
        assert!(full[self.size..].iter().all(|&b| b == MARK), "{name}: written past its size");
        for (member, range) in &self.members {
            assert!(full[range.clone()].iter().all(|&b| b != MARK), "{name}.{member} was not written");
        }

        for size in 0..=(3 * self.size).min(ROOM) {
            let bytes = init_bytes(init, size);
            let past = bytes[size..].iter().position(|&b| b != MARK);
            assert!(past.is_none(), "{name}: _init_size({size}) wrote byte {} past its size", size + past.unwrap_or(0));
            if size < size_of::<usize>() {
                continue; // too small to hold the size member: nothing is promised but "never more"
            }
            let recorded = usize::from_ne_bytes(bytes[..8].try_into().unwrap());
            assert_eq!(recorded, size, "{name}: _init_size({size}) records its size");
            for (member, range) in self.members.iter().skip(1) {
                for i in range.clone().filter(|&i| i < size) {
                    assert_eq!(bytes[i], full[i], "{name}.{member}: byte {i} of _init_size({size}) is the default's");
                }
            }
            if size > self.size {
                let left = bytes[self.size..size].iter().position(|&b| b != 0);
                assert!(
                    left.is_none(),
                    "{name}: _init_size({size}) leaves byte {}, past the struct, not zeroed",
                    self.size + left.unwrap_or(0)
                );
            }
        }
    }
}

#[test]
fn config_init_size_writes_exactly_its_size_and_the_headers_defaults() {
    let layout = members!(sys::backlot_config {
        size: usize,
        container_path: *const c_char,
        catalog_url: *const c_char,
        trusted_key_path: *const c_char,
        ca_path: *const c_char,
        app: *const c_char,
        channel: *const c_char,
        bandwidth_limit: u64,
        stall_timeout: u32,
        retries: i32,
        no_reports: i32,
        device_profile: *const c_char,
    });
    layout.check(sys::backlot_config_init_size);

    let c = init_struct(sys::backlot_config_init_size);
    assert_eq!(c.size, size_of::<sys::backlot_config>());
    assert!(c.container_path.is_null() && c.catalog_url.is_null() && c.trusted_key_path.is_null());
    assert!(c.ca_path.is_null() && c.app.is_null() && c.channel.is_null());
    // No limit; 0 is 60 s; -1 is 4 retries.
    assert_eq!((c.bandwidth_limit, c.stall_timeout, c.retries), (0, 0, -1));
    assert_eq!(c.no_reports, 0, "devices report by default");
    assert!(c.device_profile.is_null(), "the profile is detected by default");
}

#[test]
fn pack_info_init_size_matches() {
    let layout = members!(sys::backlot_pack_info {
        size: usize,
        id: *mut c_char,
        version: i64,
        download_size: u64,
        status: u32,
    });
    layout.check(sys::backlot_pack_info_init_size);

    let i = init_struct(sys::backlot_pack_info_init_size);
    assert_eq!(i.size, size_of::<sys::backlot_pack_info>());
    assert!(i.id.is_null());
    assert_eq!((i.version, i.download_size, i.status), (0, 0, 0));
}

#[test]
fn url_download_init_size_matches() {
    let layout = members!(sys::backlot_url_download {
        size: usize,
        identifier: *const c_char,
        url: *const c_char,
        file_size: i64,
        essential: i32,
        priority: i64,
    });
    layout.check(sys::backlot_url_download_init_size);

    let d = init_struct(sys::backlot_url_download_init_size);
    assert_eq!(d.size, size_of::<sys::backlot_url_download>());
    assert!(d.identifier.is_null() && d.url.is_null());
    assert_eq!((d.file_size, d.essential, d.priority), (-1, 0, 0));
}

#[test]
fn download_delegate_init_size_matches() {
    let layout = members!(sys::backlot_download_delegate {
        size: usize,
        began: usize,
        paused: usize,
        wrote: usize,
        failed: usize,
        finished: usize,
    });
    layout.check(sys::backlot_download_delegate_init_size);

    let bytes = init_bytes(sys::backlot_download_delegate_init_size, size_of::<sys::backlot_download_delegate>());
    assert!(bytes[8..size_of::<sys::backlot_download_delegate>()].iter().all(|&b| b == 0), "NULL members");
    let d = init_struct(sys::backlot_download_delegate_init_size);
    assert_eq!(d.size, size_of::<sys::backlot_download_delegate>());
    assert!(d.began.is_none() && d.paused.is_none() && d.wrote.is_none());
    assert!(d.failed.is_none() && d.finished.is_none());
}

#[test]
fn a_config_initialised_with_a_smaller_size_says_so_and_is_refused_below_the_first_release() {
    // What a caller built against an older, smaller header would get: its prefix initialised,
    // the rest of its storage untouched, its size recorded. This binding's struct is the first
    // release's, the least the library takes: anything smaller is refused, with its size named.
    let smaller = offset_of!(sys::backlot_config, retries);
    let bytes = init_bytes(sys::backlot_config_init_size, smaller);
    assert!(bytes[smaller..].iter().all(|&b| b == MARK));
    // SAFETY: the prefix holds the size and NULL strings; the rest is numbers (any bytes).
    let config = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<sys::backlot_config>()) };
    assert_eq!(config.size, smaller);
    let mut out = std::ptr::null_mut();
    // SAFETY: a struct whose size member says what it holds; an out pointer to a local.
    let status = unsafe { sys::backlot_manager_open(&config, &mut out) };
    assert_eq!(status, sys::BACKLOT_ERR_INVALID_ARGUMENT, "a size below the first release's is refused");
    assert!(out.is_null());
    // SAFETY: a plain read of this thread's last error.
    let message = unsafe { std::ffi::CStr::from_ptr(sys::backlot_last_error_message()) }.to_string_lossy();
    assert!(message.contains(&smaller.to_string()), "{message}");
}

#[test]
fn statuses_have_the_headers_numbers_and_names() {
    let all = [
        (Status::Ok, 0, "BACKLOT_OK"),
        (Status::InvalidArgument, 1, "BACKLOT_ERR_INVALID_ARGUMENT"),
        (Status::ClosedHandle, 2, "BACKLOT_ERR_CLOSED_HANDLE"),
        (Status::Internal, 3, "BACKLOT_ERR_INTERNAL"),
        (Status::Usage, 10, "BACKLOT_ERR_USAGE"),
        (Status::InvalidManifest, 11, "BACKLOT_ERR_INVALID_MANIFEST"),
        (Status::InvalidJson, 12, "BACKLOT_ERR_INVALID_JSON"),
        (Status::InvalidPackId, 13, "BACKLOT_ERR_INVALID_PACK_ID"),
        (Status::InvalidSource, 14, "BACKLOT_ERR_INVALID_SOURCE"),
        (Status::InvalidInput, 15, "BACKLOT_ERR_INVALID_INPUT"),
        (Status::CorruptArchive, 16, "BACKLOT_ERR_CORRUPT_ARCHIVE"),
        (Status::Io, 17, "BACKLOT_ERR_IO"),
        (Status::AlreadyExists, 18, "BACKLOT_ERR_ALREADY_EXISTS"),
        (Status::Library, 19, "BACKLOT_ERR_LIBRARY"),
        (Status::CheckFailed, 20, "BACKLOT_ERR_CHECK_FAILED"),
        (Status::Untrusted, 21, "BACKLOT_ERR_UNTRUSTED"),
        (Status::Conflict, 22, "BACKLOT_ERR_CONFLICT"),
        (Status::NotFound, 23, "BACKLOT_ERR_NOT_FOUND"),
        (Status::Forbidden, 24, "BACKLOT_ERR_FORBIDDEN"),
        (Status::QuotaExceeded, 25, "BACKLOT_ERR_QUOTA_EXCEEDED"),
        (Status::Cancelled, 26, "BACKLOT_ERR_CANCELLED"),
        (Status::StaleCatalog, 27, "BACKLOT_ERR_STALE_CATALOG"),
        (Status::Unavailable, 28, "BACKLOT_ERR_UNAVAILABLE"),
        (Status::Tls, 29, "BACKLOT_ERR_TLS"),
        (Status::AssetPackNotFound, 40, "BACKLOT_ERR_ASSET_PACK_NOT_FOUND"),
        (Status::FileNotFound, 41, "BACKLOT_ERR_FILE_NOT_FOUND"),
        (Status::Ba(100), 1100, "BACKLOT_ERR_BA_DOWNLOAD_ALREADY_SCHEDULED"),
        (Status::Ba(101), 1101, "BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED"),
        (Status::Ba(0), 1000, "BACKLOT_ERR_BA_DOWNLOAD_INVALID"),
        (Status::Unknown(7), 7, "BACKLOT_ERR_UNKNOWN"),
    ];
    for (status, code, name) in all {
        assert_eq!(status.code(), code, "{status:?}");
        assert_eq!(Status::from_code(code), status, "{code}");
        assert_eq!(status.name(), name, "{status:?}");
        assert_eq!(backlot::status_name(code), name);
    }
    assert_eq!(backlot::ba::status(backlot::ba::DOWNLOAD_NOT_SCHEDULED), sys::BACKLOT_ERR_BA(101));
    assert_eq!(backlot::ABI_VERSION, 2);
    assert!(backlot::version().chars().next().is_some_and(|c| c.is_ascii_digit()), "{}", backlot::version());
}

#[test]
fn an_error_displays_its_name_and_message_and_its_hint() {
    let error = backlot::Error::new(21, "the catalog's signature does not verify\n  hint: check the key");
    assert_eq!(error.name, "BACKLOT_ERR_UNTRUSTED");
    assert_eq!(error.kind(), Status::Untrusted);
    assert_eq!(
        error.to_string(),
        "BACKLOT_ERR_UNTRUSTED: the catalog's signature does not verify\n  hint: check the key"
    );
    assert_eq!(error.hint(), Some("check the key"));
    let io: std::io::Error = backlot::Error::new(41, "no such file").into();
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}
