from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

# support (which imports backlot) is imported by the test modules, not here: a missing library
# then fails (or, with BACKLOT_ALLOW_SKIP=1, skips) each module rather than pytest itself.
if TYPE_CHECKING:
    import backlot
    from support import Env

OpenManager = Callable[..., "backlot.Manager"]


@pytest.fixture
def env() -> "Env":
    from support import Env

    return Env()


@pytest.fixture
def open_manager(tmp_path: Path, env: "Env") -> Iterator[OpenManager]:
    """open_manager(**options): a Manager of a new container in tmp_path, for the live server's
    catalog (closed at the end of the test). ``key`` picks the trusted key file."""
    from support import backlot

    opened: List[backlot.Manager] = []
    count = 0

    def make(key: str = "", **options: Any) -> "backlot.Manager":
        nonlocal count
        count += 1
        options.setdefault("ca_path", env.ca)
        manager = backlot.Manager(str(tmp_path / f"container{count}"), env.catalog_url, key or env.root_pub, **options)
        opened.append(manager)
        return manager

    yield make
    for manager in opened:
        manager.close()


@pytest.fixture
def install(open_manager: OpenManager, env: "Env") -> OpenManager:
    """install(**options): open_manager(**options), with the test pack installed in it."""

    def make(**options: Any) -> "backlot.Manager":
        manager = open_manager(**options)
        manager.ensure_local_availability(env.pack)
        return manager

    return make


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # With BACKLOT_ALLOW_SKIP=1 and no library, every module is skipped and pytest would exit 5
    # ("no tests collected"): skipping was asked for, so that is a success.
    import os

    if os.environ.get("BACKLOT_ALLOW_SKIP") == "1" and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK
