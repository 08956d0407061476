//! Status updates through subscribe, and what dropping a subscription does.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backlot::{StatusUpdate, UpdateKind};
use common::{wait_until, TempDir};

fn recorder() -> (Arc<Mutex<Vec<StatusUpdate>>>, impl Fn(&StatusUpdate) + Send + Sync + 'static) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    (log, move |update: &StatusUpdate| sink.lock().unwrap().push(update.clone()))
}

fn kinds(log: &Mutex<Vec<StatusUpdate>>) -> Vec<UpdateKind> {
    log.lock().unwrap().iter().map(|u| u.kind).collect()
}

#[test]
fn subscribers_see_began_downloading_finished() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("updates");
    let manager = env.config(&dir.container()).bandwidth_limit(10_000_000).open().unwrap();

    let (of_pack, record_pack) = recorder();
    let (of_all, record_all) = recorder();
    let (of_other, record_other) = recorder();
    let pack_subscription = manager.subscribe(Some(&env.pack), record_pack).unwrap();
    let all_subscription = manager.subscribe(None, record_all).unwrap();
    let other_subscription = manager.subscribe(Some("SomeOtherPack"), record_other).unwrap();
    assert_ne!(pack_subscription.id(), all_subscription.id());

    manager.ensure_local_availability(&env.pack, None).unwrap();
    for log in [&of_pack, &of_all] {
        assert!(
            wait_until(20, || kinds(log).last() == Some(&UpdateKind::Finished)),
            "FINISHED arrives: {:?}",
            kinds(log)
        );
        let updates = log.lock().unwrap().clone();
        assert_eq!(updates.first().map(|u| u.kind), Some(UpdateKind::Began), "{updates:?}");
        assert!(updates.iter().any(|u| u.kind == UpdateKind::Downloading), "{updates:?}");
        assert!(updates.iter().all(|u| u.pack_id == env.pack && u.error.is_none()), "{updates:?}");
        let finished = updates.last().unwrap();
        assert_eq!(finished.completed_bytes, finished.total_bytes, "{finished:?}");
        assert!(finished.total_bytes > 0, "{finished:?}");
        let downloading: Vec<u64> =
            updates.iter().filter(|u| u.kind == UpdateKind::Downloading).map(|u| u.completed_bytes).collect();
        assert!(downloading.windows(2).all(|w| w[0] <= w[1]), "in order: {downloading:?}");
    }
    assert!(kinds(&of_other).is_empty(), "another pack's subscriber hears nothing");

    // Dropped: no more calls, even for a new download.
    drop(pack_subscription);
    other_subscription.unsubscribe().unwrap();
    let heard = of_pack.lock().unwrap().len();
    let heard_all = of_all.lock().unwrap().len();
    manager.remove(&env.pack).unwrap();
    manager.ensure_local_availability(&env.pack, None).unwrap();
    assert!(wait_until(20, || of_all.lock().unwrap().len() > heard_all), "the open subscription hears it");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(of_pack.lock().unwrap().len(), heard, "nothing after the subscription was dropped");
    drop(all_subscription);
}

#[test]
fn a_panicking_subscriber_does_not_reach_the_library() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("updates-panic");
    let manager = env.open(&dir.container());

    let panics = Arc::new(AtomicUsize::new(0));
    let counter = panics.clone();
    let _panicking = manager
        .subscribe(None, move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            panic!("a panic in a status callback (expected by the test)");
        })
        .unwrap();
    let (log, record) = recorder();
    let _recording = manager.subscribe(None, record).unwrap();

    manager.ensure_local_availability(&env.pack, None).unwrap();
    assert!(wait_until(20, || kinds(&log).last() == Some(&UpdateKind::Finished)), "{:?}", kinds(&log));
    assert!(wait_until(5, || panics.load(Ordering::SeqCst) >= 2), "the panicking one was called each time");
    assert_eq!(manager.contents(&env.file("1.txt"), None).unwrap(), env.source_file(&env.file("1.txt")));
}

#[test]
fn a_subscription_may_end_itself_from_its_callback_and_may_outlive_its_manager() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("updates-self");
    let manager = env.open(&dir.container());

    // A subscription that drops itself on its first update.
    let slot: Arc<Mutex<Option<backlot::Subscription>>> = Arc::new(Mutex::new(None));
    let calls = Arc::new(AtomicUsize::new(0));
    let (inner_slot, inner_calls) = (slot.clone(), calls.clone());
    let subscription = manager
        .subscribe(None, move |_| {
            inner_calls.fetch_add(1, Ordering::SeqCst);
            let me = inner_slot.lock().unwrap().take();
            drop(me);
        })
        .unwrap();
    *slot.lock().unwrap() = Some(subscription);
    manager.ensure_local_availability(&env.pack, None).unwrap();
    assert!(wait_until(10, || slot.lock().unwrap().is_none()), "it ended itself");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no call after it ended itself");

    // One that outlives its manager: closing the manager ended it; dropping it later is fine.
    let (_, record) = recorder();
    let late = manager.subscribe(None, record).unwrap();
    drop(manager);
    let error = late.unsubscribe().unwrap_err();
    assert_eq!(error.kind(), backlot::Status::ClosedHandle, "{error}");
}

