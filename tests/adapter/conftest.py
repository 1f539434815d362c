"""The API server double every adapter test talks to, one per test; at its end the test fails
if any request it served overcommitted a node (tests/capacity.py: a node's bound pods, the
terminating ones included, requesting more than its allocatable at any moment)."""

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
    assert not server.capacity_violations, "a node was overcommitted:\n" + "\n".join(
        map(str, server.capacity_violations))
