"""µs per evaluation of DRA-style selectors, per CEL runtime (docs/fidelity.md, "DRA CEL selectors: memory, time and
runtimes"): python scripts/cel_runtimes_bench.py RUNTIME -> JSON lines. RUNTIME: gangplace (PYTHONPATH=. and the
project venv), celpy, cel-expr-python, common-expression-language (each in a venv of its own)."""
import json
import sys
import time

RT = sys.argv[1]
G = "gpu.example.com"
A = f'device.attributes["{G}"]'
L17 = "[" + ",".join(str(i + 1) for i in range(17)) + "]"
SELECTORS = {
    "attr ==": f'{A}.model == "A100"',
    "int >= && driver": f'device.driver == "{G}" && {A}.index >= 2',
    ".matches": f'{A}.model.matches("^A1[0-9]+$")',
    "string ext": f'{A}.model.lowerAscii().startsWith("a") && "a,b".split(",").size() == 2',
    "exists over maps": 'device.attributes.exists(d, device.attributes[d].exists(n, n == "model"))',
    "cel.bind": f'cel.bind(g, {A}, g.model == "A100" && g.index == 3)',
    "quantity": f'device.capacity["{G}"].memory.compareTo(quantity("40Gi")) >= 0',
    "semver": f'{A}.driverVersion.isGreaterThan(semver("1.2.3"))',
    "worst: 17^4 list all (est. 991,808)": f"{L17}.all(a, {L17}.all(b, {L17}.all(c, {L17}.all(d, a+b+c+d > 0))))",
    "worst: attributes^3 all, 32 domains": ("device.attributes.all(a, device.attributes.all(b, "
                                             "device.attributes.all(c, a != b || b == c)))"),
}
WIDE = {f"d{i:02d}.example.com": {"n": "v"} for i in range(31)}


def device_dict(wide):
    attrs = {G: {"model": "A100", "index": 3, "healthy": True, "driverVersion": "1.2.4"}}
    if wide:
        attrs.update(WIDE)
    return {"driver": G, "attributes": attrs, "capacity": {G: {"memory": "80Gi"}}, "allowMultipleAllocations": False}


def timed(fn, budget=1.5):
    r = fn()  # warm, and the result
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - start
        if el > budget or n >= 200000:
            return r, el / n * 1e6


def prepare(expr, wide):
    if RT == "gangplace":  # cel-python 0.5.0 with gangplace's library and cost charge
        from solver import cel
        from solver.cel.program import device_view
        from solver.core.snapshot import Device, Version
        d = device_dict(wide)
        d["attributes"][G]["driverVersion"] = Version("1.2.4")
        dev = Device(driver=G, pool="p", name="x", attributes=d["attributes"], capacity={G: {"memory": 80 * 2**30}})
        prog = cel.compile_expression(expr)
        view = device_view(dev)
        return lambda: bool(prog.runner.evaluate({"device": view}, cel.MAX_COST))
    if RT == "celpy":  # plain cel-python 0.5.0: no Kubernetes library, no cost charge
        import celpy
        env = celpy.Environment()
        prog = env.program(env.compile(expr))
        act = {"device": celpy.json_to_cel(device_dict(wide))}
        return lambda: bool(prog.evaluate(act))
    if RT == "cel-expr-python":
        from cel_expr_python import cel
        from cel_expr_python.ext import ext_bindings, ext_strings
        env = cel.NewEnv(variables={"device": cel.Type.DYN},
                         extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings()])
        e = env.compile(expr)
        data = {"device": device_dict(wide)}
        act = env.Activation(data)
        return lambda: e.eval(act).value()
    if RT == "common-expression-language":
        import cel
        prog = cel.compile(expr)
        ctx = cel.Context(variables={"device": device_dict(wide)})
        return lambda: prog.execute(ctx)
    raise SystemExit(f"unknown runtime {RT}")


for name, expr in SELECTORS.items():
    wide = "32 domains" in name
    try:
        fn = prepare(expr, wide)
        result, us = timed(fn, budget=0.5 if "worst" in name else 1.0)
        out = {"runtime": RT, "selector": name, "result": result if isinstance(result, bool) else repr(result),
               "us": round(us, 2)}
    except BaseException as exc:  # unsupported: say why
        out = {"runtime": RT, "selector": name, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"}
    print(json.dumps(out), flush=True)
