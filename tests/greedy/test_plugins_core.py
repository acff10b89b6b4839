"""The core Volcano plugins of the greedy engine: priority, gang, conformance, drf, overcommit.

Every expected value is worked by hand from ``spec/volcano-scheduler.md`` (§ cited in each
docstring). Units are Volcano's: cpu in milli-cores, memory in bytes, other scalars in
milli-units. Pods are keyed ``default/<job>-<task>-<index>``.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from models.load import loads
from optimizer.greedy.actions import allocate, enqueue
from optimizer.greedy.api import JobInfo, TaskInfo, TaskStatus
from optimizer.greedy.plugins.conformance import ConformancePlugin
from optimizer.greedy.plugins.drf import DrfPlugin, share_of
from optimizer.greedy.plugins.gang import GangPlugin
from optimizer.greedy.plugins.overcommit import OvercommitPlugin, overcommit_factor
from optimizer.greedy.plugins.priority import PriorityPlugin
from optimizer.greedy.session import Plugin, Session

PLUGINS: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (PriorityPlugin, GangPlugin, ConformancePlugin, DrfPlugin, OvercommitPlugin)
}
NODE = {"name": "n1", "allocatable": {"cpu": "10", "memory": "10Gi", "pods": 110}}
GI = 2**30


def job(name: str, replicas: int = 1, cpu: str = "1", **fields: Any) -> dict[str, Any]:
    """One job with one task ``w`` of ``replicas`` pods, unless ``tasks`` is given."""
    out: dict[str, Any] = {
        "name": name,
        "tasks": [{"name": "w", "replicas": replicas, "resources": {"cpu": cpu}}],
    }
    out.update(fields)
    return out


def running(*indexes: int, task: str | None = None, node: str = "n1") -> list[dict[str, Any]]:
    return [{"index": i, "node": node, **({"task": task} if task else {})} for i in indexes]


def open_session(
    jobs: list[dict[str, Any]],
    *tiers: list[Any],
    nodes: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> Session:
    """A session on one 10-cpu node (unless ``nodes``) with the given plugin tiers; a tier
    entry is a plugin name or a full plugin option mapping."""
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "scheduler": {
            "actions": "enqueue, allocate, backfill",
            "tiers": [
                {"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]}
                for tier in tiers
            ],
        },
        "nodes": nodes or [NODE],
        "jobs": jobs,
        **extra,
    }
    ssn = Session(loads(yaml.safe_dump(doc, sort_keys=False)), seed=0)
    ssn.open(PLUGINS)
    return ssn


def J(ssn: Session, name: str) -> JobInfo:
    return ssn.jobs[f"default/{name}"]


def T(ssn: Session, pod: str, namespace: str = "default") -> TaskInfo:
    task = pod.rsplit("-", 2)
    return ssn.jobs[f"{namespace}/{task[0]}"].tasks[f"{namespace}/{pod}"]


def node(ssn: Session) -> Any:
    return ssn.nodes["n1"]


# -- priority -----------------------------------------------------------------------------------


def test_priority_job_order_is_podgroup_priority_descending() -> None:
    """§1.6: ``priority`` orders jobs by PodGroup priority, highest first. ``lo`` is created
    first, so the creation-time fallback alone would put it first; with equal priorities the
    plugin returns 0 and leaves the decision to later plugins."""
    ssn = open_session(
        [job("lo", priority=1), job("hi", priority=10), job("hi2", priority=10)], ["priority"]
    )
    lo, hi, hi2 = J(ssn, "lo"), J(ssn, "hi"), J(ssn, "hi2")
    assert ssn.job_order(hi, lo)
    assert not ssn.job_order(lo, hi)
    assert ssn.job_order_compare(hi, hi2) == 0


def test_priority_task_order_is_pod_priority_descending() -> None:
    """§1.6: tasks by pod priority, highest first, before ``CompareTask``. Pod ``j-a-0`` would
    come first by UID; pod priority 5 of ``j-b-0`` beats priority 1."""
    tasks = [
        {"name": "a", "replicas": 1, "priority": 1, "resources": {"cpu": "1"}},
        {"name": "b", "replicas": 1, "priority": 5, "resources": {"cpu": "1"}},
    ]
    ssn = open_session([job("j", tasks=tasks)], ["priority"])
    a, b = T(ssn, "j-a-0"), T(ssn, "j-b-0")
    assert ssn.task_order(b, a)
    assert not ssn.task_order(a, b)


def test_priority_preemptable_between_jobs_and_inside_a_job() -> None:
    """§8.1: another job's pod is a victim iff that job's priority < the preemptor job's (5);
    a pod of the preemptor's own job iff its pod priority < the preemptor pod's (10). So
    ``low`` (1) and ``p-small`` (1) go; ``equal`` (5), ``higher`` (9) and ``p-peer`` (10)
    stay. With priority alone in its tier the session returns exactly its list (§1.2)."""
    p_tasks = [
        {"name": "big", "replicas": 1, "priority": 10, "resources": {"cpu": "1"}},
        {"name": "small", "replicas": 1, "priority": 1, "resources": {"cpu": "1"}},
        {"name": "peer", "replicas": 1, "priority": 10, "resources": {"cpu": "1"}},
    ]
    p_running = running(0, task="small") + running(0, task="peer")
    jobs = [
        job("p", tasks=p_tasks, priority=5, minAvailable=1, running=p_running),
        job("low", priority=1, running=running(0)),
        job("equal", priority=5, running=running(0)),
        job("higher", priority=9, running=running(0)),
    ]
    ssn = open_session(jobs, ["priority"])
    candidates = [
        T(ssn, "p-small-0"),
        T(ssn, "p-peer-0"),
        T(ssn, "low-w-0"),
        T(ssn, "equal-w-0"),
        T(ssn, "higher-w-0"),
    ]
    victims = ssn.preemptable(T(ssn, "p-big-0"), candidates)
    assert [t.name for t in victims] == ["p-small-0", "low-w-0"]


def test_priority_registers_preemptable_but_not_reclaimable() -> None:
    """§8.1 names only a PreemptableFn for ``priority``; reclaim (§8.2) lists no priority
    rule, so the plugin must not register a ReclaimableFn."""
    ssn = open_session([job("a")], ["priority"])
    assert ssn.has_hook("preemptable")
    assert not ssn.has_hook("reclaimable")


def test_priority_job_starving_until_every_task_is_placed() -> None:
    """§3: priority's JobStarving is ``ready + waiting < #tasks``. 1 of 3 running → starving;
    pipelining the other two makes 1 + 2 = 3 → not starving."""
    ssn = open_session([job("a", replicas=3, minAvailable=1, running=running(0))], ["priority"])
    a = J(ssn, "a")
    assert ssn.job_starving(a)
    ssn.pipeline(T(ssn, "a-w-1"), node(ssn), None)
    assert ssn.job_starving(a)
    ssn.pipeline(T(ssn, "a-w-2"), node(ssn), None)
    assert not ssn.job_starving(a)


# -- gang: validity ------------------------------------------------------------------------------


def test_gang_invalid_when_valid_tasks_below_min_available() -> None:
    """§1.4: JobValid needs ``ValidTaskNum ≥ minAvailable``, where valid = allocated,
    succeeded, pipelined or pending. Evicting one of 3 running pods makes it Releasing:
    2 valid < 3."""
    ssn = open_session([job("a", replicas=3, minAvailable=3, running=running(0, 1, 2))], ["gang"])
    a = J(ssn, "a")
    assert ssn.job_valid(a) is None
    ssn.evict(T(ssn, "a-w-0"), "test")
    assert ssn.job_valid(a) == "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"


def _roles_job(min_available: int) -> dict[str, Any]:
    """2 ``ps`` + 2 ``worker`` pods, all running; minTaskMember ps: 1, worker: 2 (Σ = 3)."""
    tasks = [
        {"name": "ps", "replicas": 2, "resources": {"cpu": "1"}},
        {"name": "worker", "replicas": 2, "resources": {"cpu": "1"}},
    ]
    return job(
        "r",
        tasks=tasks,
        minAvailable=min_available,
        minTaskMember={"ps": 1, "worker": 2},
        running=running(0, 1, task="ps") + running(0, 1, task="worker"),
    )


def test_gang_role_minimum_makes_job_invalid() -> None:
    """§1.4 CheckTaskValid: with minAvailable 3 ≥ Σ minTaskMember 3 the role check applies.
    After one worker is evicted the job still has 3 valid tasks (≥ 3), but role ``worker``
    has 1 < 2, so the job is invalid for the role reason."""
    ssn = open_session([_roles_job(3)], ["gang"])
    ssn.evict(T(ssn, "r-worker-0"), "test")
    assert ssn.job_valid(J(ssn, "r")) == "Not enough valid pods of each task for gang-scheduling"


def test_gang_role_check_skipped_when_min_available_below_role_sum() -> None:
    """§1.4: CheckTaskValid is skipped when minAvailable (2) < Σ minTaskMember (3); the
    same eviction leaves 3 valid tasks ≥ 2, so the job is valid."""
    ssn = open_session([_roles_job(2)], ["gang"])
    ssn.evict(T(ssn, "r-worker-0"), "test")
    assert ssn.job_valid(J(ssn, "r")) is None


# -- gang: ready, pipelined, starving, order ------------------------------------------------------


def test_gang_job_ready_needs_min_available() -> None:
    """§3: JobReady needs ready + pendingBestEffort ≥ minAvailable (2): 1 running → not ready;
    allocating a second pod → ready."""
    ssn = open_session([job("a", replicas=3, minAvailable=2, running=running(0))], ["gang"])
    a = J(ssn, "a")
    assert not ssn.job_ready(a)
    ssn.allocate(T(ssn, "a-w-1"), node(ssn), None)
    assert ssn.job_ready(a)


def _ps_worker(min_available: int) -> dict[str, Any]:
    """1 ``ps`` (pending) + 2 ``worker`` (running); minTaskMember ps: 1, worker: 1 (Σ = 2)."""
    tasks = [
        {"name": "ps", "replicas": 1, "resources": {"cpu": "1"}},
        {"name": "worker", "replicas": 2, "resources": {"cpu": "1"}},
    ]
    return job(
        "r",
        tasks=tasks,
        minAvailable=min_available,
        minTaskMember={"ps": 1, "worker": 1},
        running=running(0, 1, task="worker"),
    )


def test_gang_job_ready_checks_role_minimums() -> None:
    """§3 CheckTaskReady: minAvailable 2 ≥ Σ 2, so roles count. Two workers run (2 ≥ 2
    ready) but ``ps`` has 0 < 1 → not ready; allocating the ps pod makes it ready."""
    ssn = open_session([_ps_worker(2)], ["gang"])
    r = J(ssn, "r")
    assert not ssn.job_ready(r)
    ssn.allocate(T(ssn, "r-ps-0"), node(ssn), None)
    assert ssn.job_ready(r)


def test_gang_job_ready_role_check_skipped_below_role_sum() -> None:
    """§3: CheckTaskReady is skipped when minAvailable (1) < Σ minTaskMember (2): the two
    running workers make the job ready although ``ps`` has none."""
    ssn = open_session([_ps_worker(1)], ["gang"])
    assert ssn.job_ready(J(ssn, "r"))


def test_gang_pending_best_effort_pods_count_as_ready() -> None:
    """§3, §9.17: a pending pod with an empty request counts towards readiness, for the job
    (1 running + 1 BestEffort ≥ 2) and for its role (minTaskMember be: 1)."""
    tasks = [
        {"name": "w", "replicas": 1, "resources": {"cpu": "1"}},
        {"name": "be", "replicas": 1},
    ]
    ssn = open_session(
        [
            job(
                "a",
                tasks=tasks,
                minAvailable=2,
                minTaskMember={"w": 1, "be": 1},
                running=running(0, task="w"),
            )
        ],
        ["gang"],
    )
    assert ssn.job_ready(J(ssn, "a"))


def test_gang_pipelined_vote_permits_or_rejects() -> None:
    """§3, §1.2: gang votes Permit when waiting + ready ≥ minAvailable, else Reject (never
    Abstain). A tier-2 plugin rejecting everything tells them apart: after a tier-1 Permit
    later tiers are skipped (→ true); after a tier-1 Reject the answer is false.
    minAvailable 2 with 1 running → Reject; pipelining the second → Permit."""

    class RejectAll(Plugin):
        name = "sla"

        def on_session_open(self, ssn: Session) -> None:
            ssn.add("job_pipelined", self.name, lambda job: -1)

    doc_jobs = [job("a", replicas=2, minAvailable=2, running=running(0))]
    ssn = open_session(doc_jobs, ["gang"])
    a = J(ssn, "a")
    assert not ssn.job_pipelined(a)
    ssn.pipeline(T(ssn, "a-w-1"), node(ssn), None)
    assert ssn.job_pipelined(a)

    inst = loads(
        yaml.safe_dump(
            {
                "apiVersion": "vcopt/v1alpha1",
                "kind": "Instance",
                "scheduler": {
                    "tiers": [{"plugins": [{"name": "gang"}]}, {"plugins": [{"name": "sla"}]}]
                },
                "nodes": [NODE],
                "jobs": doc_jobs,
            }
        )
    )
    two_tiers = Session(inst)
    two_tiers.open({"gang": GangPlugin, "sla": RejectAll})
    b = two_tiers.jobs["default/a"]
    assert not two_tiers.job_pipelined(b)
    two_tiers.pipeline(b.tasks["default/a-w-1"], two_tiers.nodes["n1"], None)
    assert two_tiers.job_pipelined(b)


def test_gang_pipelined_checks_role_minimums() -> None:
    """§3: JobPipelined is CheckTaskPipelined too. Workers: 1 running + 1 pipelined, ps
    pending → 2 ≥ minAvailable 2 but role ``ps`` has 0 < 1 → Reject."""
    tasks = [
        {"name": "ps", "replicas": 1, "resources": {"cpu": "1"}},
        {"name": "worker", "replicas": 2, "resources": {"cpu": "1"}},
    ]
    ssn = open_session(
        [
            job(
                "r",
                tasks=tasks,
                minAvailable=2,
                minTaskMember={"ps": 1, "worker": 1},
                running=running(0, task="worker"),
            )
        ],
        ["gang"],
    )
    ssn.pipeline(T(ssn, "r-worker-1"), node(ssn), None)
    assert not ssn.job_pipelined(J(ssn, "r"))


def test_gang_starving_and_tier_and_with_priority() -> None:
    """§3, §9.5: gang starving = waiting + ready < minAvailable (2). 1 running → starving.
    After pipelining one more: gang 2 < 2 is false, priority 2 < 3 tasks is still true; both
    sit in tier 1, so the AND is false."""
    ssn = open_session(
        [job("a", replicas=3, minAvailable=2, running=running(0))], ["priority", "gang"]
    )
    a = J(ssn, "a")
    assert ssn.job_starving(a)
    ssn.pipeline(T(ssn, "a-w-1"), node(ssn), None)
    assert not ssn.job_starving(a)


def test_gang_job_order_not_ready_first() -> None:
    """§1.6: gang puts not-ready jobs before ready ones. ``ready`` (created first, 2 of
    minAvailable 2 running) goes after ``waiting`` (0 of 1). Once ``waiting`` gets a pod
    both are ready, gang ties and creation order puts ``ready`` first again."""
    ssn = open_session(
        [
            job("ready", replicas=3, minAvailable=2, running=running(0, 1)),
            job("waiting", replicas=2, minAvailable=1),
        ],
        ["gang"],
    )
    ready, waiting = J(ssn, "ready"), J(ssn, "waiting")
    assert ssn.job_order(waiting, ready)
    assert not ssn.job_order(ready, waiting)
    ssn.allocate(T(ssn, "waiting-w-0"), node(ssn), None)
    assert ssn.job_order_compare(ready, waiting) == 0
    assert ssn.job_order(ready, waiting)


def test_gang_victim_budget_keeps_min_available() -> None:
    """§3: walking the victims in order, one is kept while its job's ready count is above
    minAvailable, and each kept victim lowers the count. ``v`` has 4 ready, minAvailable 2:
    v-0 (4 > 2) and v-1 (3 > 2) go, v-2 and v-3 (2) stay. ``w`` has 1 ready = minAvailable 1:
    protected. Gang registers the rule for both preempt and reclaim."""
    ssn = open_session(
        [
            job("v", replicas=4, minAvailable=2, running=running(0, 1, 2, 3)),
            job("w", replicas=1, minAvailable=1, running=running(0)),
            job("p", replicas=1, minAvailable=1),
        ],
        ["gang"],
    )
    candidates = [T(ssn, n) for n in ("v-w-0", "w-w-0", "v-w-1", "v-w-2", "v-w-3")]
    preemptor = T(ssn, "p-w-0")
    expected = ["v-w-0", "v-w-1"]
    assert [t.name for t in ssn.reclaimable(preemptor, candidates)] == expected
    assert [t.name for t in ssn.preemptable(preemptor, candidates)] == expected


def test_gang_preemptable_is_off_with_the_helm_flag() -> None:
    """§1.1, §3: the Helm conf sets ``enablePreemptable: false`` on gang, which disables its
    preemptable rule but not its reclaimable one; alone in the tier nothing else votes."""
    ssn = open_session(
        [job("v", replicas=3, minAvailable=1, running=running(0, 1, 2)), job("p")],
        [{"name": "gang", "enablePreemptable": False}],
    )
    candidates = [T(ssn, "v-w-0")]
    assert ssn.preemptable(T(ssn, "p-w-0"), candidates) == []
    assert [t.name for t in ssn.reclaimable(T(ssn, "p-w-0"), candidates)] == ["v-w-0"]


def test_gang_session_close_records_unschedulable_reason() -> None:
    """§3 OnSessionClose: an unready job gets "x/y tasks in gang unschedulable". ``a`` has 1
    of minAvailable 3 ready among 3 tasks → 2/3, followed by Volcano's FitError histogram
    (sorted strings: "1 Running", "2 Pending", "3 minAvailable") and the pending tasks. A
    ready job gets nothing; a reason set earlier by an action is kept."""
    ssn = open_session(
        [
            job("a", replicas=3, minAvailable=3, running=running(0)),
            job("ok", replicas=1, minAvailable=1, running=running(0)),
            job("told", replicas=2, minAvailable=2),
        ],
        ["gang"],
    )
    J(ssn, "told").reason = "not enqueued"
    ssn.close()
    assert J(ssn, "a").reason == (
        "2/3 tasks in gang unschedulable: pod group is not ready, "
        "1 Running, 2 Pending, 3 minAvailable; Pending: 2 Unschedulable"
    )
    assert J(ssn, "ok").reason == ""
    assert J(ssn, "told").reason == "not enqueued"


# -- conformance -------------------------------------------------------------------------------


def test_conformance_protects_critical_pods() -> None:
    """§8.1: conformance drops pods of the system-cluster-critical and system-node-critical
    classes and of namespace kube-system, for preemption and reclaim alike; only the plain
    job's pod is left."""
    classes = [
        {"name": "system-cluster-critical", "value": 2000000000},
        {"name": "system-node-critical", "value": 2000001000},
    ]
    jobs = [
        job("cc", priorityClassName="system-cluster-critical", running=running(0)),
        job("nc", priorityClassName="system-node-critical", running=running(0)),
        job("sys", namespace="kube-system", running=running(0)),
        job("plain", running=running(0)),
        job("p"),
    ]
    ssn = open_session(jobs, ["conformance"], priorityClasses=classes)
    candidates = [
        T(ssn, "cc-w-0"),
        T(ssn, "nc-w-0"),
        T(ssn, "sys-w-0", namespace="kube-system"),
        T(ssn, "plain-w-0"),
    ]
    preemptor = T(ssn, "p-w-0")
    assert [t.name for t in ssn.preemptable(preemptor, candidates)] == ["plain-w-0"]
    assert [t.name for t in ssn.reclaimable(preemptor, candidates)] == ["plain-w-0"]


