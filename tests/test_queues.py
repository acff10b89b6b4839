"""Queue tree, queue validation and the capacity/proportion derived values.

Resources are in vcopt units: cpu and nvidia.com/gpu in milli-units (1 GPU = 1000), memory in
bytes. Expected values are worked by hand from volcano-scheduler.md §5.2, §5.3 and §5.5.
"""

from __future__ import annotations

import pytest

from models.errors import Diagnostics, InputError
from models.queues import (
    ROOT,
    Queue,
    QueueAttrs,
    QueueTree,
    capacity_flat,
    capacity_hierarchical,
    proportion_deserved,
    share,
    validate_queues,
)
from models.resources import CPU, INFINITE, MEMORY, NVIDIA_GPU, Resources

GPU = NVIDIA_GPU
GI = 2**30


def R(**amounts: object) -> Resources:
    """Resources from k8s quantities; ``gpu=`` stands for nvidia.com/gpu."""
    return Resources.parse({GPU if k == "gpu" else k: v for k, v in amounts.items()})


def check(queues: list[Queue], jobs: dict[str, int] | None = None) -> Diagnostics:
    diag = Diagnostics()
    validate_queues(queues, jobs or {}, diag)
    return diag


def only_error(diag: Diagnostics) -> tuple[str, str, str]:
    assert len(diag.errors) == 1, [str(p) for p in diag.errors]
    problem = diag.errors[0]
    return problem.obj, problem.field, problem.message


# -- tree ---------------------------------------------------------------------------------------


def tree_3_levels() -> QueueTree:
    return QueueTree.build(
        [
            Queue("research"),
            Queue("ops", parent=ROOT),
            Queue("team-a", parent="research"),
            Queue("team-b", parent="research"),
            Queue("a-1", parent="team-a"),
            Queue("b-1", parent="team-b"),
        ]
    )


def test_build_adds_implicit_root_and_links() -> None:
    """No queue is named root, so one is added; "" and "root" both mean root as parent.

    Ancestors are root-first: a-1 → [root, research, team-a]; depth counts root as 0.
    """
    tree = tree_3_levels()
    assert tree.names == (ROOT, "research", "ops", "team-a", "team-b", "a-1", "b-1")
    assert tree.queue(ROOT) == Queue(ROOT)
    assert tree.parent(ROOT) is None
    assert tree.parent("research") == ROOT
    assert tree.parent("a-1") == "team-a"
    assert tree.children(ROOT) == ("research", "ops")
    assert tree.children("research") == ("team-a", "team-b")
    assert tree.ancestors("a-1") == (ROOT, "research", "team-a")
    assert tree.path("a-1") == (ROOT, "research", "team-a", "a-1")
    assert [tree.depth(n) for n in ("root", "research", "team-a", "a-1")] == [0, 1, 2, 3]
    assert tree.is_leaf("a-1") and tree.is_leaf("ops")
    assert not tree.is_leaf("team-b") and not tree.is_leaf(ROOT)


def test_explicit_root_is_kept() -> None:
    """A given root queue is used as is (not replaced by a default one)."""
    tree = QueueTree.build([Queue("a"), Queue(ROOT, weight=3)])
    assert tree.queue(ROOT).weight == 3
    assert tree.names == (ROOT, "a")


def test_common_ancestor_level() -> None:
    """getQueueLevel compares the ancestor lists index by index.

    team-b [root, research] vs a-1 [root, research, team-a]: equal at 0 and 1 → level 1
    (research); b-1 [root, research, team-b] vs a-1: differ at 2 → level 1; ops [root] vs a-1
    → level 0 (root); team-b vs team-b: [root, research] → 1.
    """
    tree = tree_3_levels()
    assert tree.common_ancestor_level("b-1", "a-1") == 1
    assert tree.common_ancestor_level("team-b", "a-1") == 1
    assert tree.common_ancestor_level("a-1", "team-b") == 1
    assert tree.common_ancestor_level("ops", "a-1") == 0
    assert tree.common_ancestor_level("team-b", "team-b") == 1


def test_build_raises_on_a_broken_tree() -> None:
    """An unknown parent makes the queues no tree: build raises InputError naming it."""
    with pytest.raises(InputError, match='parent queue "nope" does not exist'):
        QueueTree.build([Queue("a", parent="nope")])


