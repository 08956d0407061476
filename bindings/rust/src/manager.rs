//! [`Config`] and [`Manager`]: Apple's `AssetPackManager` over one container, from Rust.

use std::any::Any;
use std::ffi::{c_char, c_void, CString};
use std::fmt;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::ptr;
use std::sync::Mutex;
use std::time::Duration;

use crate::downloads::{self, DownloadDelegate, UrlDownload};
use crate::error::{check, Error, Result};
use crate::sized::initialised;
use crate::strings::{c_optional, c_path, c_string, ptr_or_null, take_list, take_path, take_string, Allocation};
use crate::sys;
use crate::updates::{self, StatusUpdate, Subscription};

/// A manager handle: a number of the library's handle table (never dereferenced), so it is
/// shared between threads as the header allows ("every function may be called from any thread,
/// on one handle or on several, at once").
#[derive(Clone, Copy, Debug)]
pub(crate) struct Handle(pub(crate) *mut sys::backlot_manager);

// SAFETY: the handle is an opaque value the library looks up in a locked table; the header
// allows every function to be called with it from any thread, concurrently.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

/// How to open a [`Manager`] (`backlot_config`): the container folder, the channel's catalog and
/// the repository's key are required; the rest has defaults.
///
/// ```no_run
/// let manager = backlot::Config::new()
///     .container_path("/var/lib/mygame/assets")
///     .catalog_url("https://cdn.example.com/v1/apps/com.example.game/production/catalog.json")
///     .trusted_key_path("/usr/share/mygame/root.pub")
///     .open()?;
/// # Ok::<(), backlot::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    container_path: Option<PathBuf>,
    catalog_url: Option<String>,
    trusted_key_path: Option<PathBuf>,
    ca_path: Option<PathBuf>,
    app: Option<String>,
    channel: Option<String>,
    // Unset members (None) keep the defaults of the library's backlot_config_init_size.
    bandwidth_limit: Option<u64>,
    stall_timeout: Option<Duration>,
    retries: Option<u32>,
    no_reports: bool,
    device_profile: Option<String>,
}

impl Config {
    /// A configuration with the library's defaults (`backlot_config_init_size`): no limit, a 60 s
    /// stall timeout, 4 retries.
    pub fn new() -> Config {
        Config::default()
    }

    /// The container folder (created when missing). Required.
    pub fn container_path(mut self, path: impl Into<PathBuf>) -> Config {
        self.container_path = Some(path.into());
        self
    }

    /// `https://HOST/…/v1/apps/APP/CHANNEL/catalog.json`. Required.
    pub fn catalog_url(mut self, url: impl Into<String>) -> Config {
        self.catalog_url = Some(url.into());
        self
    }

    /// The repository's public key file (the server's `root.pub`). Required.
    pub fn trusted_key_path(mut self, path: impl Into<PathBuf>) -> Config {
        self.trusted_key_path = Some(path.into());
        self
    }

    /// A PEM CA file for the server (`backlot serve`'s `tls/ca.pem`); the system's by default.
    pub fn ca_path(mut self, path: impl Into<PathBuf>) -> Config {
        self.ca_path = Some(path.into());
        self
    }

    /// The APP of the catalog URL (checked against it); the URL's by default.
    pub fn app(mut self, app: impl Into<String>) -> Config {
        self.app = Some(app.into());
        self
    }

    /// The CHANNEL of the catalog URL (checked against it); the URL's by default.
    pub fn channel(mut self, channel: impl Into<String>) -> Config {
        self.channel = Some(channel.into());
        self
    }

    /// Bytes per second per connection at most; 0 (the default): no limit.
    pub fn bandwidth_limit(mut self, bytes_per_second: u64) -> Config {
        self.bandwidth_limit = Some(bytes_per_second);
        self
    }

    /// Time without progress before a request is retried, in whole seconds (rounded up);
    /// `Duration::ZERO` or unset: 60 s.
    pub fn stall_timeout(mut self, timeout: Duration) -> Config {
        self.stall_timeout = Some(timeout);
        self
    }

    /// Attempts after the first for a failed request (the library takes 0…1000); 4 by default.
    pub fn retries(mut self, retries: u32) -> Config {
        self.retries = Some(retries);
        self
    }

