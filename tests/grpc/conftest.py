"""A real gangplace server on a loopback port, one per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from solver.service import server


@pytest.fixture()
def running() -> Iterator[server.Running]:
    run = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address="127.0.0.1:0", max_inflight=1))
    yield run
    run.stop(5)


def _target(run: server.Running) -> str:
    return f"127.0.0.1:{run.port}"
