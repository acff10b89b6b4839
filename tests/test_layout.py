"""The rules of the package layout (DESIGN §2): no import circle, the domain never reaches for
the optimizer or OR-Tools, the verifier and the metrics import neither engine, and every module
imports on its own in a fresh interpreter, dependencies first.

The import graph is read from the source, function-level imports included (a lazy import that
closes a circle is still a circle); imports under ``if TYPE_CHECKING:`` never run and are left
out, and so is a module's implicit import of the packages it sits in.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("models", "optimizer")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included, except what ``if TYPE_CHECKING:`` guards."""
    for node in body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            yield from _statements(node.orelse)
            continue
        yield node
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(node, field, None) or [])
        for handler in getattr(node, "handlers", None) or []:
            yield from _statements(handler.body)


def _imported(name: str, path: Path) -> set[str]:
    """The dotted names a module imports: modules, or a module's attributes."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _statements(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            out.add(source)
            out.update(f"{source}.{alias.name}" for alias in node.names)
    return out


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    modules = _modules()
    g = nx.DiGraph()
    for name, path in modules.items():
        g.add_node(name, imports=_imported(name, path))
        for target in _imported(name, path):
            if target in modules and target != name and not name.startswith(f"{target}."):
                g.add_edge(name, target)
    return g


def test_the_graph_sees_the_packages(graph: nx.DiGraph) -> None:
    """The reading above is not vacuous: it finds the modules and their known imports."""
    assert {"models.instance", "models.io.compact", "optimizer.verify", "optimizer.plan"} <= set(
        graph
    )
    assert graph.has_edge("models.io.compact", "models.instance")
    assert graph.has_edge("optimizer.verify.context", "optimizer.plan")


def test_no_import_circle(graph: nx.DiGraph) -> None:
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert circles == []


def test_no_import_circle_between_packages(graph: nx.DiGraph) -> None:
    """Read one level up — each sub-package or top module of ``models`` and ``optimizer`` as
    one node — the imports still run one way: ``solve`` reads the pending reasons
    (``optimizer.reasons``), ``explain`` and ``whatif`` read ``solve``, and nothing below
    reads them back."""
    packages = nx.DiGraph()
    for a, b in graph.edges:
        top_a, top_b = ".".join(a.split(".")[:2]), ".".join(b.split(".")[:2])
        if top_a != top_b:
            packages.add_edge(top_a, top_b)
    assert packages.has_edge("optimizer.solve", "optimizer.reasons")
    assert packages.has_edge("optimizer.explain", "optimizer.solve")
    circles = [sorted(c) for c in nx.strongly_connected_components(packages) if len(c) > 1]
    assert circles == []


def test_the_options_reach_no_engine(graph: nx.DiGraph) -> None:
    """The solve options are the engines' common input: they import neither engine."""
    assert _reaches(graph, "optimizer.options", ["optimizer.cpsat", "optimizer.greedy"]) == []


_PHASES = {"compile": 0, "model": 1, "solution": 2}
"""The CP-SAT engine's phases in the order they depend on each other; the search, the engine and
the decomposition sit at the package's top and read all three."""


def test_the_cpsat_phases_import_one_way(graph: nx.DiGraph) -> None:
    """Compiling a snapshot knows nothing of the model, the model nothing of reading solutions
    back, and none of the phases reads the search that drives them."""

    def rank(module: str) -> int:
        phase = module.removeprefix("optimizer.cpsat.").split(".")[0]
        return _PHASES.get(phase, len(_PHASES))

    inside = [
        (a, b)
        for a, b in graph.edges
        if a.startswith("optimizer.cpsat.") and b.startswith("optimizer.cpsat.")
    ]
    assert ("optimizer.cpsat.model.constraints", "optimizer.cpsat.compile.data") in inside
    backwards = [f"{a} imports {b}" for a, b in inside if rank(a) < rank(b)]
    assert backwards == []


def _reaches(graph: nx.DiGraph, module: str, prefixes: Sequence[str]) -> list[str]:
    """Names under ``prefixes`` that ``module`` imports, directly or through project modules."""
    found = []
    for name in [module, *nx.descendants(graph, module)]:
        for target in graph.nodes[name]["imports"]:
            if any(target == p or target.startswith(f"{p}.") for p in prefixes):
                found.append(f"{name} imports {target}")
    return sorted(found)


