//! [`Error`]: a failed call, with the library's status, its name and the calling thread's last
//! error message; [`Status`], the header's statuses as an enum.

use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// What a failed call of the library said: its status (`backlot_status`, see [`Status`]), the
/// status's name (`"BACKLOT_ERR_UNTRUSTED"`) and the message of `backlot_last_error_message`,
/// read on the thread that made the call right after it failed (a second line, `hint: …`, says
/// what to do when there is advice).
///
/// A failure the binding detects before calling the library (a string with an interior NUL
/// byte, a number that does not fit the C type) is an `Error` with status
/// [`Status::InvalidArgument`] too.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Error {
    /// The `backlot_status` (never `BACKLOT_OK`).
    pub status: i32,
    /// Its name, from `backlot_status_name`.
    pub name: String,
    /// What went wrong, and what to do.
    pub message: String,
}

/// The result of the binding's calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with this status and message (the name comes from the library).
    pub fn new(status: i32, message: impl Into<String>) -> Error {
        Error { status, name: status_name(status).to_string(), message: message.into() }
    }

    /// The status as a [`Status`].
    pub fn kind(&self) -> Status {
        Status::from_code(self.status)
    }

    /// The advice of the message (its `hint:` line), if it has one.
    pub fn hint(&self) -> Option<&str> {
        self.message.split_once("hint:").map(|(_, hint)| hint.trim())
    }

    /// The calling thread's last failure, for a call that just returned `status`.
    pub(crate) fn last(status: sys::backlot_status) -> Error {
        // SAFETY: both are plain reads of the calling thread's last error; the message is a
        // NUL-terminated string valid until this thread's next failing call, copied at once.
        let (recorded, message) = unsafe {
            let recorded = sys::backlot_last_error_status();
            let pointer = sys::backlot_last_error_message();
            let message =
                if pointer.is_null() { String::new() } else { CStr::from_ptr(pointer).to_string_lossy().into_owned() };
            (recorded, message)
        };
        let name = status_name(status).to_string();
        let message = if recorded == status && !message.is_empty() {
            message
        } else {
            // The library returned a status it did not record as this thread's last error.
            format!("{name} (libbacklot recorded no message for this failure)")
        };
        Error { status, name, message }
    }

    /// A bad argument caught by the binding (before the library is called).
    pub(crate) fn invalid_argument(message: impl fmt::Display) -> Error {
        Error::new(sys::BACKLOT_ERR_INVALID_ARGUMENT, format!("invalid argument: {message}"))
    }
}

/// `Ok(())` for `BACKLOT_OK`, else the calling thread's last error.
pub(crate) fn check(status: sys::backlot_status) -> Result<()> {
    if status == sys::BACKLOT_OK {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.message.is_empty() {
            write!(f, "{} ({})", self.name, self.status)
        } else {
            write!(f, "{}: {}", self.name, self.message)
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(error: Error) -> std::io::Error {
        let kind = match error.kind() {
            Status::FileNotFound | Status::AssetPackNotFound | Status::NotFound => std::io::ErrorKind::NotFound,
            Status::InvalidArgument | Status::Usage => std::io::ErrorKind::InvalidInput,
            Status::Forbidden => std::io::ErrorKind::PermissionDenied,
            Status::AlreadyExists => std::io::ErrorKind::AlreadyExists,
            Status::CorruptArchive | Status::InvalidInput => std::io::ErrorKind::InvalidData,
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, error)
    }
}

/// The name of a status (`"BACKLOT_ERR_UNTRUSTED"`, `"BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED"`);
/// `"BACKLOT_ERR_UNKNOWN"` for a number the library does not list.
pub fn status_name(status: i32) -> &'static str {
    // SAFETY: the header promises a static, NUL-terminated string that is never freed.
    unsafe {
        let pointer = sys::backlot_status_name(status);
        if pointer.is_null() {
            return "BACKLOT_ERR_UNKNOWN";
        }
        CStr::from_ptr(pointer).to_str().unwrap_or("BACKLOT_ERR_UNKNOWN")
    }
}

/// The statuses of `backlot.h`, for matching on [`Error::kind`].
///
/// ```no_run
/// # fn f(manager: &backlot::Manager) {
/// match manager.contents("Levels/1.txt", None) {
///     Ok(bytes) => println!("{} bytes", bytes.len()),
///     Err(e) if e.kind() == backlot::Status::AssetPackNotFound => println!("not installed"),
///     Err(e) if e.kind() == backlot::Status::Ba(backlot::ba::DOWNLOAD_NOT_SCHEDULED) => {}
///     Err(e) => eprintln!("{e}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// `BACKLOT_OK` (0).
    Ok,
    /// A NULL pointer, a string that is not UTF-8 or holds a NUL, a value out of range (1).
    InvalidArgument,
    /// The handle was closed, or belongs to no open manager (2).
    ClosedHandle,
    /// A bug inside the library (3).
    Internal,
    /// A configuration value of the wrong shape (10).
    Usage,
    InvalidManifest,
    InvalidJson,
    InvalidPackId,
    InvalidSource,
    /// A file is not what it must be: a key file, a container (15).
    InvalidInput,
    /// An archive or a chunk failed its SHA-256 (16).
    CorruptArchive,
    /// An operating-system call or a transfer failed (17).
    Io,
    AlreadyExists,
    /// zstd, OpenSSL or libcurl failed (19).
    Library,
    CheckFailed,
    /// Signed metadata failed verification (21).
    Untrusted,
    Conflict,
    NotFound,
    Forbidden,
    QuotaExceeded,
    /// Cancelled, or the handle was closed meanwhile (26).
    Cancelled,
    /// The server's catalog is older than one already trusted (27).
    StaleCatalog,
    /// A service cannot be reached now; try again later (28).
    Unavailable,
    /// The server's certificate could not be verified (29).
    Tls,
    /// Apple's `ManagedBackgroundAssetsError.assetPackNotFound` (40).
    AssetPackNotFound,
    /// Apple's `ManagedBackgroundAssetsError.fileNotFound` (41).
    FileNotFound,
    /// Apple's `BAErrorCode` n (`BACKLOT_ERR_BA(n)` = 1000 + n): see [`crate::ba`].
    Ba(i32),
    /// A number the header does not list.
    Unknown(i32),
}

