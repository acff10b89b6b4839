"""One tiny instance per CP-SAT constraint family, on both sides of the rule: where it lets a
job in and where the job has to stay pending. Every plan passes the independent verifier.

Plans come from the CP-SAT model alone (``cpsat_kit.cpsat`` floors with an empty plan), so an
admitted job shows what the model allows and a pending job what it forbids: admitting any
job raises the first objective stage, so the solver admits whatever the rules let it.
"""

from __future__ import annotations

import dataclasses

import pytest
from cpsat_kit import BASE, cpsat, devices_of, evicted, instance, nodes_of, options, pods_of

from models.gpu import GpuRequest
from optimizer.cpsat.search import CpsatModel
from optimizer.cpsat.solution.expand import Expansion, expand
from optimizer.plan import Plan
from optimizer.progress import Progress

# -- node resources and pod count ----------------------------------------------------------


@pytest.mark.parametrize(("cpu", "placed"), [("4", 2), ("4100m", 0)])
def test_node_capacity_cpu(cpu: str, placed: int) -> None:
    """One node with 8 CPUs; a gang of 2 pods. 2 × 4 = 8 ≤ 8 fits; 2 × 4.1 = 8.2 > 8 does
    not, and a gang of 2 cannot start with 1 pod, so the job stays pending."""
    inst = instance(
        BASE,
        f"""
        nodes:
        - {{name: n1, allocatable: {{cpu: "8", memory: 16Gi}}}}
        jobs:
        - name: j
          minAvailable: 2
          tasks: [{{name: w, replicas: 2, resources: {{cpu: "{cpu}"}}}}]
        """,
    )
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(("memory", "placed"), [("1Gi", 3), ("1025Mi", 0)])
def test_node_capacity_memory_in_mib(memory: str, placed: int) -> None:
    """Memory is counted in MiB in the model: 3 × 1Gi = 3072 MiB fits a 3Gi node exactly;
    3 × 1025 MiB = 3075 MiB > 3072 MiB does not (gang of 3)."""
    inst = instance(
        BASE,
        f"""
        nodes:
        - {{name: n1, allocatable: {{cpu: "8", memory: 3Gi}}}}
        jobs:
        - name: j
          minAvailable: 3
          tasks: [{{name: w, replicas: 3, resources: {{cpu: "1", memory: {memory}}}}}]
        """,
    )
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(("running_cpu", "placed"), [("3", 1), ("4", 0)])
def test_node_capacity_counts_running_pods(running_cpu: str, placed: int) -> None:
    """A running pod keeps what it holds: with 3 of 8 CPUs taken a 5-CPU pod fits (3 + 5 = 8);
    with 4 taken it does not (4 + 5 = 9 > 8)."""
    inst = instance(
        BASE,
        f"""
        nodes:
        - {{name: n1, allocatable: {{cpu: "8", memory: 16Gi}}}}
        jobs:
        - name: old
          tasks: [{{name: w, replicas: 1, resources: {{cpu: "{running_cpu}"}}}}]
          running: [{{index: 0, node: n1}}]
        - {{name: j, tasks: [{{name: w, replicas: 1, resources: {{cpu: "5"}}}}]}}
        """,
    )
    assert len(pods_of(cpsat(inst), "j")) == placed


def test_node_already_overcommitted_takes_nothing_but_model_stays_feasible() -> None:
    """n1 has 4 CPUs but its running pod holds 6 (the snapshot is over-committed). A new pod
    there would leave n1 at 7 > 4, which the verifier reports, so the 1-CPU pod goes to n2;
    the over-commitment must not make the whole model infeasible."""
    inst = instance(
        BASE,
        """
        nodes:
        - {name: n1, allocatable: {cpu: "4", memory: 16Gi}}
        - {name: n2, allocatable: {cpu: "4", memory: 16Gi}}
        jobs:
        - name: old
          tasks: [{name: w, replicas: 1, resources: {cpu: "6"}}]
          running: [{index: 0, node: n1}]
        - {name: j, tasks: [{name: w, replicas: 1, resources: {cpu: "1"}}]}
        """,
    )
    plan = cpsat(inst)
    assert nodes_of(plan, "j") == ["n2"]
    assert plan.solver is not None and plan.solver.status == "OPTIMAL"


@pytest.mark.parametrize(("replicas", "placed"), [(2, 2), (3, 0)])
def test_pod_count(replicas: int, placed: int) -> None:
    """pods: 3 with one running pod leaves room for 2: a gang of 2 fits, a gang of 3 does not
    (1 + 3 = 4 > 3), although CPU and memory would allow it."""
    inst = instance(
        BASE,
        f"""
        nodes:
        - {{name: n1, allocatable: {{cpu: "64", memory: 64Gi, pods: 3}}}}
        jobs:
        - name: old
          tasks: [{{name: w, replicas: 1, resources: {{cpu: "1"}}}}]
          running: [{{index: 0, node: n1}}]
        - name: j
          minAvailable: {replicas}
          tasks: [{{name: w, replicas: {replicas}, resources: {{cpu: "1"}}}}]
        """,
    )
    assert len(pods_of(cpsat(inst), "j")) == placed


