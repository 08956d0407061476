"""Apple's AssetPackManager and BADownloadManager over libbacklot: the Manager class.

How callbacks are kept safe:

* The C function pointers handed to the library are module-level ctypes objects made once
  (``_on_progress_c``, ``_on_status_c``, the delegate's five, ``_on_exclusive_c``): they live as
  long as the interpreter, so the library can never call a freed one. What a call is for travels as the
  ``void *context``: a number, looked up in ``_registry``. A number whose entry is gone (a
  subscription that ended, a delegate that was replaced) makes the callback do nothing.
* No exception crosses into C. The progress callback's and the exclusive body's are kept and
  raised again once the blocking call has returned. A subscription's or a delegate's, which run
  on the library's threads with nobody to raise to, are kept (``Subscription.exception``,
  ``Manager.delegate_exception``) and reported by ctypes through ``sys.unraisablehook``.
* Ctrl-C during a blocking call on the main thread: see ``_Interrupts``.
"""

from __future__ import annotations

import ctypes
import io
import itertools
import mmap
import operator
import os
import signal
import threading
import weakref
from types import FrameType
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union, cast

from . import _native
from ._errors import Error, Status, check, error_for, error_or_none
from ._types import AssetPack, FetchReport, PackStatus, StatusUpdate, UpdateKind

__all__ = ["DownloadDelegate", "Manager", "Subscription"]

_lib = _native.lib

#: A string argument: text (encoded as UTF-8), or bytes handed to the library as they are.
Text = Union[str, bytes]
#: A file-system path argument.
PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
#: ``progress(completed_bytes, total_bytes)``
ProgressCallback = Callable[[int, int], Any]
#: ``callback(update)``
StatusCallback = Callable[[StatusUpdate], Any]

T = TypeVar("T")


# ---- Arguments ------------------------------------------------------------------------------


def _text(value: object, what: str) -> bytes:
    """A required string argument as the NUL-terminated UTF-8 the library takes."""
    if value is None:
        raise TypeError(f"{what} must be a str, not None")
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(f"{what} is not valid Unicode (it cannot be encoded as UTF-8): {value!r}") from error
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)  # as it is: the library refuses what is not UTF-8 (INVALID_ARGUMENT)
    else:
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    if b"\0" in data:
        raise ValueError(f"{what} contains a NUL character: {value!r}")
    return data


def _optional_text(value: object, what: str) -> Optional[bytes]:
    return None if value is None else _text(value, what)


def _integer(value: object, what: str, low: int, high: int) -> int:
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None
    if not low <= number <= high:
        raise ValueError(f"{what} is {number}: it must be from {low} to {high}")
    return number


# ---- What the callbacks' contexts stand for -------------------------------------------------