impl Status {
    /// The status of a `backlot_status` number.
    pub fn from_code(code: i32) -> Status {
        use Status::*;
        match code {
            sys::BACKLOT_OK => Ok,
            sys::BACKLOT_ERR_INVALID_ARGUMENT => InvalidArgument,
            sys::BACKLOT_ERR_CLOSED_HANDLE => ClosedHandle,
            sys::BACKLOT_ERR_INTERNAL => Internal,
            sys::BACKLOT_ERR_USAGE => Usage,
            sys::BACKLOT_ERR_INVALID_MANIFEST => InvalidManifest,
            sys::BACKLOT_ERR_INVALID_JSON => InvalidJson,
            sys::BACKLOT_ERR_INVALID_PACK_ID => InvalidPackId,
            sys::BACKLOT_ERR_INVALID_SOURCE => InvalidSource,
            sys::BACKLOT_ERR_INVALID_INPUT => InvalidInput,
            sys::BACKLOT_ERR_CORRUPT_ARCHIVE => CorruptArchive,
            sys::BACKLOT_ERR_IO => Io,
            sys::BACKLOT_ERR_ALREADY_EXISTS => AlreadyExists,
            sys::BACKLOT_ERR_LIBRARY => Library,
            sys::BACKLOT_ERR_CHECK_FAILED => CheckFailed,
            sys::BACKLOT_ERR_UNTRUSTED => Untrusted,
            sys::BACKLOT_ERR_CONFLICT => Conflict,
            sys::BACKLOT_ERR_NOT_FOUND => NotFound,
            sys::BACKLOT_ERR_FORBIDDEN => Forbidden,
            sys::BACKLOT_ERR_QUOTA_EXCEEDED => QuotaExceeded,
            sys::BACKLOT_ERR_CANCELLED => Cancelled,
            sys::BACKLOT_ERR_STALE_CATALOG => StaleCatalog,
            sys::BACKLOT_ERR_UNAVAILABLE => Unavailable,
            sys::BACKLOT_ERR_TLS => Tls,
            sys::BACKLOT_ERR_ASSET_PACK_NOT_FOUND => AssetPackNotFound,
            sys::BACKLOT_ERR_FILE_NOT_FOUND => FileNotFound,
            c if c >= sys::BACKLOT_ERR_BA_BASE => Ba(c - sys::BACKLOT_ERR_BA_BASE),
            c => Unknown(c),
        }
    }

