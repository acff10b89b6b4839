"""Volcano's enqueue gate in both engines and the verifier (``models.admission``).

Every expected verdict is worked out by hand from Volcano's code (volcano-scheduler.md §1.2,
§1.3, §5): ``LessEqualWithDimensionAndResourcesName(held + minimums, limit, minimum)`` compares
each resource the minimum asks for, strictly, a resource the limit lacks counting as 0; a
realCapability is ``min_dim(max₀(T − G) + guarantee, capability)``, whose ``MinDimensionResource``
only clips the resources ``T − G + guarantee`` already has. Each cpsat plan is the model's own
answer (an empty floor, not greedy's), never the floor returned because the model's plan broke
a rule (the engine checks its plan and falls back): that would hide a model without the gate.
"""

from __future__ import annotations

import textwrap

import pytest

from models.instance import Instance
from models.load import loads
from models.workload import DeviceShare
from optimizer.cpsat.engine import solve as solve_cpsat
from optimizer.greedy.engine import solve as solve_greedy
from optimizer.options import SolveOptions
from optimizer.plan import ADMITTED, PENDING, Placement, Plan
from optimizer.verify import verify

HEADER = """\
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: admission}
now: "2026-11-30T14:00:00Z"
"""

PROPORTION = """\
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: priority}, {name: gang}]
  - plugins: [{name: predicates}, {name: proportion}]
"""

GPU_NODE = """\
nodes:
- name: n1
  allocatable: {cpu: "16", memory: 64Gi}
  gpus: {count: 2, type: NVIDIA-A100, memory: 40000}
"""
"""16 CPUs and two 40000 MiB GPUs of 10 time-slices each: nvidia.com/gpu 20, and no node
offers nvidia.com/gpumem or nvidia.com/gpucores."""

SHARE = (
    "{cpu: '1', memory: 1Gi, nvidia.com/gpu: 1, nvidia.com/gpumem: 10000, nvidia.com/gpucores: 30}"
)
"""A HAMi share: one GPU, 10000 MiB and 30 % of its cores."""


def build(*parts: str) -> Instance:
    return loads(HEADER + "".join(textwrap.dedent(p).strip("\n") + "\n" for p in parts))


def hami(queue: str, *, phase: str = "Pending", actions: str = "enqueue, allocate") -> Instance:
    """The HAMi share job ``share`` (minResources = its one pod's requests) and ``plain`` (one
    whole GPU, no minResources, so enqueued unconditionally) in ``queue``, under proportion."""
    plain = "{cpu: '1', memory: 1Gi, nvidia.com/gpu: 1}"
    return build(
        PROPORTION.replace("enqueue, allocate", actions),
        GPU_NODE,
        f"queues:\n- {queue}\n",
        "jobs:\n",
        f"- name: share\n  queue: research\n  phase: {phase}\n  minResources: {SHARE}\n"
        f"  tasks: [{{name: w, replicas: 1, resources: {SHARE}}}]\n",
        f"- name: plain\n  queue: research\n"
        f"  tasks: [{{name: w, replicas: 1, resources: {plain}}}]\n",
    )


OPTIONS = SolveOptions.of(time_limit=20.0, workers=2, deterministic=True)


def cpsat(instance: Instance) -> Plan:
    """The CP-SAT model's own plan, floored by the empty plan (kept when the model's plan is
    not better), never a fallback from a plan that breaks a rule."""
    plan = solve_cpsat(instance, OPTIONS, Plan(instance=instance.name, engine="empty"))
    assert plan.solver is not None and "breaks" not in plan.solver.fallback, plan.solver
    assert verify(instance, plan) == []
    return plan


def greedy(instance: Instance) -> Plan:
    plan = solve_greedy(instance, 0)
    assert verify(instance, plan) == []
    return plan


def status(plan: Plan, job: str) -> str:
    """Admitted when the plan places a pod of ``job`` (none of these jobs runs before)."""
    placed = any(p.pod.startswith(f"default/{job}-") for p in plan.placements)
    return ADMITTED if placed else PENDING


def statuses(plan: Plan, *jobs: str) -> list[str]:
    return [status(plan, j) for j in jobs]


def place(pod: str, node: str = "n1", *shares: tuple[str, int, int]) -> Placement:
    devices = tuple(DeviceShare(i, m, c) for i, m, c in shares)
    return Placement(f"default/{pod}", node, devices or None)


