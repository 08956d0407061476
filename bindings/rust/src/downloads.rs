//! URL downloads (Apple's `BADownloadManager`): [`UrlDownload`] and the [`DownloadDelegate`]
//! the app is told about them through.

use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use crate::error::{Error, Result};
use crate::registry::Registry;
use crate::sized::initialised;
use crate::strings::{borrowed, c_string, path_of};
use crate::sys;

/// A URL download of the container (`backlot_url_download`).
///
/// ```no_run
/// # fn f(manager: &backlot::Manager) -> backlot::Result<()> {
/// let mut download = backlot::UrlDownload::new("intro-video", "https://cdn.example.com/intro.mp4");
/// download.essential = true;
/// manager.schedule_download(&download)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct UrlDownload {
    /// Unique in the container; required.
    pub identifier: String,
    /// `https://` (or `http://` to loopback); required.
    pub url: String,
    /// The size the server will send, if known.
    pub file_size: Option<u64>,
    /// Essential: before the app's first launch.
    pub essential: bool,
    /// Higher runs first; 0 is Apple's default.
    pub priority: i64,
}

impl UrlDownload {
    /// A download of `url` named `identifier`: size unknown, not essential, priority 0.
    pub fn new(identifier: impl Into<String>, url: impl Into<String>) -> UrlDownload {
        UrlDownload { identifier: identifier.into(), url: url.into(), file_size: None, essential: false, priority: 0 }
    }
}

/// Runs `call` with the download as the C struct (its strings alive for the call): the library's
/// defaults (`backlot_url_download_init_size`), then the download's members.
pub(crate) fn with_raw<T>(
    download: &UrlDownload,
    call: impl FnOnce(*const sys::backlot_url_download) -> Result<T>,
) -> Result<T> {
    let identifier = c_string(&download.identifier, "identifier")?;
    let url = c_string(&download.url, "url")?;
    let file_size = download
        .file_size
        .map(|size| {
            i64::try_from(size).map_err(|_| Error::invalid_argument(format_args!("file_size {size} is too large")))
        })
        .transpose()?;
    let mut raw: sys::backlot_url_download = initialised();
    raw.identifier = identifier.as_ptr();
    raw.url = url.as_ptr();
    if let Some(size) = file_size {
        raw.file_size = size; // unknown (None): the library's default, -1
    }
    raw.essential = i32::from(download.essential);
    raw.priority = download.priority;
    call(&raw)
}

/// What the app is told about its URL downloads (Apple's `BADownloadManagerDelegate`), set with
/// [`Manager::set_download_delegate`](crate::Manager::set_download_delegate). Every method has
/// a default that does nothing; they run on a thread of the download manager's. A panic in one
/// is caught (and reported by the panic hook), never carried into the library. Once the
/// delegate is replaced or removed, or its manager dropped, none of its methods runs any more
/// and it is dropped.
pub trait DownloadDelegate: Send + Sync + 'static {
    /// The download began.
    fn began(&self, identifier: &str) {
        let _ = identifier;
    }

    /// The download paused.
    fn paused(&self, identifier: &str) {
        let _ = identifier;
    }

    /// Bytes arrived: `bytes_written` since the last call, `total_written` in all, of
    /// `total_expected` (-1 when unknown).
    fn wrote(&self, identifier: &str, bytes_written: i64, total_written: i64, total_expected: i64) {
        let _ = (identifier, bytes_written, total_written, total_expected);
    }

    /// The download failed.
    fn failed(&self, identifier: &str, error: &Error) {
        let _ = (identifier, error);
    }

    /// The download finished into `file`: move or copy it before returning (it is deleted
    /// afterwards).
    fn finished(&self, identifier: &str, file: &Path) {
        let _ = (identifier, file);
    }
}

/// The delegates in place, by the number their C context holds.
pub(crate) static DELEGATES: Registry<dyn DownloadDelegate> = Registry::new();

/// Runs `f` with the delegate of a context, catching a panic.
fn with_delegate(context: *mut c_void, f: impl FnOnce(&dyn DownloadDelegate)) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Some(delegate) = DELEGATES.get(context as usize) {
            f(&*delegate);
        }
    }));
}

unsafe extern "C" fn began_trampoline(context: *mut c_void, identifier: *const c_char) {
    // SAFETY (all trampolines): the strings are valid during the call.
    with_delegate(context, |d| d.began(&borrowed(identifier)));
}

unsafe extern "C" fn paused_trampoline(context: *mut c_void, identifier: *const c_char) {
    with_delegate(context, |d| d.paused(&borrowed(identifier)));
}

unsafe extern "C" fn wrote_trampoline(
    context: *mut c_void,
    identifier: *const c_char,
    bytes_written: i64,
    total_written: i64,
    total_expected: i64,
) {
    with_delegate(context, |d| d.wrote(&borrowed(identifier), bytes_written, total_written, total_expected));
}

unsafe extern "C" fn failed_trampoline(
    context: *mut c_void,
    identifier: *const c_char,
    error: sys::backlot_status,
    message: *const c_char,
) {
    with_delegate(context, |d| d.failed(&borrowed(identifier), &Error::new(error, borrowed(message))));
}

unsafe extern "C" fn finished_trampoline(context: *mut c_void, identifier: *const c_char, file_path: *const c_char) {
    with_delegate(context, |d| {
        let file =
            if file_path.is_null() { std::path::PathBuf::new() } else { path_of(std::ffi::CStr::from_ptr(file_path)) };
        d.finished(&borrowed(identifier), &file)
    });
}

/// The C delegate whose members call the registry's delegate of the context: the library's
/// initial struct (`backlot_download_delegate_init_size`), every member set.
pub(crate) fn delegate_functions() -> sys::backlot_download_delegate {
    let mut functions: sys::backlot_download_delegate = initialised();
    functions.began = Some(began_trampoline);
    functions.paused = Some(paused_trampoline);
    functions.wrote = Some(wrote_trampoline);
    functions.failed = Some(failed_trampoline);
    functions.finished = Some(finished_trampoline);
    functions
}
