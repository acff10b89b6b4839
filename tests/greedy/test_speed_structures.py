"""The greedy engine's array structures (node arrays, the device fit over every node, the node
checks as failure numbers, per-version values, the fixed-order task queue, reclaim's room and
its memo) give what the per-node rules give.

Expected values are worked by hand from the instances below: amounts are in the session's
units (cpu in millicores, memory in bytes, ``pods`` as a count).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from models.load import loads
from optimizer.greedy import engine
from optimizer.greedy.actions import reclaim
from optimizer.greedy.api import TaskInfo, TaskStatus
from optimizer.greedy.devices import fit
from optimizer.greedy.eviction_filters import ReclaimableRoom, reclaim_candidates
from optimizer.greedy.fit_cache import PASSES, fit_table
from optimizer.greedy.heap import GoHeap, SortedQueue
from optimizer.greedy.nodes import device_key, device_numbers, verdict
from optimizer.greedy.scan import failures_of
from optimizer.greedy.score_arrays import Versioned
from optimizer.greedy.session import Session

HEADER = """
apiVersion: vcopt/v1alpha1
kind: Instance
metadata: {name: arrays}
now: "2026-11-30T14:00:00Z"
"""
GIB = 1024**3


def session(body: str, scheduler: str = "") -> Session:
    return engine.open_session(loads(HEADER + scheduler + body, "arrays.yaml"), seed=0)


def task(ssn: Session, uid: str) -> TaskInfo:
    job = uid.rsplit("-", 2)[0]
    return ssn.jobs[job].tasks[uid]


TWO_NODES = """
nodes:
- {name: n1, allocatable: {cpu: "8", memory: 16Gi, pods: 10}}
- {name: n2, allocatable: {cpu: "4", memory: 8Gi, pods: 10}}
jobs:
- name: j
  tasks: [{name: w, replicas: 2, resources: {cpu: "2", memory: 1Gi}}]
"""


def test_node_arrays_follow_placements_pipelines_and_their_undo() -> None:
    """n1 (8 cpu) takes a 2-cpu pod: its idle and future idle cpu drop to 6000m and a pod slot
    of 10 is used. n2 (4 cpu) gets one pipelined: its idle stays 4000m (a pipelined pod only
    holds future resources), its future idle drops to 2000m. Discarding both gives back the
    first numbers and the first versions."""
    ssn = session(TWO_NODES)
    cpu, pods = ssn.dims.index["cpu"], ssn.dims.index["pods"]
    n1, n2 = ssn.nodes["n1"], ssn.nodes["n2"]
    arrays = ssn.arrays()
    assert arrays is not None
    before = arrays.version.copy()
    assert arrays.idle[n1.index, cpu] == 8000 and arrays.idle[n2.index, cpu] == 4000
    stmt = ssn.statement()
    stmt.allocate(task(ssn, "default/j-w-0"), n1)
    stmt.pipeline(task(ssn, "default/j-w-1"), n2)
    arrays = ssn.arrays()
    assert arrays is not None
    assert (arrays.idle[n1.index, cpu], arrays.future_idle[n1.index, cpu]) == (6000, 6000)
    assert arrays.idle[n1.index, pods] == 9
    assert (arrays.idle[n2.index, cpu], arrays.future_idle[n2.index, cpu]) == (4000, 2000)
    assert arrays.version[n1.index] == n1.version != before[n1.index]
    stmt.discard()
    arrays = ssn.arrays()
    assert arrays is not None
    assert (arrays.idle[n1.index, cpu], arrays.future_idle[n2.index, cpu]) == (8000, 4000)
    assert arrays.version.tolist() == before.tolist()


def card(i: int) -> str:
    return f"{{id: GPU-{i}, index: {i}, type: NVIDIA-A100, memory: 81920}}"


def gpu_node(resources: str, running: list[str]) -> Session:
    """Node n1 with four A100 cards (81,920 MiB each); job j asks for ``resources``; job
    ``old`` runs one pod per entry of ``running``, each holding the card it names (none: its
    one pod is pending and holds nothing)."""
    cards = ", ".join(card(i) for i in range(4))
    held = "\n".join(
        f"  - {{index: {k}, node: n1, gpus: [{share}]}}" for k, share in enumerate(running)
    )
    held = "  running:\n" + held if running else ""
    body = f"""