# -- drf --------------------------------------------------------------------------------------


def test_drf_orders_jobs_by_dominant_share() -> None:
    """§1.6: share = max over resources of allocated/total. Cluster 10 cpu, 10Gi. ``b`` (1
    cpu, 5Gi) → max(0.1, 0.5) = 0.5; ``a`` (2 cpu, 1Gi) → max(0.2, 0.1) = 0.2. ``a`` goes
    first although ``b`` was created first; two pending jobs (share 0) tie."""
    tasks_b = [{"name": "w", "replicas": 1, "resources": {"cpu": "1", "memory": "5Gi"}}]
    tasks_a = [{"name": "w", "replicas": 3, "resources": {"cpu": "2", "memory": "1Gi"}}]
    ssn = open_session(
        [
            job("b", tasks=tasks_b, running=running(0)),
            job("a", tasks=tasks_a, minAvailable=1, running=running(0)),
            job("x"),
            job("y"),
        ],
        ["drf"],
    )
    a, b = J(ssn, "a"), J(ssn, "b")
    assert ssn.job_order(a, b)
    assert not ssn.job_order(b, a)
    assert ssn.job_order_compare(J(ssn, "x"), J(ssn, "y")) == 0


def test_drf_share_follows_allocate_and_pipeline_events() -> None:
    """§1.6, §9.20: events keep the share current, pipelined tasks included. ``a`` goes from
    2 cpu (0.2) to 4 (0.4, allocated) to 6 (0.6, pipelined) against ``b``'s 0.5: from 0.6
    ``b`` is first. Undoing the pipeline brings ``a`` back to 0.4 → first again."""
    tasks_b = [{"name": "w", "replicas": 1, "resources": {"cpu": "1", "memory": "5Gi"}}]
    tasks_a = [{"name": "w", "replicas": 3, "resources": {"cpu": "2", "memory": "1Gi"}}]
    ssn = open_session(
        [
            job("b", tasks=tasks_b, running=running(0)),
            job("a", tasks=tasks_a, minAvailable=1, running=running(0)),
        ],
        ["drf"],
    )
    a, b = J(ssn, "a"), J(ssn, "b")
    ssn.allocate(T(ssn, "a-w-1"), node(ssn), None)
    assert ssn.job_order(a, b)
    op = ssn.pipeline(T(ssn, "a-w-2"), node(ssn), None)
    assert ssn.job_order(b, a)
    ssn.undo(op)
    assert ssn.job_order(a, b)


