"""The dedicated CP-SAT model of a few jobs against the rest of a plan, every rule switchable.

The main engine's model decides the whole snapshot; to ask why *one* job cannot start, and
what would let it, this model (made and solved as the engine's is, ``cpsat.solving``) keeps
every other decision of the plan fixed (``leftover.py``) and places only the explained jobs'
pending pods: integer counts per (task, node), per-device counts for GPU containers, the
gang, the hard topology tier, the queue limits along the ancestor chain, the static node
rules (selectors, taints, TDM zones, GPU filters), and Volcano's enqueue for Pending jobs with
``minResources`` (``models.admission``). Each rule instance is enforced by its own
literal (``rules.py``), so the solver can prove which sets of rules block the job
(assumptions) and find the cheapest set to lift (a weighted search).

Three kinds of room can be *added* when their literal is given up: nodes like an existing
one in each HyperNode leaf (``node-capacity``), the running preemptable pods of another job
(``running-pods``, counted per pod) and the pods the plan itself places for another job
(``planned-pods``, all or none: that job would stay pending).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from models.admission import EnqueueLimit, enqueue_minimum, judged_at_enqueue
from models.cluster import Node
from models.gpu import GpuRequest, exclusive_on
from models.instance import Instance
from models.resources import NVIDIA_GPU, PODS
from models.tdm import node_zone, pod_revocable_zone
from models.workload import Job, Task

from ..cpsat.compile.data import queue_tables
from ..cpsat.compile.units import UNLIMITED, model_units
from ..cpsat.solving import Solvable
from ..plan import Plan
from . import rules as kinds
from .leftover import DeviceRoom, Holder, Leftover, leftover, request_of
from .rules import Rule

MAX_NEW_NODES = 32
"""Added nodes considered per HyperNode leaf, at most one per pod still needed: a bound, not a
guess (the search minimises)."""


@dataclass
class Place:
    """Where pods can go: a node of the cluster, or a possible new node like ``node``."""

    name: str
    node: Node
    free: dict[str, int]
    devices: list[DeviceRoom]
    domains: tuple[str, ...]
    """The HyperNodes holding it, lowest first, the cluster top last."""
    index: int | None = None
    leaf: str | None = None
    opened: cp_model.IntVar | None = None


@dataclass
class Target:
    """One explained job: how many more pods it needs and what each task still has pending."""

    job: Job
    pending: dict[str, int]
    need: int
    bound: dict[str, int]
    running_nodes: set[str]
    x: dict[tuple[str, int], cp_model.IntVar] = field(default_factory=dict)
    """(task, place) → pods of the task placed there."""
    y: dict[tuple[str, int, int, int], cp_model.IntVar] = field(default_factory=dict)
    """(task, container, place, device) → containers booked on the device."""
    domain: dict[str, cp_model.IntVar] = field(default_factory=dict)
    """Hard topology: HyperNode → chosen as the job's domain."""


def _needs(instance: Instance, plan: Plan, job: Job) -> tuple[dict[str, int], dict[str, int]]:
    bound = plan.bound_pods(instance)
    pending: dict[str, int] = {}
    held: dict[str, int] = {}
    for pod in job.pods:
        if pod.key in bound:
            held[pod.task] = held.get(pod.task, 0) + 1
        else:
            pending[pod.task] = pending.get(pod.task, 0) + 1
    return pending, held


