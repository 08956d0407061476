#!/usr/bin/env python3
"""What Backlot's Python scripts share, and the port picker behind scripts/lib/common.sh's
`free_port` (the one implementation). A script imports it with:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    from common import free_port, served_url

    python3 scripts/lib/common.py free-port [COUNT]   prints COUNT distinct free ports (1), one a line

free_port(), free_ports(COUNT): how a port is chosen, and the race that remains:
- Never from the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range, less
  ip_local_reserved_ports): the kernel hands those out to every `bind(port 0)` and every outgoing
  connection, so a port it gave us could be given again to anyone between our close and the
  server's bind. Outside that range the kernel never picks it on its own.
- A random port in [10000, start of the ephemeral range) (or above its end when the range starts
  low), so two callers running at the same moment are unlikely to pick the same one.
- Checked by binding it, without SO_REUSEADDR, on 0.0.0.0 and on [::] (IPv6 only), and listening:
  that fails while anybody holds the port on any address, in any state (TIME_WAIT included).
- The check socket is closed before the port is returned, so the caller's server can bind it.
Remaining race: between that close and the server's own bind, another process that chooses ports
explicitly (another script running this, a test, a daemon with a fixed port) may take the same
port. That is rare, but not impossible: a caller must treat "address already in use" (EADDRINUSE)
from the server it starts as "try again with another port", not as a failure of what it tests.
Where the server can choose (`backlot serve --port 0`), let it, and read the address it prints
(served_url): there is no race then.

command_line(): how the running script was started, to print with its figures (#28 §3: what was
run, never fixed text): the BENCH_* and *ROUNDS variables set in its environment, the script as
scripts/NAME, and its arguments, quoted for a shell.

served_url(process, seconds): the URL in `backlot serve`'s "Serving … at URL" line, read from the
process's stdout pipe for SECONDS at most; exits the script (status 1) naming what did not come
up when the line does not come in time or the process ends first.
"""
import errno
import os
import shlex
import queue
import random
import socket
import sys
import threading

FLOOR = 10000  # below: ports that daemons commonly use with fixed numbers


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _reserved():
    """ip_local_reserved_ports (a list such as "8080,9000-9010"): kept for explicit use by someone."""
    ports = set()
    try:
        with open("/proc/sys/net/ipv4/ip_local_reserved_ports") as f:
            text = f.read().strip()
    except OSError:
        return ports
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        ports.update(range(int(low), int(high or low) + 1))
    return ports


def _candidates():
    low, high = _ephemeral_range()
    if low - FLOOR >= 2000:
        return range(FLOOR, low)
    if high < 65535 - 2000:
        return range(high + 1, 65536)
    return range(1024, 65536)  # an unusual range covering almost everything: nothing better


def _is_free(port):
    probes = [(socket.AF_INET, "0.0.0.0")]
    if socket.has_ipv6:
        probes.append((socket.AF_INET6, "::"))
    held = []
    try:
        for family, address in probes:
            try:
                s = socket.socket(family, socket.SOCK_STREAM)
            except OSError:
                continue  # no IPv6 on this machine
            held.append(s)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s.bind((address, port))
                s.listen(1)
            except OSError as e:
                if family == socket.AF_INET6 and e.errno == errno.EADDRNOTAVAIL:
                    continue  # IPv6 disabled
                return False
        return True
    finally:
        for s in held:
            s.close()


def free_ports(count=1, tries=2000):
    """COUNT distinct ports nobody holds now, outside the ephemeral range (see the module's text
    for the race that remains: retry on EADDRINUSE). Raises RuntimeError when none is found."""
    pool = _candidates()
    reserved = _reserved()
    rng = random.SystemRandom()
    chosen = []
    for _ in range(tries):
        port = rng.choice(pool)
        if port in reserved or port in chosen:
            continue
        if _is_free(port):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise RuntimeError(f"no free TCP port found on 127.0.0.1 in {pool.start}-{pool.stop - 1} after {tries} tries")


def free_port():
    """One port nobody holds now (see free_ports)."""
    return free_ports(1)[0]


def served_url(process, seconds, what="backlot serve"):
    """The URL of PROCESS's "Serving … at URL" line (its stdout must be a pipe). The rest of its
    output is read and dropped meanwhile and afterwards, so the pipe never fills."""
    lines = queue.Queue()

    def drain():
        for raw in iter(process.stdout.readline, b"" if "b" in getattr(process.stdout, "mode", "rb") else ""):
            lines.put(raw.decode(errors="replace") if isinstance(raw, bytes) else raw)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    seen = []
    deadline = _now() + seconds
    while True:
        try:
            line = lines.get(timeout=max(0.01, deadline - _now()))
        except queue.Empty:
            line = ""
        if line is None:
            process.wait()
            sys.exit(f"{_me()}: {what} did not come up: it exited with status {process.returncode}; it printed:\n" + "".join(seen))
        if line.startswith("Serving ") and " at http" in line:
            return line.strip().rsplit(" ", 1)[-1]
        seen.append(line)
        if _now() >= deadline:
            sys.exit(f"{_me()}: {what} did not come up within {seconds} s (no 'Serving … at URL' line); it printed:\n" + "".join(seen))


def _now():
    import time
    return time.monotonic()


def _me():
    import os
    return os.path.basename(sys.argv[0]) or "script"


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        raise SystemExit(0)
    if not args or args[0] != "free-port" or len(args) > 2 or (len(args) == 2 and not (args[1].isdigit() and 1 <= int(args[1]) <= 100)):
        print("usage: scripts/lib/common.py free-port [COUNT]   (COUNT: 1 to 100)", file=sys.stderr)
        raise SystemExit(2)
    try:
        print("\n".join(str(p) for p in free_ports(int(args[1]) if len(args) == 2 else 1)))
    except RuntimeError as e:
        print(f"common.py: {e}", file=sys.stderr)
        raise SystemExit(1)


def command_line():
    """How the running script was started: its BENCH_* and *ROUNDS variables, scripts/NAME, its arguments."""
    env = [f"{k}={shlex.quote(v)}" for k, v in sorted(os.environ.items()) if k.startswith("BENCH_") or k.endswith("ROUNDS")]
    return " ".join(env + [shlex.join(["scripts/" + os.path.basename(sys.argv[0]), *sys.argv[1:]])])