# -- GPU devices ---------------------------------------------------------------------------


def gpu_node(*devices: str, annotations: str = "{}") -> str:
    """A node ``n1`` whose devices are given as YAML flow mappings."""
    return f"""
        nodes:
        - name: n1
          annotations: {annotations}
          allocatable: {{cpu: "64", memory: 256Gi}}
          gpus: [{", ".join(devices)}]
        """


def dev(i: int, **extra: object) -> str:
    fields: dict[str, object] = {
        "id": f"G{i}",
        "index": i,
        "type": "NVIDIA-A100",
        "memory": 10000,
        **extra,
    }
    return "{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}"


def gpu_job(name: str, replicas: int, resources: str, annotations: str = "{}") -> str:
    return f"""
        - name: {name}
          minAvailable: {replicas}
          tasks:
          - {{name: w, replicas: {replicas}, annotations: {annotations}, resources: {resources}}}
        """


def running_on(*shares: str) -> str:
    """A job ``old`` with one running pod per share, each holding that one device share
    (``"G0:memory:cores"``)."""
    pods = []
    for index, share in enumerate(shares):
        device, memory, cores = share.split(":")
        pods.append(
            f"{{index: {index}, node: n1, gpus: [{{id: {device}, memory: {memory}, "
            f"cores: {cores}}}]}}"
        )
    return f"""
        - name: old
          tasks: [{{name: w, replicas: {len(shares)}, resources: {{cpu: "1", nvidia.com/gpu: 1}}}}]
          running: [{", ".join(pods)}]
        """


@pytest.mark.parametrize(("gpumem", "placed"), [(5000, 2), (5001, 0)])
def test_gpu_memory(gpumem: int, placed: int) -> None:
    """One 10000-MiB device; a gang of 2 one-GPU pods. 2 × 5000 = 10000 fits on the device;
    2 × 5001 = 10002 MiB does not."""
    res = f"{{nvidia.com/gpu: 1, nvidia.com/gpumem: {gpumem}, nvidia.com/gpucores: 10}}"
    inst = instance(BASE, gpu_node(dev(0)), "jobs:", gpu_job("j", 2, res))
    plan = cpsat(inst)
    assert devices_of(plan, "j") == [["G0"]] * placed


@pytest.mark.parametrize(("cores", "placed"), [(50, 2), (51, 0)])
def test_gpu_cores(cores: int, placed: int) -> None:
    """Two pods of 50 cores fill a 100-core device exactly; 2 × 51 = 102 > 100."""
    res = f"{{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: {cores}}}"
    inst = instance(BASE, gpu_node(dev(0)), "jobs:", gpu_job("j", 2, res))
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(("replicas", "placed"), [(2, 2), (3, 0)])
def test_gpu_time_slices(replicas: int, placed: int) -> None:
    """A device with count 2 has two time-slice slots: a gang of 2 small pods shares it, a
    gang of 3 does not fit (memory 3 × 1000 and cores 3 × 10 would)."""
    res = "{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10}"
    inst = instance(BASE, gpu_node(dev(0, count=2)), "jobs:", gpu_job("j", replicas, res))
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(("devices", "expected"), [((0, 1), [["G1"]]), ((0,), [])])
def test_gpu_exclusive(devices: tuple[int, ...], expected: list[list[str]]) -> None:
    """A 100-core request wants its device to itself (hami-gpu §3.4). G0 carries a running
    10-core share, so the exclusive pod takes G1; with G0 alone it stays pending, although
    memory (1000 + 1000) and slots would allow sharing."""
    res = "{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 100}"
    body = running_on("G0:1000:10") + gpu_job("j", 1, res)
    inst = instance(BASE, gpu_node(*(dev(i) for i in devices)), "jobs:", body)
    assert devices_of(cpsat(inst), "j") == expected


