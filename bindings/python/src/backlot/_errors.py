"""The statuses of backlot.h and the exceptions that carry them."""

from __future__ import annotations

import enum
from typing import Dict, Optional, Type, Union

from . import _native

__all__ = [
    "BA_BASE",
    "AssetPackNotFoundError",
    "BAError",
    "CancelledError",
    "ClosedHandleError",
    "Error",
    "FileNotFoundInPackError",
    "InternalError",
    "InvalidArgumentError",
    "StaleCatalogError",
    "Status",
    "TLSError",
    "UnavailableError",
    "UntrustedError",
]

#: BACKLOT_ERR_BA_BASE: Apple's BAErrorCode values are statuses at 1000 + Apple's number.
BA_BASE = 1000


class Status(enum.IntEnum):
    """Every status of backlot.h (``backlot_status``), by its name without ``BACKLOT_ERR_``.

    Apple's ``BAErrorCode`` values are ``BA_*`` members at 1000 + Apple's number
    (``Status.BA_DOWNLOAD_NOT_SCHEDULED == Status.ba(101) == 1101``). The numbers never change.
    """

    OK = 0
    INVALID_ARGUMENT = 1
    CLOSED_HANDLE = 2
    INTERNAL = 3

    USAGE = 10
    INVALID_MANIFEST = 11
    INVALID_JSON = 12
    INVALID_PACK_ID = 13
    INVALID_SOURCE = 14
    INVALID_INPUT = 15
    CORRUPT_ARCHIVE = 16
    IO = 17
    ALREADY_EXISTS = 18
    LIBRARY = 19
    CHECK_FAILED = 20
    UNTRUSTED = 21
    CONFLICT = 22
    NOT_FOUND = 23
    FORBIDDEN = 24
    QUOTA_EXCEEDED = 25
    CANCELLED = 26
    STALE_CATALOG = 27
    UNAVAILABLE = 28
    TLS = 29

    ASSET_PACK_NOT_FOUND = 40
    FILE_NOT_FOUND = 41

    # Apple's BAErrorCode, at BACKLOT_ERR_BA(code).
    BA_DOWNLOAD_INVALID = BA_BASE + 0
    BA_CALL_FROM_EXTENSION_NOT_ALLOWED = BA_BASE + 50
    BA_CALL_FROM_INACTIVE_PROCESS_NOT_ALLOWED = BA_BASE + 51
    BA_CALLER_CONNECTION_NOT_ACCEPTED = BA_BASE + 55
    BA_CALLER_CONNECTION_INVALID = BA_BASE + 56
    BA_DOWNLOAD_ALREADY_SCHEDULED = BA_BASE + 100
    BA_DOWNLOAD_NOT_SCHEDULED = BA_BASE + 101
    BA_DOWNLOAD_FAILED_TO_START = BA_BASE + 102
    BA_DOWNLOAD_ALREADY_FAILED = BA_BASE + 103
    BA_DOWNLOAD_ESSENTIAL_DOWNLOAD_NOT_PERMITTED = BA_BASE + 109
    BA_DOWNLOAD_BACKGROUND_ACTIVITY_PROHIBITED = BA_BASE + 111
    BA_DOWNLOAD_WOULD_EXCEED_ALLOWANCE = BA_BASE + 112
    BA_DOWNLOAD_DOES_NOT_EXIST = BA_BASE + 113
    BA_SESSION_DOWNLOAD_DISALLOWED_BY_DOMAIN = BA_BASE + 202
    BA_SESSION_DOWNLOAD_DISALLOWED_BY_ALLOWANCE = BA_BASE + 203
    BA_SESSION_DOWNLOAD_ALLOWANCE_EXCEEDED = BA_BASE + 204
    BA_SESSION_DOWNLOAD_NOT_PERMITTED_BEFORE_APP_LAUNCH = BA_BASE + 206

    @property
    def c_name(self) -> str:
        """The name in backlot.h and backlot_status_name ("BACKLOT_ERR_UNTRUSTED")."""
        return "BACKLOT_OK" if self is Status.OK else "BACKLOT_ERR_" + self.name

    @staticmethod
    def ba(apple_code: int) -> Union["Status", int]:
        """BACKLOT_ERR_BA(apple_code): the status of one of Apple's BAErrorCode values."""
        return Status.of(BA_BASE + apple_code)

    @staticmethod
    def of(value: int) -> Union["Status", int]:
        """The member for ``value``, or ``value`` itself when this version does not name it."""
        try:
            return Status(value)
        except ValueError:
            return value


