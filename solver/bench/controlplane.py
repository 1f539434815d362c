"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and, when asked,
kube-scheduler and kube-controller-manager, from the binaries scripts/build-control-plane.sh
builds (k8s.io/kubernetes v1.37.2 and etcd from the Go module proxy, cached outside the
repository).

Nodes are API objects with no kubelet behind them, as upstream's scheduler_perf runs: a pod
bound to a node stays where it is bound, and a deleted pod with a grace period stays
terminating until someone removes it (``ControlPlane.finish_deletions`` plays the kubelet's
last step when a caller wants that).

What it sets up:

- a CA, a serving certificate for 127.0.0.1, client certificates (``admin`` in
  ``system:masters``, ``system:kube-scheduler``, the controller manager) and a service-account
  signing key, made here with ``cryptography``;
- kube-apiserver with RBAC authorization, an audit log of every request (``audit()``), the
  Workload-Aware Scheduling feature gates this build knows (read from its ``--help``: an
  unknown gate aborts start-up) and ``scheduling.k8s.io/v1beta1`` and ``v1alpha3`` served;
  two admission plugins are off: ServiceAccount (no token controller runs, and pods name no
  account) and TaintNodesByCondition (it would taint every new node not-ready, and no
  kubelet ever reports it ready: a recorded node keeps the taints it was recorded with);
- kube-controller-manager with only the controllers a cluster without kubelets can use
  (never node-lifecycle, which would taint every node unreachable);