@pytest.mark.parametrize(("second", "placed"), [(30, 1), (40, 0)])
def test_gpu_zero_core_rule(second: int, placed: int) -> None:
    """A pod booking 0 cores may not join a device whose shares use all its cores (§3.4):
    with running shares of 60 + 40 = 100 cores on G0 it stays pending; with 60 + 30 = 90 it
    fits (memory 3 × 1000 ≤ 10000, slots 3 ≤ 10)."""
    res = "{nvidia.com/gpu: 1, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 0}"
    body = running_on("G0:1000:60", f"G0:1000:{second}") + gpu_job("j", 1, res)
    inst = instance(BASE, gpu_node(dev(0)), "jobs:", body)
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(("devices", "placed"), [((0, 1), 1), ((0,), 0)])
def test_gpu_distinct_devices_for_one_container(devices: tuple[int, ...], placed: int) -> None:
    """A container asking for 2 GPUs needs 2 different devices, even when one device has room
    for both shares (2 × 1000 MiB, 2 × 10 cores): pending on a one-device node."""
    res = "{nvidia.com/gpu: 2, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10}"
    inst = instance(BASE, gpu_node(*(dev(i) for i in devices)), "jobs:", gpu_job("j", 1, res))
    plan = cpsat(inst)
    assert [sorted(d) for d in devices_of(plan, "j")] == [["G0", "G1"]] * placed


@pytest.mark.parametrize(("free", "placed"), [("G1", 1), ("", 0)])
def test_whole_gpu_needs_a_device_without_shares(free: str, placed: int) -> None:
    """A plain ``nvidia.com/gpu: 1`` books the whole memory of a device, so it cannot join a
    device holding a running share: with G0 shared and G1 free it takes G1; when G1 holds a
    share too it stays pending."""
    shares = ["G0:1000:10"] + ([] if free else ["G1:1000:10"])
    body = running_on(*shares) + gpu_job("j", 1, "{nvidia.com/gpu: 1}")
    inst = instance(BASE, gpu_node(dev(0), dev(1)), "jobs:", body)
    assert devices_of(cpsat(inst), "j") == [["G1"]] * placed


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ('{nvidia.com/use-gputype: "H100"}', [["G1"]]),
        ('{nvidia.com/nouse-gputype: "H100"}', [["G0"]]),
        ('{nvidia.com/use-gpuuuid: "G1"}', [["G1"]]),
        ('{nvidia.com/use-gputype: "V100"}', []),
    ],
)
def test_gpu_type_and_uuid_filters(annotation: str, expected: list[list[str]]) -> None:
    """G0 is an A100, G1 an H100. The type and UUID annotations pick the device; a type the
    node does not have leaves the pod pending."""
    node = gpu_node(dev(0), dev(1, type="NVIDIA-H100"))
    inst = instance(BASE, node, "jobs:", gpu_job("j", 1, "{nvidia.com/gpu: 1}", annotation))
    assert devices_of(cpsat(inst), "j") == expected


@pytest.mark.parametrize(("cordon", "expected"), [('""', [["G1"]]), ("G1", [])])
def test_cordoned_device_is_not_used(cordon: str, expected: list[list[str]]) -> None:
    """``hami.io/device-cordon`` removes a device: G0 holds a share (a whole-GPU pod cannot
    join it), so the pod needs G1, and with G1 cordoned it stays pending."""
    node = gpu_node(dev(0), dev(1), annotations=f"{{hami.io/device-cordon: {cordon}}}")
    body = running_on("G0:1000:10") + gpu_job("j", 1, "{nvidia.com/gpu: 1}")
    inst = instance(BASE, node, "jobs:", body)
    assert devices_of(cpsat(inst), "j") == expected


@pytest.mark.parametrize(("bind", "placed"), [('"false"', 1), ('"true"', 0)])
def test_gpu_numa_binding(bind: str, placed: int) -> None:
    """G0, G1 sit on NUMA node 0 and G2, G3 on NUMA node 1; G1 and G3 are full (running
    shares of all 10000 MiB). A 2-GPU container fits on G0 + G2, but with
    ``nvidia.com/numa-bind`` its devices must share a NUMA node, and each node has one free
    device only."""
    node = gpu_node(dev(0, numa=0), dev(1, numa=0), dev(2, numa=1), dev(3, numa=1))
    res = "{nvidia.com/gpu: 2, nvidia.com/gpumem: 1000, nvidia.com/gpucores: 10}"
    job = gpu_job("j", 1, res, f"{{nvidia.com/numa-bind: {bind}}}")
    inst = instance(BASE, node, "jobs:", running_on("G1:10000:0", "G3:10000:0") + job)
    plan = cpsat(inst)
    assert [sorted(d) for d in devices_of(plan, "j")] == [["G0", "G2"]] * placed


@pytest.mark.parametrize(("devices", "placed"), [((0, 1), 1), ((0,), 0)])
def test_gpu_two_containers(devices: tuple[int, ...], placed: int) -> None:
    """A pod with two GPU containers of 6000 MiB each: they may share a device only within
    its memory, 2 × 6000 = 12000 > 10000, so one device is not enough and two are. (The
    instance form has one container per task; the second is added to the loaded task.)"""
    inst = instance(BASE, gpu_node(*(dev(i) for i in devices)), "jobs:", gpu_job("j", 1, "{}"))
    request = GpuRequest(nums=1, memory=6000, percentage=None, cores=10, flavor="hami")
    job = inst.jobs[0]
    task = dataclasses.replace(job.tasks[0], gpu=(request, request))
    inst = inst.replace(jobs=(dataclasses.replace(job, tasks=(task,)),))
    plan = cpsat(inst)
    assert [sorted(d) for d in devices_of(plan, "j")] == [["G0", "G1"]] * placed


