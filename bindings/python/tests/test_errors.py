"""Failures: a refused catalog, a closed manager, arguments refused here or by the library."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import List

import pytest
from support import Env, backlot

S = backlot.Status


def test_a_catalog_signed_by_another_key_is_refused(open_manager, env: Env) -> None:
    manager = open_manager(key=env.wrong_root_pub)
    with pytest.raises(backlot.Error) as caught:
        manager.ensure_local_availability(env.pack)
    error = caught.value
    assert error.status == S.UNTRUSTED and error.status is S.UNTRUSTED
    assert isinstance(error, backlot.UntrustedError)
    assert error.name == "BACKLOT_ERR_UNTRUSTED"
    assert error.message.strip(), "the refusal says nothing"
    assert "BACKLOT_ERR_UNTRUSTED" in str(error)
    with pytest.raises(backlot.UntrustedError):
        manager.all_asset_packs()
    assert manager.installed_packs() == []


def test_the_message_is_the_calling_threads(open_manager, env: Env) -> None:
    # Each thread gets its own failure's message, however the calls interleave.
    untrusted = open_manager(key=env.wrong_root_pub)
    trusted = open_manager()
    problems: List[str] = []
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        for _ in range(5):
            try:
                if i % 2:
                    untrusted.ensure_local_availability(env.pack)
                else:
                    trusted.contents(f"Levels/missing-{i}.txt")
                problems.append(f"thread {i}: no failure")
            except backlot.Error as error:
                if i % 2 and not (error.status == S.UNTRUSTED and "signature" in error.message):
                    problems.append(f"thread {i}: {error!r}")
                if not i % 2 and not (error.status == S.FILE_NOT_FOUND and f"missing-{i}.txt" in error.message):
                    problems.append(f"thread {i}: {error!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert problems == []


def test_a_closed_manager_raises_closed_handle(install, env: Env) -> None:
    manager = install()
    assert not manager.closed
    manager.close()
    assert manager.closed
    manager.close()  # again: nothing
    calls = [
        lambda: manager.ensure_local_availability(env.pack),
        lambda: manager.contents("Levels/1.txt"),
        lambda: manager.descriptor("Levels/1.txt"),
        lambda: manager.installed_packs(),
        lambda: manager.asset_pack(env.pack),
        lambda: manager.device_id,
        lambda: manager.subscribe(lambda update: None),
        lambda: manager.current_downloads(),
        lambda: manager.with_exclusive_control(lambda: 1),
    ]
    for call in calls:
        with pytest.raises(backlot.ClosedHandleError) as caught:
            call()
        assert caught.value.status == S.CLOSED_HANDLE and caught.value.message


def test_the_with_block_closes(open_manager, env: Env, tmp_path: Path) -> None:
    with backlot.Manager(str(tmp_path / "c"), env.catalog_url, env.root_pub, ca_path=env.ca) as manager:
        assert manager.installed_packs() == []
    assert manager.closed
    with pytest.raises(backlot.ClosedHandleError):
        manager.installed_packs()


def test_none_where_a_string_is_needed(open_manager, env: Env, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="container_path"):
        backlot.Manager(None, env.catalog_url, env.root_pub)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="catalog_url"):
        backlot.Manager(str(tmp_path), None, env.root_pub)  # type: ignore[arg-type]
    manager = open_manager()
    with pytest.raises(TypeError, match="pack_id"):
        manager.ensure_local_availability(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="path"):
        manager.contents(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        manager.contents(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        manager.subscribe(None)  # type: ignore[arg-type]


def test_strings_the_library_cannot_take(open_manager, env: Env) -> None:
    manager = open_manager()
    # A NUL would cut the string short in C: refused before the call.
    with pytest.raises(ValueError, match="NUL"):
        manager.ensure_local_availability(env.pack + "\0Other")
    with pytest.raises(ValueError, match="NUL"):
        manager.contents("Levels/1.txt\0")
    # A lone surrogate has no UTF-8.
    with pytest.raises(ValueError):
        manager.contents("Levels/\udcff.txt")
    # Bytes go to the library as they are: it refuses what is not UTF-8.
    with pytest.raises(backlot.InvalidArgumentError) as caught:
        manager.contents(b"Levels/\xff\xfe.txt")
    assert caught.value.status == S.INVALID_ARGUMENT and "UTF-8" in caught.value.message
    with pytest.raises(backlot.InvalidArgumentError):
        manager.ensure_local_availability(b"\xff\xfe")  # type: ignore[arg-type]


def test_values_out_of_range(open_manager, env: Env) -> None:
    with pytest.raises(ValueError, match="bandwidth_limit"):
        open_manager(bandwidth_limit=-1)
    with pytest.raises(ValueError, match="stall_timeout"):
        open_manager(stall_timeout=2**40)
    with pytest.raises(TypeError, match="retries"):
        open_manager(retries=1.5)
    with pytest.raises(backlot.InvalidArgumentError) as caught:
        open_manager(retries=5000)  # the library's range: 0…1000, or -1
    assert "retries" in caught.value.message


def test_configurations_the_library_refuses(open_manager, env: Env, tmp_path: Path) -> None:
    with pytest.raises(backlot.Error) as caught:
        backlot.Manager(str(tmp_path / "c"), "not a catalog url", env.root_pub)
    assert caught.value.status == S.USAGE and caught.value.message
    garbage = tmp_path / "garbage.pub"
    garbage.write_text("not a key\n")
    with pytest.raises(backlot.Error) as caught:
        backlot.Manager(str(tmp_path / "c"), env.catalog_url, str(garbage))
    assert caught.value.status == S.INVALID_INPUT, caught.value
    with pytest.raises(backlot.Error) as caught:
        open_manager(app="com.example.other")
    assert caught.value.status == S.USAGE
    with pytest.raises(backlot.InvalidArgumentError):
        backlot.Manager("", env.catalog_url, env.root_pub)


def test_packs_and_files_that_are_not_there(install, env: Env) -> None:
    manager = install()
    with pytest.raises(backlot.AssetPackNotFoundError) as caught:
        manager.ensure_local_availability("NoSuchPack")
    assert caught.value.status == S.ASSET_PACK_NOT_FOUND
    with pytest.raises(backlot.Error) as caught:
        manager.asset_pack("NoSuchPack")
    assert caught.value.status == S.ASSET_PACK_NOT_FOUND
    with pytest.raises(backlot.FileNotFoundInPackError):
        manager.contents("Levels/none.txt")
    with pytest.raises(backlot.FileNotFoundInPackError):
        manager.descriptor("../../etc/passwd")
    with pytest.raises(backlot.Error):
        manager.contents("Levels/1.txt", pack_id="NoSuchPack")
    subscription = manager.subscribe(lambda update: None)
    subscription.unsubscribe()
    subscription.unsubscribe()  # again: nothing (the library would refuse the number: INVALID_ARGUMENT)
    from backlot import _errors, _native

    with pytest.raises(backlot.InvalidArgumentError):
        _errors.check(_native.lib.backlot_unsubscribe(manager._state.handle, 424242))


def test_a_missing_key_file_is_an_io_error(env: Env, tmp_path: Path) -> None:
    # backlot.h: IO for "a key file that cannot be read" (INVALID_INPUT is one that is not a key).
    key = tmp_path / "no-such-key.pub"
    with pytest.raises(backlot.Error) as caught:
        backlot.Manager(str(tmp_path / "c"), env.catalog_url, str(key), ca_path=env.ca)
    error = caught.value
    assert error.status is S.IO and type(error) is backlot.Error, error
    assert error.name == "BACKLOT_ERR_IO" and error.message.strip(), error


def test_a_container_that_cannot_be_made_is_an_io_error(env: Env, tmp_path: Path) -> None:
    # backlot.h: IO for "a container folder that cannot be made or opened", here beneath a file.
    (tmp_path / "file").write_text("x")
    with pytest.raises(backlot.Error) as caught:
        backlot.Manager(str(tmp_path / "file" / "container"), env.catalog_url, env.root_pub, ca_path=env.ca)
    error = caught.value
    assert error.status is S.IO and type(error) is backlot.Error, error
    assert error.message.strip() and "unexpected" not in error.message.lower(), error
    assert (tmp_path / "file").read_text() == "x"
