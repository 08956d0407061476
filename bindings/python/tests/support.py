"""What every test module shares: the backlot package (or a clear failure), the environment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

#: Set to 1 to skip, rather than fail, when the library or a variable below is missing.
ALLOW_SKIP = os.environ.get("BACKLOT_ALLOW_SKIP") == "1"

try:
    import backlot
except ImportError as error:  # the library is missing: fail (or skip) with what to do
    if ALLOW_SKIP:
        pytest.skip(f"backlot cannot be imported (BACKLOT_ALLOW_SKIP=1): {error}", allow_module_level=True)
    raise ImportError(
        f"{error}\n  the tests need libbacklot: set BACKLOT_LIBRARY to its path (or BACKLOT_ALLOW_SKIP=1 to skip them)"
    ) from error

__all__ = ["ALLOW_SKIP", "Env", "backlot", "missing"]


def missing(what: str) -> NoReturn:
    message = f"{what} (set BACKLOT_ALLOW_SKIP=1 to skip the tests that need it instead of failing)"
    if ALLOW_SKIP:
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


class Env:
    """The live server the tests run against, from the variables of /tmp/capi-manual/env.sh.

    Each is read when first used, in the test's body: a missing one fails that test (not its
    setup), naming the variable.
    """

    @staticmethod
    def get(name: str) -> str:
        value = os.environ.get(name, "")
        if not value:
            missing(f"the environment variable {name} is not set")
        return value

    @property
    def catalog_url(self) -> str:
        return self.get("BACKLOT_TEST_CATALOG_URL")

    @property
    def root_pub(self) -> str:
        return self.get("BACKLOT_TEST_ROOT_PUB")

    @property
    def wrong_root_pub(self) -> str:
        return self.get("BACKLOT_TEST_WRONG_ROOT_PUB")

    @property
    def ca(self) -> str:
        return self.get("BACKLOT_TEST_CA")

    @property
    def pack(self) -> str:
        return self.get("BACKLOT_TEST_PACK")

    @property
    def source(self) -> Path:
        return Path(self.get("BACKLOT_TEST_SOURCE"))

    def source_bytes(self, path: str) -> bytes:
        return (self.source / path).read_bytes()
