"""The library itself: loading, version, statuses and their names, the exception classes."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import backlot

SRC = str(Path(__file__).resolve().parents[1] / "src")


def test_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", backlot.version()), backlot.version()
    assert isinstance(backlot.__version__, str)
    assert backlot.library_path


def test_every_status_has_its_name_in_the_library() -> None:
    for status in backlot.Status:
        assert backlot.status_name(status) == status.c_name, status
    assert backlot.status_name(987654) == "BACKLOT_ERR_UNKNOWN"
    assert backlot.status_name(backlot.BA_BASE + 101) == "BACKLOT_ERR_BA_DOWNLOAD_NOT_SCHEDULED"


def test_status_values_are_the_headers() -> None:
    S = backlot.Status
    assert (S.OK, S.INVALID_ARGUMENT, S.CLOSED_HANDLE, S.INTERNAL) == (0, 1, 2, 3)
    assert (S.USAGE, S.UNTRUSTED, S.CANCELLED, S.TLS) == (10, 21, 26, 29)
    assert (S.ASSET_PACK_NOT_FOUND, S.FILE_NOT_FOUND) == (40, 41)
    assert backlot.BA_BASE == 1000
    assert S.ba(101) is S.BA_DOWNLOAD_NOT_SCHEDULED and S.BA_DOWNLOAD_NOT_SCHEDULED == 1101
    assert S.ba(100) is S.BA_DOWNLOAD_ALREADY_SCHEDULED
    assert S.ba(999) == 1999 and not isinstance(S.ba(999), S)
    assert S.of(21) is S.UNTRUSTED and S.of(5) == 5


def test_error_classes() -> None:
    from backlot._errors import error_for

    assert type(error_for(21, "m")) is backlot.UntrustedError
    assert type(error_for(2, "m")) is backlot.ClosedHandleError
    assert type(error_for(1, "m")) is backlot.InvalidArgumentError
    assert type(error_for(17, "m")) is backlot.Error
    ba = error_for(1101, "not scheduled")
    assert isinstance(ba, backlot.BAError) and ba.code == 101
    assert ba.status is backlot.Status.BA_DOWNLOAD_NOT_SCHEDULED
    unknown = error_for(4242, "?")
    assert unknown.status == 4242 and unknown.name == "BACKLOT_ERR_UNKNOWN"
    e = error_for(21, "no valid signature")
    assert e.name == "BACKLOT_ERR_UNTRUSTED" and e.message == "no valid signature"
    assert str(e) == "BACKLOT_ERR_UNTRUSTED: no valid signature"
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is backlot.UntrustedError and again.status == 21 and again.message == e.message


def test_enums() -> None:
    assert backlot.UpdateKind.BEGAN == 1 and backlot.UpdateKind.FAILED == 5
    flags = backlot.PackStatus(68)
    assert backlot.PackStatus.DOWNLOADED in flags and backlot.PackStatus.UP_TO_DATE in flags
    assert backlot.PackStatus.DOWNLOADING not in flags


def _import_with(environment: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import backlot"],
        env={**environment, "PYTHONPATH": SRC},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_wrong_library_path_is_an_import_error_naming_the_variable(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "BACKLOT_LIBRARY"}
    environment["BACKLOT_LIBRARY"] = str(tmp_path / "libbacklot.so.0")
    done = _import_with(environment)
    assert done.returncode != 0
    assert "LibraryNotFoundError" in done.stderr and "BACKLOT_LIBRARY=" in done.stderr, done.stderr


def test_a_missing_library_says_what_to_install() -> None:
    environment = {
        k: v for k, v in os.environ.items() if k not in ("BACKLOT_LIBRARY", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH")
    }
    done = _import_with(environment)
    if done.returncode == 0:
        pytest.skip("libbacklot is installed on the system's library path: nothing is missing")
    assert "LibraryNotFoundError" in done.stderr, done.stderr
    assert "libbacklot" in done.stderr and "BACKLOT_LIBRARY" in done.stderr, done.stderr


def test_the_structs_are_filled_by_the_sized_init_functions() -> None:
    import ctypes

    from backlot import _native

    config = _native.Config()
    _native.init_config(config)
    assert config.size == ctypes.sizeof(_native.Config) and config.retries == -1
    assert config.container_path is None and config.stall_timeout == 0 and config.bandwidth_limit == 0
    info = _native.PackInfo()
    _native.init_pack_info(info)
    assert info.size == ctypes.sizeof(_native.PackInfo) and not info.id
    download = _native.URLDownload()
    _native.init_url_download(download)
    assert download.size == ctypes.sizeof(_native.URLDownload) and download.file_size == -1
    assert download.priority == 0 and not download.essential
    delegate = _native.DownloadDelegate()
    _native.init_download_delegate(delegate)
    assert delegate.size == ctypes.sizeof(_native.DownloadDelegate) and not delegate.began and not delegate.finished


def test_abi_version() -> None:
    from backlot import _native

    assert _native.REQUIRED_ABI_VERSION == 3
    assert isinstance(backlot.abi_version(), int)
    assert backlot.abi_version() >= _native.REQUIRED_ABI_VERSION


class _FakeLibrary:
    """A stand-in for a loaded library whose backlot_abi_version returns ``abi``."""

    def __init__(self, abi: int) -> None:
        def backlot_abi_version() -> int:
            return abi

        self.backlot_abi_version = backlot_abi_version


def test_an_older_abi_is_refused_naming_both_numbers() -> None:
    from backlot import _native

    assert _native._check_abi(_FakeLibrary(3), "new.so") == 3
    assert _native._check_abi(_FakeLibrary(7), "newer.so") == 7
    with pytest.raises(ImportError) as caught:
        _native._check_abi(_FakeLibrary(0), "/opt/old/libbacklot.so.0")
    error = caught.value
    assert isinstance(error, backlot.IncompatibleLibraryError)
    assert "/opt/old/libbacklot.so.0" in str(error) and "BACKLOT_LIBRARY" in str(error)
    assert "ABI version 0" in str(error) and "ABI version 3 or later" in str(error), str(error)


def test_a_library_without_abi_version_is_refused_at_import() -> None:
    # A shared library that is not libbacklot at all (the C library) has no backlot_abi_version:
    # it counts as ABI version 0, and import says so before anything else is looked up.
    import ctypes.util

    libc = ctypes.util.find_library("c")
    if not libc:
        pytest.skip("no C library to load in libbacklot's place")
    environment = {k: v for k, v in os.environ.items() if k != "BACKLOT_LIBRARY"}
    environment["BACKLOT_LIBRARY"] = libc
    done = _import_with(environment)
    assert done.returncode != 0
    assert "IncompatibleLibraryError" in done.stderr and "AttributeError" not in done.stderr, done.stderr
    assert "ABI version 0" in done.stderr and "ABI version 3 or later" in done.stderr, done.stderr


def test_a_library_of_an_older_abi_is_refused_at_import(tmp_path: Path) -> None:
    # A stand-in library whose backlot_abi_version() returns 0.
    import shutil

    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler to build a library of ABI version 0")
    source = tmp_path / "old.c"
    source.write_text("unsigned int backlot_abi_version(void) { return 0; }\n")
    library = tmp_path / "libbacklot.so.0"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True, timeout=120)
    environment = {k: v for k, v in os.environ.items() if k != "BACKLOT_LIBRARY"}
    environment["BACKLOT_LIBRARY"] = str(library)
    done = _import_with(environment)
    assert done.returncode != 0
    assert "IncompatibleLibraryError" in done.stderr and str(library) in done.stderr, done.stderr
    assert "has ABI version 0, but this binding needs ABI version 3 or later" in done.stderr, done.stderr
