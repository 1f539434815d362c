"""One active adapter: leader election on a coordination.k8s.io/v1 Lease.

As client-go's leaderelection: acquire the Lease when it is free, expired (renewTime +
leaseDurationSeconds in the past) or ours; renew it every ``renew`` seconds; every write
carries the Lease's resourceVersion, so two candidates racing for it cannot both win (the
loser gets a 409). On shutdown the leader releases it (empty holder, 1 s duration) so a
standby takes over at once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from adapter.cluster import Cluster, Conflict, now


def _parse(ts: str | None) -> datetime | None:
    if not ts:
        return None
    return datetime.strptime(ts.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z") if "." in ts else \
        datetime.strptime(ts.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z")


class LeaderElector:
    def __init__(self, cluster: Cluster, *, namespace: str, name: str, identity: str,
                 lease_duration: int = 15) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.leading = False

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
            renewed = _parse(spec.get("renewTime"))
            expired = renewed is None or renewed + timedelta(seconds=int(spec.get("leaseDurationSeconds") or 0)) \
                < datetime.now(UTC)
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