# -- gang ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("room", "placed"), [(3, 3), (2, 0)])
def test_gang_min_available(room: int, placed: int) -> None:
    """4 replicas, minAvailable 3, one pod per node. With 3 nodes the job starts with 3 pods;
    with 2 it cannot reach minAvailable and places nothing (no partial gang)."""
    nodes = "".join(
        f'\n- {{name: n{i}, allocatable: {{cpu: "1", memory: 1Gi}}}}' for i in range(room)
    )
    inst = instance(
        BASE,
        "nodes:" + nodes,
        """
        jobs:
        - {name: j, minAvailable: 3, tasks: [{name: w, replicas: 4, resources: {cpu: "1"}}]}
        """,
    )
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(("minimum", "placed"), [(1, ["default/j-ps-0"]), (2, [])])
def test_gang_counts_each_task_within_its_own_pods(minimum: int, placed: list[str]) -> None:
    """Regression (found by the property test): task w (1 pod) has no node (its selector
    matches none), task ps has 1 pod. With minAvailable 1 the job starts with ps's one pod;
    with minAvailable 2 it stays pending: ps's pod may not be counted twice to make up for
    the missing w pod."""
    inst = instance(
        BASE,
        f"""
        nodes:
        - {{name: n1, allocatable: {{cpu: "2", memory: 8Gi}}}}
        - {{name: n2, allocatable: {{cpu: "2", memory: 8Gi}}}}
        jobs:
        - name: j
          minAvailable: {minimum}
          tasks:
          - {{name: w, replicas: 1, nodeSelector: {{pool: a}}, resources: {{cpu: 250m}}}}
          - {{name: ps, replicas: 1, resources: {{cpu: 250m}}}}
        """,
    )
    assert pods_of(cpsat(inst), "j") == placed


@pytest.mark.parametrize(("members", "expected"), [("{}", 1), ("{worker: 3}", 0)])
def test_gang_min_task_member(members: str, expected: int) -> None:
    """Room for 3 pods (pods: 3). Job: 1 master (8 CPUs, worth 8 units) and 3 workers (1 CPU,
    1 unit each), minAvailable 3. Without minTaskMember the best gang is master + 2 workers
    (10 units > 3); with minTaskMember {worker: 3} it must be the 3 workers."""
    inst = instance(
        BASE,
        f"""
        nodes:
        - {{name: n1, allocatable: {{cpu: "64", memory: 64Gi, pods: 3}}}}
        jobs:
        - name: j
          minAvailable: 3
          minTaskMember: {members}
          tasks:
          - {{name: master, replicas: 1, resources: {{cpu: "8"}}}}
          - {{name: worker, replicas: 3, resources: {{cpu: "1"}}}}
        """,
    )
    plan = cpsat(inst)
    placed = pods_of(plan, "j")
    assert len(placed) == 3
    assert sum(p.startswith("default/j-master-") for p in placed) == expected


# -- hard network topology -----------------------------------------------------------------

TOPOLOGY = """\
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: gang}, {name: predicates}, {name: network-topology-aware}]
hypernodes:
- {name: rack-a, tier: 1, members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: a}}}}]}
- {name: rack-b, tier: 1, members: [{type: Node, selector: {labelMatch: {matchLabels: {rack: b}}}}]}
- name: spine
  tier: 2
  members:
  - {type: HyperNode, selector: {exactMatch: {name: rack-a}}}
  - {type: HyperNode, selector: {exactMatch: {name: rack-b}}}
nodes:
- {name: n1, labels: {rack: a}, allocatable: {cpu: "8", memory: 8Gi}}
- {name: n2, labels: {rack: a}, allocatable: {cpu: "8", memory: 8Gi}}
- {name: n3, labels: {rack: b}, allocatable: {cpu: "8", memory: 8Gi}}
- {name: n4, labels: {rack: b}, allocatable: {cpu: "8", memory: 8Gi}}
"""


def topology_jobs(busy: tuple[str, str], tier: int) -> str:
    return f"""
        jobs:
        - name: old
          tasks: [{{name: w, replicas: 2, resources: {{cpu: "8"}}}}]
          running: [{{index: 0, node: {busy[0]}}}, {{index: 1, node: {busy[1]}}}]
        - name: j
          minAvailable: 2
          networkTopology: {{mode: hard, highestTierAllowed: {tier}}}
          tasks: [{{name: w, replicas: 2, resources: {{cpu: "8"}}}}]
        """