def test_drf_preemptable_compares_shares_after_the_move() -> None:
    """drf PreemptableFn (Volcano drf.go; not detailed in the spec): the preemptor job's share
    with its pod added, 2/10 = 0.2, against each victim job's share with its candidates
    removed cumulatively. ``v`` holds 6 cpu: without v-0 → 0.4 ≥ 0.2 (victim), without v-1
    too → 0.2 = 0.2 (victim, equal within 1e-6), without v-2 too → 0 (kept). ``w``
    (1 cpu) without w-0 → 0 < 0.2 (kept)."""
    ssn = open_session(
        [
            job("v", replicas=3, cpu="2", minAvailable=1, running=running(0, 1, 2)),
            job("w", running=running(0)),
            job("p", cpu="2"),
        ],
        ["drf"],
    )
    candidates = [T(ssn, n) for n in ("v-w-0", "w-w-0", "v-w-1", "v-w-2")]
    victims = ssn.preemptable(T(ssn, "p-w-0"), candidates)
    assert [t.name for t in victims] == ["v-w-0", "v-w-1"]


def test_drf_hierarchy_is_not_supported() -> None:
    """Hierarchical drf (enableHierarchy on drf) would add a queue order and a reclaim rule;
    vcopt does not model it, so even with the flag drf registers neither."""
    ssn = open_session([job("a")], [{"name": "drf", "enableHierarchy": True}])
    assert ssn.has_hook("job_order")
    assert not ssn.has_hook("queue_order")
    assert not ssn.has_hook("reclaimable")