    /// Sends no device report (what the container holds and how its installs end, in aggregate and
    /// without an identifier: docs/privacy.md). Reports are sent by default.
    pub fn no_reports(mut self) -> Config {
        self.no_reports = true;
        self
    }

    /// What picks the variant of a pack with variants this device installs:
    /// `textureFormat=astc+etc2,deviceTier=high` (a key left out is detected). Detected by default.
    pub fn device_profile(mut self, profile: impl Into<String>) -> Config {
        self.device_profile = Some(profile.into());
        self
    }

    /// Opens a manager with this configuration: [`Manager::open`].
    pub fn open(&self) -> Result<Manager> {
        Manager::open(self)
    }
}

/// Apple's `AssetPack.Status` (the `BACKLOT_PACK_*` bits): an option set.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PackStatus(pub u32);

impl PackStatus {
    pub const DOWNLOAD_AVAILABLE: PackStatus = PackStatus(sys::BACKLOT_PACK_DOWNLOAD_AVAILABLE);
    pub const UPDATE_AVAILABLE: PackStatus = PackStatus(sys::BACKLOT_PACK_UPDATE_AVAILABLE);
    pub const UP_TO_DATE: PackStatus = PackStatus(sys::BACKLOT_PACK_UP_TO_DATE);
    pub const OUT_OF_DATE: PackStatus = PackStatus(sys::BACKLOT_PACK_OUT_OF_DATE);
    pub const OBSOLETE: PackStatus = PackStatus(sys::BACKLOT_PACK_OBSOLETE);
    pub const DOWNLOADING: PackStatus = PackStatus(sys::BACKLOT_PACK_DOWNLOADING);
    pub const DOWNLOADED: PackStatus = PackStatus(sys::BACKLOT_PACK_DOWNLOADED);

    const NAMES: [(PackStatus, &'static str); 7] = [
        (Self::DOWNLOAD_AVAILABLE, "DOWNLOAD_AVAILABLE"),
        (Self::UPDATE_AVAILABLE, "UPDATE_AVAILABLE"),
        (Self::UP_TO_DATE, "UP_TO_DATE"),
        (Self::OUT_OF_DATE, "OUT_OF_DATE"),
        (Self::OBSOLETE, "OBSOLETE"),
        (Self::DOWNLOADING, "DOWNLOADING"),
        (Self::DOWNLOADED, "DOWNLOADED"),
    ];

    /// The bits.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: PackStatus) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for PackStatus {
    type Output = PackStatus;
    fn bitor(self, other: PackStatus) -> PackStatus {
        PackStatus(self.0 | other.0)
    }
}

impl fmt::Debug for PackStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        let mut names = Vec::new();
        for (flag, name) in PackStatus::NAMES {
            if self.contains(flag) {
                names.push(name.to_string());
                rest &= !flag.0;
            }
        }
        if rest != 0 || names.is_empty() {
            names.push(format!("{rest:#x}"));
        }
        write!(f, "PackStatus({})", names.join(" | "))
    }
}

/// A pack the catalog offers this device (Apple's `AssetPack`), and its status against what is
/// installed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackInfo {
    pub id: String,
    /// The release's version.
    pub version: i64,
    /// Bytes of its archive.
    pub download_size: u64,
    pub status: PackStatus,
}

/// Apple's `AssetPackManager` over one container folder, fed by a channel's signed catalog
/// (`backlot_manager`). Every method may be called from any thread at once (`Manager` is `Send`
/// and `Sync`: share it with an `Arc`); dropping it closes the handle (`backlot_manager_close`):
/// calls still running on other threads end soon, downloads with [`Status::Cancelled`],
/// subscriptions stop, and the download delegate is dropped (none of its methods runs any more).
///
/// [`Status::Cancelled`]: crate::Status::Cancelled
pub struct Manager {
    handle: Handle,
    /// The registry number of the download delegate in place, if any.
    delegate: Mutex<Option<usize>>,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager").field("handle", &self.handle.0).finish()
    }
}

/// The `backlot_ensure_*` functions' type.
type EnsureFn = unsafe extern "C" fn(
    *mut sys::backlot_manager,
    *const c_char,
    sys::backlot_progress_fn,
    *mut c_void,
) -> sys::backlot_status;

