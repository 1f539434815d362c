"""solver.model.cel: DRA CEL selectors, with upstream's compile-time and run-time rules."""

from __future__ import annotations

import pytest

from solver.model import cel
from solver.model.errors import SolverError
from solver.model.quantity import parse_quantity
from solver.model.snapshot import Device, Version

GPU = "gpu.example.com"
A = f'device.attributes["{GPU}"]'
C = f'device.capacity["{GPU}"]'

DEVICE = Device(
    driver=GPU, pool="n1", name="gpu-0",
    attributes={GPU: {"model": "A100", "index": 3, "healthy": True, "driverVersion": Version("1.2.4")},
                "resource.kubernetes.io": {"pcieRoot": "pci0"}},
    capacity={GPU: {"memory": 80 * 2**30, "cores": 108}},
)

# (expression, result on DEVICE)
CASES = [
    (f'device.driver == "{GPU}"', True),
    ('device.driver == "nic.example.com"', False),
    (f'{A}.model == "A100"', True),
    (f'{A}.model == "H100"', False),
    (f'"{GPU}" in device.attributes', True),
    ('"nic.example.com" in device.attributes', False),
    (f'"{GPU}" in device.capacity', True),
    ('device.attributes["resource.kubernetes.io"].pcieRoot == "pci0"', True),
    ('device.attributes["resource.kubernetes.io"].pcieRoot == "pci1"', False),
    (f'{A}.healthy', True),
    (f'!{A}.healthy', False),
    (f'{A}.index >= 3', True),
    (f'{A}.index > 3', False),
    (f'{C}.memory.compareTo(quantity("40Gi")) >= 0', True),
    (f'{C}.memory.compareTo(quantity("100Gi")) >= 0', False),
    (f'{C}.memory.isGreaterThan(quantity("79Gi"))', True),
    (f'{C}.memory.isGreaterThan(quantity("80Gi"))', False),
    (f'{C}.memory.isLessThan(quantity("81Gi"))', True),
    (f'{C}.memory.isLessThan(quantity("80Gi"))', False),
    (f'{C}.memory == quantity("81920Mi")', True),
    (f'{C}.memory.asInteger() == 85899345920', True),
    (f'{C}.cores.add(2).asInteger() == 110 && {C}.cores.sub(quantity("8")).asInteger() == 100', True),
    ('quantity("1.5").isInteger()', False),
    ('quantity("500m").asApproximateFloat() == 0.5 && quantity("-1").sign() == -1', True),
    ('isQuantity("12XB")', False),
    (f'{A}.driverVersion.isGreaterThan(semver("1.2.3"))', True),
    (f'{A}.driverVersion.isGreaterThan(semver("1.10.0"))', False),
    (f'{A}.driverVersion.isLessThan(semver("1.10.0"))', True),
    (f'{A}.driverVersion.isLessThan(semver("1.2.4-rc.1"))', False),
    (f'{A}.driverVersion.compareTo(semver("1.2.4")) == 0', True),
    (f'{A}.driverVersion.compareTo(semver("1.0.0")) == -1', False),
    (f'{A}.driverVersion == semver("1.2.4+build.7")', True),
    ('semver("1.0.0").major() == 1 && semver("1.0.0").minor() == 0', True),
    ('semver("v1.2", true).compareTo(semver("1.2.0")) == 0 && !isSemver("1.2")', True),
    ('semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))', True),
    ('semver("1.0.0-2").isLessThan(semver("1.0.0-10"))', True),
    ('semver("1.0.0-beta").isLessThan(semver("1.0.0-alpha"))', False),
    (f'cel.bind(g, {A}, g.model == "A100" && g.index == 3)', True),
    (f'cel.bind(g, {A}, cel.bind(m, g.model, m.startsWith("H")))', False),
    ('device.attributes["nic.example.com"] == {}', True),  # an unknown domain is an empty map
    (f'has({A}.model)', True),
    (f'has({A}.serial)', False),
    (f'{A}.exists(k, k == "healthy")', True),
    (f'{A}.model == 100', False),  # heterogeneous equality: false, not an error
    (f'{A}.index == 3.0 && {A}.index < 3.5', True),  # numbers compare across int and double
    (f'{A}.model.lowerAscii() == "a100" && "a,b".split(",").size() == 2', True),
    ('[3, 1, 2].max() == 3 && [3, 1, 2].min() == 1 && [1, 2].isSorted()', True),
    ('[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]', True),
    ('device.allowMultipleAllocations', False),
]