def test_drf_share_ignores_resources_no_node_offers() -> None:
    """§1.6: the share is a max "over the resources of the cluster total", so a scalar that no
    node offers is not one of them. ``x`` runs a pod holding 1 cpu and 1 fpga (no node has
    fpga): its share is 1/10 cpu = 0.1, not 1, and it goes before ``y`` (2/10 = 0.2)."""
    tasks = [{"name": "w", "replicas": 1, "resources": {"cpu": "1", "example.com/fpga": "1"}}]
    ssn = open_session(
        [job("y", cpu="2", running=running(0)), job("x", tasks=tasks, running=running(0))],
        ["drf"],
    )
    assert ssn.job_order(J(ssn, "x"), J(ssn, "y"))


def test_drf_share_of_a_resource_the_cluster_lacks() -> None:
    """``helpers.Share``: x/0 is 1 when x > 0 and 0 when x = 0."""
    assert share_of(0, 0) == 0.0
    assert share_of(5, 0) == 1.0
    assert share_of(1, 4) == 0.25


# -- overcommit -------------------------------------------------------------------------------


def _overcommit_jobs(*pending: dict[str, Any]) -> list[dict[str, Any]]:
    """A running pod using 2 cpu (no minResources) and an Inqueue job with min cpu 4, then
    the given pending jobs."""
    return [
        job("run", cpu="2", running=running(0)),
        job("inq", cpu="4", phase="Inqueue", minResources={"cpu": "4"}),
        *pending,
    ]


