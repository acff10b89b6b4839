"""The ``network-topology-aware`` plugin: which HyperNodes a topology job may try, in which
order, and how nodes and HyperNodes are scored for compactness (``volcano-scheduler.md`` §4).

Without this plugin hard topology is not enforced at all: the framework's only gradient is the
cluster top (§9.6). With it, a job with a hard (or soft-turned-hard) limit gets HyperNode
gradients bottom-up, HyperNodes are ranked by how full they would be (binpack), and each task
prefers nodes close to where its job already is.

Per-HyperNode sums are kept as dense vectors. ``idle`` and ``future_idle`` are taken once, at
session open; only ``used`` follows the allocate and deallocate events, as in Volcano.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import add, sub

import numpy as np

from models.topology import Topology

from ..api import JobInfo, NodeInfo, TaskInfo, TaskStatus, vle
from ..session import Event, EventHandler, Plugin, Session

WEIGHT = "weight"
BINPACK_CPU = "hypernode.binpack.cpu"
BINPACK_MEMORY = "hypernode.binpack.memory"
BINPACK_RESOURCES = "hypernode.binpack.resources"
NORMAL_POD_ENABLE = "hypernode.binpack.normal-pod.enable"
NORMAL_POD_FADING = "hypernode.binpack.normal-pod.fading"
EVICT_MAX = "hypernode.gradient.evict.max-hypernodes"
EVICT = "evict"


def _int(arguments: Mapping[str, object], key: str, default: int) -> int:
    """Volcano's ``Arguments.GetInt``: only a YAML integer is read, anything else is ignored."""
    value = arguments.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _float(arguments: Mapping[str, object], key: str, default: float) -> float:
    """``Arguments.GetFloat64``, which also takes a YAML integer."""
    value = arguments.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


def _bool(arguments: Mapping[str, object], key: str, default: bool) -> bool:
    value = arguments.get(key, default)
    return value if isinstance(value, bool) else default


def binpack_weights(arguments: Mapping[str, object]) -> dict[str, int]:
    """Resource → weight: cpu and memory (1 each by default) plus the comma list of
    ``hypernode.binpack.resources``, each weighted by ``hypernode.binpack.resources.<name>``
    (default 1)."""
    weights = {"cpu": _int(arguments, BINPACK_CPU, 1), "memory": _int(arguments, BINPACK_MEMORY, 1)}
    listed = arguments.get(BINPACK_RESOURCES, "")
    for name in (listed if isinstance(listed, str) else "").split(","):
        name = name.strip()
        if name:
            weights[name] = _int(arguments, f"{BINPACK_RESOURCES}.{name}", 1)
    return weights


@dataclass(frozen=True)
class _Need:
    """A resource request to test against HyperNode sums. ``impossible`` marks a positive
    amount of a resource no node has: Zero-mode ``LessEqual`` then fails everywhere."""

    vector: list[int]
    impossible: bool = False


