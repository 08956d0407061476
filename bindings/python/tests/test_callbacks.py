"""Callbacks: exceptions that must not cross into C, lifetimes, URL downloads, exclusive control."""

from __future__ import annotations

import gc
import shutil
import ssl
import threading
import time
import urllib.request
import weakref
from pathlib import Path
from typing import Callable, List, Tuple

import pytest
from support import Env, backlot


def wait_until(condition: Callable[[], bool], seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class Stop(Exception):
    pass


def test_an_exception_in_progress_cancels_and_is_raised(open_manager, env: Env) -> None:
    manager = open_manager(bandwidth_limit=256 * 1024)  # slow enough to stop mid-download
    calls: List[Tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        calls.append((done, total))
        if done > 0:
            raise Stop("enough")

    with pytest.raises(Stop, match="enough"):
        manager.ensure_local_availability(env.pack, progress=progress)
    assert calls and calls[-1][0] > 0
    assert len([c for c in calls if c[0] > 0]) == 1, "progress was called again after it raised"
    assert manager.installed_packs() == [], "the download went on"


def test_an_exception_in_the_last_progress_call_is_raised(open_manager, env: Env) -> None:
    manager = open_manager()

    def progress(done: int, total: int) -> None:
        if done == total:
            raise Stop("at the end")

    with pytest.raises(Stop):
        manager.ensure_local_availability(env.pack, progress=progress)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_exception_in_a_subscription_is_kept(open_manager, env: Env) -> None:
    manager = open_manager()
    seen: List[backlot.StatusUpdate] = []

    def callback(update: backlot.StatusUpdate) -> None:
        seen.append(update)
        raise Stop(update.kind.name if isinstance(update.kind, backlot.UpdateKind) else str(update.kind))

    subscription = manager.subscribe(callback, env.pack)
    manager.ensure_local_availability(env.pack)
    assert wait_until(lambda: any(u.kind == backlot.UpdateKind.FINISHED for u in seen)), seen
    assert isinstance(subscription.exception, Stop) and str(subscription.exception) == "BEGAN"
    assert len(seen) >= 2, "the subscription stopped after the first exception"
    subscription.unsubscribe()
    assert manager.contents("Levels/1.txt") == b"the first level\n"


def test_unsubscribe_and_other_calls_from_the_callback(open_manager, env: Env) -> None:
    manager = open_manager()
    done = threading.Event()
    results: List[object] = []

    def callback(update: backlot.StatusUpdate) -> None:
        if update.kind == backlot.UpdateKind.FINISHED and not done.is_set():
            results.append(manager.installed_packs())  # a call back into the library
            try:
                manager.close()  # not allowed from its own callback
            except RuntimeError as error:
                results.append(error)
            subscription.unsubscribe()  # allowed: returns at once
            done.set()

    subscription = manager.subscribe(callback)
    manager.ensure_local_availability(env.pack)
    assert done.wait(30)
    assert results[0] == [env.pack] and isinstance(results[1], RuntimeError), results
    assert wait_until(lambda: not subscription.active)
    assert not manager.closed


def test_callbacks_outlive_what_made_them(open_manager, env: Env) -> None:
    # Subscriptions dropped without unsubscribe, callables that go out of scope: the library
    # may still call them; the ctypes function pointers must stay valid (no crash).
    manager = open_manager()
    counts: List[int] = []

    def make() -> backlot.Subscription:
        box: List[int] = []

        def callback(update: backlot.StatusUpdate) -> None:
            box.append(1)
            counts.append(len(box))

        return manager.subscribe(callback)

    for _ in range(5):
        make()
    gc.collect()
    manager.ensure_local_availability(env.pack)
    assert wait_until(lambda: len(counts) >= 5 * 3), counts  # BEGAN, DOWNLOADING, FINISHED each
    manager.close()
    gc.collect()


def test_a_manager_that_is_collected_is_closed(tmp_path: Path, env: Env) -> None:
    manager = backlot.Manager(str(tmp_path / "c"), env.catalog_url, env.root_pub, ca_path=env.ca)
    state = manager._state
    seen: List[backlot.StatusUpdate] = []
    manager.subscribe(seen.append)
    ref = weakref.ref(manager)
    del manager
    gc.collect()
    assert ref() is None, "an open subscription must not keep the Manager alive"
    assert state.closed and not state.subscriptions


def test_exclusive_control(open_manager, env: Env) -> None:
    manager = open_manager()
    ran: List[str] = []

    def body() -> str:
        ran.append(threading.current_thread().name)
        manager.current_downloads()  # the library may be called from the body
        return "done"

    assert manager.with_exclusive_control(body) == "done"
    assert manager.with_exclusive_control(body, timeout=5.0) == "done"
    assert manager.with_exclusive_control(lambda: 7, timeout=0) == 7
    assert manager.with_exclusive_control(lambda: None, timeout=None) is None
    assert ran == [threading.current_thread().name] * 2, "the body runs on the calling thread"
    with pytest.raises(Stop):
        manager.with_exclusive_control(lambda: (_ for _ in ()).throw(Stop("in the body")))
    with pytest.raises(backlot.InvalidArgumentError):
        manager.with_exclusive_control(lambda: 1, timeout=float("nan"))
    # Re-entrant on the thread that holds it; another thread cannot have it at once.
    assert manager.with_exclusive_control(lambda: manager.with_exclusive_control(lambda: "again", timeout=0)) == "again"
    other = backlot.Manager(manager.container_path, env.catalog_url, env.root_pub, ca_path=env.ca)
    outcome: List[BaseException] = []

    def elsewhere() -> None:
        try:
            other.with_exclusive_control(lambda: 1, timeout=0.2)
        except BaseException as error:  # noqa: B036 - checked below
            outcome.append(error)

    def hold() -> None:
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join(30)

    try:
        manager.with_exclusive_control(hold)
        assert len(outcome) == 1 and isinstance(outcome[0], backlot.UnavailableError), outcome
        assert outcome[0].status == backlot.Status.UNAVAILABLE and outcome[0].message
        assert other.with_exclusive_control(lambda: "free again", timeout=5) == "free again"
    finally:
        other.close()


class Recorder(backlot.DownloadDelegate):
    def __init__(self, copy_to: Path) -> None:
        self.copy_to = copy_to
        self.events: List[Tuple[str, str]] = []
        self.failures: List[backlot.Error] = []
        self.done = threading.Event()

    def began(self, identifier: str) -> None:
        self.events.append(("began", identifier))

    def failed(self, identifier: str, error: backlot.Error) -> None:
        self.events.append(("failed", identifier))
        self.failures.append(error)
        self.done.set()

    def finished(self, identifier: str, file_path: str) -> None:
        self.events.append(("finished", identifier))
        shutil.copyfile(file_path, self.copy_to)
        self.done.set()


def test_url_downloads(open_manager, env: Env, tmp_path: Path) -> None:
    manager = open_manager()
    delegate = Recorder(tmp_path / "copy.json")
    manager.set_download_delegate(delegate)
    url = env.catalog_url
    with pytest.raises(backlot.BAError) as caught:
        manager.cancel_download("catalog")
    assert caught.value.status == backlot.Status.BA_DOWNLOAD_NOT_SCHEDULED and caught.value.code == 101

    manager.schedule_download("catalog", url)
    with pytest.raises(backlot.BAError) as caught:
        manager.schedule_download("catalog", url)
    assert caught.value.status == backlot.Status.BA_DOWNLOAD_ALREADY_SCHEDULED
    assert manager.current_downloads() == ["catalog"]
    manager.start_foreground_download("catalog", url)
    assert delegate.done.wait(60), delegate.events
    assert delegate.failures == [] and ("finished", "catalog") in delegate.events, delegate.events
    assert wait_until(lambda: manager.current_downloads() == [])

    context = ssl.create_default_context(cafile=env.ca)
    with urllib.request.urlopen(url, context=context, timeout=30) as response:
        served = response.read()
    copied = (tmp_path / "copy.json").read_bytes()
    assert copied.startswith(b"{") and len(copied) == len(served)

    # Scheduled, then cancelled: no longer current.
    manager.schedule_download("second", url, file_size=len(served), essential=False, priority=5)
    manager.cancel_download("second")
    assert "second" not in manager.current_downloads()
    with pytest.raises(backlot.InvalidArgumentError):
        manager.schedule_download("bad", "not a url")
    with pytest.raises(ValueError, match="NUL"):
        manager.schedule_download("bad\0", url)
    with pytest.raises(TypeError):
        manager.set_download_delegate(object())
    manager.set_download_delegate(None)


def test_a_failed_url_download_reaches_the_delegate(open_manager, env: Env, tmp_path: Path) -> None:
    manager = open_manager()
    delegate = Recorder(tmp_path / "never")
    manager.set_download_delegate(delegate)
    missing = env.catalog_url.replace("catalog.json", "no-such-file.json")
    manager.start_foreground_download("missing", missing)
    assert delegate.done.wait(120), delegate.events
    assert delegate.failures, delegate.events
    error = delegate.failures[0]
    assert isinstance(error, backlot.Error) and error.status != backlot.Status.OK and error.message


INTERRUPTED = r"""
import os, signal, sys, threading, time
import backlot
catalog, key, ca, pack, container = sys.argv[1:6]
manager = backlot.Manager(container, catalog, key, ca_path=ca, bandwidth_limit=256 * 1024)  # about 12 s
# Ctrl-C once the first chunk is installed (as capi_test cancels): the installer notices a cancel
# between ranges, so a signal in the download's first second could come after its last range began.
moved = threading.Event()
def interrupt_when_moved():
    if moved.wait(60):
        os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt_when_moved, daemon=True).start()
started = time.monotonic()
try:
    manager.ensure_local_availability(pack, lambda done, total: done > 0 and moved.set())
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted", manager.installed_packs(), signal.getsignal(signal.SIGINT) is signal.default_int_handler)
print("seconds", round(time.monotonic() - started, 1))
manager.close()
"""


def test_ctrl_c_cancels_a_download(env: Env, tmp_path: Path) -> None:
    # In a process of its own: the SIGINT must not reach pytest.
    import os
    import subprocess
    import sys

    source = str(Path(backlot.__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED, env.catalog_url, env.root_pub, env.ca, env.pack, str(tmp_path / "c")],
        env={**os.environ, "PYTHONPATH": source + os.pathsep + os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "interrupted [] True" in done.stdout, (done.stdout, done.stderr)
    assert "Exception ignored" not in done.stderr, done.stderr