    /// The `backlot_status` number.
    pub fn code(self) -> i32 {
        use Status::*;
        match self {
            Ok => sys::BACKLOT_OK,
            InvalidArgument => sys::BACKLOT_ERR_INVALID_ARGUMENT,
            ClosedHandle => sys::BACKLOT_ERR_CLOSED_HANDLE,
            Internal => sys::BACKLOT_ERR_INTERNAL,
            Usage => sys::BACKLOT_ERR_USAGE,
            InvalidManifest => sys::BACKLOT_ERR_INVALID_MANIFEST,
            InvalidJson => sys::BACKLOT_ERR_INVALID_JSON,
            InvalidPackId => sys::BACKLOT_ERR_INVALID_PACK_ID,
            InvalidSource => sys::BACKLOT_ERR_INVALID_SOURCE,
            InvalidInput => sys::BACKLOT_ERR_INVALID_INPUT,
            CorruptArchive => sys::BACKLOT_ERR_CORRUPT_ARCHIVE,
            Io => sys::BACKLOT_ERR_IO,
            AlreadyExists => sys::BACKLOT_ERR_ALREADY_EXISTS,
            Library => sys::BACKLOT_ERR_LIBRARY,
            CheckFailed => sys::BACKLOT_ERR_CHECK_FAILED,
            Untrusted => sys::BACKLOT_ERR_UNTRUSTED,
            Conflict => sys::BACKLOT_ERR_CONFLICT,
            NotFound => sys::BACKLOT_ERR_NOT_FOUND,
            Forbidden => sys::BACKLOT_ERR_FORBIDDEN,
            QuotaExceeded => sys::BACKLOT_ERR_QUOTA_EXCEEDED,
            Cancelled => sys::BACKLOT_ERR_CANCELLED,
            StaleCatalog => sys::BACKLOT_ERR_STALE_CATALOG,
            Unavailable => sys::BACKLOT_ERR_UNAVAILABLE,
            Tls => sys::BACKLOT_ERR_TLS,
            AssetPackNotFound => sys::BACKLOT_ERR_ASSET_PACK_NOT_FOUND,
            FileNotFound => sys::BACKLOT_ERR_FILE_NOT_FOUND,
            Ba(n) => sys::BACKLOT_ERR_BA(n),
            Unknown(c) => c,
        }
    }

    /// Its name in the header, from the library (`"BACKLOT_ERR_UNTRUSTED"`).
    pub fn name(self) -> &'static str {
        status_name(self.code())
    }
}

impl From<i32> for Status {
    fn from(code: i32) -> Status {
        Status::from_code(code)
    }
}

/// Apple's `BAErrorCode` numbers: `Status::Ba(ba::DOWNLOAD_NOT_SCHEDULED)` is the status
/// `BACKLOT_ERR_BA(101)`. [`ba::status`](crate::ba::status) gives the `backlot_status` number.
pub mod ba {
    pub const DOWNLOAD_INVALID: i32 = 0;
    pub const CALL_FROM_EXTENSION_NOT_ALLOWED: i32 = 50;
    pub const CALL_FROM_INACTIVE_PROCESS_NOT_ALLOWED: i32 = 51;
    pub const CALLER_CONNECTION_NOT_ACCEPTED: i32 = 55;
    pub const CALLER_CONNECTION_INVALID: i32 = 56;
    pub const DOWNLOAD_ALREADY_SCHEDULED: i32 = 100;
    pub const DOWNLOAD_NOT_SCHEDULED: i32 = 101;
    pub const DOWNLOAD_FAILED_TO_START: i32 = 102;
    pub const DOWNLOAD_ALREADY_FAILED: i32 = 103;
    pub const DOWNLOAD_ESSENTIAL_DOWNLOAD_NOT_PERMITTED: i32 = 109;
    pub const DOWNLOAD_BACKGROUND_ACTIVITY_PROHIBITED: i32 = 111;
    pub const DOWNLOAD_WOULD_EXCEED_ALLOWANCE: i32 = 112;
    pub const DOWNLOAD_DOES_NOT_EXIST: i32 = 113;
    pub const SESSION_DOWNLOAD_DISALLOWED_BY_DOMAIN: i32 = 202;
    pub const SESSION_DOWNLOAD_DISALLOWED_BY_ALLOWANCE: i32 = 203;
    pub const SESSION_DOWNLOAD_ALLOWANCE_EXCEEDED: i32 = 204;
    pub const SESSION_DOWNLOAD_NOT_PERMITTED_BEFORE_APP_LAUNCH: i32 = 206;

    /// The `backlot_status` of Apple's code (`BACKLOT_ERR_BA(code)`).
    pub const fn status(code: i32) -> i32 {
        crate::sys::BACKLOT_ERR_BA(code)
    }
}
