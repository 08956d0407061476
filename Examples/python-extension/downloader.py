#!/usr/bin/env python3
"""A Backlot downloader extension in plain Python 3 (standard library only).

The agent (`backlot agent`, `backlot notify`, `backlot simulate`) runs it once per call:

    downloader.py --backlot-extension-call CALL.json REPLY.json

with BACKLOT_CONTAINER set to the app's container. It reads the call, answers in REPLY.json
(written to REPLY.json.tmp, then renamed) and exits 0: docs/protocol.md §11 and docs/agent.md §3.
Nothing here comes from Swift; the protocol is JSON files, an exit status and one environment
variable.

What it decides comes from policy.json, next to this file (see README.md):

    {
      "accept": ["Levels"],                    pack IDs to download; every other candidate is declined
      "downloads": [{"identifier": "intro", "url": "https://…", "fileSize": 1234,
                     "essential": false, "priority": 0}],
                                               URL downloads for `downloads` calls (essential ones
                                               are left out of periodic and languageChange requests)
      "downloadFolder": "python-extension-downloads",
                                               where finished files are moved, inside the container
      "credentials": {"REALM": {"user": "…", "password": "…"}},
                                               answers to HTTP Basic challenges, by realm
      "trustedCertificateSHA256": ["hex…"]     servers to trust for URL downloads: the SHA-256 of
                                               the DER of any certificate in the chain they present
    }

Every call and answer is logged to CONTAINER/python-extension.log (never a password). Malformed
input from the agent (a call that is not JSON, a key of the wrong type, a number out of range, an
unknown call, a file that is not a regular file) is reported on standard error, and the process
exits 1 without an answer: the agent then counts a failed call and goes on with its defaults.
Wrong arguments exit 2. Nothing here waits without a bound.
"""

import base64
import binascii
import datetime
import decimal
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import sqlite3
import stat
import sys
import time
import urllib.parse

CALL_LIMIT = 64 << 20  # what the agent may send (docs/protocol.md §11)
ANSWER_LIMIT = 16 << 20  # what the agent reads
POLICY_LIMIT = 1 << 20
SIZE_MAX = (1 << 63) - 1  # sizes: 0 … 2^63 − 1
INT64 = (-(1 << 63), (1 << 63) - 1)
UINT64_MAX = (1 << 64) - 1
LOCK_WAIT_SECONDS = 20  # under the agent's default 60 s limit for one call
DISPOSITIONS = ("useCredential", "performDefaultHandling", "cancelAuthenticationChallenge", "rejectProtectionSpace")
REQUESTS = ("install", "update", "periodic", "languageChange")
# Requests that may return only non-essential downloads (every one but the installation events).
NON_ESSENTIAL_REQUESTS = ("periodic", "languageChange")
CALLS = ("shouldDownload", "downloads", "finished", "failed", "challenge", "serverTrust")
LOG_NAME = "python-extension.log"
# What the container's state.sqlite holds for a URL download outcome (url_events.delivered).
OUTCOME_RESERVED = 2
OUTCOME_TAKEN_BY_EXTENSION = 4


class Invalid(Exception):
    """Input that breaks the protocol (or the policy): reported, exit 1."""


# ---------------------------------------------------------------------------------------------
# Reading JSON strictly


def _no_constant(name):
    raise Invalid(f"{name} is not JSON")


