#!/usr/bin/env python3
"""Start the real control plane by hand (etcd, kube-apiserver and, unless told otherwise,
kube-controller-manager and kube-scheduler 1.37.2, every gate of docs/control-plane.md on),
print the admin kubeconfig's path, and keep it running until Ctrl-C; then stop it.

    scripts/build-control-plane.sh            # once: builds and caches the binaries
    .venv/bin/python scripts/control-plane.py [--no-scheduler] [--plugin] [--workdir DIR]
    KUBECONFIG=<the printed path> kubectl get nodes

``--plugin`` runs the kube-scheduler with the gangplace plugin (the profile of
deploy/components/scheduler-plugin) and its advisor, as ``gangplace bench --upstream
kube-scheduler+plugin`` does. The working directory (certificates, logs of each component,
etcd's data) is removed on exit unless ``--workdir`` names one.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solver.bench import controlplane, upstream


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-scheduler", action="store_true", help="no kube-scheduler (bring your own)")
    parser.add_argument("--plugin", action="store_true", help="kube-scheduler with the gangplace plugin and advisor")
    parser.add_argument("--pdb-policy", choices=("strict", "soft"), default="strict", help="the advisor's (--plugin)")
    parser.add_argument("--workdir", type=Path, help="keep certificates, logs and etcd's data here")
    args = parser.parse_args()
    gates = {**dict.fromkeys(controlplane.API_GATES, True), "PodGroupPreemptionPolicy": False}  # as bench's
    try:
        plane = controlplane.ControlPlane.start(controller_manager=True,
                                                scheduler=not (args.no_scheduler or args.plugin),
                                                scheduler_gates=gates, workdir=args.workdir)
    except controlplane.ControlPlaneError as exc:
        print(f"control-plane: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        if args.plugin:
            upstream.start_with_plugin(plane, gates, upstream.WithPlugin(time_limit=10.0, pdb_policy=args.pdb_policy))
        print(f"kubeconfig: {plane.admin_kubeconfig}")
        print(f"logs:       {plane.workdir}/*.log")
        print("Ctrl-C stops it.", flush=True)
        stop.wait()
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
