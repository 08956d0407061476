"""Installing the pack from the live server: progress, status updates, the pack's files."""

from __future__ import annotations

import threading
import time
from typing import Callable, List, Tuple

import pytest

from support import Env, backlot

Kind = backlot.UpdateKind


def wait_until(condition: Callable[[], bool], seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_install_and_read_byte_for_byte(open_manager, env: Env) -> None:
    manager = open_manager()
    assert manager.installed_packs() == []
    progress: List[Tuple[int, int]] = []
    manager.ensure_local_availability(env.pack, progress=lambda done, total: progress.append((done, total)))
    assert progress, "no progress callback"
    completed, total = progress[-1]
    assert completed == total and total > 0, progress
    assert all(done <= whole for done, whole in progress), progress
    assert [done for done, _ in progress] == sorted(done for done, _ in progress), progress

    assert manager.installed_packs() == [env.pack]
    for name in ("Levels/1.txt", "Levels/big.bin"):
        expected = env.source_bytes(name)
        assert manager.contents(name) == expected, name
        assert manager.contents(name, pack_id=env.pack) == expected, name
        assert manager._contents_copied(name) == expected, name
    assert manager.contents("Levels/1.txt") == b"the first level\n"


def test_the_last_fetch_says_where_its_bytes_came_from(open_manager, env: Env) -> None:
    manager = open_manager()
    with pytest.raises(backlot.Error) as caught:
        manager.last_fetch(env.pack)
    assert caught.value.status == backlot.Status.NOT_FOUND, caught.value
    manager.ensure_local_availability(env.pack)
    report = manager.last_fetch(env.pack)
    assert report.version >= 1 and report.origin_bytes > 3000000 and report.origin_chunks > 0, report
    assert report.peer_bytes == 0 and report.peer_chunks == 0, report


def test_peers_must_be_base_urls(env: Env, tmp_path) -> None:
    with pytest.raises(backlot.Error) as caught:
        backlot.Manager(tmp_path / "c", env.catalog_url, env.root_pub, ca_path=env.ca, peers=["ftp://10.0.0.2:21"])
    assert caught.value.status == backlot.Status.INVALID_ARGUMENT and "peers" in caught.value.message, caught.value


def test_an_installed_pack_reports_completion_at_once(install, env: Env) -> None:
    manager = install()
    progress: List[Tuple[int, int]] = []
    manager.ensure_local_availability(env.pack, progress=lambda done, total: progress.append((done, total)))
    assert progress and progress[-1][0] == progress[-1][1], progress
    manager.ensure_latest_availability(env.pack)
    assert manager.check_for_updates() == []
    assert manager.installed_packs() == [env.pack]


def test_status_updates_in_order(open_manager, env: Env) -> None:
    manager = open_manager()
    updates: List[backlot.StatusUpdate] = []
    threads: List[str] = []
    other: List[backlot.StatusUpdate] = []

    def record(update: backlot.StatusUpdate) -> None:
        threads.append(threading.current_thread().name)
        updates.append(update)

    with manager.subscribe(record, pack_id=env.pack) as subscription, manager.subscribe(other.append, "NoSuchPack"):
        assert subscription.active
        manager.ensure_local_availability(env.pack)
        assert wait_until(lambda: any(u.kind == Kind.FINISHED for u in updates)), updates
    assert not subscription.active
    kinds = [u.kind for u in updates]
    assert kinds[0] == Kind.BEGAN and kinds[-1] == Kind.FINISHED, kinds
    assert set(kinds[1:-1]) <= {Kind.DOWNLOADING, Kind.PAUSED}, kinds
    assert all(isinstance(k, Kind) for k in kinds)
    assert all(u.pack_id == env.pack for u in updates)
    last = updates[-1]
    assert last.completed_bytes == last.total_bytes > 0 and last.error is None
    downloading = [u.completed_bytes for u in updates if u.kind == Kind.DOWNLOADING]
    assert downloading == sorted(downloading)
    assert other == [], "a subscription to another pack saw this one's updates"
    assert threading.main_thread().name not in threads, "the updates come on the library's threads"
    seen = len(updates)
    manager.remove(env.pack)
    manager.ensure_local_availability(env.pack)
    time.sleep(0.3)
    assert len(updates) == seen, "an update after unsubscribe()"
    subscription.unsubscribe()  # again: nothing


def test_every_pack_subscription_sees_a_failure(open_manager, env: Env) -> None:
    manager = open_manager(key=env.wrong_root_pub)
    updates: List[backlot.StatusUpdate] = []
    subscription = manager.subscribe(updates.append)
    try:
        manager.ensure_local_availability(env.pack)
    except backlot.UntrustedError:
        pass
    # A catalog refused before any download starts sends no update; nothing must break.
    subscription.unsubscribe()
    for update in updates:
        if update.kind == Kind.FAILED:
            assert update.error is not None and update.error_message


def test_asset_pack_and_lists(open_manager, env: Env) -> None:
    manager = open_manager()
    assert env.pack in manager.all_asset_packs()
    before = manager.asset_pack(env.pack)
    assert before.id == env.pack and before.version >= 1 and before.download_size > 0
    assert isinstance(before.status, backlot.PackStatus)
    assert backlot.PackStatus.DOWNLOADED not in before.status
    manager.ensure_local_availability(env.pack)
    after = manager.asset_pack(env.pack)
    assert backlot.PackStatus.DOWNLOADED in after.status and backlot.PackStatus.UP_TO_DATE in after.status
    assert after.version == before.version
    device = manager.device_id
    assert isinstance(device, str) and device and manager.device_id == device
    assert manager.device_profile.startswith("textureFormat=") and ",deviceTier=" in manager.device_profile


def test_remove(install, env: Env) -> None:
    manager = install()
    manager.remove(env.pack)
    assert manager.installed_packs() == []
    try:
        manager.contents("Levels/1.txt")
    except backlot.Error as error:
        assert error.status in (backlot.Status.FILE_NOT_FOUND, backlot.Status.ASSET_PACK_NOT_FOUND), error
    else:
        raise AssertionError("a removed pack's file was read")


def test_cancel_a_running_download(open_manager, env: Env) -> None:
    manager = open_manager(bandwidth_limit=256 * 1024)  # 3 MB: about 12 s
    started = threading.Event()
    outcome: List[BaseException] = []

    def run() -> None:
        try:
            manager.ensure_local_availability(env.pack, progress=lambda done, total: done > 0 and started.set())
        except BaseException as error:  # noqa: B036 - handed to the test
            outcome.append(error)

    manager.cancel(env.pack)  # nothing runs: no error
    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(60), "the limited download made no progress"
    manager.cancel(env.pack)
    thread.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], backlot.CancelledError), outcome
    assert outcome[0].status == backlot.Status.CANCELLED and outcome[0].message
    assert manager.installed_packs() == []


def test_close_while_a_download_runs(open_manager, env: Env) -> None:
    manager = open_manager(bandwidth_limit=256 * 1024)
    started = threading.Event()
    outcome: List[BaseException] = []

    def run() -> None:
        try:
            manager.ensure_local_availability(env.pack, progress=lambda done, total: done > 0 and started.set())
        except BaseException as error:  # noqa: B036
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(60)
    manager.close()
    thread.join(60)
    assert len(outcome) == 1 and isinstance(outcome[0], backlot.CancelledError), outcome
