"""Reading installed files: descriptor, mmap, open, path, and many threads at once."""

from __future__ import annotations

import gc
import mmap
import os
import threading
from typing import List

import pytest
from support import Env, backlot


def test_descriptor_and_mmap(install, env: Env) -> None:
    manager = install()
    expected = env.source_bytes("Levels/big.bin")
    fd = manager.descriptor("Levels/big.bin")
    try:
        assert os.fstat(fd).st_size == len(expected)
        assert not os.get_inheritable(fd), "the descriptor would leak into child processes"
        with mmap.mmap(fd, len(expected), access=mmap.ACCESS_READ) as mapped:
            assert mapped[:] == expected
    finally:
        os.close(fd)

    with manager.mapped("Levels/big.bin", pack_id=env.pack) as mapped:
        assert isinstance(mapped, mmap.mmap)
        assert len(mapped) == len(expected)
        assert mapped[:1000] == expected[:1000] and mapped[-7:] == expected[-7:]
        assert memoryview(mapped) == expected  # readable through the buffer protocol, no copy
    with manager.mapped("Levels/1.txt") as small:
        assert small[:] == b"the first level\n"


def test_open_and_path(install, env: Env) -> None:
    manager = install()
    with manager.open("Levels/1.txt") as f:
        assert f.read() == b"the first level\n"
    where = manager.path("Levels/big.bin", pack_id=env.pack)
    assert os.path.isabs(where)
    with open(where, "rb") as f:
        assert f.read() == env.source_bytes("Levels/big.bin")


def test_no_descriptor_is_left_open(install, env: Env) -> None:
    manager = install()
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc/self/fd to count descriptors")
    for _ in range(3):  # warm up: lazily opened files of the library
        manager.contents("Levels/1.txt")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(200):
        manager.contents("Levels/1.txt")
        manager.mapped("Levels/1.txt").close()
        with pytest.raises(backlot.FileNotFoundInPackError):
            manager.contents("Levels/none.txt")
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= before + 2


def test_eight_threads_read_at_once(install, env: Env) -> None:
    manager = install()
    big = env.source_bytes("Levels/big.bin")
    small = env.source_bytes("Levels/1.txt")
    barrier = threading.Barrier(8)
    problems: List[str] = []

    def work(i: int) -> None:
        try:
            barrier.wait(30)
            for round in range(5):
                name, expected = ("Levels/big.bin", big) if (i + round) % 2 else ("Levels/1.txt", small)
                got = manager.contents(name) if round % 2 else manager._contents_copied(name, env.pack)
                if got != expected:
                    problems.append(f"thread {i}, round {round}: {name} differs")
        except BaseException as error:  # noqa: B036 - reported below
            problems.append(f"thread {i}: {error!r}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert problems == []