# -- validation ---------------------------------------------------------------------------------


def test_valid_tree_has_no_problems() -> None:
    """research deserves gpu 32 ≥ 16 + 8 of its children, guarantees 8 ≥ 4 + 2, caps gpu 48 ≥
    24; jobs only in leaves."""
    queues = [
        Queue("research", deserved=R(gpu=32), capability=R(gpu=48), guarantee=R(gpu=8)),
        Queue(
            "team-a",
            parent="research",
            deserved=R(gpu=16),
            capability=R(gpu=24),
            guarantee=R(gpu=4),
        ),
        Queue("team-b", parent="research", deserved=R(gpu=8), guarantee=R(gpu=2)),
    ]
    diag = check(queues, {"team-a": 3, "team-b": 1})
    assert diag.errors == [] and diag.warnings == []


def test_duplicate_name() -> None:
    diag = check([Queue("a"), Queue("a", weight=2)])
    assert only_error(diag)[:2] == ('Queue "a"', "name")


def test_empty_name() -> None:
    diag = check([Queue("")])
    assert only_error(diag)[1] == "name"


@pytest.mark.parametrize("weight", [0, 65536])
def test_weight_out_of_crd_bounds(weight: int) -> None:
    """CRD: weight minimum 1, maximum 65535."""
    obj, field, message = only_error(check([Queue("a", weight=weight)]))
    assert (obj, field) == ('Queue "a"', "weight")
    assert str(weight) in message


def test_weight_bounds_are_inclusive() -> None:
    assert check([Queue("a", weight=1), Queue("b", weight=65535)]).errors == []


def test_negative_priority() -> None:
    """CRD: priority minimum 0."""
    assert only_error(check([Queue("a", priority=-1)]))[1] == "priority"


def test_state_outside_open_closed() -> None:
    """The admission policy only admits Open, Closed (or empty)."""
    assert only_error(check([Queue("a", state="Closing")]))[1] == "state"
    assert check([Queue("a", state="Closed"), Queue("b", state="")]).errors == []


def test_self_parent() -> None:
    obj, field, message = only_error(check([Queue("a", parent="a")]))
    assert (obj, field) == ('Queue "a"', "parent")
    assert "own parent" in message


def test_missing_parent_is_named() -> None:
    """Only the broken link is reported, not the child below it."""
    obj, field, message = only_error(check([Queue("a", parent="ghost"), Queue("b", parent="a")]))
    assert (obj, field) == ('Queue "a"', "parent")
    assert '"ghost"' in message


def test_cycle_reported_once() -> None:
    """a → b → c → a; d hangs below the cycle. One error, on a (defined first)."""
    queues = [
        Queue("a", parent="b"),
        Queue("b", parent="c"),
        Queue("c", parent="a"),
        Queue("d", parent="a"),
    ]
    obj, field, message = only_error(check(queues))
    assert (obj, field) == ('Queue "a"', "parent")
    assert "a → b → c → a" in message


def test_root_cannot_have_a_parent() -> None:
    diag = check([Queue(ROOT, parent="a"), Queue("a")])
    assert only_error(diag)[:2] == ('Queue "root"', "parent")


def test_depth_limit() -> None:
    """q1 is a child of root (depth 1), …, q5 has depth 5 (allowed), q6 depth 6 (rejected).

    Only q6 is reported; q7 below it is a consequence.
    """
    chain = [Queue(f"q{i}", parent=f"q{i - 1}" if i > 1 else "") for i in range(1, 8)]
    assert check(chain[:5]).errors == []
    obj, field, message = only_error(check(chain))
    assert (obj, field) == ('Queue "q6"', "parent")
    assert "depth 6" in message


def test_deserved_above_capability() -> None:
    """Admission policy: deserved cpu 8 > capability cpu 4 → reject."""
    queue = Queue("a", deserved=R(cpu=8), capability=R(cpu=4))
    obj, field, message = only_error(check([queue]))
    assert (obj, field) == ('Queue "a"', "deserved.cpu")
    assert "capability" in message


def test_deserved_and_capability_on_different_resources_are_not_compared() -> None:
    """The policy compares only resources set on both sides."""
    assert check([Queue("a", deserved=R(cpu=8), capability=R(memory="1Gi"))]).errors == []