def messages(instance: Instance, *placements: Placement) -> list[str]:
    return [str(v) for v in verify(instance, Plan(placements=placements))]


SHARE_ON_N1 = place("share-w-0", "n1", ("GPU-n1-0", 10000, 30))

# -- the HAMi share job ---------------------------------------------------------------------------


def test_a_share_job_in_a_queue_capped_on_gpus_only_is_not_enqueued_by_either_engine() -> None:
    """research's realCapability = min_dim(T, {nvidia.com/gpu: 8}) = {cpu 16, memory 64Gi,
    nvidia.com/gpu 8}: no gpumem, no gpucores. share's minimum asks for gpumem 10000 and
    gpucores 30, each > 0 there, so proportion rejects it; plain has no minResources."""
    instance = hami("{name: research, capability: {nvidia.com/gpu: 8}}")
    assert statuses(greedy(instance), "share", "plain") == [PENDING, ADMITTED]
    assert statuses(cpsat(instance), "share", "plain") == [PENDING, ADMITTED]


def test_a_plan_that_starts_the_share_job_breaks_queue_enqueue_on_both_resources() -> None:
    """Nothing is held in research before the cycle (held 0); Volcano collects every resource
    that passes (cpu, memory, then the scalars), so both are named, in name order."""
    instance = hami("{name: research, capability: {nvidia.com/gpu: 8}}")
    assert messages(instance, SHARE_ON_N1) == [
        "queue-enqueue: queue research: nvidia.com/gpucores 30 > realCapability 0 (it has no "
        "nvidia.com/gpucores) at enqueue (proportion): minResources of default/share + "
        "allocated + inqueue − elastic 0",
        "queue-enqueue: queue research: nvidia.com/gpumem 10000 > realCapability 0 (it has no "
        "nvidia.com/gpumem) at enqueue (proportion): minResources of default/share + "
        "allocated + inqueue − elastic 0",
    ]


def test_a_capability_naming_the_share_resources_does_not_let_it_in() -> None:
    """MinDimensionResource(capability, Infinity) walks realCapability's own scalars only, so
    a capability on gpumem and gpucores adds neither: still refused, by both engines."""
    instance = hami(
        "{name: research, capability: {nvidia.com/gpu: 8, nvidia.com/gpumem: 80000, "
        "nvidia.com/gpucores: 200}}"
    )
    assert statuses(greedy(instance), "share") == [PENDING]
    assert statuses(cpsat(instance), "share") == [PENDING]
    assert [v.rule for v in verify(instance, Plan(placements=(SHARE_ON_N1,)))] == [
        "queue-enqueue",
        "queue-enqueue",
    ]


def test_a_guarantee_on_the_share_resources_lets_it_in() -> None:
    """guarantee gpumem 10000, gpucores 30 (deserved the same): realCapability gpumem =
    max₀(0 − 10000) + 10000 = 10000 ≥ 10000, gpucores 30 ≥ 30: admitted by both."""
    queue = (
        "{name: research, capability: {nvidia.com/gpu: 8}, "
        "deserved: {nvidia.com/gpumem: 10000, nvidia.com/gpucores: 30}, "
        "guarantee: {nvidia.com/gpumem: 10000, nvidia.com/gpucores: 30}}"
    )
    instance = hami(queue)
    assert statuses(greedy(instance), "share", "plain") == [ADMITTED, ADMITTED]
    assert statuses(cpsat(instance), "share", "plain") == [ADMITTED, ADMITTED]
    assert messages(instance, SHARE_ON_N1) == []


def test_one_mib_short_of_the_guarantee_keeps_it_out() -> None:
    """guarantee gpumem 9999: realCapability 9999 < 10000 (strict comparison, no tolerance)."""
    queue = (
        "{name: research, capability: {nvidia.com/gpu: 8}, "
        "deserved: {nvidia.com/gpumem: 9999, nvidia.com/gpucores: 30}, "
        "guarantee: {nvidia.com/gpumem: 9999, nvidia.com/gpucores: 30}}"
    )
    instance = hami(queue)
    assert statuses(greedy(instance), "share") == [PENDING]
    assert statuses(cpsat(instance), "share") == [PENDING]
    assert messages(instance, SHARE_ON_N1) == [
        "queue-enqueue: queue research: nvidia.com/gpumem 10000 > realCapability 9999 at "
        "enqueue (proportion): minResources of default/share + allocated + inqueue − elastic 0"
    ]


