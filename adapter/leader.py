"""One active adapter: leader election on a coordination.k8s.io/v1 Lease.

As client-go's leaderelection (k8s.io/client-go/tools/leaderelection/leaderelection.go):

- acquire the Lease when it is free, ours, or expired; expiry is judged by *observed* time:
  a record (holder, renewTime, transitions, resourceVersion) unchanged for
  leaseDurationSeconds on the local monotonic clock, never by comparing the holder's
  renewTime with the local clock (a replica whose clock runs ahead would take the lease from
  a healthy leader);
- every write carries the Lease's resourceVersion, so two candidates racing for it cannot both
  win (the loser gets a 409);
- leadership ends by itself ``renew_deadline`` seconds after the last successful renewal, even
  while a renewal hangs (renewDeadline < leaseDuration: the leader stops before anyone else may
  start);
- on shutdown the leader releases it (empty holder, 1 s duration) so a standby takes over at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from adapter.cluster import Cluster, Conflict, now


class LeaderElector:
    def __init__(self, cluster: Cluster, *, namespace: str, name: str, identity: str,
                 lease_duration: int = 15, renew_deadline: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        # client-go's default ratio: renewDeadline 10 s for a 15 s lease
        self.renew_deadline = renew_deadline if renew_deadline is not None else lease_duration * 2 / 3
        self.clock = clock
        self._renewed: float | None = None  # local time of the last successful acquire or renew
        self._observed: tuple[tuple[Any, ...], float] | None = None  # (record, local time first seen)

    @property
    def leading(self) -> bool:
        """True only within ``renew_deadline`` of the last successful renewal."""
        return self._renewed is not None and self.clock() - self._renewed < self.renew_deadline

    @leading.setter
    def leading(self, value: bool) -> None:
        self._renewed = self.clock() if value else None

    def _expired(self, lease: dict[str, Any]) -> bool:
        """The record has not changed for leaseDurationSeconds of our own time."""
        spec = lease.get("spec", {})
        record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseTransitions"),
                  lease.get("metadata", {}).get("resourceVersion"))
        now_ = self.clock()
        if self._observed is None or self._observed[0] != record:
            self._observed = (record, now_)
        duration = int(spec.get("leaseDurationSeconds") or 0)
        return now_ - self._observed[1] >= duration

    def _spec(self, lease: dict[str, Any] | None, acquire: bool) -> dict[str, Any]:
        spec = dict((lease or {}).get("spec", {}))
        stamp = now()
        spec.update({"holderIdentity": self.identity, "leaseDurationSeconds": self.lease_duration,
                     "renewTime": stamp})
        if acquire:
            spec["acquireTime"] = stamp
            spec["leaseTransitions"] = int(spec.get("leaseTransitions", 0)) + (1 if lease else 0)
        return spec

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True while we hold the lease."""
        lease = self.cluster.get_lease(self.namespace, self.name)
        try:
            if lease is None:
                self.cluster.create_lease(self.namespace, {
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": self._spec(None, True)})
                self.leading = True
                return True
            spec = lease.get("spec", {})
            holder = spec.get("holderIdentity") or ""
            expired = self._expired(lease)
            if holder and holder != self.identity and not expired:
                self.leading = False
                return False
            self.cluster.update_lease(self.namespace, {**lease, "spec": self._spec(lease, holder != self.identity)})
            self.leading = True
            return True
        except Conflict:
            self.leading = False
            return False

    def release(self) -> None:
        if not self.leading:
            return
        lease = self.cluster.get_lease(self.namespace, self.name)
        if lease and lease.get("spec", {}).get("holderIdentity") == self.identity:
            spec = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": now()}
            try:
                self.cluster.update_lease(self.namespace, {**lease, "spec": spec})
            except Conflict:
                pass
        self.leading = False