def test_guarantee_above_deserved() -> None:
    queue = Queue("a", deserved=R(gpu=2), guarantee=R(gpu=4))
    assert only_error(check([queue]))[1] == "guarantee.nvidia.com/gpu"


def test_guarantee_needs_deserved_on_the_same_resource() -> None:
    """The policy requires every guaranteed resource to appear in deserved."""
    queue = Queue("a", deserved=R(cpu=4), guarantee=R(cpu=2, memory="1Gi"))
    assert only_error(check([queue]))[1] == "guarantee.memory"


def test_sibling_deserved_sum_above_parent() -> None:
    """Children deserve gpu 20 + 20 = 40 > 32 of research; reported once, on research."""
    queues = [
        Queue("research", deserved=R(gpu=32)),
        Queue("team-a", parent="research", deserved=R(gpu=20)),
        Queue("team-b", parent="research", deserved=R(gpu=20, cpu=100)),
    ]
    obj, field, message = only_error(check(queues))
    assert (obj, field) == ('Queue "research"', "deserved.nvidia.com/gpu")
    assert "40" in message and "32" in message


def test_sibling_sum_skips_resources_the_parent_leaves_unset() -> None:
    """research sets no cpu, so the children's cpu sum is not limited."""
    queues = [
        Queue("research", deserved=R(gpu=32)),
        Queue("team-a", parent="research", deserved=R(cpu=500)),
    ]
    assert check(queues).errors == []


def test_sibling_guarantee_sum_above_parent() -> None:
    """Guarantees cpu 3 + 3 = 6 > 4 guaranteed by p (deserved sums 6 ≤ 10 are fine)."""
    queues = [
        Queue("p", deserved=R(cpu=10), guarantee=R(cpu=4)),
        Queue("c1", parent="p", deserved=R(cpu=3), guarantee=R(cpu=3)),
        Queue("c2", parent="p", deserved=R(cpu=3), guarantee=R(cpu=3)),
    ]
    assert only_error(check(queues))[:2] == ('Queue "p"', "guarantee.cpu")


def test_capability_above_nearest_ancestor_that_sets_it() -> None:
    """research caps gpu 48, team leaves gpu unset, leaf asks 64 > 48 (nearest ancestor with a
    gpu capability is research). cpu 100 is unlimited above (nobody sets cpu)."""
    queues = [
        Queue("research", capability=R(gpu=48)),
        Queue("team", parent="research", capability=R(memory="1Gi")),
        Queue("leaf", parent="team", capability=R(gpu=64, cpu=100)),
    ]
    obj, field, message = only_error(check(queues))
    assert (obj, field) == ('Queue "leaf"', "capability.nvidia.com/gpu")
    assert '"research"' in message


def test_capability_checked_against_nearest_not_farther_ancestor() -> None:
    """team caps gpu 16 under research's 48: leaf's 32 ≤ 48 but > 16 (nearest) → one error."""
    queues = [
        Queue("research", capability=R(gpu=48)),
        Queue("team", parent="research", capability=R(gpu=16)),
        Queue("leaf", parent="team", capability=R(gpu=32)),
    ]
    obj, _, message = only_error(check(queues))
    assert obj == 'Queue "leaf"' and '"team"' in message


def test_jobs_only_in_leaf_queues() -> None:
    queues = [Queue("research"), Queue("team-a", parent="research")]
    obj, field, message = only_error(check(queues, {"research": 2, "team-a": 1}))
    assert (obj, field) == ('Queue "research"', "jobs")
    assert "team-a" in message


def test_root_resources_only_warn() -> None:
    """Setting root's capability is a warning (unset cpu/memory would count as 0), not an error;
    neither are children above it on deserved (root's values are not limits)."""
    queues = [
        Queue(ROOT, capability=R(gpu=64), deserved=R(gpu=8)),
        Queue("a", deserved=R(gpu=16)),
    ]
    diag = check(queues)
    assert diag.errors == []
    assert {(p.obj, p.field) for p in diag.warnings} == {
        ('Queue "root"', "capability"),
        ('Queue "root"', "deserved"),
    }
    capability = next(p for p in diag.warnings if p.field == "capability")
    assert "cpu and memory count as 0" in capability.message