- kube-scheduler with the default profile, no leader election, and the gates the caller asks
  for (the plan's gates, so both decide under the same rules).

Only loopback addresses are used.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solver.core.errors import SetupError

K8S_VERSION = "v1.37.2"
ETCD_VERSION = "v3.7.3"
# what scripts/build-control-plane.sh writes: $GANGPLACE_CONTROL_PLANE_CACHE/<key>/bin
CACHE_ENV = "GANGPLACE_CONTROL_PLANE_CACHE"
BIN_ENV = "GANGPLACE_CONTROL_PLANE_BIN"  # a folder holding the four binaries, overriding the cache

# Workload-Aware Scheduling as 1.37.2 names its gates (pkg/features/kube_features.go);
# DynamicResourceAllocation is GA and locked on, so it is not among them.
API_GATES = ("GenericWorkload", "TopologyAwareWorkloadScheduling", "CompositePodGroup",
             "PodGroupPreemptionPolicy", "DRAWorkloadResourceClaims")
RUNTIME_CONFIG = "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"
# kube-controller-manager's controllers that work without kubelets (names as its --controllers)
CONTROLLERS = ("resourceclaim-controller", "garbage-collector-controller", "namespace-controller",
               "podgroup-protection-controller", "disruption-controller", "persistentvolume-binder-controller")


class ControlPlaneError(SetupError):
    """The control plane could not be had: binaries missing, a component that would not start."""


def default_bin_dir() -> Path:
    if os.environ.get(BIN_ENV):
        return Path(os.environ[BIN_ENV])
    cache = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gangplace", "control-plane")
    return Path(cache) / f"k8s-{K8S_VERSION}_etcd-{ETCD_VERSION}" / "bin"


def find_binaries(bin_dir: Path | None = None) -> Path:
    folder = bin_dir or default_bin_dir()
    missing = [b for b in ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
               if not os.access(folder / b, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"no {', '.join(missing)} in {folder}: build them once with "
                                "scripts/build-control-plane.sh (needs Go >= 1.26 and the Go module proxy)")
    return folder


PLUGIN_BIN_ENV = "GANGPLACE_SCHEDULER_PLUGIN_BIN"  # kube-scheduler with the plugin, overriding the build


def plugin_scheduler() -> Path:
    """kube-scheduler 1.37.2 with the gangplace plugin (adapter/kubescheduler): $GANGPLACE_SCHEDULER_PLUGIN_BIN,
    or the binary scripts/build-scheduler-plugin.sh keeps in the cache for the plugin's current
    sources (it builds one when there is none: a minute or two after the control plane's build)."""
    if os.environ.get(PLUGIN_BIN_ENV):
        return Path(os.environ[PLUGIN_BIN_ENV])
    script = Path(__file__).resolve().parents[2] / "scripts" / "build-scheduler-plugin.sh"
    if not script.exists():
        raise ControlPlaneError(f"no {script}: the plugin's kube-scheduler is built from a checkout of the repository "
                                f"(or set {PLUGIN_BIN_ENV})")
    run = subprocess.run([str(script)], capture_output=True, text=True, timeout=3600)
    if run.returncode != 0:
        raise ControlPlaneError(f"{script.name} failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return Path(run.stdout.strip().splitlines()[-1])


def plugin_config(address: str, *, scheduler_name: str = "default-scheduler", **args: Any) -> dict[str, Any]:
    """The KubeSchedulerConfiguration deploy/components/scheduler-plugin ships (its ConfigMap's
    config.yaml), its one profile renamed ``scheduler_name`` and its Gangplace args pointed at
    ``address`` (``args`` override others). ``ControlPlane.start_scheduler`` sets the rest."""
    import yaml

    path = Path(__file__).resolve().parents[2] / "deploy" / "components" / "scheduler-plugin" / "config.yaml"
    config = dict(yaml.safe_load(yaml.safe_load(path.read_text())["data"]["config.yaml"]))
    (profile,) = config["profiles"]
    profile["schedulerName"] = scheduler_name
    gangplace = next(c["args"] for c in profile["pluginConfig"] if c["name"] == "Gangplace")
    gangplace.update(address=address, **args)
    return config


def plugin_rbac(user: str = "system:kube-scheduler") -> list[dict[str, Any]]:
    """deploy/components/scheduler-plugin's ClusterRole (the Eviction API, the advisor's reads),
    bound to ``user``: the plugin's kube-scheduler here authenticates as upstream's
    system:kube-scheduler, whose bootstrap role grants the rest, as the component binds both."""
    import yaml

    path = Path(__file__).resolve().parents[2] / "deploy" / "components" / "scheduler-plugin" / "rbac.yaml"
    role = next(d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "ClusterRole")
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": f"{role['metadata']['name']}-{user.replace(':', '-')}"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": role["metadata"]["name"]},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    return [role, binding]


def known_gates(binary: Path) -> set[str]:
    """The feature gates a component accepts, read from its ``--help`` (unknown ones abort it)."""
    text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=30).stdout
    # "Name=true|false (BETA - ...)", or "kube:Name=..." where the flag takes component:key pairs
    return {line.strip().split("=", 1)[0].removeprefix("kube:") for line in text.splitlines()
            if "=true|false (" in line}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORT_TRIES = 3


def _on_free_ports(start: Callable[[], None]) -> None:
    """``start()``, which picks free ports and starts a component listening on them, again (up
    to PORT_TRIES times) when the component found one taken: a port free when picked may be
    taken before the component binds it (an outgoing connection of another process is given
    one from the same range; the full suite lost a run to etcd's peer port so)."""
    for attempt in range(PORT_TRIES):
        try:
            start()
            return
        except ControlPlaneError as exc:
            if "address already in use" not in str(exc).lower() or attempt == PORT_TRIES - 1:
                raise


# ---- certificates ----------------------------------------------------------------------------


def _pki(folder: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)

    def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    def name(cn: str, org: str | None = None) -> x509.Name:
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if org:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        return x509.Name(attrs)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("gangplace-control-plane-ca"))
          .issuer_name(name("gangplace-control-plane-ca")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    (folder / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))

    def issue(stem: str, cn: str, org: str | None, *, server: bool) -> None:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(name(cn, org)).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                         else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        (folder / f"{stem}.crt").write_bytes(builder.sign(ca_key, hashes.SHA256()).public_bytes(
            serialization.Encoding.PEM))
        (folder / f"{stem}.key").write_bytes(key_pem(key))

    issue("apiserver", "kube-apiserver", None, server=True)
    issue("admin", "gangplace-admin", "system:masters", server=False)
    issue("scheduler", "system:kube-scheduler", None, server=False)
    # the controller manager runs its controllers under its own name (no per-controller service
    # accounts: no token controller runs), so it is given the masters group
    issue("controller-manager", "system:kube-controller-manager", "system:masters", server=False)
    sa = ec.generate_private_key(ec.SECP256R1())
    (folder / "sa.key").write_bytes(key_pem(sa))
    (folder / "sa.pub").write_bytes(sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def write_kubeconfig(path: Path, server: str, ca: Path, *, cert: Path | None = None, key: Path | None = None,
                     token: str | None = None) -> Path:
    user: dict[str, str] = {}
    if cert and key:
        user = {"client-certificate": str(cert), "client-key": str(key)}
    if token:
        user = {"token": token}
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": str(ca)}}],
              "users": [{"name": "u", "user": user}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    path.write_text(json.dumps(config))
    return path


AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                "rules": [{"level": "Metadata"}]}


# ---- the processes -----------------------------------------------------------------------------


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30, limit: int = 800) -> str:
        """The log's last ``lines`` lines, at most its last ``limit`` bytes: an error's message is
        cut to 1 KB from its end, and the line that says why is the last one."""
        try:
            text = "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
        data = text.encode("utf-8", "replace")
        return text if len(data) <= limit else "..." + data[-limit:].decode("utf-8", "ignore")