nodes:
- {{name: n1, allocatable: {{cpu: "64", memory: 256Gi}}, gpus: [{cards}]}}
jobs:
- name: j
  tasks: [{{name: w, replicas: 1, resources: {resources}}}]
- name: old
  tasks: [{{name: w, replicas: {max(len(running), 1)}, resources: {{cpu: "1", nvidia.com/gpu: 1,
    nvidia.com/gpumem-percentage: 60, nvidia.com/gpucores: 50}}}}]
{held}
"""
    return session(body, "scheduler: {tiers: [{plugins: [{name: predicates}]}]}\n")


def device_reason(ssn: Session) -> tuple[int, str]:
    """The device fit's failure number of job j's pod on n1, and its reason ('' if it fits)."""
    pod = task(ssn, "default/j-w-0")
    arrays = ssn.arrays()
    assert arrays is not None
    numbers = device_numbers(ssn, pod, arrays, None)
    assert numbers is not None
    number = int(numbers[ssn.nodes["n1"].index])
    return number, "" if number == PASSES else ssn.fit_cache.failures[number].reason


SHARE_0 = "{id: GPU-0, memory: 49152, cores: 50}"
SHARE_1 = "{id: GPU-1, memory: 49152, cores: 50}"


def test_device_counts_decide_whole_card_requests() -> None:
    """Cards 0 and 1 each hold a 60 % / 50-core share, so two cards are untouched. Two whole
    cards fit; three do not, and the reason is the node-by-node fit's: 2 of 4 cards free with
    100 % memory and 100 cores, 3 needed."""
    two = gpu_node("{cpu: '1', nvidia.com/gpu: 2}", [SHARE_0, SHARE_1])
    assert device_reason(two) == (PASSES, "")
    three = gpu_node("{cpu: '1', nvidia.com/gpu: 3}", [SHARE_0, SHARE_1])
    number, reason = device_reason(three)
    assert number != PASSES
    assert reason == "n1: 2/4 GPUs with 100% memory and 100 cores free, needs 3"
    expected = fit(task(three, "default/j-w-0"), three.nodes["n1"], "")
    assert getattr(expected, "reason", None) == reason


def test_device_counts_decide_shares_by_free_memory_and_cores() -> None:
    """A 50 % / 50-core share: cards 0 and 1 hold 60 % of their memory (40 % left), so they
    cannot take it; cards 2 and 3 can. So two such shares fit the node (nums 2), three do not
    (2 found)."""
    share = "nvidia.com/gpumem-percentage: 50, nvidia.com/gpucores: 50"
    fits = gpu_node(f"{{cpu: '1', nvidia.com/gpu: 2, {share}}}", [SHARE_0, SHARE_1])
    assert device_reason(fits) == (PASSES, "")
    short = gpu_node(f"{{cpu: '1', nvidia.com/gpu: 3, {share}}}", [SHARE_0, SHARE_1])
    assert device_reason(short)[1] == "n1: 2/4 GPUs with 50% memory and 50 cores free, needs 3"


def test_count_based_device_checks_agree_with_the_device_fit() -> None:
    """On every combination of the two shares held above (none, card 0, cards 0 and 1) and of
    whole-card and 50 % / 50-core requests for 1 to 4 cards, the count over all nodes, the
    count of one node and the per-node fit (which chooses the devices) pass or fail together,
    with the same reason."""
    share = "nvidia.com/gpumem-percentage: 50, nvidia.com/gpucores: 50"
    for held in ([], [SHARE_0], [SHARE_0, SHARE_1]):
        for nums in (1, 2, 3, 4):
            for extra in ("", f", {share}"):
                ssn = gpu_node(f"{{cpu: '1', nvidia.com/gpu: {nums}{extra}}}", held)
                pod, n1 = task(ssn, "default/j-w-0"), ssn.nodes["n1"]
                number, reason = device_reason(ssn)
                chosen = fit(pod, n1, "")
                assert getattr(chosen, "reason", "") == reason
                verdicts = ssn.fit_cache.device_arrays[pod.device_key]
                assert verdicts is not None
                assert verdicts.node_number(n1, ssn.fit_cache) == number


THREE_NODES = """
nodes:
- {name: n1, labels: {zone: a}, allocatable: {cpu: "1", memory: 8Gi}}
- {name: n2, labels: {zone: b}, allocatable: {cpu: "4", memory: 8Gi}}
- {name: n3, labels: {zone: a}, allocatable: {cpu: "4", memory: 8Gi}}
jobs:
- name: j
  tasks: [{name: w, replicas: 2, resources: {cpu: "2", memory: 1Gi}, nodeSelector: {zone: a}}]