# -- capacity, flat -----------------------------------------------------------------------------


def test_capacity_flat() -> None:
    """T = cpu 100, memory 200Gi, gpu 8. Guarantees: a cpu 20, c cpu 10 → G = cpu 30 (c has no
    jobs: it gets no attrs but its guarantee is still set aside). max₀(T − G) = cpu 70, 200Gi,
    gpu 8.

    a (capability unset → cpu/mem ∞): realCap = (70 + 20 cpu, 200Gi, gpu 8) = cpu 90, 200Gi,
    gpu 8; deserved {cpu 50, gpu 2} clipped by realCap → cpu 50, gpu 2 (memory not in deserved
    → 0), ≥ guarantee cpu 20 → cpu 50, gpu 2.

    b (capability cpu 30 only → memory ∞, gpu missing = unlimited): realCap = min(cpu 70, 30)
    = cpu 30, memory 200Gi, gpu 8 kept; deserved {cpu 40, gpu 16} → cpu 30, gpu 8.
    """
    tree = QueueTree.build(
        [
            Queue("a", deserved=R(cpu=50, gpu=2), guarantee=R(cpu=20)),
            Queue("b", deserved=R(cpu=40, gpu=16), capability=R(cpu=30)),
            Queue("c", deserved=R(cpu=10), guarantee=R(cpu=10)),
        ]
    )
    total = R(cpu=100, memory="200Gi", gpu=8)
    attrs = capacity_flat(tree, total, ["a", "b", "a"])
    assert set(attrs) == {"a", "b"}
    assert attrs["a"] == QueueAttrs(
        deserved=R(cpu=50, gpu=2),
        capability=Resources({CPU: INFINITE, MEMORY: INFINITE}),
        real_capability=R(cpu=90, memory="200Gi", gpu=8),
        guarantee=R(cpu=20),
    )
    assert attrs["b"] == QueueAttrs(
        deserved=R(cpu=30, gpu=8),
        capability=Resources({CPU: 30_000, MEMORY: INFINITE}),
        real_capability=R(cpu=30, memory="200Gi", gpu=8),
        guarantee=Resources(),
    )


def test_capacity_flat_scalar_capability_and_overcommitted_guarantee() -> None:
    """T = cpu 10, gpu 4; guarantees a cpu 6 + b cpu 6 = 12 > 10 → max₀(T − G) = cpu 0, gpu 4.

    a: capability gpu 2 (cpu/memory unset → ∞): realCap = (cpu 0 + 6, gpu 4) min (gpu 2) =
    cpu 6, gpu 2; memory min(0, ∞) = 0. deserved {cpu 8, gpu 3} → cpu 6, gpu 2, max with
    guarantee cpu 6 → cpu 6, gpu 2.
    """
    tree = QueueTree.build(
        [
            Queue("a", deserved=R(cpu=8, gpu=3), capability=R(gpu=2), guarantee=R(cpu=6)),
            Queue("b", guarantee=R(cpu=6)),
        ]
    )
    attrs = capacity_flat(tree, R(cpu=10, gpu=4), ["a"])
    assert attrs["a"].real_capability == R(cpu=6, gpu=2)
    assert attrs["a"].deserved == R(cpu=6, gpu=2)


# -- capacity, hierarchical ---------------------------------------------------------------------


