"""libbacklot through ctypes: finding the library, the structs and the prototypes of backlot.h.

Nothing here is public: the package's other modules wrap it. Every prototype is declared
(argtypes and restype), so that ctypes converts and checks each argument, and every pointer the
library hands out is typed ``c_void_p`` so that it can be given back to ``backlot_free``.

The library is a ``CDLL``: ctypes releases the GIL for the duration of each call, so that a
blocking call (a download) lets other Python threads run and lets the library's threads call
back into Python.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from typing import Any, Callable, List, Optional

__all__ = ["REQUIRED_ABI_VERSION", "IncompatibleLibraryError", "LibraryNotFoundError", "abi_version", "lib", "path"]

#: The environment variable naming the library to load (an absolute path, or a name dlopen finds).
LIBRARY_VARIABLE = "BACKLOT_LIBRARY"

#: The BACKLOT_ABI_VERSION of the backlot.h this binding follows: a library reporting a lower
#: one (backlot_abi_version) lacks something declared here and is refused at import.
REQUIRED_ABI_VERSION = 3


class LibraryNotFoundError(ImportError):
    """libbacklot (Backlot's C library) could not be loaded."""


class IncompatibleLibraryError(ImportError):
    """The libbacklot that was loaded is older than this binding needs (its ABI version is lower)."""


def _candidates() -> List[str]:
    """The names to try, in order, when BACKLOT_LIBRARY is not set."""
    names: List[str] = []
    found = ctypes.util.find_library("backlot")
    if found:
        names.append(found)
    if sys.platform == "darwin":
        names += ["libbacklot.0.dylib", "libbacklot.dylib"]
    elif sys.platform == "win32":
        names += ["backlot.dll", "libbacklot.dll"]
    else:
        names += ["libbacklot.so.0", "libbacklot.so"]
    unique: List[str] = []
    for name in names:
        if name not in unique:
            unique.append(name)
    return unique


def _load() -> "tuple[ctypes.CDLL, str]":
    given = os.environ.get(LIBRARY_VARIABLE, "")
    if given:
        try:
            return ctypes.CDLL(given), given
        except OSError as error:
            raise LibraryNotFoundError(
                f"libbacklot could not be loaded from {LIBRARY_VARIABLE}={given}: {error}\n"
                f"  hint: set {LIBRARY_VARIABLE} to the absolute path of libbacklot.so.0 (Backlot's C "
                f"library), or unset it to search the system's library path"
            ) from error
    failures: List[str] = []
    for name in _candidates():
        try:
            return ctypes.CDLL(name), name
        except OSError as error:
            failures.append(f"{name}: {error}")
    raise LibraryNotFoundError(
        "libbacklot (Backlot's C library, libbacklot.so.0) was not found\n"
        "  hint: install libbacklot where the dynamic loader finds it (a directory of ld.so.conf, "
        "then run ldconfig; or LD_LIBRARY_PATH), or set "
        f"{LIBRARY_VARIABLE} to its absolute path. Tried: " + "; ".join(failures)
    )


def _abi_version_of(library: Any) -> Optional[int]:
    """The library's backlot_abi_version(), or None when it has no such function."""
    function = getattr(library, "backlot_abi_version", None)
    if function is None:
        return None
    function.restype = ctypes.c_uint32
    function.argtypes = []
    return int(function())


def _check_abi(library: Any, where: str) -> int:
    """The library's ABI version; IncompatibleLibraryError when it is lower than REQUIRED_ABI_VERSION.

    A library without backlot_abi_version predates the function (and the first release's ABI,
    version 1): it counts as version 0.
    """
    found = _abi_version_of(library)
    if found is not None and found >= REQUIRED_ABI_VERSION:
        return found
    what = (
        f"has ABI version {found}"
        if found is not None
        else "has ABI version 0 (it exports no backlot_abi_version: it predates ABI version 1)"
    )
    raise IncompatibleLibraryError(
        f"the libbacklot loaded from {where} {what}, but this binding needs ABI version "
        f"{REQUIRED_ABI_VERSION} or later\n"
        f"  hint: install a newer libbacklot (one whose backlot_abi_version() is at least "
        f"{REQUIRED_ABI_VERSION}), or set {LIBRARY_VARIABLE} to the absolute path of one"
    )


lib, path = _load()
_check_abi(lib, path)  # before any prototype: an older library may lack some of them


def abi_version() -> int:
    """backlot_abi_version(): the BACKLOT_ABI_VERSION the loaded library was built with."""
    return int(lib.backlot_abi_version())

# ---- Types of backlot.h ---------------------------------------------------------------------

c_status = ctypes.c_int32
c_handle = ctypes.c_void_p  # backlot_manager *: opaque, a table entry, never followed
c_char_pp = ctypes.POINTER(ctypes.c_char_p)


class Config(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("container_path", ctypes.c_char_p),
        ("catalog_url", ctypes.c_char_p),
        ("trusted_key_path", ctypes.c_char_p),
        ("ca_path", ctypes.c_char_p),
        ("app", ctypes.c_char_p),
        ("channel", ctypes.c_char_p),
        ("bandwidth_limit", ctypes.c_uint64),
        ("stall_timeout", ctypes.c_uint32),
        ("retries", ctypes.c_int32),
        ("no_reports", ctypes.c_int32),
        ("device_profile", ctypes.c_char_p),
        # ABI 3: LAN peer caches (docs/peer-cache.md).
        ("peers", ctypes.c_char_p),
        ("discover_peers", ctypes.c_int32),
    ]


class FetchReport(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("version", ctypes.c_int64),
        ("origin_bytes", ctypes.c_uint64),
        ("peer_bytes", ctypes.c_uint64),
        ("origin_chunks", ctypes.c_uint64),
        ("peer_chunks", ctypes.c_uint64),
        ("reused_chunks", ctypes.c_uint64),
        ("linked_files", ctypes.c_uint64),
    ]


class PackInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("id", ctypes.c_void_p),  # char *, owned by the struct: backlot_pack_info_clear frees it
        ("version", ctypes.c_int64),
        ("download_size", ctypes.c_uint64),
        ("status", ctypes.c_uint32),
    ]