/// What subscription B's raw callback records (the library's own calls, not the binding's).
struct RawCounter {
    calls: AtomicUsize,
    running: AtomicUsize,
}

static RAW_B: RawCounter = RawCounter { calls: AtomicUsize::new(0), running: AtomicUsize::new(0) };

unsafe extern "C" fn raw_b(context: *mut std::ffi::c_void, _update: *const backlot::sys::backlot_status_update) {
    // SAFETY: the context is &RAW_B, a static.
    let counter = &*context.cast::<RawCounter>();
    counter.running.fetch_add(1, Ordering::SeqCst);
    counter.calls.fetch_add(1, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(200));
    counter.running.fetch_sub(1, Ordering::SeqCst);
}

/// What subscription A saw right after ending B from its callback.
#[derive(Debug, Clone)]
struct Seen {
    safe_b_running: bool,
    safe_b_closure_alive: bool,
    raw_b_running: usize,
    raw_b_calls: usize,
    raw_unsubscribed: backlot::sys::backlot_status,
}

#[test]
fn a_subscription_ended_from_another_ones_callback_is_waited_for_and_never_called_again() {
    let Some(env) = common::env() else { return };
    let dir = TempDir::new("updates-other");
    let manager = env.config(&dir.container()).bandwidth_limit(10_000_000).open().unwrap();

    // B, through the binding: slow, so that it is likely running when A ends it.
    let b_running = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let b_token = Arc::new(()); // held by B's closure: its strong count says whether the closure lives
    let b_calls = Arc::new(AtomicUsize::new(0));
    let safe_b = {
        let (running, token, calls) = (b_running.clone(), b_token.clone(), b_calls.clone());
        manager
            .subscribe(None, move |_| {
                let _held = &token;
                running.store(true, Ordering::SeqCst);
                calls.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(100));
                running.store(false, Ordering::SeqCst);
            })
            .unwrap()
    };
    // B again, straight through the C interface: what the library itself calls.
    let mut raw_number = 0u64;
    // SAFETY: a static context; the callback is a plain function.
    let status = unsafe {
        backlot::sys::backlot_subscribe(
            manager.as_raw(),
            std::ptr::null(),
            Some(raw_b),
            (&RAW_B as *const RawCounter).cast_mut().cast(),
            &mut raw_number,
        )
    };
    assert_eq!(status, backlot::sys::BACKLOT_OK);

    // A ends both on its first update, after a moment (B's got the same update meanwhile).
    let slot = Arc::new(Mutex::new(Some(safe_b)));
    let seen = Arc::new(Mutex::new(None::<Seen>));
    let handle = manager.as_raw() as usize; // a number of the library's table, not a pointer
    let a = {
        let (slot, seen, b_running, b_token) = (slot.clone(), seen.clone(), b_running.clone(), b_token.clone());
        manager
            .subscribe(None, move |_| {
                let Some(b) = slot.lock().unwrap().take() else { return };
                std::thread::sleep(Duration::from_millis(30));
                drop(b);
                // SAFETY: the manager's handle (refused if closed) and the subscription's number.
                let status = unsafe { backlot::sys::backlot_unsubscribe(handle as *mut _, raw_number) };
                *seen.lock().unwrap() = Some(Seen {
                    safe_b_running: b_running.load(Ordering::SeqCst),
                    safe_b_closure_alive: Arc::strong_count(&b_token) > 2, // more than this closure's and the test's
                    raw_b_running: RAW_B.running.load(Ordering::SeqCst),
                    raw_b_calls: RAW_B.calls.load(Ordering::SeqCst),
                    raw_unsubscribed: status,
                });
            })
            .unwrap()
    };

    manager.ensure_local_availability(&env.pack, None).unwrap();
    assert!(wait_until(20, || seen.lock().unwrap().is_some()), "A ran");
    let seen = seen.lock().unwrap().clone().unwrap();
    assert_eq!(seen.raw_unsubscribed, backlot::sys::BACKLOT_OK, "{seen:?}");
    assert!(!seen.safe_b_running, "B's closure was running after it was dropped: {seen:?}");
    assert!(!seen.safe_b_closure_alive, "B's closure was not dropped with it: {seen:?}");
    assert_eq!(seen.raw_b_running, 0, "B's C callback was running after backlot_unsubscribe returned: {seen:?}");

    // Nothing more for either B, through the rest of this download and another one.
    std::thread::sleep(Duration::from_millis(300));
    manager.remove(&env.pack).unwrap();
    manager.ensure_local_availability(&env.pack, None).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(RAW_B.calls.load(Ordering::SeqCst), seen.raw_b_calls, "B's C callback was called after it ended");
    drop(a);
    assert_eq!(Arc::strong_count(&b_token), 1, "B's closure and A's are gone");
    assert!(b_calls.load(Ordering::SeqCst) >= 1, "B heard the download's first update");
}