def read_file(path, limit, what):
    """The bytes of a regular file, at most `limit`. Opened without blocking, so that a FIFO or a
    device given instead of a file is refused rather than waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise Invalid(f"{what} {path} cannot be opened: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Invalid(f"{what} {path} is not a regular file")
        if st.st_size > limit:
            raise Invalid(f"{what} {path} holds {st.st_size} bytes, over the limit of {limit}")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise Invalid(f"{what} {path} holds over {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_json(data, what):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Invalid(f"{what} is not UTF-8 (byte {e.start})") from None
    try:
        # Numbers stay exact (Decimal), so that 1.5, 2^64 and 1e400 are told apart from whole numbers.
        return json.loads(text, parse_float=decimal.Decimal, parse_constant=_no_constant)
    except Invalid as e:
        raise Invalid(f"{what} is not valid JSON: {e}") from None
    except json.JSONDecodeError as e:
        raise Invalid(f"{what} is not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except (ValueError, RecursionError) as e:
        raise Invalid(f"{what} is not valid JSON: {e}") from None


def whole(obj, key, path, lo, hi, required=False):
    """A whole number in lo…hi at obj[key] (None when absent or null, unless required)."""
    name = path + key
    value = obj.get(key)
    if value is None:
        if required:
            raise Invalid(f"the key {name} is missing, not a whole number in {lo}…{hi}")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        raise Invalid(f"the key {name} is {type_name(value)}, not a whole number in {lo}…{hi}")
    if isinstance(value, decimal.Decimal):
        # 1e3 and 1000.0 are 1000 (JSON does not tell them apart); 1.5 is not whole. Look at the
        # exponent before converting, so that 1e999999999 never becomes a billion-digit integer.
        if not value.is_finite() or value.adjusted() > 40 or value != value.to_integral_value():
            raise Invalid(f"the key {name} is {value}, not a whole number in {lo}…{hi}")
        value = int(value)
    if not lo <= value <= hi:
        raise Invalid(f"the key {name} is {value}, not a whole number in {lo}…{hi}")
    return value


def string(obj, key, path, required=True, nonempty=False):
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (nonempty and not value):
        what = "missing" if key not in obj else type_name(value) if not isinstance(value, str) else "empty"
        raise Invalid(f"the key {path}{key} must be a{' non-empty' if nonempty else ''} string ({what})")
    return value


def obj_at(obj, key, path, required=True):
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise Invalid(f"the key {path}{key} must be an object ({'missing' if key not in obj else type_name(value)})")
    return value


def type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, decimal.Decimal)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    return "an object"


# ---------------------------------------------------------------------------------------------
# The messages (docs/protocol.md §11)


def read_pack(p, path):
    if not isinstance(p, dict):
        raise Invalid(f"{path[:-1]} must be an object ({type_name(p)})")
    pack = {
        "id": string(p, "id", path, nonempty=True),
        "downloadSize": whole(p, "downloadSize", path, 0, SIZE_MAX, required=True),
        "version": whole(p, "version", path, 0, SIZE_MAX, required=True),
        "digest": string(p, "digest", path),
    }
    policy = p.get("downloadPolicy")
    kinds = [k for k in ("essential", "prefetch", "onDemand") if isinstance(policy, dict) and k in policy]
    if not isinstance(policy, dict) or len(kinds) != 1:
        raise Invalid(f"the key {path}downloadPolicy must be an object with exactly one of essential, prefetch, onDemand")
    pack["policy"] = kinds[0]
    language = p.get("language")
    pack["language"] = language if isinstance(language, str) else None
    return pack


def read_download(obj, key, path):
    """A download as calls and answers carry it: {identifier, url, fileSize, essential, priority}."""
    d = obj_at(obj, key, path)
    path = f"{path}{key}."
    download = {
        "identifier": string(d, "identifier", path, nonempty=True),
        "url": string(d, "url", path, nonempty=True),
        "fileSize": whole(d, "fileSize", path, 0, SIZE_MAX),
        "essential": d.get("essential", False),
        "priority": whole(d, "priority", path, *INT64) or 0,
    }
    if not isinstance(download["essential"], bool):
        raise Invalid(f"the key {path}essential must be a boolean ({type_name(download['essential'])})")
    parts = urllib.parse.urlsplit(download["url"])
    if not parts.scheme or not parts.netloc:
        raise Invalid(f"the key {path}url is not an absolute URL: {download['url']!r}")
    return download


def read_call(message):
    if not isinstance(message, dict):
        raise Invalid(f"the call must be a JSON object ({type_name(message)})")
    name = message.get("call")
    if name not in CALLS:
        raise Invalid(f"the key call names no known call ({', '.join(CALLS)}): {name!r}")
    call = {"call": name}
    if name == "shouldDownload":
        packs = message.get("packs")
        if not isinstance(packs, list):
            raise Invalid(f"the key packs must be an array ({'missing' if 'packs' not in message else type_name(packs)})")
        call["packs"] = [read_pack(p, f"packs[{i}].") for i, p in enumerate(packs)]
    elif name == "downloads":
        request = string(message, "request", "")
        if request not in REQUESTS:
            raise Invalid(f"the key request names no content request ({', '.join(REQUESTS)}): {request!r}")
        call["request"] = request
        call["manifestPath"] = string(message, "manifestPath", "", nonempty=True)
        info = obj_at(message, "extensionInfo", "", required=False) or {}
        call["remaining"] = {
            False: whole(info, "restrictedDownloadSizeRemaining", "extensionInfo.", 0, UINT64_MAX),
            True: whole(info, "restrictedEssentialDownloadSizeRemaining", "extensionInfo.", 0, UINT64_MAX),
        }
    elif name in ("finished", "failed"):
        call["download"] = read_download(message, "download", "")
        call["outcome"] = whole(message, "outcome", "", 1, INT64[1])
        if name == "finished":
            call["filePath"] = string(message, "filePath", "", nonempty=True)
        else:
            msg = message.get("message")
            call["message"] = msg if isinstance(msg, str) else ""
            call["code"] = whole(message, "code", "", *INT64)
    elif name == "challenge":
        call["download"] = read_download(message, "download", "")
        call["realm"] = string(message, "realm", "")
        call["previousFailureCount"] = whole(message, "previousFailureCount", "", 0, INT64[1]) or 0
    else:  # serverTrust
        call["download"] = read_download(message, "download", "")
        certs = message.get("certificates")
        if not isinstance(certs, list) or len(certs) > 16 or not all(isinstance(c, str) for c in certs):
            raise Invalid("the key certificates must be an array of at most 16 certificates (base64 DER)")
        try:
            call["certificates"] = [base64.b64decode(c, validate=True) for c in certs]
        except (binascii.Error, ValueError):
            raise Invalid("the key certificates holds a certificate that is not base64") from None
    return call


# ---------------------------------------------------------------------------------------------
# The policy file


def read_policy(path):
    """The policy next to this file; anything wrong in it is named with the policy's path."""
    policy = parse_json(read_file(path, POLICY_LIMIT, "the policy"), f"the policy {path}")
    try:
        return check_policy(policy)
    except Invalid as e:
        raise Invalid(f"the policy {path}: {e}") from None


