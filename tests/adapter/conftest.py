"""The API server double every adapter test talks to, one per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.apiserver import ApiServerDouble


@pytest.fixture()
def api() -> Iterator[ApiServerDouble]:
    server = ApiServerDouble()
    server.start()
    yield server
    server.stop()