def test_overcommit_permits_within_factor_and_rejects_beyond() -> None:
    """§1.3: idle = 10 cpu × 1.2 − 2 used = 10 cpu; inqueue = 4 (the Inqueue job). Min 6 →
    4 + 6 = 10 ≤ 10 → Permit; min 7 → 11 > 10 → Reject. After JobEnqueued(min 6) the
    inqueue is 10, so min 1 → 11 → Reject. A job without minResources → Permit."""
    ssn = open_session(
        _overcommit_jobs(
            job("six", minResources={"cpu": "6"}),
            job("seven", minResources={"cpu": "7"}),
            job("one", minResources={"cpu": "1"}),
            job("free"),
        ),
        ["overcommit"],
    )
    assert ssn.job_enqueueable(J(ssn, "six"))
    assert not ssn.job_enqueueable(J(ssn, "seven"))
    assert ssn.job_enqueueable(J(ssn, "one"))
    ssn.job_enqueued(J(ssn, "six"))
    assert not ssn.job_enqueueable(J(ssn, "one"))
    assert ssn.job_enqueueable(J(ssn, "free"))


def test_overcommit_checks_only_the_dimensions_of_the_job_minimum() -> None:
    """§1.3: the comparison is on the dimensions of jobMin. With inqueue cpu pushed to
    4 + 7 = 11 > idle 10, a job asking only 1Gi memory (idle 12Gi) is still permitted,
    while a job asking 1 cpu is not."""
    ssn = open_session(
        _overcommit_jobs(
            job("seven", minResources={"cpu": "7"}),
            job("mem", minResources={"memory": "1Gi"}),
            job("one", minResources={"cpu": "1"}),
        ),
        ["overcommit"],
    )
    ssn.job_enqueued(J(ssn, "seven"))
    assert ssn.job_enqueueable(J(ssn, "mem"))
    assert not ssn.job_enqueueable(J(ssn, "one"))


