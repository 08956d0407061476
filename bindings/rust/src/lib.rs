//! Rust bindings to **libbacklot**, the client of Backlot (an open, self-hostable version of
//! Apple's Background Assets): install asset packs from a channel's signed catalog, keep them up
//! to date, read their files, and run URL downloads, with every signature and hash verified
//! before a byte is used.
//!
//! The crate has no dependencies: [`sys`] declares the C interface of `backlot.h` by hand, and
//! the rest wraps it safely. It links `libbacklot.so.0`, found by its build script through
//! `BACKLOT_LIB_DIR`, `pkg-config backlot` or the system's library folders.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! let manager = Arc::new(
//!     backlot::Config::new()
//!         .container_path("/var/lib/mygame/assets")
//!         .catalog_url("https://cdn.example.com/v1/apps/com.example.game/production/catalog.json")
//!         .trusted_key_path("/usr/share/mygame/root.pub")
//!         .open()?,
//! );
//! let updates = manager.subscribe(Some("Levels"), |update| println!("{:?}", update.kind))?;
//! manager.ensure_local_availability("Levels", Some(&mut |done: u64, total: u64| {
//!     println!("{done} of {total} bytes");
//! }))?;
//! let level = manager.contents("Levels/1.json", None)?;
//! drop(updates);
//! # Ok::<(), backlot::Error>(())
//! ```
//!
//! The rules of the C interface hold here too: every method may be called from any thread at
//! once ([`Manager`] is `Send` and `Sync`); a failure is an [`Error`] with the library's status
//! and message; everything the library allocates is copied and freed; callbacks never unwind
//! into the library (a panic in a progress callback or an exclusive-control body resumes on the
//! calling thread after the call; one in a subscription or a delegate is caught).

#![warn(missing_debug_implementations)]

pub mod sys;

mod downloads;
mod error;
mod manager;
mod registry;
mod sized;
mod strings;
mod updates;

pub use downloads::{DownloadDelegate, UrlDownload};
pub use error::{ba, status_name, Error, Result, Status};
pub use manager::{Config, Manager, PackInfo, PackStatus};
pub use updates::{StatusUpdate, Subscription, UpdateKind};

/// The version of the C interface this crate was written against (`BACKLOT_ABI_VERSION`).
pub const ABI_VERSION: i32 = sys::BACKLOT_ABI_VERSION;

/// The library's version (`"1.4.0"`).
pub fn version() -> &'static str {
    // SAFETY: the header promises a static, NUL-terminated string.
    unsafe {
        let pointer = sys::backlot_version();
        if pointer.is_null() {
            return "";
        }
        std::ffi::CStr::from_ptr(pointer).to_str().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn the_shared_types_are_send_and_sync() {
        assert_send_sync::<crate::Manager>();
        assert_send_sync::<crate::Subscription>();
        assert_send_sync::<crate::Error>();
    }
}
