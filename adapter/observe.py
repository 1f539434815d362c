"""The adapter's metrics and probes, on one HTTP port (``--metrics-port``):

- ``/metrics``: Prometheus text. Plans by plan status and their latency, plans not made,
  evictions and bindings carried out, whether this replica leads; as kube-scheduler counts
  them, attempts per workload by result, the pods and workloads left pending and the age of
  the oldest, and each plan's end-to-end latency; and the standard process, Python and
  build-info series (``solver.service.telemetry``).
- ``/healthz`` (liveness): 200 while the loop has been seen within ``stale_after`` seconds;
  a loop stuck past that (a hung call, a deadlock) is 503, so the kubelet restarts it.
- ``/readyz`` (readiness): 200 once the watch cache holds every kind, standby or leader, while
  the Lease can be read and written; 503 with the reason otherwise (a Lease the adapter's role
  may not touch is a 403 that would otherwise only be logged).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from solver.service import telemetry

LOG = logging.getLogger("gangplace.adapter")


class AdapterMetrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.plans = Counter("gangplace_adapter_plans", "Plans made, by the plan's status", ["status"], registry=r)
        self.plan_seconds = Histogram("gangplace_adapter_plan_seconds", "Seconds to make one plan (the solve)",
                                      registry=r, buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
        self.solve_failures = Counter("gangplace_adapter_solve_failures",
                                      "Plans not made: the solver was down, busy or refused the input", registry=r)
        self.bugs = Counter("gangplace_adapter_solver_bugs",
                            "Plans the solver refused as its own bug (INTERNAL: e.g. a plan its verifier "
                            "refused); not retried until the cluster changes", registry=r)
        self.evictions = Counter("gangplace_adapter_evictions", "Victims evicted (or deleted, --pdb-policy soft)",
                                 registry=r)
        self.bindings = Counter("gangplace_adapter_bindings", "Pods bound to the node their plan chose", registry=r)
        self.leader = Gauge("gangplace_adapter_leader", "1 while this replica holds the Lease", registry=r)
        # as kube-scheduler's scheduler_schedule_attempts_total and scheduler_pending_pods, per workload
        self.attempts = Counter("gangplace_adapter_schedule_attempts",
                                "Workloads planned, by result: scheduled (its plan was carried out), unschedulable "
                                "(left pending), error (the plan could not be carried out)", ["result"], registry=r)
        self.pending_pods = Gauge("gangplace_adapter_pending_pods",
                                  "Pods of this scheduler pending now, as the watch sees them (attempted or not)",
                                  registry=r)
        self.pending_workloads = Gauge("gangplace_adapter_pending_workloads",
                                       "Workloads the last plan left unsatisfied", registry=r)
        self.oldest_pending = Gauge("gangplace_adapter_oldest_pending_seconds",
                                    "Age of the oldest pod of this scheduler pending now (0: none), read when scraped",
                                    registry=r)
        self.e2e_seconds = Histogram("gangplace_adapter_plan_e2e_seconds",
                                     "Seconds from reading the cache to the plan carried out (solve, evictions, "
                                     "binding, status)", registry=r,
                                     buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300))
        telemetry.standard_collectors(r)


class Heartbeat:
    """When the loop was last seen; alive while that is recent."""

    def __init__(self, stale_after: float) -> None:
        self.stale_after = stale_after
        self.last = time.monotonic()

    def beat(self) -> None:
        self.last = time.monotonic()

    def alive(self) -> bool:
        return time.monotonic() - self.last <= self.stale_after


class Endpoint:
    """``/metrics``, ``/healthz`` and ``/readyz`` on ``host:port`` (port 0: any free one)."""

    def __init__(self, metrics: AdapterMetrics, alive: Callable[[], bool], unready: Callable[[], str],
                 host: str, port: int) -> None:
        routes: dict[str, Callable[[], tuple[int, str, bytes]]] = {
            "/metrics": lambda: (200, CONTENT_TYPE_LATEST, generate_latest(metrics.registry)),
            "/healthz": lambda: _probe(alive()),
            "/readyz": lambda: _probe(not (why := unready()), why),
        }

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server's name for it
                route = routes.get(self.path.split("?", 1)[0])
                code, kind, body = route() if route else (404, "text/plain", b"not found\n")
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:  # probes every few seconds: not worth a line
                return

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="gangplace-metrics", daemon=True)
        self._thread.start()
        LOG.info(json.dumps({"event": "metrics-serving", "port": self.port}))

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


def _probe(ok: bool, why: str = "") -> tuple[int, str, bytes]:
    if ok:
        return 200, "text/plain", b"ok\n"
    return 503, "text/plain", f"not ok{': ' + why if why else ''}\n".encode()