@pytest.mark.parametrize(
    ("busy", "tier", "expected"),
    [
        (("n3", "n4"), 1, ["n1", "n2"]),
        (("n2", "n4"), 1, []),
        (("n2", "n4"), 2, ["n1", "n3"]),
    ],
)
def test_topology_hard(busy: tuple[str, str], tier: int, expected: list[str]) -> None:
    """Two 8-CPU pods, one per node, hard limit tier 1 (a rack). With rack b busy both go to
    rack a; with one busy node per rack (n1 and n3 free) no rack holds the pair, so it stays
    pending; at tier 2 the spine holds n1 + n3."""
    inst = instance(TOPOLOGY, topology_jobs(busy, tier))
    assert nodes_of(cpsat(inst), "j") == expected


def test_topology_hard_needs_the_plugin() -> None:
    """Without network-topology-aware Volcano ignores networkTopology (spec §9.6): the pair
    spans both racks."""
    body = TOPOLOGY.replace(", {name: network-topology-aware}", "")
    inst = instance(body, topology_jobs(("n2", "n4"), 1))
    assert nodes_of(cpsat(inst), "j") == ["n1", "n3"]


# -- queues --------------------------------------------------------------------------------

HIERARCHY = """\
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins: [{name: gang}, {name: predicates}, {name: capacity, enableHierarchy: true}]
nodes:
- {name: n1, allocatable: {cpu: "16", memory: 16Gi}}
queues:
- {name: parent, capability: {cpu: "4"}}
- {name: a, parent: parent}
- {name: b, parent: parent}
"""


@pytest.mark.parametrize(("cpu", "placed"), [("1", 1), ("2", 0)])
def test_queue_capability_along_the_ancestor_chain(cpu: str, placed: int) -> None:
    """Leaves a and b inherit capability 4 CPUs from their parent. Queue a runs 3 CPUs. A
    2-CPU pod in b fits b's own realCapability (2 ≤ 4) but not the parent's (3 + 2 = 5 > 4);
    a 1-CPU pod fits both (3 + 1 = 4)."""
    inst = instance(
        HIERARCHY,
        f"""
        jobs:
        - name: ra
          queue: a
          tasks: [{{name: w, replicas: 1, resources: {{cpu: "3"}}}}]
          running: [{{index: 0, node: n1}}]
        - {{name: j, queue: b, tasks: [{{name: w, replicas: 1, resources: {{cpu: "{cpu}"}}}}]}}
        """,
    )
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(("cpu", "placed"), [("4", 1), ("5", 0)])
def test_queue_capability_flat(cpu: str, placed: int) -> None:
    """Flat capacity: queue q has capability 4 CPUs on a 16-CPU node; a 4-CPU pod fits, a
    5-CPU pod does not."""
    inst = instance(
        f"""
        scheduler:
          actions: "enqueue, allocate"
          tiers:
          - plugins: [{{name: gang}}, {{name: predicates}}, {{name: capacity}}]
        nodes:
        - {{name: n1, allocatable: {{cpu: "16", memory: 16Gi}}}}
        queues:
        - {{name: q, capability: {{cpu: "4"}}}}
        jobs:
        - {{name: j, queue: q, tasks: [{{name: w, replicas: 1, resources: {{cpu: "{cpu}"}}}}]}}
        """
    )
    assert len(pods_of(cpsat(inst), "j")) == placed


def test_queue_leaf() -> None:
    """Hierarchical capacity gives pods only to jobs of leaf queues. The file cannot say
    otherwise (validation refuses jobs in inner queues), so a child is added to queue a after
    loading: a's job then stays pending, while before it was admitted."""
    inst = instance(
        HIERARCHY,
        """
        jobs:
        - {name: j, queue: a, tasks: [{name: w, replicas: 1, resources: {cpu: "1"}}]}
        """,
    )
    assert len(pods_of(cpsat(inst), "j")) == 1
    child = dataclasses.replace(inst.queues[-1], name="a-child", parent="a")
    inner = inst.replace(queues=(*inst.queues, child))
    assert not inner.queue_tree.is_leaf("a")
    assert pods_of(cpsat(inner), "j") == []


@pytest.mark.parametrize(("state", "placed"), [("Open", 1), ("Closed", 0)])
def test_closed_queue(state: str, placed: int) -> None:
    """A Closed queue accepts no new pods."""
    inst = instance(
        HIERARCHY.replace(
            "- {name: b, parent: parent}", f"- {{name: b, parent: parent, state: {state}}}"
        ),
        """
        jobs:
        - {name: j, queue: b, tasks: [{name: w, replicas: 1, resources: {cpu: "1"}}]}
        """,
    )
    assert len(pods_of(cpsat(inst), "j")) == placed


