//! Status updates (Apple's `statusUpdates`): [`StatusUpdate`], and the [`Subscription`] that
//! delivers them to a closure until it is dropped.

use std::ffi::c_void;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::error::{check, Error, Result};
use crate::manager::Handle;
use crate::registry::Registry;
use crate::strings::{borrowed, c_optional, ptr_or_null};
use crate::sys;

/// What happened to a pack's download.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UpdateKind {
    /// `BACKLOT_UPDATE_BEGAN`.
    Began,
    /// `BACKLOT_UPDATE_DOWNLOADING`: sent again each time `completed_bytes` changes.
    Downloading,
    /// `BACKLOT_UPDATE_PAUSED`: queued behind another process of the container.
    Paused,
    /// `BACKLOT_UPDATE_FINISHED`.
    Finished,
    /// `BACKLOT_UPDATE_FAILED`: [`StatusUpdate::error`] says why.
    Failed,
    /// A kind this binding does not know (a newer library).
    Other(i32),
}

impl UpdateKind {
    fn from_raw(kind: i32) -> UpdateKind {
        match kind {
            sys::BACKLOT_UPDATE_BEGAN => UpdateKind::Began,
            sys::BACKLOT_UPDATE_DOWNLOADING => UpdateKind::Downloading,
            sys::BACKLOT_UPDATE_PAUSED => UpdateKind::Paused,
            sys::BACKLOT_UPDATE_FINISHED => UpdateKind::Finished,
            sys::BACKLOT_UPDATE_FAILED => UpdateKind::Failed,
            other => UpdateKind::Other(other),
        }
    }
}

/// One status update (`backlot_status_update`), copied: it may be kept after the callback.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatusUpdate {
    pub kind: UpdateKind,
    pub pack_id: String,
    /// For `Downloading` and `Finished`.
    pub completed_bytes: u64,
    pub total_bytes: u64,
    /// For `Failed`: the failure (its status and message).
    pub error: Option<Error>,
}

type Callback = dyn Fn(&StatusUpdate) + Send + Sync + 'static;

/// The closures of the open subscriptions, by the number their C context holds.
static SUBSCRIBERS: Registry<Callback> = Registry::new();

unsafe extern "C" fn status_trampoline(context: *mut c_void, update: *const sys::backlot_status_update) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Some(callback) = SUBSCRIBERS.get(context as usize) else { return };
        if update.is_null() {
            return;
        }
        // SAFETY: the library hands a valid update, its strings valid during this call; every
        // member read is in the first release's struct, which is the least any library sends.
        let raw = &*update;
        let error = if raw.kind == sys::BACKLOT_UPDATE_FAILED {
            Some(Error::new(raw.error, borrowed(raw.error_message)))
        } else {
            None
        };
        let copy = StatusUpdate {
            kind: UpdateKind::from_raw(raw.kind),
            pack_id: borrowed(raw.pack_id),
            completed_bytes: raw.completed_bytes,
            total_bytes: raw.total_bytes,
            error,
        };
        callback(&copy);
    }));
}

pub(crate) fn subscribe<F>(handle: Handle, pack_id: Option<&str>, callback: F) -> Result<Subscription>
where
    F: Fn(&StatusUpdate) + Send + Sync + 'static,
{
    let id = c_optional(pack_id, "pack_id")?;
    // In the table before the library can call it.
    let token = SUBSCRIBERS.insert(Arc::new(callback));
    let mut number: u64 = 0;
    // SAFETY: a valid (or NULL) C string for the call; the context is a registry number.
    let status = unsafe {
        sys::backlot_subscribe(handle.0, ptr_or_null(&id), Some(status_trampoline), token as *mut c_void, &mut number)
    };
    if status != sys::BACKLOT_OK {
        let error = Error::last(status);
        drop(SUBSCRIBERS.remove(token));
        return Err(error);
    }
    Ok(Subscription { handle, number, token })
}

/// An open subscription ([`Manager::subscribe`](crate::Manager::subscribe)): dropping it
/// unsubscribes (`backlot_unsubscribe`), which waits for a call of its closure that is running
/// (also when it is dropped from another subscription's closure), after which the closure is not
/// called again and is dropped. Dropped from its own closure, it does not wait for that call,
/// which keeps the closure alive until it returns. A subscription outliving its manager receives
/// nothing more (closing the manager ended it).
pub struct Subscription {
    handle: Handle,
    number: u64,
    /// The registry number of the closure; 0 once ended.
    token: usize,
}

impl Subscription {
    /// The library's number of the subscription.
    pub fn id(&self) -> u64 {
        self.number
    }

    /// Ends the subscription now, with the library's answer: an error when the manager was
    /// closed already ([`ClosedHandle`](crate::Status::ClosedHandle)), which ended it.
    pub fn unsubscribe(mut self) -> Result<()> {
        self.end()
    }

    fn end(&mut self) -> Result<()> {
        if self.token == 0 {
            return Ok(());
        }
        // SAFETY: the handle is a number the library checks (a closed one is refused).
        let status = unsafe { sys::backlot_unsubscribe(self.handle.0, self.number) };
        let result = check(status);
        let callback = SUBSCRIBERS.remove(self.token);
        self.token = 0;
        drop(callback);
        result
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription").field("id", &self.number).field("open", &(self.token != 0)).finish()
    }
}