def check_policy(policy):
    if not isinstance(policy, dict):
        raise Invalid("it must be a JSON object")
    accept = policy.get("accept", [])
    if not isinstance(accept, list) or not all(isinstance(a, str) for a in accept):
        raise Invalid("the key accept must be an array of pack IDs (strings)")
    downloads = policy.get("downloads", [])
    if not isinstance(downloads, list):
        raise Invalid("the key downloads must be an array of downloads")
    checked = [read_download({f"downloads[{i}]": d}, f"downloads[{i}]", "") for i, d in enumerate(downloads)]
    if len({d["identifier"] for d in checked}) != len(checked):
        raise Invalid("the key downloads names an identifier twice")
    folder = policy.get("downloadFolder", "python-extension-downloads")
    if not isinstance(folder, str) or not folder or os.path.isabs(folder) or ".." in folder.split("/"):
        raise Invalid("the key downloadFolder must be a relative path inside the container, without ..")
    credentials = policy.get("credentials", {})
    if not isinstance(credentials, dict) or not all(
        isinstance(c, dict) and isinstance(c.get("user"), str) and isinstance(c.get("password"), str)
        for c in credentials.values()
    ):
        raise Invalid('the key credentials must map realms to {"user": "…", "password": "…"}')
    pins = policy.get("trustedCertificateSHA256", [])
    if not isinstance(pins, list) or not all(isinstance(p, str) and re.fullmatch(r"[0-9a-fA-F]{64}", p) for p in pins):
        raise Invalid("the key trustedCertificateSHA256 must be an array of SHA-256 digests (64 hex digits)")
    return {
        "accept": set(accept),
        "downloads": checked,
        "downloadFolder": folder,
        "credentials": credentials,
        "pins": {p.lower() for p in pins},
    }


# ---------------------------------------------------------------------------------------------
# The container: the log, and the claim of a URL download's outcome


class Log:
    def __init__(self, container):
        self.path = os.path.join(container, LOG_NAME)

    def __call__(self, line):
        self.append(line)
        try:
            print(line.replace("\n", "\\n"), flush=True)  # standard output goes to the agent's log
        except OSError:
            pass  # nobody reads it: the log file has it

    def append(self, line):
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            line = line.replace("\r", "\\r").replace("\n", "\\n")  # one line per entry, whatever a message holds
            os.write(fd, f"{stamp} [{os.getpid()}] {line}\n".encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)