# -- TDM -----------------------------------------------------------------------------------

TDM = """\
scheduler:
  actions: "enqueue, allocate"
  tiers:
  - plugins:
    - {name: gang}
    - {name: predicates}
    - {name: tdm, arguments: {tdm.revocable-zone.rz1: "08:00-21:00"}}
nodes:
- {name: n1, labels: {volcano.sh/revocable-zone: rz1}, allocatable: {cpu: "8", memory: 8Gi}}
"""


def tdm_job(annotations: str, duration: str = "1h") -> str:
    return f"""
        jobs:
        - name: j
          duration: {duration}
          tasks: [{{name: w, replicas: 1, annotations: {annotations}, resources: {{cpu: "1"}}}}]
        """


@pytest.mark.parametrize(
    ("annotations", "placed"),
    [('{volcano.sh/revocable-zone: "*"}', 1), ("{}", 0), ("{volcano.sh/revocable-zone: rz1}", 0)],
)
def test_tdm_revocable_only(annotations: str, placed: int) -> None:
    """The only node is revocable (zone rz1, window open at 14:00): only a pod annotated
    ``volcano.sh/revocable-zone: "*"`` may use it; a zone name instead of ``*`` does not count."""
    inst = instance(TDM, tdm_job(annotations))
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(
    ("now", "placed"), [("2026-11-30T20:59:00Z", 1), ("2026-11-30T21:01:00Z", 0)]
)
def test_tdm_window(now: str, placed: int) -> None:
    """Window 08:00–21:00 UTC: open at 20:59, closed at 21:01, even for a revocable pod."""
    inst = instance(TDM, tdm_job('{volcano.sh/revocable-zone: "*"}'), now=now)
    assert len(pods_of(cpsat(inst), "j")) == placed


@pytest.mark.parametrize(
    ("duration", "lookahead", "placed"), [("8h", False, 1), ("8h", True, 0), ("6h", True, 1)]
)
def test_tdm_lookahead(duration: str, lookahead: bool, placed: int) -> None:
    """At 14:00 the window closes at 21:00. With the look-ahead option a job of 8 h (ending
    22:00) stays off the revocable node, a 6-h job (ending 20:00) may use it; without the
    option the 8-h job is placed."""
    inst = instance(TDM, tdm_job('{volcano.sh/revocable-zone: "*"}', duration))
    assert len(pods_of(cpsat(inst, tdm_lookahead=lookahead), "j")) == placed


# -- evictions -----------------------------------------------------------------------------


def evicting(actions: str, plugins: str = "") -> str:
    return f"""\
scheduler:
  actions: "enqueue, allocate, {actions}"
  tiers:
  - plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
  - plugins: [{{name: predicates}}{plugins}]
priorityClasses: [{{name: high, value: 100}}]
nodes:
- {{name: n1, allocatable: {{cpu: "8", memory: 16Gi}}}}
"""


def victim(
    cpu: str = "8",
    replicas: int = 1,
    queue: str = "default",
    extra: str = "",
    memory: str = "1Gi",
    task_annotations: str = "{}",
) -> str:
    """Job ``low`` with ``replicas`` running pods on n1."""
    pods = ", ".join(f"{{index: {i}, node: n1}}" for i in range(replicas))
    return f"""
        - name: low
          queue: {queue}
          minAvailable: 1
          {extra}
          tasks:
          - name: w
            replicas: {replicas}
            annotations: {task_annotations}
            resources: {{cpu: "{cpu}", memory: {memory}}}
          running: [{pods}]
        """


def preemptor(cls: str = "high", cpu: str = "8", queue: str = "default") -> str:
    return f"""
        - name: hi
          queue: {queue}
          priorityClassName: {cls}
          tasks: [{{name: w, replicas: 1, resources: {{cpu: "{cpu}", memory: 1Gi}}}}]
        """


def test_preempt_for_a_higher_priority_job_of_the_same_queue() -> None:
    """n1 is full with a priority-0 pod; a priority-100 job of the same queue needs all 8
    CPUs. Evicting and placing doubles the priority weight of the work (2 × 8 vs 1 × 8), so
    the plan preempts, and says so."""
    inst = instance(evicting("preempt"), "jobs:", victim() + preemptor())
    plan = cpsat(inst)
    assert nodes_of(plan, "hi") == ["n1"]
    assert evicted(plan) == [("default/low-w-0", "preempt")]