@pytest.mark.parametrize(
    ("factor", "job_name", "permitted"), [(2.0, "seven", True), (0.5, "six", True)]
)
def test_overcommit_factor_argument(factor: float, job_name: str, permitted: bool) -> None:
    """§1.3: ``overcommit-factor`` replaces 1.2. With 2.0 idle = 20 − 2 = 18 cpu, so 4 + 7 =
    11 fits (at 1.2 it would not, see above). Volcano resets a factor below 1 to the default
    1.2 (overcommit.go), so with 0.5 min 6 still fits (4 + 6 ≤ 10; a true 0.5 would leave
    5 − 2 = 3 idle)."""
    ssn = open_session(
        _overcommit_jobs(
            job("seven", minResources={"cpu": "7"}), job("six", minResources={"cpu": "6"})
        ),
        [{"name": "overcommit", "arguments": {"overcommit-factor": factor}}],
    )
    assert ssn.job_enqueueable(J(ssn, job_name)) is permitted


def test_overcommit_pods_and_zero_dimensions() -> None:
    """§1.3 with the conventions: ``pods`` is a scalar of the cluster total (110 × 1.2 = 132),
    and every pod requests one slot (``api.GetPodResourceRequest``), so the running pod holds
    one: idle pods 131, min pods 131 fits and 132 does not. A zero entry is not a
    dimension of the job's minimum: with inqueue cpu at 4 + 7 = 11 > 10 idle, min
    {cpu: 0, memory: 1Gi} is still permitted."""
    ssn = open_session(
        _overcommit_jobs(
            job("p131", minResources={"pods": 131}),
            job("p132", minResources={"pods": 132}),
            job("seven", minResources={"cpu": "7"}),
            job("zero", minResources={"cpu": "0", "memory": "1Gi"}),
        ),
        ["overcommit"],
    )
    assert ssn.job_enqueueable(J(ssn, "p131"))
    assert not ssn.job_enqueueable(J(ssn, "p132"))
    ssn.job_enqueued(J(ssn, "seven"))
    assert ssn.job_enqueueable(J(ssn, "zero"))