class StatusUpdate(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("kind", ctypes.c_int32),
        ("pack_id", ctypes.c_char_p),
        ("completed_bytes", ctypes.c_uint64),
        ("total_bytes", ctypes.c_uint64),
        ("error", c_status),
        ("error_message", ctypes.c_char_p),
    ]


class URLDownload(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("identifier", ctypes.c_char_p),
        ("url", ctypes.c_char_p),
        ("file_size", ctypes.c_int64),
        ("essential", ctypes.c_int32),
        ("priority", ctypes.c_int64),
    ]


PROGRESS_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64)
STATUS_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(StatusUpdate))
EXCLUSIVE_FN = ctypes.CFUNCTYPE(c_status, ctypes.c_void_p)
BEGAN_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
PAUSED_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
WROTE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
FAILED_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, c_status, ctypes.c_char_p)
FINISHED_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p)


class DownloadDelegate(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("began", BEGAN_FN),
        ("paused", PAUSED_FN),
        ("wrote", WROTE_FN),
        ("failed", FAILED_FN),
        ("finished", FINISHED_FN),
    ]


# ---- Prototypes -----------------------------------------------------------------------------


def _declare(name: str, restype: Optional[type], *argtypes: type) -> None:
    function = getattr(lib, name)
    function.restype = restype
    function.argtypes = list(argtypes)


_P = ctypes.POINTER
_void_pp = _P(ctypes.c_void_p)  # char ** / char *** out-parameters: the raw pointer, to free it
_size_p = _P(ctypes.c_size_t)

_declare("backlot_last_error_message", ctypes.c_char_p)
_declare("backlot_last_error_status", c_status)
_declare("backlot_status_name", ctypes.c_char_p, c_status)
_declare("backlot_free", None, ctypes.c_void_p)
_declare("backlot_version", ctypes.c_char_p)
_declare("backlot_abi_version", ctypes.c_uint32)