@pytest.mark.parametrize(
    ("jobs", "why"),
    [
        (victim("4") + preemptor(cls="low"), "same priority"),
        (victim("4", queue="other") + preemptor(), "other queue"),
        (
            victim("4", task_annotations='{volcano.sh/preemptable: "false"}') + preemptor(),
            "not preemptable",
        ),
    ],
)
def test_no_preemption(jobs: str, why: str) -> None:
    """n1 (8 CPUs) runs a 4-CPU victim; the preemptor needs all 8. Evicting would pay even at
    equal priority (work 8 replaces 4), but preempt takes only preemptable pods, for a job of
    strictly higher priority in the same queue: an equal-priority preemptor, a victim in
    another queue (only preempt is configured) and a pod marked
    ``volcano.sh/preemptable: "false"`` all leave the preemptor pending."""
    body = evicting("preempt").replace(
        "priorityClasses: [{name: high, value: 100}]",
        "priorityClasses: [{name: high, value: 100}, {name: low, value: 0}]",
    )
    queues = "queues: [{name: other}]" if why == "other queue" else ""
    inst = instance(body, queues, "jobs:", jobs)
    plan = cpsat(inst)
    assert pods_of(plan, "hi") == [], why
    assert plan.evictions == ()


def test_no_eviction_that_places_nothing() -> None:
    """Preempt could take the low pod (a higher-priority job of its queue waits), but that
    job needs 16 CPUs and n1 has 8: evicting would lose work and place nothing, so the plan
    evicts nobody."""
    inst = instance(evicting("preempt"), "jobs:", victim() + preemptor(cpu="16"))
    plan = cpsat(inst)
    assert pods_of(plan, "hi") == []
    assert plan.evictions == ()


@pytest.mark.parametrize(("budget", "placed"), [("2", 1), ("1", 0)])
def test_disruption_budget(budget: str, placed: int) -> None:
    """Two 4-CPU victims fill n1; the preemptor needs 8 CPUs, so both must go. A
    maxUnavailable budget of 2 allows it; a budget of 1 does not."""
    extra = f'annotations: {{volcano.sh/jdb-max-unavailable: "{budget}"}}'
    inst = instance(evicting("preempt"), "jobs:", victim("4", 2, extra=extra) + preemptor())
    plan = cpsat(inst)
    assert len(pods_of(plan, "hi")) == placed
    assert len(plan.evictions) == 2 * placed


def test_victim_job_is_left_whole_or_gone() -> None:
    """Victim job: 2 running pods of 3 CPUs on the 8-CPU n1, minAvailable 2. The preemptor
    needs 5 CPUs: one eviction would free enough (2 + 3), but it would leave the victim below
    its minAvailable, so the plan evicts both (work 2 × 5 = 10 for the preemptor against
    1 × 2 × 3 = 6 lost still pays)."""
    body = victim("3", 2).replace("minAvailable: 1", "minAvailable: 2")
    inst = instance(evicting("preempt"), "jobs:", body + preemptor(cpu="5"))
    plan = cpsat(inst)
    assert nodes_of(plan, "hi") == ["n1"]
    assert len(plan.evictions) == 2


@pytest.mark.parametrize(("guarantee", "placed"), [("", 1), (", guarantee: {memory: 4Gi}", 0)])
def test_eviction_keeps_queue_guarantee(guarantee: str, placed: int) -> None:
    """Queue q (deserved 4Gi memory) holds 4Gi in the victim pod. Preempting it for a
    1Gi preemptor leaves q with 1Gi: fine without a guarantee, refused with a guarantee of
    4Gi (the model keeps guarantees for every eviction, stricter than Volcano's preempt)."""
    queue = f"queues: [{{name: q, deserved: {{memory: 4Gi}}{guarantee}}}]"
    jobs = victim(queue="q", memory="4Gi") + preemptor(queue="q")
    inst = instance(evicting("preempt", ", {name: capacity}"), queue, "jobs:", jobs)
    assert len(pods_of(cpsat(inst), "hi")) == placed


RECLAIM = """\
scheduler:
  actions: "enqueue, allocate, reclaim"
  tiers:
  - plugins: [{name: priority}, {name: gang}, {name: conformance}]
  - plugins: [{name: predicates}, {name: capacity}]
nodes:
- {name: n1, allocatable: {cpu: "8", memory: 16Gi}}
"""


def reclaim_jobs() -> str:
    return """
        jobs:
        - name: b
          queue: qb
          minAvailable: 1
          tasks: [{name: w, replicas: 2, resources: {cpu: "4", memory: 1Gi}}]
          running: [{index: 0, node: n1}, {index: 1, node: n1}]
        - {name: a, queue: qa, tasks: [{name: w, replicas: 1, resources: {cpu: "4", memory: 1Gi}}]}
        """


