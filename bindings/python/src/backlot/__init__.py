"""Backlot's client for Python: asset packs from a Backlot repository, installed and verified in
the background, with Apple's names (AssetPackManager, statusUpdates, BADownloadManager).

A binding of libbacklot (Backlot's C library, backlot.h) through ctypes. The library is loaded
from ``$BACKLOT_LIBRARY`` when it is set, else found as ``libbacklot.so.0`` on the system's
library path; importing this package raises :class:`LibraryNotFoundError` (an ImportError)
naming what to install when it is missing, and :class:`IncompatibleLibraryError` (an ImportError)
when its ABI version (:func:`abi_version`) is lower than this binding needs.

::

    import backlot

    with backlot.Manager(container, catalog_url, "root.pub", ca_path="ca.pem") as manager:
        manager.ensure_local_availability("Levels", progress=lambda done, total: print(done, total))
        level = manager.contents("Levels/1.txt")
        with manager.mapped("Levels/big.bin") as data:   # mapped, not copied
            header = data[:16]
"""

from __future__ import annotations

from . import _native
from ._errors import (
    BA_BASE,
    AssetPackNotFoundError,
    BAError,
    CancelledError,
    ClosedHandleError,
    Error,
    FileNotFoundInPackError,
    InternalError,
    InvalidArgumentError,
    StaleCatalogError,
    Status,
    TLSError,
    UnavailableError,
    UntrustedError,
    status_name,
)
from ._manager import DownloadDelegate, Manager, Subscription
from ._native import IncompatibleLibraryError, LibraryNotFoundError
from ._types import AssetPack, FetchReport, PackStatus, StatusUpdate, UpdateKind

__all__ = [
    "BA_BASE",
    "AssetPack",
    "AssetPackNotFoundError",
    "FetchReport",
    "BAError",
    "CancelledError",
    "ClosedHandleError",
    "DownloadDelegate",
    "Error",
    "FileNotFoundInPackError",
    "IncompatibleLibraryError",
    "InternalError",
    "InvalidArgumentError",
    "LibraryNotFoundError",
    "Manager",
    "PackStatus",
    "StaleCatalogError",
    "Status",
    "StatusUpdate",
    "Subscription",
    "TLSError",
    "UnavailableError",
    "UntrustedError",
    "UpdateKind",
    "abi_version",
    "library_path",
    "status_name",
    "version",
]

#: The version of this binding.
__version__ = "0.1.0"

#: Where the loaded libbacklot came from (the name or path it was loaded by).
library_path: str = _native.path


def version() -> str:
    """libbacklot's version ("0.1.0"): backlot_version()."""
    raw = _native.lib.backlot_version()
    return raw.decode("ascii", "replace") if raw else ""


def abi_version() -> int:
    """The BACKLOT_ABI_VERSION libbacklot was built with (1 or more: an older library is refused
    at import): backlot_abi_version()."""
    return _native.abi_version()