def test_capacity_hierarchical_three_levels() -> None:
    """T = cpu 256, memory 1Ti, gpu 64. root (no capability) → ∞ on cpu, memory and gpu (the
    scalar of T); its realCap = its capability.

    Children of root: research (g gpu 8, cap gpu 48) and ops (g gpu 8) → Σg = gpu 8000m·2.
      research: cap = cpu ∞, mem ∞ (inherited), gpu 48; realCap = min((∞ − 16000) + 8000, 48000)
                = gpu 48, cpu/mem ∞ (∞ − 0 + 0).
      ops: cap = root's (∞, ∞, gpu ∞); realCap gpu = ∞ − 16000 + 8000 = ∞ − 8000;
           deserved = max(gpu 4, guarantee gpu 8) = gpu 8.
    Children of research: team-a (g 4, cap gpu 24), team-b (g 2, cap unset) → Σg = gpu 6.
      free = 48 − 6 = 42.
      team-a: realCap = min(42 + 4, 24) = 24.
      team-b: cap = research's capability (cpu ∞, mem ∞, gpu 48); realCap = min(42 + 2, 48) = 44;
              deserved gpu 60 stays 60 (not clipped by realCap).
    root: guarantee = 8 + 8 = gpu 16; deserved = research 32 + ops 8 = gpu 40.
    """
    tree = QueueTree.build(
        [
            Queue("research", deserved=R(gpu=32), capability=R(gpu=48), guarantee=R(gpu=8)),
            Queue("ops", deserved=R(gpu=4), guarantee=R(gpu=8)),
            Queue(
                "team-a",
                parent="research",
                deserved=R(gpu=16),
                capability=R(gpu=24),
                guarantee=R(gpu=4),
            ),
            Queue("team-b", parent="research", deserved=R(gpu=60), guarantee=R(gpu=2)),
        ]
    )
    attrs = capacity_hierarchical(tree, R(cpu=256, memory="1Ti", gpu=64))
    inf = Resources({CPU: INFINITE, MEMORY: INFINITE, GPU: INFINITE})
    assert set(attrs) == {ROOT, "research", "ops", "team-a", "team-b"}
    assert attrs[ROOT] == QueueAttrs(
        deserved=R(gpu=40), capability=inf, real_capability=inf, guarantee=R(gpu=16)
    )
    research_cap = Resources({CPU: INFINITE, MEMORY: INFINITE, GPU: 48_000})
    assert attrs["research"] == QueueAttrs(
        deserved=R(gpu=32),
        capability=research_cap,
        real_capability=research_cap,
        guarantee=R(gpu=8),
    )
    assert attrs["ops"].capability == inf
    assert attrs["ops"].real_capability == inf - {GPU: 8000}
    assert attrs["ops"].deserved == R(gpu=8)
    assert attrs["team-a"].capability == Resources({CPU: INFINITE, MEMORY: INFINITE, GPU: 24_000})
    assert attrs["team-a"].real_capability == Resources(
        {CPU: INFINITE, MEMORY: INFINITE, GPU: 24_000}
    )
    assert attrs["team-b"].capability == research_cap
    assert attrs["team-b"].real_capability == Resources(
        {CPU: INFINITE, MEMORY: INFINITE, GPU: 44_000}
    )
    assert attrs["team-b"].deserved == R(gpu=60)


def test_capacity_hierarchical_inherits_capability_not_real_capability() -> None:
    """research cap gpu 48; children t1 (g gpu 16) and t2 (g gpu 8), t2 has child t2-x; none
    of them sets a capability.

    research realCap = 48 (root ∞). Σg under research = 24 → free = 24.
      t2: cap = 48 (research's capability); realCap = min(24 + 8, 48) = 32.
      t2-x: cap = t2's capability 48, not t2's realCap 32; realCap = min(32 − 0 + 0, 48) = 32.
    """
    tree = QueueTree.build(
        [
            Queue("research", deserved=R(gpu=48), capability=R(gpu=48), guarantee=R(gpu=24)),
            Queue("t1", parent="research", deserved=R(gpu=16), guarantee=R(gpu=16)),
            Queue("t2", parent="research", deserved=R(gpu=8), guarantee=R(gpu=8)),
            Queue("t2-x", parent="t2"),
        ]
    )
    attrs = capacity_hierarchical(tree, R(cpu=64, gpu=64))
    assert attrs["t2"].capability[GPU] == 48_000
    assert attrs["t2"].real_capability[GPU] == 32_000
    assert attrs["t2-x"].capability[GPU] == 48_000
    assert attrs["t2-x"].real_capability[GPU] == 32_000


def test_capacity_hierarchical_root_capability_set() -> None:
    """Root capability {gpu 16} is used as is: cpu is absent (0), so the child inherits cpu 0
    (≤ 0 takes the parent's) and its realCap cpu is 0; gpu = min(16 − 0 + 0, 16) = 16."""
    tree = QueueTree.build([Queue(ROOT, capability=R(gpu=16)), Queue("a")])
    attrs = capacity_hierarchical(tree, R(cpu=64, gpu=64))
    assert attrs[ROOT].real_capability == R(gpu=16)
    assert attrs["a"].capability == R(gpu=16)
    assert attrs["a"].real_capability == R(gpu=16)