/// What a progress trampoline is given: the caller's closure, and the panic it raised if any
/// (resumed on the calling thread once the C call returned).
struct ProgressContext<'a> {
    callback: &'a mut (dyn FnMut(u64, u64) + 'a),
    panic: Option<Box<dyn Any + Send + 'static>>,
}

unsafe extern "C" fn progress_trampoline(context: *mut c_void, completed: u64, total: u64) {
    if context.is_null() {
        return;
    }
    // SAFETY: `context` is the `ProgressContext` of `Manager::ensure`, alive and borrowed by
    // nothing else for the duration of the C call that runs this (on that same thread).
    let context = &mut *context.cast::<ProgressContext<'_>>();
    if context.panic.is_some() {
        return; // the closure panicked already: it is not called again
    }
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (context.callback)(completed, total))) {
        context.panic = Some(payload);
    }
}

/// What an exclusive-control trampoline is given: the body, then its result or its panic.
struct ExclusiveContext<F, R> {
    body: Option<F>,
    result: Option<R>,
    panic: Option<Box<dyn Any + Send + 'static>>,
}

unsafe extern "C" fn exclusive_trampoline<F: FnOnce() -> R, R>(context: *mut c_void) -> sys::backlot_status {
    if context.is_null() {
        return sys::BACKLOT_ERR_INTERNAL;
    }
    // SAFETY: `context` is the `ExclusiveContext<F, R>` of `with_exclusive_control`, alive for
    // the C call, which runs the body before it returns, on the calling thread.
    let context = &mut *context.cast::<ExclusiveContext<F, R>>();
    let Some(body) = context.body.take() else { return sys::BACKLOT_ERR_INTERNAL };
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => {
            context.result = Some(value);
            sys::BACKLOT_OK
        }
        Err(payload) => {
            context.panic = Some(payload);
            sys::BACKLOT_ERR_INTERNAL
        }
    }
}

impl Manager {
    /// Opens a manager (`backlot_manager_open`); nothing is downloaded yet.
    ///
    /// Errors: [`InvalidArgument`](crate::Status::InvalidArgument) (a required member missing,
    /// a number out of range), [`Usage`](crate::Status::Usage) (not a catalog URL, an app or
    /// channel that is not the URL's), [`InvalidInput`](crate::Status::InvalidInput) (the key
    /// file), [`Io`](crate::Status::Io) (the container).
    pub fn open(config: &Config) -> Result<Manager> {
        let container = config.container_path.as_deref().map(|p| c_path(p, "container_path")).transpose()?;
        let catalog = c_optional(config.catalog_url.as_deref(), "catalog_url")?;
        let key = config.trusted_key_path.as_deref().map(|p| c_path(p, "trusted_key_path")).transpose()?;
        let ca = config.ca_path.as_deref().map(|p| c_path(p, "ca_path")).transpose()?;
        let app = c_optional(config.app.as_deref(), "app")?;
        let channel = c_optional(config.channel.as_deref(), "channel")?;
        let profile = c_optional(config.device_profile.as_deref(), "device_profile")?;
        let stall_timeout = config
            .stall_timeout
            .map(|d| {
                let seconds = d.as_secs() + u64::from(d.subsec_nanos() > 0);
                u32::try_from(seconds)
                    .map_err(|_| Error::invalid_argument(format_args!("stall_timeout {seconds} s is too long")))
            })
            .transpose()?;

        // The library's defaults, then what was set.
        let mut raw: sys::backlot_config = initialised();
        raw.container_path = ptr_or_null(&container);
        raw.catalog_url = ptr_or_null(&catalog);
        raw.trusted_key_path = ptr_or_null(&key);
        raw.ca_path = ptr_or_null(&ca);
        raw.app = ptr_or_null(&app);
        raw.channel = ptr_or_null(&channel);
        if let Some(limit) = config.bandwidth_limit {
            raw.bandwidth_limit = limit;
        }
        if let Some(seconds) = stall_timeout {
            raw.stall_timeout = seconds;
        }
        if let Some(retries) = config.retries {
            // Out of the library's range (0…1000) is refused by the library itself.
            raw.retries = i32::try_from(retries).unwrap_or(i32::MAX);
        }
        raw.no_reports = i32::from(config.no_reports);
        raw.device_profile = ptr_or_null(&profile);
        let mut out: *mut sys::backlot_manager = ptr::null_mut();
        // SAFETY: `raw` and the strings it points at outlive the call, which copies them.
        check(unsafe { sys::backlot_manager_open(&raw, &mut out) })?;
        Ok(Manager { handle: Handle(out), delegate: Mutex::new(None) })
    }