def status_name(status: int) -> str:
    """backlot_status_name: "BACKLOT_ERR_UNTRUSTED"; "BACKLOT_ERR_UNKNOWN" for a number not listed."""
    name = _native.lib.backlot_status_name(status)
    return name.decode("ascii", "replace") if name else "BACKLOT_ERR_UNKNOWN"


class Error(Exception):
    """A failure libbacklot reported.

    ``status`` is the ``backlot_status`` (a :class:`Status` member when this version knows it),
    ``name`` its name in backlot.h, ``message`` what went wrong and what to do (the library's
    ``backlot_last_error_message`` of the failing call). Match on ``status`` or on a subclass.
    """

    status: Union[Status, int]
    name: str
    message: str

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(status, message)
        self.status = Status.of(status)
        self.name = status_name(status)
        self.message = message

    def __str__(self) -> str:
        return f"{self.name}: {self.message}" if self.message else self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self.status)!r}, {self.message!r})"


class InvalidArgumentError(Error):
    """BACKLOT_ERR_INVALID_ARGUMENT: a value the library refused (a string not UTF-8, out of range)."""


class ClosedHandleError(Error):
    """BACKLOT_ERR_CLOSED_HANDLE: the manager was closed."""


class InternalError(Error):
    """BACKLOT_ERR_INTERNAL: a bug in libbacklot (please report the message)."""


class UntrustedError(Error):
    """BACKLOT_ERR_UNTRUSTED: signed metadata failed verification."""


class CancelledError(Error):
    """BACKLOT_ERR_CANCELLED: cancel() was called, or the manager closed, while the call ran."""


class StaleCatalogError(Error):
    """BACKLOT_ERR_STALE_CATALOG: the server's catalog is older than one already trusted."""


class UnavailableError(Error):
    """BACKLOT_ERR_UNAVAILABLE: a service cannot be reached now (or exclusive control was not had)."""


class TLSError(Error):
    """BACKLOT_ERR_TLS: the server's certificate could not be verified."""


class AssetPackNotFoundError(Error):
    """BACKLOT_ERR_ASSET_PACK_NOT_FOUND (Apple's ManagedBackgroundAssetsError.assetPackNotFound)."""


class FileNotFoundInPackError(Error):
    """BACKLOT_ERR_FILE_NOT_FOUND (Apple's ManagedBackgroundAssetsError.fileNotFound)."""


class BAError(Error):
    """One of Apple's BAErrorCode values (a status of 1000 and above); ``code`` is Apple's number."""

    @property
    def code(self) -> int:
        return int(self.status) - BA_BASE


_CLASSES: Dict[int, Type[Error]] = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.CLOSED_HANDLE: ClosedHandleError,
    Status.INTERNAL: InternalError,
    Status.UNTRUSTED: UntrustedError,
    Status.CANCELLED: CancelledError,
    Status.STALE_CATALOG: StaleCatalogError,
    Status.UNAVAILABLE: UnavailableError,
    Status.TLS: TLSError,
    Status.ASSET_PACK_NOT_FOUND: AssetPackNotFoundError,
    Status.FILE_NOT_FOUND: FileNotFoundInPackError,
}


def error_for(status: int, message: str) -> Error:
    """The exception for a status and its message (the most specific class there is)."""
    cls = _CLASSES.get(status)
    if cls is None:
        cls = BAError if status >= BA_BASE else Error
    return cls(status, message)


def last_error(status: int) -> Error:
    """The exception for a call that just returned ``status`` on this thread: its message is read
    now, before any other call of this thread can replace it."""
    message = _native.lib.backlot_last_error_message()
    text = message.decode("utf-8", "replace") if message else ""
    return error_for(status, text)


def check(status: int) -> None:
    """Raises the error of a call that returned ``status``; nothing for BACKLOT_OK."""
    if status != 0:
        raise last_error(status)


def error_or_none(status: int) -> Optional[Error]:
    """The error of a call that returned ``status`` (read at once), or None for BACKLOT_OK."""
    return last_error(status) if status != 0 else None