class ExplainModel(Solvable):
    """Build once, then solve under different assumptions and objectives (``search.py``)."""

    def __init__(
        self,
        instance: Instance,
        plan: Plan,
        jobs: Sequence[Job],
        *,
        like: str | None = None,
        new_nodes: bool = True,
    ) -> None:
        self.instance = instance
        self.plan = plan
        super().__init__()
        self.rules: dict[str, Rule] = {}
        self.targets = [self._target(job) for job in jobs]
        keys = {t.job.key for t in self.targets}
        self.left: Leftover = leftover(instance, plan, keys)
        self.domains, self.tier = self._domains()
        self.places = self._real_places()
        self.new_places: list[Place] = []
        self.tiebreak: list[cp_model.LinearExprT] = []
        """Small costs: a first new node in a HyperNode leaf (more for later leaves), so that
        added nodes gather in as few leaves as the rules allow, the first leaves first."""
        if new_nodes:
            self._new_places(like)
        self.released: dict[int, list[tuple[Holder, list[cp_model.IntVar]]]] = {}
        self._holders()
        for target in self.targets:
            self._place(target)
        self._node_room()
        self._device_room()
        self._queue_limits()
        self._enqueue()
        for target in self.targets:
            self._topology(target)
            self._gang(target)

    # -- the jobs ------------------------------------------------------------------------

    def _target(self, job: Job) -> Target:
        pending, held = _needs(self.instance, self.plan, job)
        placed = sum(held.values())
        need = job.min_available - placed if placed < job.min_available else 1
        need = min(need, sum(pending.values()))
        running = {p.node for p in job.pods if p.node is not None}
        return Target(job, pending, need, held, running)

    def rule(self, key: str, kind: str, job: str, **facts: object) -> Rule:
        """The rule instance ``key``, created on first use."""
        rule = self.rules.get(key)
        if rule is None:
            keep = self.model.new_bool_var(f"keep[{key}]")
            rule = Rule(key, kind, job, keep, facts=dict(facts))
            self.rules[key] = rule
        return rule

    # -- places ---------------------------------------------------------------------------

    def _domains(self) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
        """Per node, the real HyperNodes holding it (lowest tier first) and every tier; the
        cluster top is one tier above the highest real one, so that needing it means the hard
        limit has to go."""
        topo = self.instance.topology
        tier: dict[str, int] = {}
        holding: dict[str, list[str]] = {n.name: [] for n in self.instance.nodes}
        for t in topo.tiers():
            for hn in topo.at_tier(t):
                if hn == topo.TOP:
                    continue
                tier[hn] = t
                for node in topo.real_nodes(hn):
                    if node in holding:
                        holding[node].append(hn)
        tier[topo.TOP] = max(tier.values(), default=0) + 1
        domains = {
            n: (*sorted(hns, key=lambda h: (tier[h], h)), topo.TOP) for n, hns in holding.items()
        }
        return domains, tier

    def _real_places(self) -> list[Place]:
        return [
            Place(n.name, n, dict(self.left.free[i]), self.left.devices[i], self.domains[n.name], i)
            for i, n in enumerate(self.instance.nodes)
        ]

    def _leaves(self) -> dict[str | None, list[Node]]:
        """Nodes grouped by their lowest HyperNode (None: the cluster has no HyperNodes)."""
        groups: dict[str | None, list[Node]] = {}
        for node in self.instance.nodes:
            chain = self.domains[node.name]
            leaf = chain[0] if len(chain) > 1 else None
            groups.setdefault(leaf, []).append(node)
        return groups

    def _template(self, nodes: list[Node], like: str | None) -> Node | None:
        if like is not None:
            want = self.instance.node_by_name[like]
            same = [n for n in nodes if _same_shape(n, want)]
            return want if want in nodes else (same[0] if same else None)
        tasks = [task for t in self.targets for task in t.job.tasks if t.pending.get(task.name)]

        def worth(node: Node) -> tuple[int, int, int, int]:
            fits = sum(1 for task in tasks if not self._static(task, node))
            gpus = node.allocatable.get(NVIDIA_GPU) // 1000 if node.plain_gpus else len(node.gpus)
            # Cards enough for the largest pod first: a 2-card node is no shape for 8-GPU pods.
            holds = sum(1 for task in tasks if max((r.nums for r in task.gpu), default=0) <= gpus)
            return (fits, holds, gpus, node.allocatable.get("cpu"))

        return max(nodes, key=worth) if nodes else None

    def _new_places(self, like: str | None) -> None:
        slots = min(MAX_NEW_NODES, sum(t.need for t in self.targets))
        nodes_rule = self.rule("nodes", kinds.NODES, "")
        opened_all = []
        for leaf, nodes in self._leaves().items():
            template = self._template(nodes, like)
            if template is None:
                continue
            previous = None
            for k in range(slots):
                fresh = [
                    DeviceRoom(d, dev, dev.memory, dev.cores, dev.count, dev.health)
                    for d, dev in enumerate(template.gpus)
                ]
                free = {**request_free(template), PODS: template.pod_capacity}
                place = Place(
                    f"{template.name}+{k + 1}",
                    template,
                    free,
                    fresh,
                    self.domains[template.name],
                    None,
                    leaf,
                    self.model.new_bool_var(f"open[{leaf}/{k}]"),
                )
                if previous is not None:
                    self.model.add(place.opened <= previous)
                else:
                    self.tiebreak.append((1 + len(self.tiebreak)) * place.opened)
                previous = place.opened
                opened_all.append(place.opened)
                self.model.add(place.opened == 0).only_enforce_if(nodes_rule.keep)
                self.places.append(place)
                self.new_places.append(place)
        nodes_rule.amount = sum(opened_all)
        nodes_rule.unit_cost = 5

    # -- who else holds room ---------------------------------------------------------------

    def _holders(self) -> None:
        placed_jobs: dict[str, cp_model.IntVar] = {}
        for holder in self.left.holders:
            if holder.placed:
                rule = self.rule(f"planned:{holder.job}", kinds.PLACED, holder.job)
                flag = placed_jobs.get(holder.job)
                if flag is None:
                    flag = self.model.new_bool_var(f"unplace[{holder.job}]")
                    self.model.add(flag == 0).only_enforce_if(rule.keep)
                    placed_jobs[holder.job] = flag
                    rule.amount = flag
                flags = [flag] * len(holder.pods)
            else:
                rule = self.rule(f"evict:{holder.job}", kinds.EVICT, holder.job, pods=[])
                flags = [self.model.new_bool_var(f"evict[{p}]") for p in holder.pods]
                for flag in flags:
                    self.model.add(flag == 0).only_enforce_if(rule.keep)
                rule.facts["pods"].extend(zip(holder.pods, flags, strict=True))
                rule.amount = sum(f for _, f in rule.facts["pods"])
                rule.unit_cost = 2
            self.released.setdefault(holder.node, []).append((holder, flags))

    # -- placing the explained jobs ----------------------------------------------------------

    def _static(self, task: Task, node: Node) -> list[tuple[str, str, dict[str, object]]]:
        """The static node rules that keep ``task`` off ``node``: (key, kind, facts)."""
        out: list[tuple[str, str, dict[str, object]]] = []
        if not task.node_affinity_matches(node.labels):
            out.append((f"selector:{task.name}", kinds.SELECTOR, {"task": task.name}))
        for taint in ((t.key, t.value, t.effect) for t in node.scheduling_taints):
            if not any(tol.tolerates(*taint) for tol in task.tolerations):
                key = f"taint:{task.name}:{taint[0]}={taint[1]}:{taint[2]}"
                out.append((key, kinds.TAINT, {"task": task.name, "taint": taint}))
        tdm = self.instance.tdm
        zone = node_zone(node.labels)
        if zone and tdm is not None:
            if pod_revocable_zone(task.annotations) != "*":
                out.append((f"revocable:{task.name}", kinds.TDM_REVOCABLE, {"task": task.name}))
            if not tdm.zone_active(zone, self.instance.now, self.instance.tz):
                out.append((f"window:{zone}", kinds.TDM_WINDOW, {"zone": zone}))
        return out

    def _place(self, target: Target) -> None:
        job = target.job
        for task in job.tasks:
            pending = target.pending.get(task.name, 0)
            if not pending:
                continue
            for p, place in enumerate(self.places):
                # A node of the plain device plugin counts whole GPUs as a scalar (node room);
                # a share never fits there.
                plain = place.node.plain_gpus
                if task.gpu and (
                    not all(r.whole for r in task.gpu)
                    if plain
                    else not any(d.usable for d in place.devices)
                ):
                    continue
                x = self.model.new_int_var(0, pending, f"x[{job.key}/{task.name}@{place.name}]")
                target.x[task.name, p] = x
                for key, kind, facts in self._static(task, place.node):
                    rule = self.rule(f"{job.key}:{key}", kind, job.key, **facts)
                    rule.facts.setdefault("places", []).append((p, x))
                    self.model.add(x == 0).only_enforce_if(rule.keep)
                if place.opened is not None:
                    self.model.add(x <= pending * place.opened)
                if not plain:
                    self._containers(target, task, p, x, pending)

    def _containers(
        self, target: Target, task: Task, p: int, x: cp_model.IntVar, pending: int
    ) -> None:
        place = self.places[p]
        for c, request in enumerate(task.gpu):
            booked = []
            for room in place.devices:
                if not room.usable or not _size_fits(request, room):
                    continue
                y = self.model.new_int_var(
                    0, pending, f"y[{target.job.key}/{task.name}/{c}@{p}/{room.index}]"
                )
                self.model.add(y <= x)
                target.y[task.name, c, p, room.index] = y
                booked.append(y)
                flt = task.gpu_filter
                if flt is not None and not flt.allows(room.device):
                    key = f"{target.job.key}:gpu-filter:{task.name}"
                    rule = self.rule(key, kinds.GPU_FILTER, target.job.key, task=task.name)
                    rule.facts.setdefault("devices", []).append((p, room.index, y))
                    self.model.add(y == 0).only_enforce_if(rule.keep)
            self.model.add(sum(booked) == request.nums * x)

    # -- room -------------------------------------------------------------------------------

    def _node_room(self) -> None:
        names = sorted({r for t in self.targets for task in t.job.tasks for r in request_of(task)})
        at: dict[int, list[tuple[dict[str, int], cp_model.IntVar]]] = {}
        for t in self.targets:
            for (task, p), x in t.x.items():
                at.setdefault(p, []).append((request_of(t.job.task(task)), x))
        for p, pods in at.items():
            place = self.places[p]
            released = self.released.get(place.index, []) if place.index is not None else []
            for name in names:
                used = [request[name] * x for request, x in pods if request.get(name)]
                if not used:
                    continue
                given_back = [
                    holder.request.get(name, 0) * flag
                    for holder, flags in released
                    for flag in flags
                ]
                self.model.add(sum(used) <= place.free.get(name, 0) + sum(given_back))

    def _device_room(self) -> None:
        at: dict[tuple[int, int], list[tuple[GpuRequest, cp_model.IntVar]]] = {}
        for t in self.targets:
            for (task, c, p, d), y in t.y.items():
                at.setdefault((p, d), []).append((t.job.task(task).gpu[c], y))
        for (p, d), shares in at.items():
            place = self.places[p]
            room = place.devices[d]
            memory = [r.memory_on(room.device.memory) * y for r, y in shares]
            cores = [r.booked_cores * y for r, y in shares]
            slots = [
                room.device.count * y if exclusive_on(r.booked_cores, room.device) else y
                for r, y in shares
            ]
            back_memory, back_cores, back_slots = [], [], []
            released = self.released.get(place.index, []) if place.index is not None else []
            for holder, flags in released:
                for booked, flag in zip(holder.shares, flags, strict=True):
                    for index, mem, core in booked:
                        if index == d:
                            back_memory.append(mem * flag)
                            back_cores.append(core * flag)
                            back_slots.append(flag)
            self.model.add(sum(memory) <= room.memory + sum(back_memory))
            self.model.add(sum(cores) <= room.cores + sum(back_cores))
            self.model.add(sum(slots) <= room.slots + sum(back_slots))

    # -- queues, topology, gang --------------------------------------------------------------

    def _queue_limits(self) -> None:
        """Each quota the configured plugin checks at allocation, along the ancestor chain.

        A queue that does not set a resource's capability inherits its parent's (capacity
        with hierarchy), so its limit and the parent's are one rule: the field to change is
        the nearest one set.
        """
        limits, _, _, _, _ = queue_tables(self.instance)
        hierarchical = self.instance.scheduler.hierarchy()
        tree = self.instance.queue_tree
        offered = {r for n in self.instance.nodes for r, v in n.allocatable.items() if v > 0}
        for queue, limit in limits.items():
            members = [
                t
                for t in self.targets
                if t.job.queue == queue
                or (hierarchical and t.job.queue in tree and queue in tree.ancestors(t.job.queue))
            ]
            names = sorted({r for t in members for task in t.job.tasks for r in task.resources})
            for name in names:
                amount = limit.get(name, 0)
                if name in offered and amount < UNLIMITED:
                    self._queue_limit(queue, name, amount, members, hierarchical)

    def _queue_limit(
        self, queue: str, name: str, amount: int, members: list[Target], hierarchical: bool
    ) -> None:
        tree = self.instance.queue_tree
        source = queue
        if hierarchical:
            for q in (queue, *tree.ancestors(queue)):
                source = q
                if name in tree.queue(q).capability:
                    break
        asked = [
            request_of(t.job.task(task)).get(name, 0) * x
            for t in members
            for (task, _), x in t.x.items()
        ]
        used = self.left.queue_used.get(queue, {}).get(name, 0)
        back = [
            holder.request.get(name, 0) * flag
            for pairs in self.released.values()
            for holder, flags in pairs
            if queue in holder.queues
            for flag in flags
        ]
        rule = self.rule(f"queue:{source}:{name}", kinds.QUEUE, members[0].job.key)
        rule.facts.setdefault("queue", source)
        rule.facts.setdefault("resource", name)
        rule.facts.setdefault("checks", []).append((queue, amount, used))
        if rule.amount is None:
            total = sum(
                request_of(t.job.task(task)).get(name, 0) * n
                for t in self.targets
                for task, n in t.pending.items()
            )
            slack = self.model.new_int_var(0, max(total, 0), f"slack[{source}/{name}]")
            self.model.add(slack == 0).only_enforce_if(rule.keep)
            rule.amount = slack
        self.model.add(sum(asked) + used - sum(back) <= amount + rule.amount)

    def _enqueue(self) -> None:
        """Each comparison enqueue's deciding plugins make, for the explained Pending jobs
        with ``minResources`` together with those the plan starts in its scope: held back +
        Σ minimums ≤ limit on every resource an explained job asks for.

        The explained jobs are admitted in every solution of this model, so the sum is fixed
        but for the planned jobs that may be given up (``planned-pods``). One rule per
        comparison; its amount is how far each resource passes the limit (model units).
        """
        judged = [t for t in self.targets if judged_at_enqueue(t.job)]
        if not judged:
            return
        mine = {t.job.key for t in self.targets}
        plan = self.plan
        pods = (*plan.placements, *plan.pipelined)
        started = {self.instance.pod_by_key[p.pod].job for p in pods}
        peers = [
            self.instance.job_by_key[k]
            for k in sorted(started - mine)
            if judged_at_enqueue(self.instance.job_by_key[k])
        ]
        for limit in self.instance.enqueue_limits:
            scoped = [t.job for t in judged if t.job.key in limit.jobs]
            if scoped:
                self._enqueue_limit(limit, scoped, [j for j in peers if j.key in limit.jobs])

    def _enqueue_limit(self, limit: EnqueueLimit, jobs: list[Job], peers: list[Job]) -> None:
        held = model_units(limit.held, round_up=True)
        bound = model_units(limit.limit, round_up=False)
        minimums = [enqueue_minimum(j) for j in jobs]
        asked = sorted(set().union(*(m.dims(ignore_pods=True) for m in minimums)))
        fixed = dict(held)
        for minimum in minimums:
            for name, amount in model_units(minimum, round_up=True).items():
                fixed[name] = fixed.get(name, 0) + amount
        optional: list[tuple[dict[str, int], cp_model.LinearExprT]] = []
        for peer in peers:
            need = model_units(enqueue_minimum(peer), round_up=True)
            given_up = self.rules.get(f"planned:{peer.key}")
            if given_up is not None and given_up.amount is not None:
                optional.append((need, given_up.amount))
            else:
                for name, amount in need.items():
                    fixed[name] = fixed.get(name, 0) + amount
        scope = limit.queue if limit.queue is not None else "cluster"
        key = f"enqueue:{','.join(limit.gates)}:{scope}"
        exact = sum((enqueue_minimum(j) for j in (*jobs, *peers)), limit.held)
        for name in asked:
            room = bound.get(name, 0)
            most = fixed.get(name, 0) + sum(need.get(name, 0) for need, _ in optional)
            if room >= UNLIMITED or most <= room:
                continue
            rule = self.rule(key, kinds.ENQUEUE, jobs[0].key, limit=limit, short=[])
            slack = self.model.new_int_var(0, most - room, f"enqueue_slack[{scope}/{name}]")
            self.model.add(slack == 0).only_enforce_if(rule.keep)
            kept = [need[name] * (1 - flag) for need, flag in optional if need.get(name)]
            self.model.add(fixed.get(name, 0) + sum(kept) <= room + slack)
            rule.facts["short"].append((name, exact.get(name), slack))
            rule.amount = sum(s for _, _, s in rule.facts["short"])

    def _topology(self, target: Target) -> None:
        limit = self.instance.hard_topology_limit(target.job)
        if limit is None or not self.instance.hypernodes or not target.x:
            return
        names = sorted(self.tier, key=lambda h: (self.tier[h], h))
        key = target.job.key
        for hn in names:
            target.domain[hn] = self.model.new_bool_var(f"domain[{key}/{hn}]")
        self.model.add_exactly_one(target.domain.values())
        rule = self.rule(f"{key}:topology", kinds.TOPOLOGY, key, limit=limit)
        for hn, chosen in target.domain.items():
            if self.tier[hn] > limit:
                self.model.add(chosen == 0).only_enforce_if(rule.keep)
        rule.amount = sum(self.tier[h] * v for h, v in target.domain.items())
        rule.unit_cost = 3
        by_place: dict[int, list[cp_model.IntVar]] = {}
        for (_, p), x in target.x.items():
            by_place.setdefault(p, []).append(x)
        for p, xs in by_place.items():
            used = self.model.new_bool_var(f"uses[{key}@{p}]")
            self.model.add(sum(xs) <= target.need * used)
            self.model.add(used <= sum(target.domain[h] for h in self.places[p].domains))
        for node in target.running_nodes:
            self.model.add(sum(target.domain[h] for h in self.domains.get(node, ())) >= 1)

    def _gang(self, target: Target) -> None:
        job = target.job
        placed = []
        for task in job.tasks:
            xs = [x for (name, _), x in target.x.items() if name == task.name]
            placed.extend(xs)
            if xs:
                self.model.add(sum(xs) <= target.pending.get(task.name, 0))
            if task.min_available is not None:
                short = task.min_available - target.bound.get(task.name, 0)
                if short > 0:
                    self.model.add(sum(xs) >= short)
        self.model.add(sum(placed) >= target.need)


def request_free(node: Node) -> dict[str, int]:
    return model_units(node.allocatable, round_up=False)


def _size_fits(request: GpuRequest, room: DeviceRoom) -> bool:
    dev = room.device
    return request.memory_on(dev.memory) <= dev.memory and request.booked_cores <= dev.cores


def _same_shape(a: Node, b: Node) -> bool:
    return a.allocatable == b.allocatable and [g.type for g in a.gpus] == [g.type for g in b.gpus]
