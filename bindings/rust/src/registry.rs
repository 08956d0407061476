//! The Rust callbacks that the library's threads call (status updates, the download delegate),
//! kept in a table: the `void *context` handed to C is the entry's number, not a pointer.
//!
//! The library promises that once `backlot_unsubscribe`, `backlot_set_download_delegate` or
//! `backlot_manager_close` returns, the callback it ended runs no more, with one exception: called
//! from within that very callback (a subscription dropped from its own closure, a delegate
//! replaced from one of its methods), it does not wait for that call. A trampoline therefore
//! looks its number up and holds the callback (an `Arc`) for the duration of the call, so that
//! the running call keeps its closure alive until it returns, and removing an entry is safe at
//! any moment. Should the library still call a number whose entry is gone (a subscription whose
//! `backlot_unsubscribe` failed, so that the binding cannot know it ended), the call finds
//! nothing and returns. Numbers are never reused.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub(crate) struct Registry<T: ?Sized> {
    entries: Mutex<BTreeMap<usize, Arc<T>>>,
    next: AtomicUsize,
}

impl<T: ?Sized> Registry<T> {
    pub(crate) const fn new() -> Registry<T> {
        Registry { entries: Mutex::new(BTreeMap::new()), next: AtomicUsize::new(1) }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<usize, Arc<T>>> {
        // Nothing runs user code while holding the lock, so a poisoned lock holds a sound table.
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds an entry: its number (never 0).
    pub(crate) fn insert(&self, value: Arc<T>) -> usize {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(token, value);
        token
    }

    pub(crate) fn get(&self, token: usize) -> Option<Arc<T>> {
        self.lock().get(&token).cloned()
    }

    /// Removes an entry and returns it, for the caller to drop once the lock is released (its
    /// drop may run any code).
    pub(crate) fn remove(&self, token: usize) -> Option<Arc<T>> {
        self.lock().remove(&token)
    }
}