"""


def test_node_failures_report_the_first_failing_check_of_each_node() -> None:
    """A 2-cpu pod for zone a: n1 is in zone a but has 1 cpu (the resource fit fails first),
    n2 has room but is in zone b (the selector fails), n3 passes. After the first pod is
    placed on n3 (4 − 2 = 2 cpu left) n3 still passes for the second; the kept numbers agree
    with a fresh node-by-node check of each node."""
    ssn = session(THREE_NODES)
    first, second = task(ssn, "default/j-w-0"), task(ssn, "default/j-w-1")

    def reasons(pod: TaskInfo) -> list[str]:
        table = fit_table(ssn, pod, device_key)
        assert table is not None
        numbers = failures_of(ssn, pod, table, ssn.node_list)
        assert numbers is not None
        failures = ssn.fit_cache.failures
        return ["" if n == PASSES else failures[n].reason for n in numbers.tolist()]

    assert reasons(first) == [
        "Insufficient cpu",
        "node(s) didn't match Pod's node affinity/selector",
        "",
    ]
    ssn.statement().allocate(first, ssn.nodes["n3"])
    assert reasons(second)[2] == ""
    for node, reason in zip(ssn.node_list, reasons(second), strict=True):
        failure = verdict(ssn, second, node).failure
        assert (failure.reason if failure else "") == reason


def test_versioned_values_are_recomputed_only_for_changed_nodes() -> None:
    """Three nodes read twice with nothing changed compute three values once; after a pod is
    placed on n2, only n2's value is computed again."""
    ssn = session(THREE_NODES.replace("nodeSelector: {zone: a}", ""))
    arrays = ssn.arrays()
    assert arrays is not None
    computed: list[str] = []

    def value(node: Any) -> float:
        computed.append(node.name)
        return float(len(computed))

    table = Versioned(3, np.float64)
    everything = np.arange(3)
    table.at(arrays, everything, value)
    table.at(arrays, everything, value)
    assert computed == ["n1", "n2", "n3"]
    ssn.statement().allocate(task(ssn, "default/j-w-0"), ssn.nodes["n2"])
    arrays = ssn.arrays()
    assert arrays is not None
    assert table.at(arrays, everything, value).tolist() == [1.0, 4.0, 3.0]
    assert computed == ["n1", "n2", "n3", "n2"]


def test_sorted_queue_pops_what_a_heap_pops_and_copies_pop_apart() -> None:
    """For a strict total order (descending here) the heap pops 9, 7, 5, 3, 1 whatever the
    push order, and so does the sorted queue; a copy made after one pop pops 7, 5, 3, 1 on its
    own, leaving the original where it was."""

    def later(a: int, b: int) -> bool:
        return a > b

    items = [3, 9, 1, 7, 5]
    heap: GoHeap[int] = GoHeap(later)
    for item in items:
        heap.push(item)
    queue = SortedQueue(items, later)
    assert [heap.pop() for _ in range(5)] == [9, 7, 5, 3, 1]
    assert queue.pop() == 9
    twin = queue.copy()
    assert [twin.pop() for _ in range(4)] == [7, 5, 3, 1]
    assert twin.empty() and not queue.empty()
    assert queue.items() == [7, 5, 3, 1]


