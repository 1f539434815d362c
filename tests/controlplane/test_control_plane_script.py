"""scripts/control-plane.py (issue 50, item 13): the real control plane started by hand, its
kubeconfig printed and usable, everything stopped and cleaned up on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from kubernetes import client, config

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_script_starts_a_control_plane_whose_kubeconfig_works_and_stops_it_on_ctrl_c() -> None:
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "control-plane.py"), "--no-scheduler"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        deadline = time.monotonic() + 120
        while not any(line.startswith("kubeconfig:") for line in lines):
            assert time.monotonic() < deadline and proc.poll() is None, lines
            lines.append(proc.stdout.readline() if proc.stdout else "")
        kubeconfig = Path(next(line for line in lines if line.startswith("kubeconfig:")).split(":", 1)[1].strip())
        with config.new_client_from_config(str(kubeconfig)) as conn:
            assert "default" in {n.metadata.name for n in client.CoreV1Api(conn).list_namespace().items}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
        assert not kubeconfig.parent.exists()  # the working directory went with it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