def test_overcommit_factor_parsing() -> None:
    """The default is 1.2; numbers and numeric strings are read; junk keeps the default."""
    assert overcommit_factor({}) == 1.2
    assert overcommit_factor({"overcommit-factor": 3}) == 3.0
    assert overcommit_factor({"overcommit-factor": "1.5"}) == 1.5
    assert overcommit_factor({"overcommit-factor": "many"}) == 1.2


def test_overcommit_factor_applies_to_scalar_resources() -> None:
    """§1.3: ``Resource.Multi`` scales every dimension, so 8 fpga × 1.2 = 9.6 idle: a min of
    9 fpga is permitted, 10 is rejected."""
    fpga_node = {
        "name": "n1",
        "allocatable": {"cpu": "10", "memory": "10Gi", "example.com/fpga": "8"},
    }
    ssn = open_session(
        [
            job("nine", minResources={"example.com/fpga": "9"}),
            job("ten", minResources={"example.com/fpga": "10"}),
        ],
        ["overcommit"],
        nodes=[fpga_node],
    )
    assert ssn.job_enqueueable(J(ssn, "nine"))
    assert not ssn.job_enqueueable(J(ssn, "ten"))


def test_overcommit_running_gang_reserves_the_rest_of_its_minimum() -> None:
    """§5.1 (the same ``GetInqueueResource`` rule in overcommit): a Running job with
    minResources and ≥ minMember allocated pods reserves max(0, min − allocated): min 4 cpu,
    2 allocated → 2 cpu. idle = 12 − 2 = 10, so min 8 → 2 + 8 = 10 fits and min 9 does not
    (without the reservation 9 would fit)."""
    ssn = open_session(
        [
            job(
                "g",
                replicas=2,
                cpu="2",
                minAvailable=1,
                minResources={"cpu": "4"},
                running=running(0),
            ),
            job("eight", minResources={"cpu": "8"}),
            job("nine", minResources={"cpu": "9"}),
        ],
        ["overcommit"],
    )
    assert ssn.job_enqueueable(J(ssn, "eight"))
    assert not ssn.job_enqueueable(J(ssn, "nine"))