RECLAIM = """
queues:
- {name: root}
- {name: qa, parent: root, deserved: {cpu: "1"}}
- {name: qb, parent: root, deserved: {cpu: "8"}}
nodes:
- {name: n1, allocatable: {cpu: "4", memory: 8Gi}}
- {name: n2, allocatable: {cpu: "4", memory: 8Gi}}
jobs:
- name: a
  queue: qa
  tasks: [{name: w, replicas: 3, resources: {cpu: "1", memory: 1Gi}}]
  running: [{index: 0, node: n1}, {index: 1, node: n1}, {index: 2, node: n2}]
- name: keep
  queue: qa
  tasks: [{name: w, replicas: 1, resources: {cpu: "1", memory: 1Gi},
           annotations: {volcano.sh/preemptable: "false"}}]
  running: [{index: 0, node: n2}]
- name: b
  queue: qb
  phase: Inqueue
  tasks: [{name: w, replicas: 3, resources: {cpu: "3", memory: 1Gi}}]
"""
RECLAIM_CONF = """scheduler:
  actions: "allocate, reclaim"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: predicates}, {name: capacity}]
"""


def test_reclaimable_room_sums_the_pods_reclaim_may_take() -> None:
    """Job a (queue qa) runs two 1-cpu pods on n1 and one on n2; job keep's pod on n2 is not
    preemptable. What reclaim may take: 2 cpu on n1, 1 on n2, all of it qa's. Once one of a's
    pods on n1 is evicted (Releasing, no longer Running), n1 offers 1 cpu."""
    ssn = session(RECLAIM, RECLAIM_CONF)
    cpu = ssn.dims.index["cpu"]
    room = ReclaimableRoom(ssn)
    n1, n2 = ssn.nodes["n1"].index, ssn.nodes["n2"].index
    assert (room.total[n1, cpu], room.total[n2, cpu]) == (2000, 1000)
    assert room.of_queue("qa")[:, cpu].tolist() == room.total[:, cpu].tolist()
    assert room.of_queue("qb")[:, cpu].tolist() == [0, 0]
    victim = task(ssn, "default/a-w-0")
    assert victim.node == "n1" and victim.status is TaskStatus.RUNNING
    ssn.statement().evict(victim, "reclaim")
    assert room.sync().total[n1, cpu] == 1000


def test_reclaim_candidates_are_the_nodes_where_the_victims_could_make_room() -> None:
    """A 3-cpu pod of b (queue qb): n1 has 4 − 2 = 2 cpu idle and a's 2 cpu to take, 4 ≥ 3;
    n2 has 4 − 2 = 2 cpu idle and only a's 1 cpu to take (keep's pod is not preemptable),
    3 ≥ 3 as well. A 4-cpu pod fits n1 only (4 ≥ 4, 3 < 4), a 5-cpu pod neither."""
    ssn = session(RECLAIM, RECLAIM_CONF)
    pod = task(ssn, "default/b-w-0")
    assert [n.name for n in reclaim_candidates(ssn, pod) or []] == ["n1", "n2"]
    for cpu, names in (("4", ["n1"]), ("5", [])):
        other = session(RECLAIM.replace('cpu: "3"', f'cpu: "{cpu}"'), RECLAIM_CONF)
        found = reclaim_candidates(other, task(other, "default/b-w-0"))
        assert [n.name for n in found or []] == names


def test_a_task_asking_what_failed_is_not_tried_again_while_nothing_changed() -> None:
    """Job b's three identical 8-cpu pods fit no 4-cpu node whatever reclaim evicts: the first
    pod's search finds no node and changes nothing, so the other two, asking the same of the
    same session, are not searched."""
    ssn = session(RECLAIM.replace('cpu: "3"', 'cpu: "8"'), RECLAIM_CONF)
    tried: list[str] = []
    original = reclaim._reclaim_for_task

    def counting(ssn: Session, stmt: Any, pod: TaskInfo) -> bool:
        tried.append(pod.uid)
        return original(ssn, stmt, pod)

    reclaim._reclaim_for_task = counting  # type: ignore[assignment]
    try:
        engine.run_actions(ssn)
    finally:
        reclaim._reclaim_for_task = original  # type: ignore[assignment]
    assert tried == ["default/b-w-0"]