# -- proportion ---------------------------------------------------------------------------------


def test_proportion_surplus_flows_to_the_other_queue() -> None:
    """T = cpu 10, weights 1:1, requests a cpu 2, b cpu 20, realCap both cpu 10.

    Round 1 (W = 2, remaining 10): each +5. a: min(5, 10, request 2) = 2, request 2 ≤ 2 → met.
      b: min(5, 10, 20) = 5, not met. Increase 2 + 5 = 7 → remaining 3.
    Round 2 (W = 1): b: 5 + 3 = 8 ≤ 10, ≤ 20 → 8, not met. Remaining 0 → stop.
    """
    queues = [Queue("a"), Queue("b")]
    result = proportion_deserved(
        queues,
        R(cpu=10),
        {"a": R(cpu=2), "b": R(cpu=20)},
        {"a": R(cpu=10), "b": R(cpu=10)},
    )
    assert result == {"a": R(cpu=2), "b": R(cpu=8)}


def test_proportion_floors_the_weighted_split() -> None:
    """T = cpu 10 = 10000m, weights 1:2, both request cpu 100.

    Round 1 (W = 3): a 10000·1//3 = 3333, b 10000·2//3 = 6666; remaining 1m.
    Round 2: a 1·1//3 = 0, b 1·2//3 = 0 → both unchanged → met; remaining 1m unchanged → stop.
    """
    queues = [Queue("a", weight=1), Queue("b", weight=2)]
    real = {"a": R(cpu=10), "b": R(cpu=10)}
    result = proportion_deserved(queues, R(cpu=10), {"a": R(cpu=100), "b": R(cpu=100)}, real)
    assert result == {"a": Resources({CPU: 3333}), "b": Resources({CPU: 6666})}


def test_proportion_guarantee_real_capability_and_missing_request_scalar() -> None:
    """T = cpu 10, gpu 4. a: guarantee cpu 3, request cpu 1; b: request cpu 20 (no gpu),
    realCap cpu 7 (flat: 10 − 3 + 0) with gpu missing (unlimited).

    Round 1 (W = 2, remaining cpu 10, gpu 4): +cpu 5, gpu 2 each.
      a: min(realCap cpu 10, gpu 4) → cpu 5, gpu 2; request has no gpu → gpu 0; cpu min(5, 1) = 1;
         max guarantee cpu 3 → cpu 3; request 1 ≤ 3 → met.
      b: realCap cpu 7 → cpu 5, gpu 2 kept; request → cpu 5, gpu 0; not met.
      increase cpu 8 → remaining cpu 2, gpu 4.
    Round 2 (W = 1): b: cpu 7, gpu 4 → realCap cpu 7 → request → cpu 7, gpu 0; changed, not met.
      remaining cpu 0, gpu 4 (not empty, but changed).
    Round 3: b: cpu 7 + 0 → 7, gpu → 0: unchanged → met; remaining unchanged → stop.
    """
    queues = [Queue("a", guarantee=R(cpu=3)), Queue("b")]
    result = proportion_deserved(
        queues,
        R(cpu=10, gpu=4),
        {"a": R(cpu=1), "b": R(cpu=20)},
        {"a": R(cpu=10, gpu=4), "b": R(cpu=7)},
    )
    assert result == {"a": R(cpu=3), "b": R(cpu=7)}


# -- share --------------------------------------------------------------------------------------


def test_share_is_the_dominant_ratio_over_deserved_dimensions() -> None:
    """cpu 4/8 = 0.5, gpu 3/4 = 0.75 → 0.75; memory is allocated but not deserved → ignored."""
    allocated = R(cpu=4, gpu=3, memory="100Gi")
    assert share(allocated, R(cpu=8, gpu=4), empty_share=1.0) == 0.75


def test_share_of_an_empty_deserved() -> None:
    """Best-effort queue: capacity says 1, proportion says 0, whatever is allocated."""
    assert share(R(cpu=4), Resources(), empty_share=1.0) == 1.0
    assert share(R(cpu=4), Resources(), empty_share=0.0) == 0.0


def test_share_unallocated_is_zero() -> None:
    assert share(Resources(), R(cpu=8), empty_share=1.0) == 0.0