@pytest.mark.parametrize(("expr", "want"), CASES, ids=[c[0] for c in CASES])
def test_selector_result(expr: str, want: bool) -> None:
    assert cel.selects(expr, DEVICE) is want


def test_each_expression_compiles_once() -> None:
    expr = f'{A}.model == "A100" && true'
    assert cel.compile_expression(expr) is cel.compile_expression(expr)


def test_devices_that_differ_only_where_the_selector_does_not_look_are_evaluated_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = cel._evaluate

    def counting(program: object, device: Device, sig: tuple[object, ...]) -> bool | str:
        calls.append(device.name)
        return real(program, device, sig)

    monkeypatch.setattr(cel, "_evaluate", counting)
    gpus = [Device(driver=GPU, pool="n1", name=f"uuid-{i}", attributes={GPU: {"model": "A100", "uuid": f"u{i}"}})
            for i in range(5)]
    literal = f'{A}.model == "A100" && "{GPU}" in device.attributes'
    assert [cel.selects(literal, d) for d in gpus] == [True] * 5
    assert calls == ["uuid-0"]
    iterating = f'{A}.exists(k, k == "model")'  # sees every name: one evaluation per device
    assert [cel.selects(iterating, d) for d in gpus] == [True] * 5
    assert calls == ["uuid-0"] + [d.name for d in gpus]


def test_shareable_device_is_visible() -> None:
    shared = Device(driver=GPU, pool="n1", name="gpu-9", allow_multiple=True)
    assert cel.selects("device.allowMultipleAllocations", shared) is True


COMPILE_ERRORS = [
    ("device.driver ==", "syntax error at column 15"),
    ("", "empty expression"),
    ("isGpu(device)", "unknown function 'isGpu'"),
    (f"{A}.model.shout()", "unknown function 'shout'"),
    ("sets.contains([1], [1])", "unknown function 'sets.contains'"),
    ("[1].reduce(a, b, 0, a + b) == 1", "unknown function 'reduce'"),
    ("gpu == 1", "undeclared reference to 'gpu'"),
    ("device.model == 1", "undefined field 'model' of device"),
    ("device.driver", "must evaluate to bool, not string"),
    (f"{C}.memory", "must evaluate to bool, not kubernetes.Quantity"),
    ("1 + 2", "must evaluate to bool, not int"),
    ("device.driver > 1", "found no matching overload for '_>_' applied to '(string, int)'"),
    (f'{C}.memory > quantity("1Gi")',
     "found no matching overload for '_>_' applied to '(kubernetes.Quantity, kubernetes.Quantity)'"),
    ("quantity(1).isInteger()", "found no matching overload for quantity(int)"),
    (f'{C}.memory.compareTo(semver("1.0.0")) == 0',
     "found no matching overload for kubernetes.Quantity.compareTo(kubernetes.Semver)"),
    ('semver("1.0.0").major(1) == 1', "found no matching overload for kubernetes.Semver.major(int)"),
    ("has(device)", "invalid argument to has() macro: it takes a field selection (a.b)"),
    ("[1].all(1, true)", "the first argument of macro 'all' must be a simple identifier"),
    ("[1].exists(x, x)", None),  # dyn predicate: compiles
    ("cel.bind(x, 1)", "cel.bind takes 3 arguments, got 2"),
    ('device{driver: "x"}.driver == "x"', "message construction is not supported"),
]


@pytest.mark.parametrize(("expr", "reason"), COMPILE_ERRORS, ids=[c[0] or "<empty>" for c in COMPILE_ERRORS])
def test_compile_errors_name_the_problem(expr: str, reason: str | None) -> None:
    if reason is None:
        cel.compile_expression(expr)
        return
    with pytest.raises(cel.CelError) as exc:
        cel.compile_expression(expr)
    assert not isinstance(exc.value, cel.CelRuntimeError)
    assert isinstance(exc.value, SolverError)
    assert exc.value.reason == reason
    assert str(exc.value) == f"CEL expression {expr!r}: {reason}"
    with pytest.raises(cel.CelError):  # selects compiles through the same cache
        cel.selects(expr, DEVICE)


