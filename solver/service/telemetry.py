"""What the long-running commands (``serve``, ``adapter``) share for operators: JSON-lines
logs on stderr, and the process, Python and build-info metrics every Prometheus target
carries beside its own."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from importlib import metadata

from prometheus_client import CollectorRegistry, Info, PlatformCollector, ProcessCollector


class JsonLines(logging.Formatter):
    """Log records are JSON already (``LOG.info(json.dumps(...))``); add time and level. Another
    library's record (grpc's) becomes ``{"logger": ..., "message": ...}``, its traceback a
    string field: one line either way."""

    def format(self, record: logging.LogRecord) -> str:
        try:
            body = json.loads(record.getMessage())
        except json.JSONDecodeError:
            body = {"message": record.getMessage()}
        if not isinstance(body, dict):
            body = {"message": body}
        if not record.name.startswith("gangplace"):
            body = {"logger": record.name, **body}
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps({"time": round(record.created, 3), "level": record.levelname, **body})


def log_json_to_stderr(level: int = logging.INFO, also: Sequence[str] = ()) -> logging.Handler:
    """The ``gangplace`` loggers write one JSON object per line to stderr, and so do the loggers
    named in ``also`` (a library's: ``grpc``), at their own level (WARNING unless set)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("gangplace")
    logger.addHandler(handler)
    logger.setLevel(level)
    for name in also:
        library = logging.getLogger(name)
        library.addHandler(handler)
        library.propagate = False  # its records go through this handler alone
    return handler


def build_info() -> dict[str, str]:
    found = {}
    for dist in ("gangplace", "ortools", "grpcio", "protobuf"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "unknown"
    return {"version": found.pop("gangplace"), **found}


def standard_collectors(registry: CollectorRegistry) -> None:
    """process_* (CPU, memory, file descriptors), python_info and gangplace_build_info."""
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    Info("gangplace_build", "Versions of gangplace and of the solver it runs", registry=registry).info(build_info())