class _Registry:
    """The objects callbacks are for, by the number passed to the library as ``void *context``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: Dict[int, object] = {}
        self._numbers = itertools.count(1)

    def add(self, item: object) -> int:
        with self._lock:
            number = next(self._numbers)
            self._items[number] = item
            return number

    def get(self, number: Optional[int]) -> Optional[object]:
        if number is None:
            return None
        with self._lock:
            return self._items.get(number)

    def remove(self, number: Optional[int]) -> None:
        if number is None:
            return
        with self._lock:
            self._items.pop(number, None)


_registry = _Registry()

# The managers whose callbacks run on this thread now (a manager must not be closed from them).
_local = threading.local()


def _enter(state: "_ManagerState") -> None:
    inside = getattr(_local, "inside", None)
    if inside is None:
        inside = _local.inside = []
    inside.append(state)


def _leave() -> None:
    _local.inside.pop()


def _inside(state: "_ManagerState") -> bool:
    return any(s is state for s in getattr(_local, "inside", ()))


class _ManagerState:
    """What a Manager's finalizer needs (never the Manager itself): the handle, and the registry
    entries of its subscriptions and delegate, dropped once the handle is closed."""

    def __init__(self, handle: int) -> None:
        self.handle = handle
        self.lock = threading.Lock()
        self.closed = False
        self.subscriptions: Dict[int, "Subscription"] = {}
        self.delegate_key: Optional[int] = None

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        # Ends the calls running on other threads and every subscription (whose callbacks have
        # all returned once this does), and removes the delegate.
        _lib.backlot_manager_close(self.handle)
        with self.lock:
            ended = list(self.subscriptions.items())
            self.subscriptions.clear()
            delegate_key, self.delegate_key = self.delegate_key, None
        for key, subscription in ended:
            _registry.remove(key)
            subscription._active = False
        _registry.remove(delegate_key)


def _finalize(state: _ManagerState) -> None:
    # A manager collected, or still open at exit. Closing it from one of its own callbacks is not
    # allowed, so that case closes from another thread.
    if _inside(state):
        threading.Thread(target=state.close, name="backlot-close", daemon=True).start()
    else:
        state.close()


# ---- Ctrl-C during a blocking call ---------------------------------------------------------


class _Interrupts:
    """SIGINT's handler, wrapped while a blocking call that runs Python callbacks waits on the
    main thread.

    Python runs a signal's handler at the first Python code of the main thread, which during a
    blocking call is the entry of one of the callbacks above, before its ``try``: a
    KeyboardInterrupt raised there would escape into ctypes, which reports it and drops it. The
    wrapped handler raises only inside the callback's own code (``in_user_code``); elsewhere it
    keeps what the handler raised, runs ``on_interrupt`` (which cancels the download), and the
    call raises it once it has returned. On other threads, or when SIGINT has no Python handler,
    it does nothing.
    """

    def __init__(self, on_interrupt: Optional[Callable[[], object]] = None) -> None:
        self.on_interrupt = on_interrupt
        self.exception: Optional[BaseException] = None
        self.in_user_code = False
        self._original: Any = None
        self._handler: Optional[Callable[[int, Optional[FrameType]], None]] = None

    def __enter__(self) -> "_Interrupts":
        if threading.current_thread() is not threading.main_thread():
            return self
        try:
            original = signal.getsignal(signal.SIGINT)
            if not callable(original):
                return self
            handler = self._handle
            signal.signal(signal.SIGINT, handler)
        except (ValueError, OSError, AttributeError):  # not the main interpreter's main thread
            return self
        self._original, self._handler = original, handler
        return self

    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        original = self._original
        if self.in_user_code:
            original(signum, frame)  # raises inside the callback's try
            return
        if self.exception is not None:
            return
        try:
            original(signum, frame)
        except BaseException as error:
            self.exception = error
            if self.on_interrupt is not None:
                self.on_interrupt()

    def __exit__(self, *exc: object) -> None:
        if self._handler is None:
            return
        try:
            if signal.getsignal(signal.SIGINT) is self._handler:
                signal.signal(signal.SIGINT, self._original)
        except (ValueError, OSError):
            pass
        self._handler = None


# ---- Progress -------------------------------------------------------------------------------


class _ProgressCall:
    __slots__ = ("state", "pack_id", "callback", "exception", "interrupts")

    def __init__(self, state: _ManagerState, pack_id: bytes, callback: Optional[ProgressCallback]) -> None:
        self.state = state
        self.pack_id = pack_id
        self.callback = callback
        self.exception: Optional[BaseException] = None
        self.interrupts = _Interrupts(self.cancel)

    def cancel(self) -> None:
        _lib.backlot_cancel(self.state.handle, self.pack_id)


def _on_progress(context: Optional[int], completed: int, total: int) -> None:
    # Called on the thread that called ensure_*. Even without a Python callback it is passed, so
    # that a KeyboardInterrupt during a download is seen (_Interrupts), cancels it, and is raised
    # once the call returns.
    call = _registry.get(context)
    if not isinstance(call, _ProgressCall) or call.exception is not None or call.callback is None:
        return
    _enter(call.state)
    try:
        call.interrupts.in_user_code = True
        call.callback(completed, total)
        call.interrupts.in_user_code = False
    except BaseException as error:  # kept, raised again after the call; never into C
        call.interrupts.in_user_code = False
        call.exception = error
        call.cancel()
    finally:
        call.interrupts.in_user_code = False
        _leave()


# The C function pointers: made once, never freed (see the module docstring).
_on_progress_c = _native.PROGRESS_FN(_on_progress)


# ---- Status updates -------------------------------------------------------------------------


def _has(size: int, member: str) -> bool:
    field = getattr(_native.StatusUpdate, member)
    return bool(field.offset + field.size <= size)


def _read_update(raw: _native.StatusUpdate) -> StatusUpdate:
    """The update as the library sent it: members past its ``size`` (an older library) are not read."""
    size = int(raw.size)
    kind = int(raw.kind) if _has(size, "kind") else 0
    try:
        kind_value: Union[UpdateKind, int] = UpdateKind(kind)
    except ValueError:
        kind_value = kind
    pack_id = raw.pack_id if _has(size, "pack_id") else None
    message = raw.error_message if _has(size, "error_message") else None
    return StatusUpdate(
        kind=kind_value,
        pack_id=pack_id.decode("utf-8", "replace") if pack_id else "",
        completed_bytes=int(raw.completed_bytes) if _has(size, "completed_bytes") else 0,
        total_bytes=int(raw.total_bytes) if _has(size, "total_bytes") else 0,
        error_status=Status.of(int(raw.error)) if _has(size, "error") else Status.OK,
        error_message=message.decode("utf-8", "replace") if message else "",
    )


class Subscription:
    """The status updates of one pack's downloads, or of every pack's (Apple's statusUpdates).

    Made by :meth:`Manager.subscribe`. The callback runs on a thread of the library's, one update
    at a time, in order. :meth:`unsubscribe` (or leaving a ``with`` block) ends it: once that
    returns the callback is not called again. An exception the callback raises cannot go
    anywhere: the first is kept in :attr:`exception`, each is reported through
    ``sys.unraisablehook``, and the subscription goes on.
    """

    def __init__(self, state: _ManagerState, callback: StatusCallback, pack_id: Optional[str]) -> None:
        self._state = state
        self._callback = callback
        self._number = 0
        self._key: Optional[int] = None
        self._active = False
        self._lock = threading.Lock()
        self.pack_id = pack_id
        #: The first exception the callback raised, if any.
        self.exception: Optional[BaseException] = None

    @property
    def active(self) -> bool:
        """True until :meth:`unsubscribe`, or until the manager is closed."""
        return self._active

    def _deliver(self, update: StatusUpdate) -> None:
        _enter(self._state)
        try:
            self._callback(update)
        except BaseException as error:
            if self.exception is None:
                self.exception = error
            raise  # ctypes reports it (sys.unraisablehook); the library sees a normal return
        finally:
            _leave()

    def unsubscribe(self) -> None:
        """Ends the subscription (backlot_unsubscribe): once it returns, the callback is not called
        again (a call in flight is waited for, also from another subscription's callback). Again,
        or after the manager closed, it does nothing. Called from the callback itself, it returns
        at once and the callback finishes."""
        with self._lock:
            if not self._active:
                return
            self._active = False
        state = self._state
        with state.lock:
            closed = state.closed
        error = None if closed else error_or_none(_lib.backlot_unsubscribe(state.handle, self._number))
        with state.lock:
            state.subscriptions.pop(self._key or 0, None)
        _registry.remove(self._key)
        if error is not None and error.status != Status.CLOSED_HANDLE:
            raise error

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: object) -> None:
        self.unsubscribe()

    def __repr__(self) -> str:
        which = repr(self.pack_id) if self.pack_id is not None else "every pack"
        return f"<backlot.Subscription {self._number} of {which}{'' if self._active else ' (ended)'}>"


def _on_status(context: Optional[int], update: Any) -> None:
    subscription = _registry.get(context)
    if not isinstance(subscription, Subscription) or not update:
        return
    subscription._deliver(_read_update(update.contents))


_on_status_c = _native.STATUS_FN(_on_status)


# ---- URL downloads: the delegate ------------------------------------------------------------


class DownloadDelegate:
    """What the app is told about its URL downloads (Apple's BADownloadManagerDelegate).

    Subclass it and override what you need, or pass any object with some of these methods to
    :meth:`Manager.set_download_delegate`: the library calls only those it has. They run on a
    thread of the library's. ``finished`` must move or copy the file before it returns: it is
    deleted afterwards.
    """

    def began(self, identifier: str) -> None:
        """The download started (downloadDidBegin)."""

    def paused(self, identifier: str) -> None:
        """The download paused (downloadDidPause)."""

    def wrote(self, identifier: str, bytes_written: int, total_written: int, total_expected: int) -> None:
        """Bytes arrived (didWriteBytes); ``total_expected`` is -1 when unknown."""

    def failed(self, identifier: str, error: Error) -> None:
        """The download failed (failedWithError)."""

    def finished(self, identifier: str, file_path: str) -> None:
        """The download finished: move or copy ``file_path`` now (finishedWithFileURL)."""


_DELEGATE_METHODS = ("began", "paused", "wrote", "failed", "finished")


def _implemented(delegate: object, name: str) -> bool:
    method = getattr(delegate, name, None)
    if method is None or not callable(method):
        return False
    # DownloadDelegate's own do-nothing methods are not passed (the library then skips them).
    return getattr(type(delegate), name, None) is not getattr(DownloadDelegate, name)


class _DelegateState:
    __slots__ = ("state", "delegate", "exception", "__weakref__")

    def __init__(self, state: _ManagerState, delegate: object) -> None:
        self.state = state
        self.delegate = delegate
        self.exception: Optional[BaseException] = None

    def call(self, name: str, *arguments: object) -> None:
        method = getattr(self.delegate, name, None)
        if method is None:
            return
        _enter(self.state)
        try:
            method(*arguments)
        except BaseException as error:
            self.exception = error
            raise  # ctypes reports it (sys.unraisablehook); the library sees a normal return
        finally:
            _leave()


def _delegate(context: Optional[int]) -> Optional[_DelegateState]:
    found = _registry.get(context)
    return found if isinstance(found, _DelegateState) else None


def _str(value: Optional[bytes]) -> str:
    return value.decode("utf-8", "surrogateescape") if value else ""


def _on_began(context: Optional[int], identifier: Optional[bytes]) -> None:
    d = _delegate(context)
    if d is not None:
        d.call("began", _str(identifier))


_on_began_c = _native.BEGAN_FN(_on_began)


def _on_paused(context: Optional[int], identifier: Optional[bytes]) -> None:
    d = _delegate(context)
    if d is not None:
        d.call("paused", _str(identifier))


_on_paused_c = _native.PAUSED_FN(_on_paused)


def _on_wrote(context: Optional[int], identifier: Optional[bytes], written: int, total: int, expected: int) -> None:
    d = _delegate(context)
    if d is not None:
        d.call("wrote", _str(identifier), written, total, expected)


_on_wrote_c = _native.WROTE_FN(_on_wrote)


def _on_failed(context: Optional[int], identifier: Optional[bytes], status: int, message: Optional[bytes]) -> None:
    d = _delegate(context)
    if d is not None:
        d.call("failed", _str(identifier), error_for(status, message.decode("utf-8", "replace") if message else ""))


_on_failed_c = _native.FAILED_FN(_on_failed)


def _on_finished(context: Optional[int], identifier: Optional[bytes], file_path: Optional[bytes]) -> None:
    d = _delegate(context)
    if d is not None:
        d.call("finished", _str(identifier), _str(file_path))


_on_finished_c = _native.FINISHED_FN(_on_finished)


_DELEGATE_FUNCTIONS = {
    "began": _on_began_c,
    "paused": _on_paused_c,
    "wrote": _on_wrote_c,
    "failed": _on_failed_c,
    "finished": _on_finished_c,
}


# ---- Exclusive control ----------------------------------------------------------------------


class _ExclusiveCall:
    __slots__ = ("state", "body", "result", "ran", "exception", "interrupts")

    def __init__(self, state: _ManagerState, body: Callable[[], Any]) -> None:
        self.state = state
        self.body = body
        self.result: Any = None
        self.ran = False
        self.exception: Optional[BaseException] = None
        self.interrupts = _Interrupts()


def _on_exclusive(context: Optional[int]) -> int:
    call = _registry.get(context)
    if not isinstance(call, _ExclusiveCall):
        return int(Status.INTERNAL)
    _enter(call.state)
    try:
        call.interrupts.in_user_code = True
        call.result = call.body()
        call.interrupts.in_user_code = False
        call.ran = True
        return int(Status.OK)
    except BaseException as error:  # kept, raised again after the call; never into C
        call.interrupts.in_user_code = False
        call.exception = error
        call.ran = True
        return int(Status.CANCELLED)
    finally:
        call.interrupts.in_user_code = False
        _leave()


_on_exclusive_c = _native.EXCLUSIVE_FN(_on_exclusive)


# ---- The manager ----------------------------------------------------------------------------


class Manager:
    """Apple's AssetPackManager over one container folder, fed by a Backlot repository's signed
    catalog, and the container's URL downloads (Apple's BADownloadManager).

    ::

        with backlot.Manager("/var/lib/mygame/assets",
                             "https://cdn.example.com/v1/apps/com.example.game/production/catalog.json",
                             "/usr/share/mygame/root.pub") as manager:
            manager.ensure_local_availability("Levels", progress=lambda done, total: ...)
            data = manager.contents("Levels/1.json")

    Opening downloads nothing. Every method may be called from any thread at once; the blocking
    ones release the GIL. Failures raise :class:`backlot.Error` (``status``, ``name``,
    ``message``); after :meth:`close` every method raises :class:`backlot.ClosedHandleError`.
    """

    def __init__(
        self,
        container_path: PathArg,
        catalog_url: str,
        trusted_key_path: PathArg,
        ca_path: Optional[PathArg] = None,
        app: Optional[str] = None,
        channel: Optional[str] = None,
        bandwidth_limit: int = 0,
        stall_timeout: int = 0,
        retries: int = -1,
        send_reports: bool = True,
        device_profile: Optional[str] = None,
        peers: Sequence[str] = (),
        discover_peers: bool = False,
    ) -> None:
        container = _text(container_path, "container_path")
        arguments = {
            "container_path": container,
            "catalog_url": _text(catalog_url, "catalog_url"),
            "trusted_key_path": _text(trusted_key_path, "trusted_key_path"),
            "ca_path": _optional_text(ca_path, "ca_path"),
            "app": _optional_text(app, "app"),
            "channel": _optional_text(channel, "channel"),
            # What picks a pack's variant ("textureFormat=astc,deviceTier=high"); None: detected.
            "device_profile": _optional_text(device_profile, "device_profile"),
            # LAN peer caches asked for chunks first ("http://HOST:PORT" each; docs/peer-cache.md).
            "peers": _optional_text(",".join(peers), "peers") if peers else None,
        }
        config = _native.Config()
        _native.init_config(config)
        for name, value in arguments.items():
            setattr(config, name, value)
        config.bandwidth_limit = _integer(bandwidth_limit, "bandwidth_limit", 0, 2**64 - 1)
        config.stall_timeout = _integer(stall_timeout, "stall_timeout", 0, 2**32 - 1)
        config.retries = _integer(retries, "retries", -(2**31), 2**31 - 1)
        # Reports of what the container holds and how its installs end (docs/privacy.md).
        config.no_reports = 0 if send_reports else 1
        config.discover_peers = 1 if discover_peers else 0
        handle = ctypes.c_void_p()
        check(_lib.backlot_manager_open(ctypes.byref(config), ctypes.byref(handle)))
        self.container_path: str = os.fsdecode(container)
        self.catalog_url: str = catalog_url
        self._state = _ManagerState(int(handle.value or 0))
        self._delegate: Optional[_DelegateState] = None
        self._finalizer = weakref.finalize(self, _finalize, self._state)

    # -- lifetime --

    def close(self) -> None:
        """Closes the manager (backlot_manager_close): calls running on other threads end soon
        (downloads with CancelledError), its subscriptions end, and every later call raises
        ClosedHandleError. Again, it does nothing. Not allowed from one of its own callbacks."""
        if _inside(self._state):
            raise RuntimeError("a Manager cannot be closed from one of its own callbacks")
        self._finalizer()

    @property
    def closed(self) -> bool:
        return self._state.closed

    def __enter__(self) -> "Manager":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<backlot.Manager {self.container_path!r} {self.catalog_url!r} ({state})>"

    @property
    def _handle(self) -> int:
        # Also after close: the library refuses a closed handle (CLOSED_HANDLE), never follows it.
        return self._state.handle

    # -- packs --

    @property
    def device_id(self) -> str:
        """The container's device identifier (for staged rollouts)."""
        out = ctypes.c_void_p()
        check(_lib.backlot_device_id(self._handle, ctypes.byref(out)))
        return _native.take_string(out)

    @property
    def device_profile(self) -> str:
        """The profile that picks the variant of a pack with variants this device installs
        ("textureFormat=astc+etc2,deviceTier=2"): the one given, else the one detected."""
        out = ctypes.c_void_p()
        check(_lib.backlot_device_profile(self._handle, ctypes.byref(out)))
        return _native.take_string(out)

    def last_fetch(self, pack_id: str) -> FetchReport:
        """What this manager's last download of ``pack_id`` did (backlot_last_fetch): bytes and
        chunks from the origin and from LAN peers, chunks reused, files linked. Raises
        :class:`backlot.Error` with status ``NOT_FOUND`` when it has not downloaded that pack."""
        report = _native.FetchReport()
        report.size = ctypes.sizeof(report)
        check(_lib.backlot_last_fetch(self._handle, _text(pack_id, "pack_id"), ctypes.byref(report)))
        return FetchReport(
            version=report.version, origin_bytes=report.origin_bytes, peer_bytes=report.peer_bytes,
            origin_chunks=report.origin_chunks, peer_chunks=report.peer_chunks,
            reused_chunks=report.reused_chunks, linked_files=report.linked_files)

    def _ensure(self, function: Any, pack_id: str, progress: Optional[ProgressCallback]) -> None:
        pid = _text(pack_id, "pack_id")
        if progress is not None and not callable(progress):
            raise TypeError("progress must be a callable(completed, total), or None")
        call = _ProgressCall(self._state, pid, progress)
        key = _registry.add(call)
        try:
            with call.interrupts:
                error = error_or_none(function(self._handle, pid, _on_progress_c, key))
        finally:
            _registry.remove(key)
        exception = call.exception or call.interrupts.exception
        if exception is not None:
            call.exception = call.interrupts.exception = None
            raise exception
        if error is not None:
            raise error

    def ensure_local_availability(self, pack_id: str, progress: Optional[ProgressCallback] = None) -> None:
        """Returns once the pack is installed and verified (Apple's ensureLocalAvailability(of:)):
        an installed release is used as it is, otherwise the catalog's is downloaded. Blocks.

        ``progress(completed, total)`` is called on this thread as the pack's files are
        installed, a chunk (about 1 MiB) at a time, and last with ``completed == total``;
        ``total`` is the pack's install size (its files' bytes, not ``download_size``). If it raises, the download is cancelled and its exception is
        raised once the call has returned (so is a KeyboardInterrupt during the download).
        """
        self._ensure(_lib.backlot_ensure_local_availability, pack_id, progress)

    def ensure_latest_availability(self, pack_id: str, progress: Optional[ProgressCallback] = None) -> None:
        """The same, but an installed release older than the catalog's is updated first
        (requireLatestVersion: true)."""
        self._ensure(_lib.backlot_ensure_latest_availability, pack_id, progress)

    def cancel(self, pack_id: str) -> None:
        """Cancels the running download of a pack (its ensure_* call raises CancelledError); does
        nothing when none runs."""
        check(_lib.backlot_cancel(self._handle, _text(pack_id, "pack_id")))

    def _list(self, function: Any) -> List[str]:
        block = ctypes.c_void_p()
        count = ctypes.c_size_t()
        status = function(self._handle, ctypes.byref(block), ctypes.byref(count))
        if status != 0:
            _lib.backlot_free(block)  # NULL on a failure, by the header; freed all the same
            check(status)
        return _native.take_string_list(block, count.value)

    def check_for_updates(self) -> List[str]:
        """Updates every installed pack the catalog has a newer release of, removes those it no
        longer offers (Apple's checkForUpdates); returns the IDs of the packs updated."""
        return self._list(_lib.backlot_check_for_updates)

    def remove(self, pack_id: str) -> None:
        """Removes an installed pack (a later ensure downloads it again)."""
        check(_lib.backlot_remove(self._handle, _text(pack_id, "pack_id")))

    def asset_pack(self, pack_id: str) -> AssetPack:
        """The pack as the catalog offers it now, with its status against what is installed
        (Apple's assetPack(withID:) and status(ofAssetPackWithID:)). Reads the catalog."""
        pid = _text(pack_id, "pack_id")
        info = _native.PackInfo()
        _native.init_pack_info(info)
        try:
            check(_lib.backlot_asset_pack(self._handle, pid, ctypes.byref(info)))
            return AssetPack(
                id=ctypes.string_at(info.id).decode("utf-8", "replace") if info.id else "",
                version=int(info.version),
                download_size=int(info.download_size),
                status=PackStatus(int(info.status)),
            )
        finally:
            _lib.backlot_pack_info_clear(ctypes.byref(info))

    def all_asset_packs(self) -> List[str]:
        """The IDs of every pack the catalog offers this device, sorted (Apple's allAssetPacks)."""
        return self._list(_lib.backlot_all_asset_packs)

    def installed_packs(self) -> List[str]:
        """The IDs of the packs installed in the container, sorted (no network)."""
        return self._list(_lib.backlot_installed_packs)

    # -- files --

    def descriptor(self, path: Text, pack_id: Optional[str] = None) -> int:
        """A file of an installed pack, opened read-only: a file descriptor that the caller
        closes (os.close). ``pack_id`` None searches every installed pack, in the order of
        their IDs' bytes. The descriptor is close-on-exec."""
        fd = ctypes.c_int(-1)
        check(
            _lib.backlot_descriptor(
                self._handle, _text(path, "path"), _optional_text(pack_id, "pack_id"), ctypes.byref(fd)
            )
        )
        return fd.value

    def contents(self, path: Text, pack_id: Optional[str] = None) -> bytes:
        """The bytes of a file of an installed pack (Apple's contents(at:searchingInAssetPackWithID:)).

        Read through :meth:`descriptor` straight into the bytes object returned (one copy, as
        ``open(path, 'rb').read()`` makes); for a large file, :meth:`mapped` copies nothing.
        """
        fd = self.descriptor(path, pack_id)
        try:
            file = io.FileIO(fd, "r", closefd=True)
        except BaseException:
            os.close(fd)
            raise
        with file:
            return file.readall()

    def _contents_copied(self, path: Text, pack_id: Optional[str] = None) -> bytes:
        """backlot_contents: the library's buffer, copied into bytes (a second copy; for comparison)."""
        data = ctypes.c_void_p()
        length = ctypes.c_size_t()
        check(
            _lib.backlot_contents(
                self._handle,
                _text(path, "path"),
                _optional_text(pack_id, "pack_id"),
                ctypes.byref(data),
                ctypes.byref(length),
            )
        )
        try:
            return ctypes.string_at(data.value, length.value) if data.value and length.value else b""
        finally:
            _lib.backlot_free(data)

    def mapped(self, path: Text, pack_id: Optional[str] = None) -> mmap.mmap:
        """A file of an installed pack mapped read-only into memory (mmap): nothing is copied or
        read until used, so a 1 GiB file costs no 1 GiB of memory. Close it when done (or use it
        in a ``with`` block). An empty file cannot be mapped: ValueError (use contents())."""
        fd = self.descriptor(path, pack_id)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                raise ValueError(f"{path!r} is an empty file, which cannot be mapped: use contents()")
            return mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)  # the mapping keeps its own reference

    def open(self, path: Text, pack_id: Optional[str] = None) -> BinaryIO:
        """A file of an installed pack as a binary file object, open for reading."""
        fd = self.descriptor(path, pack_id)
        try:
            return cast(BinaryIO, os.fdopen(fd, "rb"))
        except BaseException:
            os.close(fd)
            raise

    def path(self, path: Text, pack_id: Optional[str] = None) -> str:
        """Where a file of an installed pack is (Apple's url(for:))."""
        out = ctypes.c_void_p()
        check(
            _lib.backlot_path(self._handle, _text(path, "path"), _optional_text(pack_id, "pack_id"), ctypes.byref(out))
        )
        return _native.take_string(out)

    # -- status updates --

    def subscribe(self, callback: StatusCallback, pack_id: Optional[str] = None) -> Subscription:
        """Calls ``callback(update)`` for each status update of one pack's downloads, or of every
        pack's (None): BEGAN, DOWNLOADING (each time the byte count moves), PAUSED, FINISHED or
        FAILED, in order, on a thread of the library's. Returns the Subscription (unsubscribe()
        ends it; it ends with the manager too)."""
        if not callable(callback):
            raise TypeError("callback must be a callable(update)")
        pid = _optional_text(pack_id, "pack_id")
        subscription = Subscription(self._state, callback, pack_id)
        key = _registry.add(subscription)
        subscription._key = key
        subscription._active = True
        number = ctypes.c_uint64()
        error = error_or_none(_lib.backlot_subscribe(self._handle, pid, _on_status_c, key, ctypes.byref(number)))
        if error is not None:
            subscription._active = False
            _registry.remove(key)
            raise error
        subscription._number = number.value
        with self._state.lock:
            if self._state.closed:  # closed meanwhile: the library ended it already
                subscription._active = False
                _registry.remove(key)
            else:
                self._state.subscriptions[key] = subscription
        return subscription

    # -- URL downloads --

    @staticmethod
    def _download(identifier: str, url: str, file_size: int, essential: bool, priority: int) -> Tuple[Any, ...]:
        strings = (_text(identifier, "identifier"), _text(url, "url"))
        download = _native.URLDownload()
        _native.init_url_download(download)
        download.identifier, download.url = strings
        download.file_size = _integer(file_size, "file_size", -(2**63), 2**63 - 1)
        download.essential = 1 if essential else 0
        download.priority = _integer(priority, "priority", -(2**63), 2**63 - 1)
        return download, strings

    def schedule_download(
        self, identifier: str, url: str, file_size: int = -1, essential: bool = False, priority: int = 0
    ) -> None:
        """Schedules a URL download for the background agent (or this process) to run; its
        outcome goes to the delegate (set_download_delegate). BAError with status
        BA_DOWNLOAD_ALREADY_SCHEDULED when that identifier is scheduled already."""
        download, _keep = self._download(identifier, url, file_size, essential, priority)
        check(_lib.backlot_schedule_download(self._handle, ctypes.byref(download)))

    def start_foreground_download(
        self, identifier: str, url: str, file_size: int = -1, essential: bool = False, priority: int = 0
    ) -> None:
        """Starts a URL download now, in this process (a scheduled one is promoted and goes on)."""
        download, _keep = self._download(identifier, url, file_size, essential, priority)
        check(_lib.backlot_start_foreground_download(self._handle, ctypes.byref(download)))

    def cancel_download(self, identifier: str) -> None:
        """Cancels a scheduled or running URL download (what arrived is removed); BAError with
        status BA_DOWNLOAD_NOT_SCHEDULED when it is not scheduled."""
        check(_lib.backlot_cancel_download(self._handle, _text(identifier, "identifier")))

    def current_downloads(self) -> List[str]:
        """The identifiers of the URL downloads scheduled or running, sorted."""
        return self._list(_lib.backlot_current_downloads)

    def set_download_delegate(self, delegate: Optional[object]) -> None:
        """Sets what is told about the URL downloads: an object with some of the methods of
        :class:`DownloadDelegate` (began, paused, wrote, failed, finished). None removes it."""
        state = self._state
        if delegate is None:
            check(_lib.backlot_set_download_delegate(self._handle, None, None))
            with state.lock:
                old, state.delegate_key = state.delegate_key, None
            _registry.remove(old)
            self._delegate = None
            return
        functions = _native.DownloadDelegate()
        _native.init_download_delegate(functions)
        implemented = [name for name in _DELEGATE_METHODS if _implemented(delegate, name)]
        if not implemented:
            raise TypeError(
                "the delegate has none of the methods began, paused, wrote, failed, finished: "
                "give an object with some of them (a DownloadDelegate subclass), or None"
            )
        for name in implemented:
            setattr(functions, name, _DELEGATE_FUNCTIONS[name])
        made = _DelegateState(state, delegate)
        key = _registry.add(made)
        error = error_or_none(_lib.backlot_set_download_delegate(self._handle, ctypes.byref(functions), key))
        if error is not None:
            _registry.remove(key)
            raise error
        with state.lock:
            if state.closed:
                replaced: Optional[int] = key
            else:
                replaced, state.delegate_key = state.delegate_key, key
        # The library holds the new delegate now; a call to the old one still in flight keeps
        # its object, later ones find no entry and do nothing.
        _registry.remove(replaced)
        self._delegate = made

    @property
    def delegate_exception(self) -> Optional[BaseException]:
        """The last exception the current download delegate raised, if any."""
        return self._delegate.exception if self._delegate is not None else None

    def with_exclusive_control(self, body: Callable[[], T], timeout: Optional[float] = -1) -> T:
        """Runs ``body()`` on this thread while holding the container's exclusive control of its
        downloads, shared by the app, its extension and the agent (Apple's withExclusiveControl),
        and returns what it returns (or raises what it raises). Waits at most ``timeout``
        seconds (negative or None: as long as it takes; 0: tries once): UnavailableError when
        not acquired by then."""
        if not callable(body):
            raise TypeError("body must be a callable with no arguments")
        seconds = -1.0 if timeout is None else float(timeout)
        call = _ExclusiveCall(self._state, body)
        key = _registry.add(call)
        try:
            with call.interrupts:
                status = _lib.backlot_with_exclusive_control(self._handle, seconds, _on_exclusive_c, key)
                # When the body ran, its outcome is call.result or call.exception: the CANCELLED
                # returned for an exception (the last error, "the body returned …") is not raised.
                error = error_or_none(status) if not call.ran else None
        finally:
            _registry.remove(key)
        exception = call.exception or call.interrupts.exception
        if exception is not None:
            call.exception = call.interrupts.exception = None
            raise exception
        if error is not None:
            raise error
        return cast(T, call.result)