RUNTIME_ERRORS = [
    # upstream: "Any reference to an unknown field will cause an evaluation error and allocation to abort"
    (f"{A}.serial == 'x'", "no such member in mapping: 'serial'"),
    ('device.attributes["nic.example.com"].speed > 1', "no such member in mapping: 'speed'"),
    (f'{A}["serial"] == "x"', "no such key: serial"),
    # the unknown type passes compilation; a non-bool value at run time is an error
    (f"{A}.model", "result of type string is not bool"),
    (f'{A}.model > 1', "found no matching overload for '_>_' applied to '(string, int)'"),
    (f'{C}.memory.isGreaterThan({A}.driverVersion)',
     "found no matching overload for kubernetes.Quantity.isGreaterThan(kubernetes.Semver)"),
    ('quantity("lots").isInteger()', "not a quantity: 'lots'"),
    ('semver("1.2").major() == 1', "not a semantic version: '1.2'"),
    ("1 / 0 == 1", "modulus or divide by zero: integer division or modulo by zero"),
]


@pytest.mark.parametrize(("expr", "reason"), RUNTIME_ERRORS, ids=[c[0] for c in RUNTIME_ERRORS])
def test_runtime_errors_abort_instead_of_deselecting(expr: str, reason: str) -> None:
    cel.compile_expression(expr)  # compiles
    with pytest.raises(cel.CelRuntimeError) as exc:
        cel.selects(expr, DEVICE)
    assert isinstance(exc.value, cel.CelError)
    assert exc.value.reason == f"device {GPU}/n1/gpu-0: {reason}"


def test_a_runtime_error_names_each_device_it_hits() -> None:
    twin = Device(driver=GPU, pool="n2", name="gpu-0", attributes=DEVICE.attributes, capacity=DEVICE.capacity)
    expr = f"{A}.serial == 'x' || false"
    for dev in (DEVICE, twin):
        with pytest.raises(cel.CelRuntimeError) as exc:
            cel.selects(expr, dev)
        assert exc.value.reason.startswith(f"device {dev.key}: ")


def test_an_error_beside_a_true_or_a_false_is_absorbed() -> None:
    """CEL's commutative && and ||: an error on one side does not matter when the other decides."""
    assert cel.selects(f"{A}.serial == 'x' || true", DEVICE) is True
    assert cel.selects(f"{A}.serial == 'x' && false", DEVICE) is False


def test_an_unparsable_version_attribute_is_a_runtime_error() -> None:
    odd = Device(driver=GPU, pool="n1", name="gpu-1", attributes={GPU: {"v": Version("1.0")}})
    with pytest.raises(cel.CelRuntimeError) as exc:
        cel.selects(f"{A}.v.major() == 1", odd)
    assert exc.value.reason == f"device {GPU}/n1/gpu-1: not a semantic version: '1.0'"


@pytest.mark.parametrize(("raw", "want"), [
    ("1Gi", 2**30), ("250m", parse_quantity("0.25")), ("1.5e3", 1500), ("1E", 10**18), ("2k", 2000),
    ("+.5", parse_quantity("0.5")), ("-3", -3), (7, 7), (0.5, parse_quantity("0.5")),
])
def test_quantity_grammar(raw: object, want: object) -> None:
    assert parse_quantity(raw) == want


@pytest.mark.parametrize("raw", ["", "lots", "1.2.3", "1e", "1 Gi", "1ki", "Gi", "NaN", "1e100", True, None])
def test_quantity_grammar_refuses(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_quantity(raw)


def test_an_evaluation_past_the_cost_limit_aborts_and_the_device_does_not_match() -> None:
    # resource.k8s.io's CELSelectorExpressionMaxCost: each replace() quadruples the string, and
    # the sizes it returns are charged, so the chain stops long before memory runs out
    dev = Device(driver=GPU, pool="n1", name="gpu-3", attributes={GPU: {"model": "abcd"}})
    grow = '.replace("a", "aaaa")' * 12
    with pytest.raises(cel.CelRuntimeError) as err:
        cel.selects(f'device.attributes["{GPU}"].model{grow}.size() > 0', dev)
    assert "cost limit 1000000 exceeded (resource.k8s.io CELSelectorExpressionMaxCost)" in str(err.value)
    few = '.replace("a", "aa")' * 3
    assert cel.selects(f'device.attributes["{GPU}"].model{few}.size() == 11', dev) is True