_declare("backlot_manager_open", c_status, _P(Config), _P(c_handle))
_declare("backlot_manager_close", None, c_handle)
_declare("backlot_device_id", c_status, c_handle, _void_pp)
_declare("backlot_device_profile", c_status, c_handle, _void_pp)
_declare("backlot_ensure_local_availability", c_status, c_handle, ctypes.c_char_p, PROGRESS_FN, ctypes.c_void_p)
_declare("backlot_ensure_latest_availability", c_status, c_handle, ctypes.c_char_p, PROGRESS_FN, ctypes.c_void_p)
_declare("backlot_cancel", c_status, c_handle, ctypes.c_char_p)
_declare("backlot_last_fetch", c_status, c_handle, ctypes.c_char_p, _P(FetchReport))
_declare("backlot_check_for_updates", c_status, c_handle, _void_pp, _size_p)
_declare("backlot_remove", c_status, c_handle, ctypes.c_char_p)
_declare("backlot_contents", c_status, c_handle, ctypes.c_char_p, ctypes.c_char_p, _void_pp, _size_p)
_declare("backlot_descriptor", c_status, c_handle, ctypes.c_char_p, ctypes.c_char_p, _P(ctypes.c_int))
_declare("backlot_path", c_status, c_handle, ctypes.c_char_p, ctypes.c_char_p, _void_pp)

_declare("backlot_pack_info_clear", None, _P(PackInfo))
_declare("backlot_asset_pack", c_status, c_handle, ctypes.c_char_p, _P(PackInfo))
_declare("backlot_all_asset_packs", c_status, c_handle, _void_pp, _size_p)
_declare("backlot_installed_packs", c_status, c_handle, _void_pp, _size_p)

_declare("backlot_subscribe", c_status, c_handle, ctypes.c_char_p, STATUS_FN, ctypes.c_void_p, _P(ctypes.c_uint64))
_declare("backlot_unsubscribe", c_status, c_handle, ctypes.c_uint64)

_declare("backlot_schedule_download", c_status, c_handle, _P(URLDownload))
_declare("backlot_start_foreground_download", c_status, c_handle, _P(URLDownload))
_declare("backlot_cancel_download", c_status, c_handle, ctypes.c_char_p)
_declare("backlot_current_downloads", c_status, c_handle, _void_pp, _size_p)
_declare("backlot_set_download_delegate", c_status, c_handle, _P(DownloadDelegate), ctypes.c_void_p)
_declare("backlot_with_exclusive_control", c_status, c_handle, ctypes.c_double, EXCLUSIVE_FN, ctypes.c_void_p)


# ---- The _init functions of the sized structs ------------------------------------------------


def initialiser(name: str, struct: Any) -> Callable[[Any], None]:
    """The function that fills a ``struct`` with its defaults and its size.

    The library exports ``backlot_NAME_init_size(struct *, size_t)`` (backlot.h's
    ``backlot_NAME_init`` is an inline function calling it with the caller's ``sizeof``): it is
    called with this binding's ``sizeof``, so that the library fills exactly that much.
    """
    function = getattr(lib, f"backlot_{name}_init_size")
    function.restype = None
    function.argtypes = [ctypes.POINTER(struct), ctypes.c_size_t]
    size = ctypes.sizeof(struct)
    return lambda value: function(ctypes.byref(value), size)


init_config = initialiser("config", Config)
init_pack_info = initialiser("pack_info", PackInfo)
init_url_download = initialiser("url_download", URLDownload)
init_download_delegate = initialiser("download_delegate", DownloadDelegate)


# ---- Memory the library hands out -----------------------------------------------------------


def take_string(pointer: ctypes.c_void_p) -> str:
    """The text of a ``char *`` the library allocated, which is freed (one backlot_free)."""
    if not pointer.value:
        return ""
    try:
        return ctypes.string_at(pointer.value).decode("utf-8", "surrogateescape")
    finally:
        lib.backlot_free(pointer)


def take_string_list(block: ctypes.c_void_p, count: int) -> List[str]:
    """The strings of a ``char **`` list of ``count`` (one block), which is freed (one backlot_free)."""
    if not block.value:
        return []
    try:
        items = ctypes.cast(block, c_char_pp)
        out: List[str] = []
        for i in range(count):
            item = items[i]
            out.append(item.decode("utf-8", "surrogateescape") if item is not None else "")
        return out
    finally:
        lib.backlot_free(block)