@dataclass
class ControlPlane:
    """A running control plane; ``start`` builds it, ``stop`` ends every process."""

    workdir: Path
    bin_dir: Path
    url: str = ""
    procs: dict[str, _Proc] = field(default_factory=dict)
    scheduler_metrics_url: str = ""
    _own_workdir: bool = False
    # the API server's and controller manager's gates (start's api_gates over API_GATES all on)
    api_gates: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(API_GATES, True))

    # -- files the callers use
    @property
    def pki(self) -> Path:
        return self.workdir / "pki"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.workdir / "audit.log"

    @classmethod
    def start(cls, *, scheduler: bool = False, controller_manager: bool = False,
              scheduler_gates: Mapping[str, bool] | None = None, workdir: Path | None = None,
              bin_dir: Path | None = None, controllers: Sequence[str] = CONTROLLERS,
              api_gates: Mapping[str, bool] | None = None) -> ControlPlane:
        """``api_gates`` override the API server's and the controller manager's (every gate of
        API_GATES on otherwise)."""
        own = workdir is None
        plane = cls(workdir=workdir or Path(tempfile.mkdtemp(prefix="gangplace-cp-")),
                    bin_dir=find_binaries(bin_dir), _own_workdir=own)
        plane.api_gates = {**dict.fromkeys(API_GATES, True), **(api_gates or {})}
        try:
            _on_free_ports(plane._start_etcd)
            _on_free_ports(plane._start_apiserver)
            if controller_manager:
                plane.start_controller_manager(controllers)
            if scheduler:
                plane.start_scheduler(scheduler_gates or {})
        except BaseException:
            plane.stop()
            raise
        return plane

    def _spawn(self, name: str, argv: list[str]) -> _Proc:
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as fh:  # the child holds its own copy of the descriptor
            popen = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        proc = _Proc(name, popen, log)
        self.procs[name] = proc
        return proc

    def _wait(self, proc: _Proc, url: str, *, timeout: float, context: ssl.SSLContext | None = None) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if proc.popen.poll() is not None:
                raise ControlPlaneError(f"{proc.name} exited with {proc.popen.returncode}:\n{proc.tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2, context=context) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise ControlPlaneError(f"{proc.name} not ready at {url} after {timeout:.0f} s ({last}):\n{proc.tail()}")

    def _start_etcd(self) -> None:
        client, peer = _free_port(), _free_port()
        data = self.workdir / "etcd"
        shutil.rmtree(data, ignore_errors=True)  # what a start on a taken port left
        proc = self._spawn("etcd", [
            str(self.bin_dir / "etcd"), "--name", "default", "--data-dir", str(data),
            "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer}", "--unsafe-no-fsync",
            "--quota-backend-bytes", str(4 << 30), "--log-level", "warn"])
        self.etcd_url = f"http://127.0.0.1:{client}"
        self._wait(proc, f"{self.etcd_url}/health", timeout=30)

    def _admin_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def _gates(self, binary: str, wanted: Mapping[str, bool]) -> str:
        known = known_gates(self.bin_dir / binary)
        return ",".join(f"{g}={str(v).lower()}" for g, v in wanted.items() if g in known)

    def _start_apiserver(self) -> None:
        self.pki.mkdir(parents=True, exist_ok=True)
        _pki(self.pki)
        (self.workdir / "audit-policy.json").write_text(json.dumps(AUDIT_POLICY))
        port = _free_port()
        self.url = f"https://127.0.0.1:{port}"
        p = self.pki
        proc = self._spawn("kube-apiserver", [
            str(self.bin_dir / "kube-apiserver"), "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(port),
            "--tls-cert-file", str(p / "apiserver.crt"), "--tls-private-key-file", str(p / "apiserver.key"),
            "--client-ca-file", str(p / "ca.crt"), "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(p / "sa.pub"), "--service-account-signing-key-file", str(p / "sa.key"),
            "--service-cluster-ip-range", "10.0.0.0/24",
            "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
            "--endpoint-reconciler-type", "none",  # it refuses a loopback advertise address
            "--feature-gates", self._gates("kube-apiserver", self.api_gates),
            "--runtime-config", RUNTIME_CONFIG,
            "--audit-policy-file", str(self.workdir / "audit-policy.json"), "--audit-log-path", str(self.audit_log),
            "--audit-log-format", "json", "--audit-log-mode", "batch", "--audit-log-batch-max-wait", "1s",
            "--audit-log-batch-max-size", "1000", "--profiling=false", "--v", "1"])
        self._wait(proc, f"{self.url}/readyz", timeout=120, context=self._admin_context())
        write_kubeconfig(self.admin_kubeconfig, self.url, p / "ca.crt", cert=p / "admin.crt", key=p / "admin.key")

    def start_controller_manager(self, controllers: Sequence[str] = CONTROLLERS) -> None:
        _on_free_ports(lambda: self._start_controller_manager(controllers))

    def _start_controller_manager(self, controllers: Sequence[str]) -> None:
        kc = write_kubeconfig(self.workdir / "controller-manager.kubeconfig", self.url, self.pki / "ca.crt",
                              cert=self.pki / "controller-manager.crt", key=self.pki / "controller-manager.key")
        port = _free_port()
        proc = self._spawn("kube-controller-manager", [
            str(self.bin_dir / "kube-controller-manager"), "--kubeconfig", str(kc),
            "--authentication-kubeconfig", str(kc), "--authorization-kubeconfig", str(kc),
            "--bind-address", "127.0.0.1", "--secure-port", str(port), "--leader-elect=false",
            "--controllers", ",".join(controllers), "--use-service-account-credentials=false",
            "--feature-gates", self._gates("kube-controller-manager", self.api_gates),
            "--concurrent-gc-syncs", "5", "--v", "1"])
        self._wait(proc, f"https://127.0.0.1:{port}/healthz", timeout=60, context=_insecure())

    def start_scheduler(self, gates: Mapping[str, bool], *, binary: Path | None = None,
                        config: Mapping[str, Any] | None = None) -> None:
        """kube-scheduler with ``gates`` (over API_GATES all on, PodGroupPreemptionPolicy off):
        upstream's binary and default profile, or ``binary`` (the plugin's build,
        ``plugin_scheduler``) with ``config``, a KubeSchedulerConfiguration whose client
        connection and leader election this sets."""
        _on_free_ports(lambda: self._start_scheduler(gates, binary, config))

    def _start_scheduler(self, gates: Mapping[str, bool], binary: Path | None,
                         config: Mapping[str, Any] | None) -> None:
        self.stop_component("kube-scheduler")  # one at a time: a second would race the first
        kc = write_kubeconfig(self.workdir / "scheduler.kubeconfig", self.url, self.pki / "ca.crt",
                              cert=self.pki / "scheduler.crt", key=self.pki / "scheduler.key")
        port = _free_port()
        wanted = {**dict.fromkeys(API_GATES, True), "PodGroupPreemptionPolicy": False, **gates}
        exe = binary or self.bin_dir / "kube-scheduler"
        if config is None:
            how = ["--kubeconfig", str(kc), "--leader-elect=false"]
        else:
            written = {**config, "clientConnection": {"kubeconfig": str(kc)}, "leaderElection": {"leaderElect": False}}
            path = self.workdir / "scheduler-config.json"  # YAML's superset: the scheduler reads it as is
            path.write_text(json.dumps(written, indent=1))
            how = ["--config", str(path)]
        proc = self._spawn("kube-scheduler", [
            str(exe), *how,
            "--authentication-kubeconfig", str(kc), "--authorization-kubeconfig", str(kc),
            "--bind-address", "127.0.0.1", "--secure-port", str(port),
            "--feature-gates", self._gates("kube-scheduler", wanted), "--v", "2"])
        self._wait(proc, f"https://127.0.0.1:{port}/healthz", timeout=60, context=_insecure())
        self.scheduler_metrics_url = f"https://127.0.0.1:{port}/metrics"

    def start_advisor(self, *, scheduler_name: str, time_limit: float, pdb_policy: str) -> str:
        """`gangplace adapter --advise` on loopback, as the admin, asking a `gangplace serve` of its
        own (``solver``) as deploy/components/scheduler-plugin runs them: the advisor the plugin's
        kube-scheduler asks. Its address once it listens."""
        import sys

        cli = [sys.executable, "-c", "import sys; from solver.cli import main; sys.exit(main())"]
        solver_port, port = _free_port(), _free_port()
        solver = self._spawn("solver", [*cli, "serve", "--host", "127.0.0.1", "--port", str(solver_port),
                                        "--metrics-port", "0"])
        self._listening(solver, solver_port, "the solver")
        address = f"127.0.0.1:{port}"
        proc = self._spawn("advisor", [
            *cli, "adapter", "--kubeconfig", str(self.admin_kubeconfig), "--solver", f"127.0.0.1:{solver_port}",
            "--scheduler-name", scheduler_name, "--time-limit", str(time_limit), "--pdb-policy", pdb_policy,
            "--advise", address])
        self._listening(proc, port, "the advisor")
        return address

    def _listening(self, proc: _Proc, port: int, what: str) -> None:
        """Wait until ``proc`` accepts connections on ``port`` (60 s at most)."""
        deadline = time.monotonic() + 60
        while True:
            if proc.popen.poll() is not None:
                raise ControlPlaneError(f"{what} exited with {proc.popen.returncode}:\n{proc.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"{what} did not listen on 127.0.0.1:{port} in 60 s:\n{proc.tail()}") \
                        from None
                time.sleep(0.2)

    def stop_component(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None:
            return
        if proc.popen.poll() is None:
            proc.popen.terminate()
            try:
                proc.popen.wait(15)
            except subprocess.TimeoutExpired:
                proc.popen.kill()
                proc.popen.wait(5)

    def stop(self) -> None:
        for name in ("kube-scheduler", "advisor", "solver", "kube-controller-manager", "kube-apiserver", "etcd"):
            self.stop_component(name)
        if self._own_workdir and not os.environ.get("GANGPLACE_KEEP_CONTROL_PLANE"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- reading it
    def scheduler_metrics(self) -> str:
        """The scheduler's /metrics text (admin's certificate: system:masters may read it)."""
        with urllib.request.urlopen(self.scheduler_metrics_url, timeout=10, context=self._metrics_context()) as r:
            return str(r.read().decode())

    def _metrics_context(self) -> ssl.SSLContext:
        ctx = _insecure()  # the scheduler's serving certificate is self-signed in memory
        ctx.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        return ctx

    def audit(self) -> Iterator[dict[str, Any]]:
        """The audit log's events so far (flushed at most a second after the request)."""
        try:
            text = self.audit_log.read_text()
        except FileNotFoundError:
            return
        for line in text.splitlines():
            if line.strip():
                yield json.loads(line)


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx
