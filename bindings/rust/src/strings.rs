//! Strings and buffers across the boundary: Rust strings and paths to C strings (an interior NUL
//! is an [`Error`], never a panic), and what the library allocates back to owned Rust values,
//! each freed once with `backlot_free`.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::ptr;

use crate::error::{Error, Result};
use crate::sys;

/// `text` as a C string; `what` names the argument in the error.
pub(crate) fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text)
        .map_err(|e| Error::invalid_argument(format_args!("{what} holds a NUL byte at byte {}", e.nul_position())))
}

pub(crate) fn c_optional(text: Option<&str>, what: &str) -> Result<Option<CString>> {
    text.map(|t| c_string(t, what)).transpose()
}

/// A path as a C string: its bytes on Unix (the library refuses what is not UTF-8).
pub(crate) fn c_path(path: &Path, what: &str) -> Result<CString> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path
        .to_str()
        .ok_or_else(|| Error::invalid_argument(format_args!("{what} is not UTF-8: {}", path.display())))?
        .as_bytes()
        .to_vec();
    CString::new(bytes)
        .map_err(|e| Error::invalid_argument(format_args!("{what} holds a NUL byte at byte {}", e.nul_position())))
}

/// The pointer of an optional C string: NULL for none.
pub(crate) fn ptr_or_null(text: &Option<CString>) -> *const c_char {
    text.as_ref().map_or(ptr::null(), |t| t.as_ptr())
}

/// A buffer the library allocated: freed with `backlot_free` when dropped, whatever happens.
pub(crate) struct Allocation(pub(crate) *mut c_void);

impl Drop for Allocation {
    fn drop(&mut self) {
        // SAFETY: the pointer came from the library (or is NULL, which backlot_free ignores),
        // and this is its only owner.
        unsafe { sys::backlot_free(self.0) }
    }
}

/// Copies a NUL-terminated string the library allocated, then frees it.
///
/// # Safety
/// `pointer` is NULL or a string the library allocated, owned by the caller.
pub(crate) unsafe fn take_string(pointer: *mut c_char) -> String {
    let _owner = Allocation(pointer.cast());
    if pointer.is_null() {
        return String::new();
    }
    CStr::from_ptr(pointer).to_string_lossy().into_owned()
}

/// The same, as a path (its bytes as they are on Unix).
///
/// # Safety
/// As [`take_string`].
pub(crate) unsafe fn take_path(pointer: *mut c_char) -> PathBuf {
    let _owner = Allocation(pointer.cast());
    if pointer.is_null() {
        return PathBuf::new();
    }
    path_of(CStr::from_ptr(pointer))
}

/// A C string as a path.
pub(crate) fn path_of(text: &CStr) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(text.to_bytes()))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(text.to_string_lossy().into_owned())
    }
}

/// Copies a list of strings the library allocated (`count` pointers in one block), then frees
/// the block with one `backlot_free`.
///
/// # Safety
/// `list` is NULL or a string list of the library holding at least `count` strings, owned by
/// the caller.
pub(crate) unsafe fn take_list(list: *mut *mut c_char, count: usize) -> Vec<String> {
    let _owner = Allocation(list.cast());
    if list.is_null() {
        return Vec::new();
    }
    (0..count)
        .map(|i| {
            let item = *list.add(i);
            if item.is_null() {
                String::new()
            } else {
                CStr::from_ptr(item).to_string_lossy().into_owned()
            }
        })
        .collect()
}

/// A borrowed C string of a callback as text ("" for NULL).
///
/// # Safety
/// `pointer` is NULL or a NUL-terminated string valid for the call.
pub(crate) unsafe fn borrowed(pointer: *const c_char) -> String {
    if pointer.is_null() {
        String::new()
    } else {
        CStr::from_ptr(pointer).to_string_lossy().into_owned()
    }
}