    /// The raw handle, for calling [`crate::sys`] directly. It is closed when `self` drops.
    pub fn as_raw(&self) -> *mut sys::backlot_manager {
        self.handle.0
    }

    fn raw(&self) -> *mut sys::backlot_manager {
        self.handle.0
    }

    /// The container's device identifier, for staged rollouts.
    pub fn device_id(&self) -> Result<String> {
        let mut out: *mut c_char = ptr::null_mut();
        // SAFETY: an out pointer to a local; what the library sets is ours to free.
        check(unsafe { sys::backlot_device_id(self.raw(), &mut out) })?;
        Ok(unsafe { take_string(out) })
    }

    /// The device profile that picks the variant of a pack with variants
    /// ("textureFormat=astc+etc2,deviceTier=2"): the configuration's, else the one detected.
    pub fn device_profile(&self) -> Result<String> {
        let mut out: *mut c_char = ptr::null_mut();
        // SAFETY: an out pointer to a local; what the library sets is ours to free.
        check(unsafe { sys::backlot_device_profile(self.raw(), &mut out) })?;
        Ok(unsafe { take_string(out) })
    }

    /// Returns once the pack is installed and verified (Apple's `ensureLocalAvailability(of:)`):
    /// an installed release is used as it is; otherwise the catalog's current release is
    /// downloaded. Blocks the calling thread.
    ///
    /// `progress` is called on this thread with (bytes installed so far, bytes in all) as they
    /// arrive, and once at the end with completed == total == the pack's size (even for a
    /// download over before the first sample), or with (0, 0) when the pack was installed
    /// already and nothing was downloaded. If it panics, it is not called again,
    /// the call goes on to its end (call [`cancel`](Self::cancel) to stop a download), and the
    /// panic then resumes here.
    ///
    /// Errors: [`AssetPackNotFound`](crate::Status::AssetPackNotFound),
    /// [`Untrusted`](crate::Status::Untrusted), [`StaleCatalog`](crate::Status::StaleCatalog),
    /// [`Tls`](crate::Status::Tls), [`Io`](crate::Status::Io),
    /// [`CorruptArchive`](crate::Status::CorruptArchive), [`Cancelled`](crate::Status::Cancelled).
    pub fn ensure_local_availability(&self, pack_id: &str, progress: Option<&mut dyn FnMut(u64, u64)>) -> Result<()> {
        self.ensure(sys::backlot_ensure_local_availability, pack_id, progress)
    }

    /// The same, but an installed release older than the catalog's is updated first
    /// (`requireLatestVersion: true`).
    pub fn ensure_latest_availability(&self, pack_id: &str, progress: Option<&mut dyn FnMut(u64, u64)>) -> Result<()> {
        self.ensure(sys::backlot_ensure_latest_availability, pack_id, progress)
    }