def claim_outcome(container, seq):
    """Takes a URL download's outcome reserved for the extension (docs/agent.md §3, step 4):
    under the container's exclusive lock, one conditional update of state.sqlite moves it from
    reserved to taken. False: it is no longer reserved (it went to the app): do not handle it.

    This is what the Swift host does (DownloadManager.claimReservation); docs/protocol.md names the
    step but not how it is done, so this follows the implementation: the lock is an exclusive
    whole-file record lock on CONTAINER/.exclusive.lock (the agent's are OFD locks, which conflict
    with the POSIX lock taken here), the row is url_events.seq, its state url_events.delivered."""
    lock_path = os.path.join(container, ".exclusive.lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EACCES, errno.EAGAIN):
                    raise
                if time.monotonic() >= deadline:
                    raise Invalid(f"the container's lock {lock_path} stayed held for {LOCK_WAIT_SECONDS} s") from None
                time.sleep(0.05)
        db = os.path.join(container, "state.sqlite")
        if not os.path.isfile(db):
            raise Invalid(f"the container has no {db} to claim outcome {seq} in")
        uri = "file:" + urllib.parse.quote(db) + "?mode=rw"
        connection = sqlite3.connect(uri, uri=True, timeout=10, isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")
            changed = connection.execute(
                "UPDATE url_events SET delivered = ? WHERE seq = ? AND delivered = ?",
                (OUTCOME_TAKEN_BY_EXTENSION, seq, OUTCOME_RESERVED),
            ).rowcount
            connection.execute("COMMIT")
            return changed == 1
        finally:
            connection.close()
    finally:
        os.close(fd)  # releases the lock


def safe_name(identifier):
    if re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}", identifier):
        return identifier
    return "id-" + hashlib.sha256(identifier.encode("utf-8")).hexdigest()


def describe(download):
    size = "size undeclared" if download["fileSize"] is None else f"{download['fileSize']} bytes"
    kind = "essential" if download["essential"] else "non-essential"
    return f"{download['identifier']} ({download['url']}, {size}, {kind})"


# ---------------------------------------------------------------------------------------------
# The answers


def should_download(call, policy, log):
    keep, decline = [], []
    for pack in call["packs"]:
        decision = "download" if pack["id"] in policy["accept"] else "decline"
        (keep if decision == "download" else decline).append(pack["id"])
        log(
            f"shouldDownload: asked about {pack['id']} ({pack['policy']}, version {pack['version']}, "
            f"{pack['downloadSize']} bytes): {decision}"
        )
    # Both lists, every pack in one of them: no pack is left to the defaults.
    return {"download": keep, "decline": decline}


def downloads(call, policy, log, container):
    catalog = parse_json(read_file(call["manifestPath"], CALL_LIMIT, "the manifest"), "the manifest")
    if not isinstance(catalog, dict) or not isinstance(catalog.get("packs"), list):
        raise Invalid(f"the manifest {call['manifestPath']} is not a catalog (an object with packs)")
    log(
        f"downloads: request {call['request']}; the catalog of {catalog.get('app')} ({catalog.get('channel')}, "
        f"version {catalog.get('version')}) lists {len(catalog['packs'])} packs"
    )
    remaining = dict(call["remaining"])
    chosen = []
    for d in policy["downloads"]:
        if call["request"] in NON_ESSENTIAL_REQUESTS and d["essential"]:
            log(f"downloads: leaving out {describe(d)}: a {call['request']} request takes no essential download")
            continue
        left = remaining[d["essential"]]
        if left is not None and d["fileSize"] is not None:
            if d["fileSize"] > left:
                log(f"downloads: leaving out {describe(d)}: only {left} bytes may still be scheduled")
                continue
            remaining[d["essential"]] = left - d["fileSize"]
        chosen.append(d)
    chosen.sort(key=lambda d: d["identifier"])
    for d in chosen:
        log(f"downloads: answered {describe(d)}")
    if not chosen:
        log("downloads: answered no URL downloads")
    return {"downloads": chosen}


def finished(call, policy, log, container):
    d = call["download"]
    if call["outcome"] is not None and not claim_outcome(container, call["outcome"]):
        log(f"finished: {d['identifier']}: outcome {call['outcome']} was no longer reserved (already delivered, or gone to the app); not handled")
        return {}
    folder = os.path.join(container, policy["downloadFolder"])
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, safe_name(d["identifier"]))
    source = call["filePath"]
    if not os.path.isfile(source):
        raise Invalid(f"the finished file {source} of {d['identifier']} is not there")
    try:
        os.replace(source, target)  # the hand-over folder is in the container: one rename
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        shutil.move(source, target)
    log(f"finished: {describe(d)}: moved to {target}" + (f" (outcome {call['outcome']} claimed)" if call["outcome"] else ""))
    return {}