def test_the_domain_never_imports_the_optimizer_or_ortools(graph: nx.DiGraph) -> None:
    for module in (m for m in graph if m.split(".")[0] == "models"):
        assert _reaches(graph, module, ("optimizer", "ortools")) == []


@pytest.mark.parametrize("judge", ["optimizer.verify", "optimizer.metrics"])
def test_the_judges_import_neither_engine(graph: nx.DiGraph, judge: str) -> None:
    assert _reaches(graph, judge, ("optimizer.greedy", "optimizer.cpsat", "ortools")) == []


def test_every_module_imports_in_dependency_order(graph: nx.DiGraph) -> None:
    """Dependencies first, in one fresh interpreter: no module needs another to be imported
    before it beyond what it imports itself."""
    order = list(reversed(list(nx.topological_sort(graph))))
    code = f"import importlib\nfor name in {order!r}:\n    importlib.import_module(name)\n"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr


def test_every_verifier_rule_has_its_cpsat_constraint() -> None:
    """Each verifier rule is enforced by a cpsat function of the same name, or the constraint
    module's docstring names it among the rules the model keeps by construction (issue: one
    function per constraint family, named after the verifier rule)."""
    from optimizer.cpsat.model import constraints, evictions
    from optimizer.verify import RULES

    by_construction = constraints.__doc__ or ""
    missing = [
        rule
        for rule in RULES
        if not any(hasattr(m, rule.replace("-", "_")) for m in (constraints, evictions))
        and f"``{rule}``" not in by_construction
    ]
    assert not missing, f"verifier rules without a cpsat constraint: {missing}"


def test_no_module_is_a_large_room() -> None:
    """One idea per module: no source file over 600 lines."""
    long = {
        str(path.relative_to(ROOT)): n
        for path in _modules().values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, f"modules over 600 lines: {long}"


def _definitions(path: Path) -> list[str]:
    """Names of the classes and functions a file defines, nested ones included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [node.name for node in ast.walk(tree) if isinstance(node, kinds)]


_HOME = "models.fragmentation"
_OTHER_F = frozenset({"fragmentation", "frag_amount", "NodeState"})
"""Names the old second and third F went by (and the one F's own name)."""


def test_fgd_fragmentation_has_one_home() -> None:
    """F and the typical task are defined once, in ``models.fragmentation``: no other module of
    the project or the benchmarks defines a typical-task type or a function F, and every
    module of the metric, the CP-SAT engine or the simulator's state defining a name about
    fragmentation imports ``models.fragmentation``."""
    home = ROOT / "models" / "fragmentation.py"
    assert {"TypicalTask", "fragmentation", "instance_mix"} <= set(_definitions(home))
    others = [p for d in (*PACKAGES, "benchmarks") for p in sorted((ROOT / d).rglob("*.py"))]
    typical, unread = [], []
    for path in others:
        if path == home:
            continue
        names = _definitions(path)
        typical += [
            f"{path.name}: {n}"
            for n in names
            if ("typical" in n.lower() and not n.islower()) or n in _OTHER_F
        ]
        text = path.read_text(encoding="utf-8")
        reads_f = "cpsat" in path.parts or path.name in {"metrics.py", "state.py"}
        if reads_f and any("frag" in n.lower() for n in names) and _HOME not in text:
            unread.append(path.name)
    assert typical == []
    assert unread == []


_FACTS = {
    '"NoExecute"': "the taint effects that block scheduling (models.cluster.SCHEDULING_EFFECTS)",
    '(UNSCHEDULABLE_TAINT, ""': "a cordon read as a taint (models.cluster.CORDON)",
    "node_taints_policy": "spread's node-inclusion policy (SpreadConstraint.includes)",
    "CRITICAL_PRIORITY_CLASSES": "conformance's protection (Job.conformance_protection)",
    "SYSTEM_NAMESPACE": "conformance's protection (Job.conformance_protection)",
}
"""Text that would re-derive a domain fact outside ``models/``: what each names, and its home."""


def test_domain_facts_are_derived_only_in_models() -> None:
    """The engines, the verifier, the metrics and explain read these facts from ``models/``
    and never derive them again (each still makes its own decisions with them)."""
    found = [
        f"{path.relative_to(ROOT)}: {fact}"
        for path in sorted((ROOT / "optimizer").rglob("*.py"))
        for text in [path.read_text(encoding="utf-8")]
        for needle, fact in _FACTS.items()
        if needle in text
    ]
    assert found == []