def test_reclaim_from_a_queue_above_deserved() -> None:
    """qb deserves 4 CPUs and holds 8; qa deserves 4 and holds nothing. Reclaiming one qb pod
    (back to its deserved 4) lets qa's job in: equal work, better fairness (both queues
    filled instead of one)."""
    queues = 'queues: [{name: qa, deserved: {cpu: "4"}}, {name: qb, deserved: {cpu: "4"}}]\n'
    plan = cpsat(instance(RECLAIM, queues, reclaim_jobs()))
    assert nodes_of(plan, "a") == ["n1"]
    assert len(plan.evictions) == 1 and plan.evictions[0].reason == "reclaim"


def test_reclaim_stops_at_deserved() -> None:
    """qa now wants a gang of 2 × 4 CPUs at a higher priority (weight 2): taking both qb pods
    would pay in work (2 × 8 against 8), but it would leave qb at 0, below its deserved 4, so
    nothing is reclaimed and qa's job stays pending."""
    queues = 'queues: [{name: qa, deserved: {cpu: "4"}}, {name: qb, deserved: {cpu: "4"}}]'
    jobs = reclaim_jobs().replace(
        "{name: a, queue: qa, tasks: [{name: w, replicas: 1,",
        "{name: a, queue: qa, priority: 100, minAvailable: 2, tasks: [{name: w, replicas: 2,",
    )
    plan = cpsat(instance(RECLAIM, queues, jobs))
    assert pods_of(plan, "a") == []
    assert plan.evictions == ()


@pytest.mark.parametrize(
    "qb",
    ['{name: qb, deserved: {cpu: "8"}}', '{name: qb, deserved: {cpu: "4"}, reclaimable: false}'],
)
def test_no_reclaim(qb: str) -> None:
    """No reclaim from a queue at (not above) its deserved share, nor from a queue marked
    ``reclaimable: false``: qa's job stays pending."""
    queues = f'queues: [{{name: qa, deserved: {{cpu: "4"}}}}, {qb}]\n'
    plan = cpsat(instance(RECLAIM, queues, reclaim_jobs()))
    assert pods_of(plan, "a") == []
    assert plan.evictions == ()


TWO_ONE_GPU_NODES = """
    nodeGroups:
    - {namePrefix: n, count: 2, allocatable: {cpu: "64", memory: 256Gi},
       gpus: {count: 1, type: NVIDIA-A100, memory: 10000}}
    """
"""Two identical nodes of one 10000-MiB device each: one class, so the model sees two devices,
not which is which."""


def _dealt_out(jobs: str) -> Expansion:
    """The model's counts for ``jobs`` on TWO_ONE_GPU_NODES, dealt out to nodes and devices."""
    inst = instance(BASE, TWO_ONE_GPU_NODES, "jobs:", jobs)
    model = CpsatModel(inst, options())
    start = model.hint_plan(Plan(instance=inst.name, engine="empty"))
    search = model.search(start, 10, Progress(10))
    assert search.values is not None
    return expand(model.vars, search.values)


@pytest.mark.parametrize(("gpumem", "counted"), [(6000, 2), (4000, 4), (3000, 5)])
def test_gpu_large_shares_do_not_pair_up(gpumem: int, counted: int) -> None:
    """Two identical nodes of one 10000-MiB device each (one class: the model sees two
    devices, not which is which), five one-GPU pods of ``gpumem``. Summed memory alone lets
    3 × 6000 = 18000 ≤ 20000 through, but a device holds one 6000 share: 2 fit. A device holds
    two 4000 shares (a third would need 12000): 4 fit. Three 3000 shares share a device: all 5
    fit. The model counts exactly what the expansion can deal out to devices."""
    res = f"{{nvidia.com/gpu: 1, nvidia.com/gpumem: {gpumem}, nvidia.com/gpucores: 10}}"
    job = """
        - name: j
          minAvailable: 1
          tasks:
          - {name: w, replicas: 5, resources: RES}
        """.replace("RES", res)
    expansion = _dealt_out(job)
    assert not expansion.failed_classes
    assert len(expansion.placements) == counted


def test_gpu_large_shares_of_two_jobs_do_not_pair_up() -> None:
    """The same two one-device nodes; job a (two pods) and job b (one pod, another shape) each
    ask 6000 MiB. Summed memory allows 3 × 6000 = 18000 ≤ 20000, but each device holds one
    such share: the model counts 2 pods over both jobs, and the expansion places both."""
    jobs = """
        - name: a
          minAvailable: 1
          tasks:
          - {name: w, replicas: 2, resources: {cpu: "1", nvidia.com/gpu: 1,
                                               nvidia.com/gpumem: 6000}}
        - name: b
          tasks:
          - {name: w, replicas: 1, resources: {cpu: "2", nvidia.com/gpu: 1,
                                               nvidia.com/gpumem: 6000}}
        """
    expansion = _dealt_out(jobs)
    assert not expansion.failed_classes
    assert len(expansion.placements) == 2
