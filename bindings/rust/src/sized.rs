//! The structs of the header that may grow (`backlot_config`, `backlot_pack_info`,
//! `backlot_url_download`, `backlot_download_delegate`), made by the library's `_init_size`
//! functions with this binding's own size: the defaults live in one place, the library, and a
//! library whose structs are larger fills no more than this binding's struct holds.

use std::mem::{size_of, MaybeUninit};

use crate::sys;

/// A struct of the header that starts with its `size` and has an `_init_size` function.
///
/// # Safety
/// `INIT_SIZE` is the struct's `_init_size` function, which writes at most the size it is given;
/// and all-zero bytes are a valid value of the struct (NULL pointers, `None`, zero numbers).
pub(crate) unsafe trait Growable: Sized {
    const INIT_SIZE: unsafe extern "C" fn(*mut Self, usize);
}

// SAFETY (all four): the header's _init_size functions of these structs, each of which holds only
// numbers, raw pointers and nullable function pointers.
unsafe impl Growable for sys::backlot_config {
    const INIT_SIZE: unsafe extern "C" fn(*mut Self, usize) = sys::backlot_config_init_size;
}
unsafe impl Growable for sys::backlot_pack_info {
    const INIT_SIZE: unsafe extern "C" fn(*mut Self, usize) = sys::backlot_pack_info_init_size;
}
unsafe impl Growable for sys::backlot_url_download {
    const INIT_SIZE: unsafe extern "C" fn(*mut Self, usize) = sys::backlot_url_download_init_size;
}
unsafe impl Growable for sys::backlot_download_delegate {
    const INIT_SIZE: unsafe extern "C" fn(*mut Self, usize) = sys::backlot_download_delegate_init_size;
}

/// The struct as the library initialises it: `T`'s `_init_size(&t, size_of::<T>())`, which sets
/// every member to its default and `size` to `size_of::<T>()`.
pub(crate) fn initialised<T: Growable>() -> T {
    let mut value = MaybeUninit::<T>::zeroed();
    // SAFETY: the storage is `size_of::<T>()` bytes, all the function may write; it starts all
    // zero, a valid `T` (the trait's promise), so it is one whatever the function wrote.
    unsafe {
        T::INIT_SIZE(value.as_mut_ptr(), size_of::<T>());
        value.assume_init()
    }
}