    fn ensure(&self, function: EnsureFn, pack_id: &str, progress: Option<&mut dyn FnMut(u64, u64)>) -> Result<()> {
        let id = c_string(pack_id, "pack_id")?;
        let Some(callback) = progress else {
            // SAFETY: a valid C string for the duration of the call; no callback.
            return check(unsafe { function(self.raw(), id.as_ptr(), None, ptr::null_mut()) });
        };
        let mut context = ProgressContext { callback, panic: None };
        // SAFETY: the context lives on this frame for the whole call; the library calls the
        // trampoline on this thread only, before the call returns.
        let status = unsafe {
            function(
                self.raw(),
                id.as_ptr(),
                Some(progress_trampoline),
                (&mut context as *mut ProgressContext<'_>).cast(),
            )
        };
        if let Some(payload) = context.panic.take() {
            resume_unwind(payload);
        }
        check(status)
    }

    /// Cancels the running download of a pack (from any thread): its `ensure_*` call returns
    /// [`Cancelled`](crate::Status::Cancelled), the installed release (if any) is kept, and what
    /// arrived is kept for the next attempt. `Ok` whether or not a download was running.
    pub fn cancel(&self, pack_id: &str) -> Result<()> {
        let id = c_string(pack_id, "pack_id")?;
        // SAFETY: a valid C string for the duration of the call.
        check(unsafe { sys::backlot_cancel(self.raw(), id.as_ptr()) })
    }

    /// Updates every installed pack the catalog has a newer release of, and removes those it no
    /// longer offers (Apple's `checkForUpdates`): the IDs of the packs updated.
    pub fn check_for_updates(&self) -> Result<Vec<String>> {
        // SAFETY: out pointers to locals; the list is ours to free.
        self.list(|m, ids, count| unsafe { sys::backlot_check_for_updates(m, ids, count) })
    }

    /// Removes an installed pack (its files go; a later `ensure_*` downloads it again).
    pub fn remove(&self, pack_id: &str) -> Result<()> {
        let id = c_string(pack_id, "pack_id")?;
        // SAFETY: a valid C string for the duration of the call.
        check(unsafe { sys::backlot_remove(self.raw(), id.as_ptr()) })
    }

    /// A file of an installed pack, copied into memory (`path` as in the pack, `"Levels/1.txt"`).
    /// `pack_id` `None` searches every installed pack, in the order of their IDs' bytes.
    ///
    /// Errors: [`FileNotFound`](crate::Status::FileNotFound),
    /// [`AssetPackNotFound`](crate::Status::AssetPackNotFound), [`Io`](crate::Status::Io).
    pub fn contents(&self, path: &str, pack_id: Option<&str>) -> Result<Vec<u8>> {
        let (path, id) = file_arguments(path, pack_id)?;
        let mut data: *mut u8 = ptr::null_mut();
        let mut length: usize = 0;
        // SAFETY: valid C strings and out pointers to locals.
        let status =
            unsafe { sys::backlot_contents(self.raw(), path.as_ptr(), ptr_or_null(&id), &mut data, &mut length) };
        let buffer = Allocation(data.cast());
        check(status)?;
        if data.is_null() || length == 0 {
            return Ok(Vec::new());
        }
        // SAFETY: the library gave `length` bytes at `data`, freed when `buffer` drops.
        let bytes = unsafe { std::slice::from_raw_parts(data, length) }.to_vec();
        drop(buffer);
        Ok(bytes)
    }

    /// A file of an installed pack, opened read-only: read it as a `File`, or map it with a
    /// crate of your choice (`memmap2::Mmap::map(&file)`) to read a large file without a copy.
    /// Errors as [`contents`](Self::contents).
    #[cfg(unix)]
    pub fn descriptor(&self, path: &str, pack_id: Option<&str>) -> Result<std::fs::File> {
        use std::os::unix::io::FromRawFd;
        let (path, id) = file_arguments(path, pack_id)?;
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: valid C strings and an out pointer to a local.
        check(unsafe { sys::backlot_descriptor(self.raw(), path.as_ptr(), ptr_or_null(&id), &mut fd) })?;
        if fd < 0 {
            return Err(Error::new(sys::BACKLOT_ERR_INTERNAL, "libbacklot returned BACKLOT_OK and no descriptor"));
        }
        // SAFETY: the library opened `fd` for the caller, who closes it: the File owns it now.
        Ok(unsafe { std::fs::File::from_raw_fd(fd) })
    }

    /// Where a file of an installed pack is, for an engine's own loader. Errors as
    /// [`contents`](Self::contents).
    pub fn path(&self, path: &str, pack_id: Option<&str>) -> Result<PathBuf> {
        let (path, id) = file_arguments(path, pack_id)?;
        let mut out: *mut c_char = ptr::null_mut();
        // SAFETY: valid C strings and an out pointer to a local; the string is ours to free.
        check(unsafe { sys::backlot_path(self.raw(), path.as_ptr(), ptr_or_null(&id), &mut out) })?;
        Ok(unsafe { take_path(out) })
    }

    /// The pack with this ID as the catalog offers it now, and its status against what is
    /// installed (Apple's `assetPack(withID:)` and `status(ofAssetPackWithID:)`). Reads the catalog.
    pub fn asset_pack(&self, pack_id: &str) -> Result<PackInfo> {
        let id = c_string(pack_id, "pack_id")?;
        let mut info: sys::backlot_pack_info = initialised();
        // SAFETY: a valid C string and a struct the library initialised with this binding's size.
        let status = unsafe { sys::backlot_asset_pack(self.raw(), id.as_ptr(), &mut info) };
        let result = check(status).map(|()| PackInfo {
            // SAFETY: on success `info.id` is NULL or a C string the struct owns.
            id: unsafe { crate::strings::borrowed(info.id) },
            version: info.version,
            download_size: info.download_size,
            status: PackStatus(info.status),
        });
        // SAFETY: frees what the struct holds (its id), whatever the outcome.
        unsafe { sys::backlot_pack_info_clear(&mut info) };
        result
    }

    /// The IDs of every pack the catalog offers this device, sorted (Apple's `allAssetPacks`).
    pub fn all_asset_packs(&self) -> Result<Vec<String>> {
        // SAFETY: out pointers to locals; the list is ours to free.
        self.list(|m, ids, count| unsafe { sys::backlot_all_asset_packs(m, ids, count) })
    }

    /// The IDs of the packs installed in the container, sorted (no network).
    pub fn installed_packs(&self) -> Result<Vec<String>> {
        // SAFETY: out pointers to locals; the list is ours to free.
        self.list(|m, ids, count| unsafe { sys::backlot_installed_packs(m, ids, count) })
    }

    fn list(
        &self,
        call: impl FnOnce(*mut sys::backlot_manager, *mut *mut *mut c_char, *mut usize) -> sys::backlot_status,
    ) -> Result<Vec<String>> {
        let mut ids: *mut *mut c_char = ptr::null_mut();
        let mut count: usize = 0;
        let status = call(self.raw(), &mut ids, &mut count);
        if status != sys::BACKLOT_OK {
            let error = Error::last(status);
            // SAFETY: on failure the library sets NULL, but a block would be ours all the same.
            drop(unsafe { take_list(ids, 0) });
            return Err(error);
        }
        // SAFETY: on success `ids` is NULL (count 0) or one block of `count` strings, ours to free.
        Ok(unsafe { take_list(ids, count) })
    }

    /// Subscribes to the status updates of one pack's downloads (`Some(id)`) or of every pack
    /// (`None`): Apple's `statusUpdates`. The callback is called in order, one call at a time, on
    /// the library's threads (not always the same thread: hence `Send + Sync`; the callbacks of
    /// different subscriptions may run at the same time), until the [`Subscription`] is dropped;
    /// a panic in it is caught (and reported by the panic hook), never carried into the library.
    pub fn subscribe<F>(&self, pack_id: Option<&str>, callback: F) -> Result<Subscription>
    where
        F: Fn(&StatusUpdate) + Send + Sync + 'static,
    {
        updates::subscribe(self.handle, pack_id, callback)
    }

    /// Schedules a URL download for the background agent (or this process) to run (Apple's
    /// `BADownloadManager.scheduleDownload`); its outcome goes to the delegate
    /// ([`set_download_delegate`](Self::set_download_delegate)) or the downloader extension.
    /// Errors: `Status::Ba(ba::DOWNLOAD_ALREADY_SCHEDULED)`, `InvalidArgument`, …
    pub fn schedule_download(&self, download: &UrlDownload) -> Result<()> {
        downloads::with_raw(download, |raw| {
            // SAFETY: `raw` and its strings outlive the call, which copies them.
            check(unsafe { sys::backlot_schedule_download(self.raw(), raw) })
        })
    }

    /// Starts a URL download now, in this process (a scheduled one is promoted and goes on).
    pub fn start_foreground_download(&self, download: &UrlDownload) -> Result<()> {
        downloads::with_raw(download, |raw| {
            // SAFETY: `raw` and its strings outlive the call, which copies them.
            check(unsafe { sys::backlot_start_foreground_download(self.raw(), raw) })
        })
    }

    /// Cancels a scheduled or running URL download; what arrived is removed.
    /// `Status::Ba(ba::DOWNLOAD_NOT_SCHEDULED)` when it is not scheduled.
    pub fn cancel_download(&self, identifier: &str) -> Result<()> {
        let id = c_string(identifier, "identifier")?;
        // SAFETY: a valid C string for the duration of the call.
        check(unsafe { sys::backlot_cancel_download(self.raw(), id.as_ptr()) })
    }

    /// The identifiers of the URL downloads scheduled or running, sorted.
    pub fn current_downloads(&self) -> Result<Vec<String>> {
        // SAFETY: out pointers to locals; the list is ours to free.
        self.list(|m, ids, count| unsafe { sys::backlot_current_downloads(m, ids, count) })
    }

    /// Sets what this process is told about its URL downloads (Apple's
    /// `BADownloadManagerDelegate`), replacing any delegate set before. Its methods run on a
    /// thread of the download manager's; a panic in one is caught. Once this returns, no method
    /// of the delegate it replaced runs any more (the call waits for one that is running), and
    /// that delegate has been dropped.
    ///
    /// Called from within a delegate method, it does not wait for that method (which keeps its
    /// delegate alive until it returns). Setting or removing the delegate is serialised per
    /// manager: do not do it from within a delegate method while another thread may do it too,
    /// as each would wait for the other.
    pub fn set_download_delegate<D: DownloadDelegate>(&self, delegate: D) -> Result<()> {
        let mut current = self.delegate.lock().unwrap_or_else(|p| p.into_inner());
        let token = downloads::DELEGATES.insert(std::sync::Arc::new(delegate));
        let functions = downloads::delegate_functions();
        // SAFETY: the struct is copied by the call; the context is a registry number.
        let status = unsafe { sys::backlot_set_download_delegate(self.raw(), &functions, token as *mut c_void) };
        if status != sys::BACKLOT_OK {
            let error = Error::last(status);
            drop(current);
            drop(downloads::DELEGATES.remove(token));
            return Err(error);
        }
        let previous = current.replace(token);
        drop(current);
        if let Some(previous) = previous {
            drop(downloads::DELEGATES.remove(previous));
        }
        Ok(())
    }

    /// Removes the delegate: outcomes go to the downloader extension again. Once this returns, no
    /// method of the delegate runs any more, and it has been dropped (as for
    /// [`set_download_delegate`](Self::set_download_delegate)).
    pub fn remove_download_delegate(&self) -> Result<()> {
        let mut current = self.delegate.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: NULL removes the delegate.
        check(unsafe { sys::backlot_set_download_delegate(self.raw(), ptr::null(), ptr::null_mut()) })?;
        let previous = current.take();
        drop(current);
        if let Some(previous) = previous {
            drop(downloads::DELEGATES.remove(previous));
        }
        Ok(())
    }

    /// Runs `body` on this thread while holding the container's exclusive control of its URL
    /// downloads, shared by the app, its extension and the agent (Apple's
    /// `withExclusiveControl`), and returns what it returns. Waits at most `timeout` for it
    /// (`None`: as long as it takes; `Some(Duration::ZERO)`: tries once), then fails with
    /// [`Unavailable`](crate::Status::Unavailable). A panic in `body` resumes here once the
    /// control is released.
    pub fn with_exclusive_control<R, F: FnOnce() -> R>(&self, timeout: Option<Duration>, body: F) -> Result<R> {
        let seconds = timeout.map_or(-1.0, |t| t.as_secs_f64());
        let mut context = ExclusiveContext::<F, R> { body: Some(body), result: None, panic: None };
        // SAFETY: the context lives on this frame for the call, which runs the body (if at all)
        // on this thread before it returns.
        let status = unsafe {
            sys::backlot_with_exclusive_control(
                self.raw(),
                seconds,
                Some(exclusive_trampoline::<F, R>),
                (&mut context as *mut ExclusiveContext<F, R>).cast(),
            )
        };
        if let Some(payload) = context.panic.take() {
            resume_unwind(payload);
        }
        check(status)?;
        context.result.take().ok_or_else(|| {
            Error::new(sys::BACKLOT_ERR_INTERNAL, "libbacklot returned BACKLOT_OK without running the body")
        })
    }
}

fn file_arguments(path: &str, pack_id: Option<&str>) -> Result<(CString, Option<CString>)> {
    Ok((c_string(path, "path")?, c_optional(pack_id, "pack_id")?))
}

impl Drop for Manager {
    fn drop(&mut self) {
        // SAFETY: the handle is ours; closing a handle twice or a closed one is harmless anyway.
        unsafe { sys::backlot_manager_close(self.handle.0) };
        let delegate = self.delegate.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(token) = delegate {
            drop(downloads::DELEGATES.remove(token));
        }
    }
}