def failed(call, policy, log, container):
    d = call["download"]
    if call["outcome"] is not None and not claim_outcome(container, call["outcome"]):
        log(f"failed: {d['identifier']}: outcome {call['outcome']} was no longer reserved (already delivered, or gone to the app); not handled")
        return {}
    code = "no code" if call["code"] is None else f"BAErrorCode {call['code']}"
    log(f"failed: {describe(d)}: {call['message']} ({code})")
    return {}


def challenge(call, policy, log, container):
    d = call["download"]
    credential = policy["credentials"].get(call["realm"])
    if credential is not None and call["previousFailureCount"] == 0:
        answer = {"disposition": "useCredential", "user": credential["user"], "password": credential["password"]}
        said = f"useCredential (user {credential['user']})"
    elif credential is not None:
        answer = {"disposition": "cancelAuthenticationChallenge"}
        said = "cancelAuthenticationChallenge (the server refused the credential)"
    else:
        answer = {"disposition": "performDefaultHandling"}
        said = "performDefaultHandling (no credential for this realm)"
    log(f"challenge: {d['identifier']}: realm {call['realm']!r}, {call['previousFailureCount']} refused before: {said}")
    return {"challenge": answer}


def server_trust(call, policy, log, container):
    d = call["download"]
    digests = [hashlib.sha256(c).hexdigest() for c in call["certificates"]]
    if any(x in policy["pins"] for x in digests):
        answer, said = "useCredential", "useCredential (a pinned certificate)"
    else:
        answer, said = "performDefaultHandling", "performDefaultHandling (the usual certificate check)"
    log(f"serverTrust: {d['identifier']}: {len(digests)} certificates: {said}")
    return {"challenge": {"disposition": answer}}


HANDLERS = {
    "downloads": downloads,
    "finished": finished,
    "failed": failed,
    "challenge": challenge,
    "serverTrust": server_trust,
}


def write_answer(path, answer):
    data = json.dumps(answer, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    if len(data) > ANSWER_LIMIT:
        raise Invalid(f"the answer would hold {len(data)} bytes, over the agent's limit of {ANSWER_LIMIT}")
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)


def main(argv):
    if len(argv) != 4 or argv[1] != "--backlot-extension-call":
        sys.stderr.write(
            "this is a Backlot downloader extension; the agent runs it "
            "(backlot agent, notify or simulate) as: downloader.py --backlot-extension-call CALL.json REPLY.json\n"
        )
        return 2
    call_path, reply_path = argv[2], argv[3]
    log = None
    try:
        container = os.environ.get("BACKLOT_CONTAINER")
        if not container or not os.path.isdir(container):
            raise Invalid(f"BACKLOT_CONTAINER must name the app's container folder (it is {container!r})")
        log = Log(container)
        call = read_call(parse_json(read_file(call_path, CALL_LIMIT, "the call"), f"the call {call_path}"))
        policy = read_policy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "policy.json"))
        if call["call"] == "shouldDownload":
            answer = should_download(call, policy, log)
        else:
            answer = HANDLERS[call["call"]](call, policy, log, container)
        write_answer(reply_path, answer)
        return 0
    except (Invalid, OSError, sqlite3.Error) as e:
        text = str(e) if isinstance(e, Invalid) else f"{type(e).__name__}: {e}"
        sys.stderr.write(f"downloader.py: {text}\n")
        if log is not None:
            try:
                log.append(f"error, no answer: {text}")
            except OSError:
                pass
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