# -- end to end through enqueue + allocate ----------------------------------------------------

CORE_TIERS = (["priority", "gang", "conformance"], ["overcommit", "drf"])


def run_cycle(jobs: list[dict[str, Any]], cpu: str = "10") -> Session:
    """enqueue then allocate with the Helm tiers restricted to these five plugins."""
    nodes = [{"name": "n1", "allocatable": {"cpu": cpu, "memory": "10Gi", "pods": 110}}]
    ssn = open_session(jobs, *CORE_TIERS, nodes=nodes)
    enqueue.execute(ssn)
    allocate.execute(ssn)
    return ssn


def bound(ssn: Session, name: str) -> int:
    return sum(1 for t in J(ssn, name).tasks.values() if t.status is TaskStatus.BINDING)


def test_cycle_overcommit_admission_then_gang_allocation() -> None:
    """§1.3 then §1.5: idle = 10 × 1.2 = 12 cpu. ``a`` (min 8) and ``b`` (min 4) fill 12 and
    are enqueued; ``c`` (min 1) is not. allocate binds a's 8 pods; b needs 4 cpu but only 2
    remain, so its gang is discarded and nothing of b is bound."""
    ssn = run_cycle(
        [
            job("a", replicas=8, minResources={"cpu": "8"}),
            job("b", replicas=4, minResources={"cpu": "4"}),
            job("c", minResources={"cpu": "1"}),
        ]
    )
    assert [J(ssn, n).phase for n in "abc"] == ["Inqueue", "Inqueue", "Pending"]
    assert (bound(ssn, "a"), bound(ssn, "b"), bound(ssn, "c")) == (8, 0, 0)


def test_cycle_priority_wins_the_last_cpus() -> None:
    """§1.6: ``hi`` (priority 10) is popped before ``lo`` (priority 1, created first); both
    need 2 cpu on a 2-cpu node, so only ``hi`` is bound."""
    ssn = run_cycle(
        [job("lo", replicas=2, priority=1), job("hi", replicas=2, priority=10)], cpu="2"
    )
    assert (bound(ssn, "hi"), bound(ssn, "lo")) == (2, 0)


def test_cycle_drf_interleaves_elastic_replicas() -> None:
    """§9.2 with drf: two jobs of 3 × 1 cpu, minAvailable 1, on 4 cpu. a gets 1 (ready), b
    (not ready) goes next and gets 1. Then one pod per pop by dominant share: a 0.25 = b 0.25
    → a (creation) to 0.5; b 0.25 < 0.5 → b. The node is full at 2 + 2. Without drf a would
    have taken its third pod before b's second."""
    ssn = run_cycle(
        [job("a", replicas=3, minAvailable=1), job("b", replicas=3, minAvailable=1)], cpu="4"
    )
    assert (bound(ssn, "a"), bound(ssn, "b")) == (2, 2)


def test_engine_solve_reports_gang_reason() -> None:
    """Same cycle as the overcommit admission test, through ``engine.solve``: a admitted; b
    enqueued but its gang failed, so gang's session-close text (§3) is its reason, 4/4 since
    none of its 4 tasks (minAvailable 4) is ready; c never enqueued."""
    from optimizer.greedy.engine import solve

    tiers = [{"plugins": [{"name": n} for n in tier]} for tier in CORE_TIERS]
    doc = {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "scheduler": {"actions": "enqueue, allocate, backfill", "tiers": tiers},
        "nodes": [NODE],
        "jobs": [
            job("a", replicas=8, minResources={"cpu": "8"}),
            job("b", replicas=4, minResources={"cpu": "4"}),
            job("c", minResources={"cpu": "1"}),
        ],
    }
    plan = solve(loads(yaml.safe_dump(doc)))
    decisions = {d.job: d for d in plan.jobs}
    assert [decisions[f"default/{n}"].status for n in "abc"] == ["admitted", "pending", "pending"]
    assert decisions["default/b"].reason.startswith("4/4 tasks in gang unschedulable")
    assert len(plan.placements) == 8