def test_a_job_already_inqueue_skips_enqueue() -> None:
    """phase Inqueue: enqueue never looks at it, allocate does; its quota (deserved, nvidia.com
    /gpu 2 for the two one-GPU jobs) holds both."""
    instance = hami("{name: research, capability: {nvidia.com/gpu: 8}}", phase="Inqueue")
    assert statuses(greedy(instance), "share", "plain") == [ADMITTED, ADMITTED]
    assert statuses(cpsat(instance), "share", "plain") == [ADMITTED, ADMITTED]
    assert messages(instance, SHARE_ON_N1) == []


def test_without_the_enqueue_action_there_is_no_gate() -> None:
    """Allocate takes Pending jobs in directly when enqueue is not configured."""
    instance = hami("{name: research, capability: {nvidia.com/gpu: 8}}", actions="allocate")
    assert statuses(greedy(instance), "share") == [ADMITTED]
    assert statuses(cpsat(instance), "share") == [ADMITTED]
    assert messages(instance, SHARE_ON_N1) == []


# -- a minimum above realCapability on one dimension ----------------------------------------------

CAPACITY = PROPORTION.replace("{name: proportion}", "{name: capacity}")
CPU_NODE = """\
nodes:
- {name: n1, allocatable: {cpu: "16", memory: 64Gi}}
"""


def job(name: str, minimum: str, queue: str = "qa", running: bool = False) -> str:
    """A one-pod job (1 CPU, 1Gi) whose minResources is ``{cpu: minimum}``."""
    pod = (
        "  running: [{index: 0, node: n1}]\n  tasks: [{name: w, replicas: 1, resources: "
        f"{{cpu: '{minimum}', memory: 1Gi}}}}]\n"
        if running
        else "  tasks: [{name: w, replicas: 1, resources: {cpu: '1', memory: 1Gi}}]\n"
    )
    return f"- name: {name}\n  queue: {queue}\n  minResources: {{cpu: '{minimum}'}}\n{pod}"


def cpu_case() -> Instance:
    """qa's capability cpu 8 (memory unset: unlimited), realCapability cpu min(16, 8) = 8.
    ``run`` holds 2 CPUs with minimum 2: allocated 2, inqueue max₀(2 − 2) = 0, elastic
    max₀(2 − 2) = 0, so 2 is held. big asks 2 + 7 = 9 > 8; fits asks 2 + 6 = 8 ≤ 8, and after
    it big would ask 15. Each pod needs 1 CPU, which allocate's quota (2 + 1 ≤ 8) allows."""
    return build(
        CAPACITY,
        CPU_NODE,
        "queues:\n- {name: qa, capability: {cpu: '8'}}\n",
        "jobs:\n",
        job("run", "2", running=True),
        job("big", "7"),
        job("fits", "6"),
    )


def test_a_minimum_above_realcapability_on_cpu_keeps_the_job_pending() -> None:
    instance = cpu_case()
    assert statuses(greedy(instance), "big", "fits") == [PENDING, ADMITTED]
    assert statuses(cpsat(instance), "big", "fits") == [PENDING, ADMITTED]


def test_the_verifier_sums_the_minimums_a_plan_starts_with_what_is_held() -> None:
    instance = cpu_case()
    assert messages(instance, place("fits-w-0")) == []
    assert messages(instance, place("big-w-0")) == [
        "queue-enqueue: queue qa: cpu 9 > realCapability 8 at enqueue (capacity): minResources "
        "of default/big + allocated + inqueue − elastic 2"
    ]
    assert messages(instance, place("big-w-0"), place("fits-w-0")) == [
        "queue-enqueue: queue qa: cpu 15 > realCapability 8 at enqueue (capacity): minResources "
        "of default/big, default/fits + allocated + inqueue − elastic 2"
    ]