class NetworkTopologyAwarePlugin(Plugin):
    name = "network-topology-aware"

    def on_session_open(self, ssn: Session) -> None:
        args = self.arguments
        self.ssn = ssn
        self.topology: Topology = ssn.topology
        self.weight = _int(args, WEIGHT, 1)
        self.normal_pods = _bool(args, NORMAL_POD_ENABLE, True)
        self.fading = _float(args, NORMAL_POD_FADING, 0.8)
        self.evict_max = _int(args, EVICT_MAX, 8)
        weights = binpack_weights(args)
        self.weighted = [(ssn.dims.index[r], w) for r, w in weights.items() if r in ssn.dims.index]
        """(vector position, weight) of the weighted resources the session knows; the others
        still count in the weight sum but always add a 0 term."""
        self.weight_sum = sum(weights.values())
        self._build_sums(ssn)
        self._min_resources: dict[str, _Need] = {}
        self._subjob_needs: dict[str, tuple[int, _Need]] = {}
        """Job uid → (its ``status_changes`` then, the Σ InitResreq of its pending tasks)."""
        self._requests: dict[str, list[int]] = {}
        self._lca_known: dict[tuple[int, str], float] = {}
        """(leaf number, anchor HyperNode) → ``_lca_score`` (the topology is fixed)."""
        self._on_leaf_kept: dict[str, tuple[int, Counter[str | None]]] = {}
        """Job uid → the Σ Resreq of all its tasks (``hypernode_order``; fixed)."""
        self._placed: dict[str, str] = {}
        """Task uid → node of the allocate events not yet undone."""
        ssn.add("hypernode_gradient", self.name, self.hypernode_gradient)
        ssn.add("hypernode_order", self.name, self.hypernode_order)
        ssn.add("batch_node_order", self.name, self.batch_node_order)
        ssn.add("batch_node_order_array", self.name, self.batch_node_order_array)
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_release))

    def _build_sums(self, ssn: Session) -> None:
        topo = self.topology
        hypernodes = (*topo.names, Topology.TOP)
        zero = ssn.dims.zero
        self.allocatable: dict[str, list[int]] = {}
        self.idle: dict[str, list[int]] = {}
        self.future_idle: dict[str, list[int]] = {}
        self.used: dict[str, list[int]] = {}
        self.containing: dict[str, list[str]] = {name: [] for name in ssn.nodes}
        for hn in hypernodes:
            sums = [zero(), zero(), zero(), zero()]
            for name in topo.real_nodes(hn):
                node = ssn.nodes.get(name)
                if node is None:
                    continue
                self.containing[name].append(hn)
                vectors = (node.allocatable, node.idle, node.future_idle, node.used)
                for total, vector in zip(sums, vectors, strict=True):
                    for i, amount in enumerate(vector):
                        total[i] += amount
            self.allocatable[hn], self.idle[hn], self.future_idle[hn], self.used[hn] = sums
        self.leaf = {name: topo.leaf_of(name) for name in ssn.nodes}
        leaves = sorted({leaf for leaf in self.leaf.values() if leaf is not None})
        self.leaves: list[str | None] = [*leaves, None]
        """Every leaf HyperNode, then None (nodes in none): the values of ``leaf_ids``."""
        at = {leaf: i for i, leaf in enumerate(self.leaves)}
        self.leaf_ids = np.array(
            [at[self.leaf[node.name]] for node in ssn.node_list], dtype=np.intp
        )
        self.tier_range = range(topo.min_tier, topo.top_tier + 1)
        self.tier_members: dict[str, tuple[str | None, ...]] = {}
        """Per node, for each tier of ``tier_range``, the HyperNode of that tier holding it."""
        for name, hns in self.containing.items():
            by_tier: dict[int, str] = {}
            for hn in sorted(hns):
                by_tier.setdefault(topo.tier(hn), hn)
            self.tier_members[name] = tuple(by_tier.get(t) for t in self.tier_range)
        kinds: dict[tuple[str | None, ...], int] = {}
        self.member_ids = np.array(
            [kinds.setdefault(self.tier_members[n.name], len(kinds)) for n in ssn.node_list],
            dtype=np.intp,
        )
        """Per node, the number of its ``tier_members`` among the distinct ones."""
        self.members = list(kinds)

    # -- events --------------------------------------------------------------------------

    def _shift_used(self, node: str, resreq: Sequence[int], sign: int) -> None:
        change = add if sign > 0 else sub
        for hn in self.containing.get(node, ()):
            used = self.used[hn]
            used[:] = map(change, used, resreq)

    def _on_allocate(self, event: Event) -> None:
        task = event.task
        self._placed[task.uid] = task.node
        self._shift_used(task.node, task.resreq, 1)

    def _on_release(self, event: Event) -> None:
        """The node is the one the allocate event saw: a discarded task may already have
        lost it. Tasks running since the snapshot (evicted ones) still name theirs."""
        task = event.task
        node = self._placed.pop(task.uid, None) or task.node
        self._shift_used(node, task.resreq, -1)

    # -- gradients (§4.5) ----------------------------------------------------------------

    def hypernode_gradient(
        self, job: JobInfo, hypernode: str, purpose: str, subjob: bool
    ) -> list[list[str]]:
        """The HyperNodes under the search root that may hold the job, grouped by tier.

        A job that already runs somewhere (``allocated_hypernode`` set) skips the resource
        pre-filter; otherwise a HyperNode must hold the job's minimum resources in its idle or
        future-idle sum, or in its allocatable sum when the gradient is for eviction.
        """
        limit = job.tier_limit
        if limit is None:
            return [[hypernode]]
        topo = self.topology
        root = self._search_root(job, hypernode, limit)
        if root is None:
            return []
        evict = purpose == EVICT
        need = self._need(job, subjob)
        by_tier: dict[int, list[str]] = {}
        queue = deque([root])
        while queue:
            hn = queue.popleft()
            queue.extend(topo.children(hn))
            tier = topo.tier(hn)
            if tier > limit:
                continue
            if job.allocated_hypernode or self._has_room(hn, need, evict):
                by_tier.setdefault(tier, []).append(hn)
        gradients = [by_tier[t] for t in sorted(by_tier)]
        if evict:
            return _capped(reversed(gradients), self.evict_max)
        return gradients

    def _search_root(self, job: JobInfo, given: str, limit: int) -> str | None:
        """``getSearchRoot``: the highest ancestor of the job's HyperNode within the limit,
        narrowed to ``given`` when one contains the other; None when they are disjoint."""
        topo = self.topology
        allocated = job.allocated_hypernode
        if not allocated:
            return given
        if topo.tier(allocated) > limit:
            return None
        highest = allocated
        for up in topo.ancestors(allocated):
            if topo.tier(up) > limit:
                break
            highest = up
        if highest == given or given in topo.ancestors(highest):
            return highest
        if highest in topo.ancestors(given):
            return given
        return None

    def _need(self, job: JobInfo, subjob: bool) -> _Need:
        """The job's PodGroup ``minResources``, or for a subjob the Σ ``InitResreq`` of its
        pending tasks (taken now, since pending tasks change during the session)."""
        if subjob:
            kept = self._subjob_needs.get(job.uid)
            if kept is not None and kept[0] == job.status_changes:
                return kept[1]
            total = self.ssn.dims.zero()
            for task in job.tasks.values():
                if task.status is TaskStatus.PENDING:
                    for i, amount in enumerate(task.init_resreq):
                        total[i] += amount
            self._subjob_needs[job.uid] = (job.status_changes, _Need(total))
            return self._subjob_needs[job.uid][1]
        need = self._min_resources.get(job.uid)
        if need is None:
            resources = job.job.min_resources or {}
            index = self.ssn.dims.index
            impossible = any(
                amount > 0 and name not in index and name != "pods"
                for name, amount in resources.items()
            )
            need = _Need(self.ssn.dims.vector(resources), impossible)
            self._min_resources[job.uid] = need
        return need

    def _has_room(self, hn: str, need: _Need, evict: bool) -> bool:
        if need.impossible:
            return False
        if evict:
            return vle(need.vector, self.allocatable[hn])
        # Volcano quirk (§9.8): idle and future idle are the session-start sums.
        return vle(need.vector, self.idle[hn]) or vle(need.vector, self.future_idle[hn])

    # -- scores (§4.6) -------------------------------------------------------------------

    def _binpack(self, hn: str, request: Sequence[int]) -> float:
        """Σ w·(used + req)/allocatable / Σ w; 0 when any weighted resource would overflow."""
        if self.weight_sum <= 0:
            return 0.0
        used = self.used[hn]
        allocatable = self.allocatable[hn]
        total = 0.0
        for i, w in self.weighted:
            after = used[i] + request[i]
            if after > allocatable[i]:
                return 0.0
            if allocatable[i] > 0:
                total += w * after / allocatable[i]
        return total / self.weight_sum

    def hypernode_order(
        self, job: JobInfo, candidates: Mapping[str, Sequence[NodeInfo]]
    ) -> dict[str, float]:
        """``getSubJobHyperNodeBinPackingScore`` for each candidate HyperNode.

        The request is the Σ ``Resreq`` of every task of the job, running ones included
        (§9.8), so a partly running job is counted twice where it already runs.
        """
        request = self._requests.get(job.uid)
        if request is None:
            request = self._requests[job.uid] = self.ssn.dims.zero()
            for task in job.tasks.values():
                for i, amount in enumerate(task.resreq):
                    request[i] += amount
        scores = {hn: self._binpack(hn, request) for hn in candidates}
        if not scores:
            return {}
        top = max(scores.values())
        tied = [hn for hn, s in scores.items() if s == top]
        if len(tied) > 1:
            for hn in tied:
                nodes = self.topology.real_nodes(hn)
                inside = sum(1 for t in job.tasks.values() if t.node and t.node in nodes)
                scores[hn] += inside / len(job.tasks)
        scale = 100 * self.weight
        return {hn: s * scale for hn, s in scores.items()}

    def batch_node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        """Topology jobs prefer nodes close to where the job already is; other pods (when
        ``normal-pod.enable``) prefer nodes in fuller HyperNodes, lower tiers weighing more.

        A job with a ``networkTopology`` spec takes the first branch even when its spec is not
        hard (no ``highestTierAllowed``): Volcano only asks whether the spec exists (§4.2).
        """
        job = self.ssn.jobs[task.job]
        if job.has_topology:
            return self._lca_scores(job, nodes)
        if self.normal_pods:
            return self._tier_scores(task, nodes)
        return {}

    def batch_node_order_array(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], indices: np.ndarray, arrays: object
    ) -> np.ndarray:
        """:meth:`batch_node_order` as an array over ``nodes``: each score is computed once per
        leaf (topology jobs) or per distinct set of HyperNodes (other pods), as there, and
        read per node."""
        job = self.ssn.jobs[task.job]
        if job.has_topology:
            return self._lca_array(job, indices)
        if self.normal_pods:
            return self._tier_array(task, indices)
        return np.zeros(len(nodes), dtype=np.float64)

    def _lca_array(self, job: JobInfo, indices: np.ndarray) -> np.ndarray:
        anchor = job.running_lca
        if not anchor or not len(indices):
            return np.zeros(len(indices), dtype=np.float64)
        ids = self.leaf_ids[indices]
        present = np.bincount(ids, minlength=len(self.leaves)).nonzero()[0].tolist()
        by_leaf = np.zeros(len(self.leaves), dtype=np.float64)
        known = self._lca_known
        for i in present:
            score = known.get((i, anchor))
            if score is None:
                score = known[(i, anchor)] = self._lca_score(self.leaves[i], anchor)
            by_leaf[i] = score
        raw = by_leaf[ids]
        top = raw.max()
        if np.count_nonzero(raw == top) > 1:
            on_leaf = self._on_leaf(job)
            for i in present:
                leaf = self.leaves[i]
                if leaf is not None and by_leaf[i] == top:
                    by_leaf[i] = by_leaf[i] + on_leaf[leaf] / len(job.tasks)
        scale = 100 * self.weight
        for i in present:
            by_leaf[i] = by_leaf[i] * scale
        return by_leaf[ids]

    def _on_leaf(self, job: JobInfo) -> Counter[str | None]:
        """How many of the job's tasks are on each leaf HyperNode, kept while the job's
        statuses do not change (a task gets or loses its node only with its status)."""
        kept = self._on_leaf_kept.get(job.uid)
        if kept is None or kept[0] != job.status_changes:
            count = Counter(self.leaf.get(t.node) for t in job.tasks.values() if t.node)
            kept = self._on_leaf_kept[job.uid] = (job.status_changes, count)
        return kept[1]

    def _tier_array(self, task: TaskInfo, indices: np.ndarray) -> np.ndarray:
        ids = self.member_ids[indices]
        present = np.bincount(ids, minlength=len(self.members)).nonzero()[0].tolist()
        by_members = np.zeros(len(self.members), dtype=np.float64)
        factors = [self.fading ** (t - 1) for t in self.tier_range]
        norm = sum(factors)
        per_hn: dict[str, float] = {}
        scale = 100 * self.weight
        for i in present:
            total = 0.0
            for factor, hn in zip(factors, self.members[i], strict=True):
                if hn is None:
                    total += factor
                    continue
                if hn not in per_hn:
                    per_hn[hn] = self._binpack(hn, task.resreq)
                total += factor * per_hn[hn]
            by_members[i] = total / norm * scale if norm else 0.0
        return by_members[ids]

    def _lca_score(self, leaf: str | None, anchor: str) -> float:
        topo = self.topology
        if leaf is None:
            return 0.0
        if leaf == anchor:
            return 1.0
        # Volcano quirk (§9.7): maxTier is the virtual top's tier, so even two racks under one
        # super-spine score above 0.
        high, low = topo.top_tier, topo.min_tier
        if high == low:
            return 1.0
        common = topo.lca(leaf, anchor)
        if not common:
            return 0.0
        return (high - topo.tier(common)) / (high - low)

    def _lca_scores(self, job: JobInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        anchor = job.running_lca
        if not anchor:
            return {n.name: 0.0 for n in nodes}
        if not nodes:
            return {}
        leaf_of = self.leaf
        leaves = [leaf_of.get(node.name) for node in nodes]
        by_leaf = {leaf: self._lca_score(leaf, anchor) for leaf in set(leaves)}
        raw = [by_leaf[leaf] for leaf in leaves]
        top = max(raw)
        if raw.count(top) > 1:
            on_leaf = Counter(leaf_of.get(t.node) for t in job.tasks.values() if t.node)
            share = {leaf: on_leaf[leaf] / len(job.tasks) for leaf in by_leaf if leaf is not None}
            raw = [
                s + share[leaf] if s == top and leaf is not None else s
                for s, leaf in zip(raw, leaves, strict=True)
            ]
        scale = 100 * self.weight
        return {node.name: s * scale for node, s in zip(nodes, raw, strict=True)}

    def _tier_scores(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        """Σ_t fading^(t−1)·tierScore / Σ_t fading^(t−1) over every tier from the lowest to the
        virtual top; a tier where the node has no HyperNode scores 1."""
        factors = [self.fading ** (t - 1) for t in self.tier_range]
        norm = sum(factors)
        per_hn: dict[str, float] = {}
        per_members: dict[tuple[str | None, ...], float] = {}
        scale = 100 * self.weight
        out: dict[str, float] = {}
        for node in nodes:
            members = self.tier_members.get(node.name, ())
            score = per_members.get(members)
            if score is None:
                total = 0.0
                for factor, hn in zip(factors, members, strict=True):
                    if hn is None:
                        total += factor
                        continue
                    if hn not in per_hn:
                        per_hn[hn] = self._binpack(hn, task.resreq)
                    total += factor * per_hn[hn]
                score = total / norm * scale if norm else 0.0
                per_members[members] = score
            out[node.name] = score
        return out


def _capped(gradients: Iterable[list[str]], limit: int) -> list[list[str]]:
    """The gradients in order, keeping at most ``limit`` HyperNodes in total."""
    out: list[list[str]] = []
    left = limit
    for gradient in gradients:
        if left <= 0:
            break
        out.append(gradient[:left])
        left -= len(out[-1])
    return out
