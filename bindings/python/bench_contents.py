#!/usr/bin/env python3
"""How fast Manager.contents() reads a large installed file, against open(path, 'rb').read().

    python3 bindings/python/bench_contents.py [--size MIB] [--repeat N]

Builds its own repository in a temporary folder, with the backlot binary ($BACKLOT_BINARY, else
`backlot` on PATH): a pack "Bench" holding one file of --size MiB (100) of random bytes,
packaged, served by its own `backlot serve` on a free loopback port, uploaded and released on
the internal channel, then installed into a container through the binding. Then, --repeat times
each (warm page cache: what is timed is the copying, not the disk):

  open().read()      open(manager.path(name), 'rb').read(): the target
  contents()         backlot_descriptor + FileIO.readall into one bytes object (what the binding does)
  backlot_contents   the library's malloc'd buffer, then ctypes.string_at: a second copy
  readinto()         backlot_descriptor + readinto a preallocated bytearray (returned as it is)
  mapped()           backlot_descriptor + mmap: nothing copied (bytes are read when touched)

Prints the best and the median of each, and contents()' best over open().read()'s (the target
is at most 1.2). The server is stopped and the folder removed at the end, whatever happens.
Needs libbacklot as the tests do (BACKLOT_LIBRARY, or on the library path).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

import backlot  # noqa: E402

APP = "com.example.bench"
PACK = "Bench"
FILE = "Bench/big.bin"


def run(*command: str, env: Dict[str, str]) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench: {' '.join(command[:3])} … failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def make_repository(binary: str, work: Path, size: int) -> "tuple[subprocess.Popen[str], str, Path]":
    source = work / "source" / "Bench"
    source.mkdir(parents=True)
    with open(source / "big.bin", "wb") as f:
        left = size
        while left:
            step = min(left, 8 << 20)
            f.write(os.urandom(step))
            left -= step
    manifest = work / "Manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "assetPackID": PACK,
                "fileSelectors": [{"directory": "Bench"}],
                "platforms": ["linux"],
                "downloadPolicy": {"onDemand": {}},
            }
        )
    )
    env = dict(os.environ)
    started = time.perf_counter()
    run(
        binary,
        "package",
        str(manifest),
        "--source-root",
        str(work / "source"),
        "-o",
        str(work / "Bench.pack"),
        "--level",
        "1",
        env=env,
    )
    print(f"packaged {size >> 20} MiB in {time.perf_counter() - started:.1f} s", flush=True)

    log = open(work / "serve.log", "w")
    server = subprocess.Popen(
        [binary, "serve", "--data", str(work / "srv"), "--host", "127.0.0.1", "--port", "0", "--quiet"],
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = ""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and server.poll() is None:
        text = (work / "serve.log").read_text()
        for line in text.splitlines():
            if line.startswith("Serving ") and " at https://" in line:
                url = line.rsplit(" at ", 1)[1].strip()
        if url and "Metrics:" in text:
            break
        time.sleep(0.1)
    if not url:
        server.terminate()
        raise SystemExit("bench: backlot serve did not start:\n" + (work / "serve.log").read_text())
    env["BACKLOT_TOKEN"] = (work / "srv" / "admin-token").read_text().strip()
    remote = ["--server", url, "--ca", str(work / "srv" / "tls" / "ca.pem")]
    started = time.perf_counter()
    run(binary, "apps", "create", APP, *remote, env=env)
    run(binary, "upload", str(work / "Bench.pack"), "--app", APP, *remote, env=env)
    run(binary, "release", "--app", APP, "--pack", PACK, "--version", "1", "--channel", "internal", *remote, env=env)
    print(f"uploaded and released in {time.perf_counter() - started:.1f} s", flush=True)
    return server, f"{url.rstrip('/')}/v1/apps/{APP}/internal/catalog.json", work / "srv"


def measure(methods: Dict[str, Callable[[], object]], repeat: int) -> Dict[str, List[float]]:
    times: Dict[str, List[float]] = {name: [] for name in methods}
    for _ in range(repeat):
        for name, method in methods.items():  # interleaved, so that each sees the same conditions
            started = time.perf_counter()
            result = method()
            times[name].append(time.perf_counter() - started)
            del result
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100, help="MiB (default 100)")
    parser.add_argument("--repeat", type=int, default=7, help="runs of each (default 7)")
    options = parser.parse_args()
    binary = os.environ.get("BACKLOT_BINARY") or shutil.which("backlot")
    if not binary:
        raise SystemExit("bench: set BACKLOT_BINARY to the backlot binary (or put backlot on PATH)")
    size = options.size << 20
    work = Path(tempfile.mkdtemp(prefix="backlot-bench."))
    server = None
    try:
        server, catalog, srv = make_repository(binary, work, size)
        with backlot.Manager(
            str(work / "container"), catalog, str(srv / "root.pub"), ca_path=str(srv / "tls" / "ca.pem")
        ) as manager:
            started = time.perf_counter()
            manager.ensure_local_availability(PACK)
            print(f"installed through the binding in {time.perf_counter() - started:.1f} s", flush=True)
            where = manager.path(FILE)
            expected = (work / "source" / FILE).read_bytes()
            assert manager.contents(FILE) == expected and manager._contents_copied(FILE) == expected

            def plain() -> bytes:
                with open(where, "rb") as f:
                    return f.read()

            def readinto() -> bytearray:
                fd = manager.descriptor(FILE)
                with open(fd, "rb", buffering=0) as f:
                    buffer = bytearray(os.fstat(fd).st_size)
                    view, got = memoryview(buffer), 0
                    while got < len(buffer):
                        n = f.readinto(view[got:])
                        if not n:
                            break
                        got += n
                    return buffer

            def mapped() -> int:
                with manager.mapped(FILE) as m:
                    return len(m)

            del expected
            times = measure(
                {
                    "open().read()": plain,
                    "contents()": lambda: manager.contents(FILE),
                    "backlot_contents": lambda: manager._contents_copied(FILE),
                    "readinto()": readinto,
                    "mapped()": mapped,
                },
                options.repeat,
            )
        print(f"\n{options.size} MiB, {options.repeat} runs each, warm page cache (Python {sys.version.split()[0]}):")
        base = min(times["open().read()"])
        for name, values in times.items():
            best, median = min(values), statistics.median(values)
            print(
                f"  {name:18} best {best * 1000:8.1f} ms   median {median * 1000:8.1f} ms   "
                f"best/open().read() {best / base:5.2f}"
            )
        ratio = min(times["contents()"]) / base
        print(f"\ncontents() / open().read(): {ratio:.2f} (target: at most 1.2) -> {'ok' if ratio <= 1.2 else 'SLOW'}")
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