def test_hierarchical_capacity_compares_at_every_ancestor() -> None:
    """research caps cpu at 8; team-a and team-b inherit it (realCapability 8 each). run holds
    5 in team-a; want asks 4 in team-b: 0 + 4 ≤ 8 at team-b, 5 + 4 = 9 > 8 at research."""
    instance = build(
        CAPACITY.replace("{name: capacity}", "{name: capacity, enableHierarchy: true}"),
        CPU_NODE,
        """
        queues:
        - {name: research, capability: {cpu: '8'}}
        - {name: team-a, parent: research}
        - {name: team-b, parent: research}
        """,
        "jobs:\n",
        job("run", "5", queue="team-a", running=True),
        job("want", "4", queue="team-b"),
    )
    assert statuses(greedy(instance), "want") == [PENDING]
    assert statuses(cpsat(instance), "want") == [PENDING]
    assert messages(instance, place("want-w-0")) == [
        "queue-enqueue: queue research: cpu 9 > realCapability 8 at enqueue (capacity): "
        "minResources of default/want + allocated + inqueue − elastic 5"
    ]


# -- overcommit -----------------------------------------------------------------------------------


def overcommit_case(arguments: str = "") -> Instance:
    """One 10-CPU node, no quota plugin. ``held`` is already Inqueue with minimum 8 CPUs, so
    overcommit opens with 8 held back; late asks for 5 more: 13 against 10 × factor − 0."""
    return build(
        PROPORTION.replace("{name: proportion}", f"{{name: overcommit{arguments}}}"),
        "nodes:\n- {name: n1, allocatable: {cpu: '10', memory: 64Gi}}\n",
        "jobs:\n",
        job("held", "8", queue="default").replace("  tasks", "  phase: Inqueue\n  tasks"),
        job("late", "5", queue="default"),
    )


@pytest.mark.parametrize(
    ("arguments", "late"),
    [
        ("", PENDING),  # 1.2: 8 + 5 = 13 > 12
        (", arguments: {overcommit-factor: 1.29}", PENDING),  # 13 > 12.9
        (", arguments: {overcommit-factor: 1.3}", ADMITTED),  # 13 ≤ 13
    ],
)
def test_overcommit_factor_bounds_what_enqueue_lets_in(arguments: str, late: str) -> None:
    instance = overcommit_case(arguments)
    assert statuses(greedy(instance), "held", "late") == [ADMITTED, late]
    assert statuses(cpsat(instance), "held", "late") == [ADMITTED, late]


def test_a_plan_past_overcommit_breaks_queue_enqueue() -> None:
    instance = overcommit_case()
    assert messages(instance, place("held-w-0")) == []
    assert messages(instance, place("held-w-0"), place("late-w-0")) == [
        "queue-enqueue: cluster: cpu 13 > 12 that overcommit lets into Inqueue (allocatable × "
        "factor − used): minResources of default/late + Inqueue minResources 8"
    ]


# -- whose votes decide ---------------------------------------------------------------------------


def tiered(overcommit_tier: int) -> Instance:
    """research caps cpu at 4; big's minimum is 6 CPUs (one 1-CPU pod). overcommit permits
    (6 ≤ 12), proportion rejects (6 > 4)."""
    tiers = [["priority", "gang"], ["predicates", "proportion"]]
    tiers[overcommit_tier].append("overcommit")
    conf = "".join(
        f"  - plugins: [{', '.join(f'{{name: {p}}}' for p in tier)}]\n" for tier in tiers
    )
    return build(
        f'scheduler:\n  actions: "enqueue, allocate"\n  tiers:\n{conf}',
        "nodes:\n- {name: n1, allocatable: {cpu: '10', memory: 64Gi}}\n",
        "queues:\n- {name: research, capability: {cpu: '4'}}\n",
        "jobs:\n",
        job("big", "6", queue="research"),
    )


def test_a_permit_in_an_earlier_tier_ends_the_vote() -> None:
    """overcommit alone in tier 1 permits: tier 2's proportion is never asked (§1.2)."""
    instance = tiered(0)
    assert statuses(greedy(instance), "big") == [ADMITTED]
    assert statuses(cpsat(instance), "big") == [ADMITTED]
    assert messages(instance, place("big-w-0")) == []


def test_gate_plugins_of_one_tier_must_all_permit() -> None:
    instance = tiered(1)
    assert statuses(greedy(instance), "big") == [PENDING]
    assert statuses(cpsat(instance), "big") == [PENDING]
    assert [v.rule for v in verify(instance, Plan(placements=(place("big-w-0"),)))] == [
        "queue-enqueue"
    ]
