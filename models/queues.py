"""Volcano queues: the queue tree, its admission rules, and the quota values the plugins derive.

Queues form a tree under an implicit ``root`` (seed 004). What a queue may use is not its spec
but values the scheduler derives at session open: capacity's ``realCapability`` and ``deserved``
(flat or hierarchical, volcano-scheduler.md §5.2–§5.3) and proportion's water-filled ``deserved``
(§5.5). The greedy engine, the CP-SAT model, the verifier and the metrics all need the same
numbers, so they are computed here once, in exact integers, with Volcano's quirks kept
(§9 item 9): a root without capability is infinite, a child inherits its parent's *capability*
(not its realCapability), and hierarchical deserved is not clipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .errors import Diagnostics, obj_name, shown
from .resources import CPU, EMPTY, INFINITE, MEMORY, Resources, format_amount

ROOT = "root"
DEFAULT_QUEUE = "default"
"""The queue Volcano creates and puts jobs in that name no queue."""
OPEN = "Open"
CLOSED = "Closed"
STATES = (OPEN, CLOSED)
"""The states the ValidatingAdmissionPolicy accepts (besides empty); the CRD's status enum also
lists Closing and Unknown, which only the controller sets."""
MIN_WEIGHT = 1
MAX_WEIGHT = 65535
MAX_PRIORITY = 2**31 - 1
DEFAULT_MAX_DEPTH = 5
"""webhook-manager's ``defaultMaxQueueDepth``; a direct child of root has depth 1."""
_RESOURCE_FIELDS = ("deserved", "capability", "guarantee")


@dataclass(frozen=True)
class Queue:
    """One Volcano Queue: the spec fields the scheduler reads, plus its state.

    ``parent`` empty means root. ``order`` is the creation order, Volcano's creationTimestamp
    tie-break in queue ordering.
    """

    name: str
    parent: str = ""
    weight: int = 1
    priority: int = 0
    deserved: Resources = EMPTY
    capability: Resources = EMPTY
    guarantee: Resources = EMPTY
    reclaimable: bool = True
    state: str = OPEN
    order: int = 0

    @property
    def is_open(self) -> bool:
        """An empty state counts as Open: the admission policy accepts it and the queue
        controller opens such a queue."""
        return self.state in (OPEN, "")


def _obj(name: str) -> str:
    return obj_name("Queue", name)


def _amount(resource: str, amount: int) -> str:
    return format_amount(resource, amount)


class QueueTree:
    """The queue hierarchy as Volcano's capacity plugin sees it (``queueAttr.ancestors`` and
    ``children``), always rooted at ``root``.

    Build it with :meth:`build`; the constructor takes an already checked parent map.
    """

    __slots__ = ("_ancestors", "_children", "_queues")

    def __init__(self, queues: Mapping[str, Queue], parents: Mapping[str, str]) -> None:
        """``queues`` includes root; ``parents`` maps every other queue to its parent, and every
        chain in it reaches root."""
        self._queues = {ROOT: queues[ROOT], **{n: q for n, q in queues.items() if n != ROOT}}
        children: dict[str, list[str]] = {name: [] for name in self._queues}
        for name in self._queues:
            if name != ROOT:
                children[parents[name]].append(name)
        self._children = {name: tuple(kids) for name, kids in children.items()}
        self._ancestors: dict[str, tuple[str, ...]] = {ROOT: ()}
        pending = [ROOT]
        for parent in pending:
            for child in self._children[parent]:
                self._ancestors[child] = (*self._ancestors[parent], parent)
                pending.append(child)

    @classmethod
    def build(cls, queues: Sequence[Queue]) -> QueueTree:
        """The tree of ``queues``, with an implicit ``root`` when none is given.

        Raises :class:`~models.errors.InputError` when the queues do not form a tree (duplicate
        or empty names, unknown parents, cycles); :func:`validate_queues` reports the same
        problems, and more, without raising.
        """
        diag = Diagnostics()
        shape = _shape(queues, diag)
        diag.raise_if_errors()
        return cls(shape.queues, shape.parents)

    def __contains__(self, name: object) -> bool:
        return name in self._queues

    @property
    def names(self) -> tuple[str, ...]:
        """Root first, then the other queues in input order."""
        return tuple(self._queues)

    def queue(self, name: str) -> Queue:
        return self._queues[name]

    def parent(self, name: str) -> str | None:
        """The parent's name; None for root."""
        ancestors = self._ancestors[name]
        return ancestors[-1] if ancestors else None

    def children(self, name: str) -> tuple[str, ...]:
        return self._children[name]

    def ancestors(self, name: str) -> tuple[str, ...]:
        """``[root, …, parent]``, like ``queueAttr.ancestors``; empty for root."""
        return self._ancestors[name]

    def depth(self, name: str) -> int:
        """0 for root, 1 for a direct child of root (the webhook's depth)."""
        return len(self._ancestors[name])

    def is_leaf(self, name: str) -> bool:
        return not self._children[name]

    def path(self, name: str) -> tuple[str, ...]:
        return (*self._ancestors[name], name)

    def common_ancestor_level(self, a: str, b: str) -> int:
        """Volcano ``getQueueLevel``: the index, in the root-first ancestor lists, of the deepest
        ancestor ``a`` and ``b`` share.

        Like Volcano, only the ancestor lists are compared, never the queues themselves. For two
        leaves, which is how the queue and victim orders use it, this is the index of their
        lowest common ancestor; ``path(x)[level + 1]`` is then the child of that ancestor on the
        way to ``x``.
        """
        level = 0
        pairs = zip(self._ancestors[a], self._ancestors[b], strict=False)
        for index, (left, right) in enumerate(pairs):
            if left != right:
                break
            level = index
        return level


@dataclass(frozen=True)
class _Shape:
    """What the parent links of a queue list amount to."""

    queues: dict[str, Queue]
    """The first definition of every name, root included (implicit if not given)."""
    parents: dict[str, str]
    """Every non-root queue whose parent chain reaches root → its parent."""


def _shape(queues: Sequence[Queue], diag: Diagnostics) -> _Shape:
    """Resolve the parent links, reporting what breaks the tree once per cause.

    A queue below a broken link (missing parent, self-parent, cycle) is left out of the tree
    without a complaint of its own: fixing the link fixes it.
    """
    by_name: dict[str, Queue] = {}
    for q in queues:
        if not q.name:
            diag.error(_obj(q.name), "name", "must not be empty")
        elif q.name in by_name:
            diag.error(_obj(q.name), "name", "duplicate queue name; only one Queue can have it")
        else:
            by_name[q.name] = q
    by_name.setdefault(ROOT, Queue(ROOT))
    declared = _declared_parents(by_name, diag)
    position = {name: index for index, name in enumerate(by_name)}
    reaches_root: dict[str, bool] = {ROOT: True}
    for name in by_name:
        walk: list[str] = []
        current = name
        while current not in reaches_root and current in declared and current not in walk:
            walk.append(current)
            current = declared[current]
        if current in reaches_root:
            verdict = reaches_root[current]
        else:
            verdict = False
            if current in walk:
                _report_cycle(walk[walk.index(current) :], position, diag)
        for member in walk:
            reaches_root[member] = verdict
    parents = {name: parent for name, parent in declared.items() if reaches_root[name]}
    return _Shape({n: q for n, q in by_name.items() if n == ROOT or n in parents}, parents)


def _declared_parents(by_name: Mapping[str, Queue], diag: Diagnostics) -> dict[str, str]:
    """Each queue's parent as declared, for the links that name an existing other queue."""
    declared: dict[str, str] = {}
    for name, q in by_name.items():
        parent = q.parent or ROOT
        if name == ROOT:
            if parent != ROOT:
                diag.error(
                    _obj(name), "parent", f'the root queue cannot have a parent, got "{parent}"'
                )
        elif parent == name:
            diag.error(
                _obj(name),
                "parent",
                f"queue {shown(name)} cannot use itself as parent: a queue cannot be its own "
                "parent (Volcano's queue webhook refuses it)",
            )
        elif parent not in by_name:
            diag.error(_obj(name), "parent", f'parent queue "{parent}" does not exist')
        else:
            declared[name] = parent
    return declared


def _report_cycle(cycle: list[str], position: Mapping[str, int], diag: Diagnostics) -> None:
    """One error per cycle, on its member defined first, spelled from that member round."""
    start = min(range(len(cycle)), key=lambda i: position[cycle[i]])
    ring = cycle[start:] + cycle[:start]
    diag.error(
        _obj(ring[0]), "parent", "cycle in the queue hierarchy: " + " → ".join([*ring, ring[0]])
    )


def validate_queues(
    queues: Sequence[Queue],
    job_queues: Mapping[str, int],
    diag: Diagnostics,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> None:
    """Check ``queues`` the way the Queue CRD, its ValidatingAdmissionPolicy and Volcano's
    hierarchical-queue webhook would, plus the scheduler's leaf-only rule for ``job_queues``
    (queue name → number of jobs in it).

    The webhook checks one queue against the cluster at admission; vcopt sees the whole set at
    once, so a sum over siblings is reported once, on the parent. The root queue's own resources
    are not compared with its children: Volcano protects them and the hierarchical scheduler
    replaces root's deserved and guarantee with its children's sums.
    """
    shape = _shape(queues, diag)
    seen: set[str] = set()
    for q in queues:
        if q.name and q.name not in seen:
            seen.add(q.name)
            _check_fields(q, diag)
    tree = QueueTree(shape.queues, shape.parents)
    _warn_root_resources(tree.queue(ROOT), diag)
    for name in tree.names:
        if tree.depth(name) == max_depth + 1:
            diag.error(
                _obj(name),
                "parent",
                f"queue depth {tree.depth(name)} exceeds the maximum of {max_depth} "
                f"({' → '.join(tree.path(name))})",
            )
        if name != ROOT:
            _check_sibling_sums(tree, name, diag)
            _check_ancestor_capability(tree, name, diag)
        jobs = job_queues.get(name, 0)
        if jobs > 0 and not tree.is_leaf(name):
            diag.error(
                _obj(name),
                "jobs",
                f"{jobs} job(s) are in this queue, but only leaf queues may hold jobs "
                f"(children: {', '.join(tree.children(name))})",
            )


def children_in_tree(queues: Sequence[Queue]) -> dict[str, list[str]]:
    """Each queue's children, counting only queues whose parent chain reaches root.

    A queue cut off by a missing parent or a cycle is already reported by
    :func:`validate_queues`; leaving it out keeps one broken link from also making its parent
    look like a non-leaf.
    """
    children: dict[str, list[str]] = {}
    for name, parent in _shape(queues, Diagnostics()).parents.items():
        children.setdefault(parent, []).append(name)
    return children


def _check_fields(q: Queue, diag: Diagnostics) -> None:
    """The CRD schema bounds and the ValidatingAdmissionPolicy's per-queue resource rules."""
    obj = _obj(q.name)
    if not MIN_WEIGHT <= q.weight <= MAX_WEIGHT:
        diag.error(obj, "weight", f"must be between {MIN_WEIGHT} and {MAX_WEIGHT}, got {q.weight}")
    if not 0 <= q.priority <= MAX_PRIORITY:
        diag.error(obj, "priority", f"must be between 0 and {MAX_PRIORITY}, got {q.priority}")
    if q.state not in (*STATES, ""):
        diag.error(obj, "state", f'queue state must be in [Open, Closed], got "{q.state}"')
    for resource, amount in q.deserved.items():
        limit = q.capability.get(resource)
        if resource in q.capability and amount > limit:
            diag.error(
                obj,
                f"deserved.{resource}",
                f"{_amount(resource, amount)} must be <= capability.{resource} "
                f"({_amount(resource, limit)})",
            )
    for resource, amount in q.guarantee.items():
        if resource not in q.deserved:
            diag.error(
                obj,
                f"guarantee.{resource}",
                f"is set but deserved.{resource} is not; deserved must be >= guarantee",
            )
        elif amount > q.deserved[resource]:
            diag.error(
                obj,
                f"guarantee.{resource}",
                f"{_amount(resource, amount)} must be <= deserved.{resource} "
                f"({_amount(resource, q.deserved[resource])})",
            )


def _warn_root_resources(root: Queue, diag: Diagnostics) -> None:
    """Root is meant to be unlimited; say what Volcano does with values someone set anyway."""
    for field in _RESOURCE_FIELDS:
        if getattr(root, field).is_empty():
            continue
        message = "the root queue's resources are not meant to be set (root queue protection)"
        if field == "capability":
            message += "; with enableHierarchy it limits the whole tree"
            unset = [r for r in (CPU, MEMORY) if r not in root.capability]
            if unset:
                message += f", and its unset {' and '.join(unset)} count as 0"
        else:
            message += f"; with enableHierarchy it is replaced by the sum of its children's {field}"
        diag.warn(_obj(ROOT), field, message)


def _check_sibling_sums(tree: QueueTree, parent: str, diag: Diagnostics) -> None:
    """``validateSiblingsSum``: the children's deserved and guarantee fit the parent's, on every
    resource the parent sets."""
    kids = tree.children(parent)
    if not kids:
        return
    owner = tree.queue(parent)
    for field in ("deserved", "guarantee"):
        limits: Resources = getattr(owner, field)
        total: Resources = sum((getattr(tree.queue(k), field) for k in kids), EMPTY)
        for resource, amount in total.items():
            if resource in limits and amount > limits[resource]:
                named = [k for k in kids if getattr(tree.queue(k), field).get(resource) > 0]
                diag.error(
                    _obj(parent),
                    f"{field}.{resource}",
                    f"children {', '.join(named)} together have {field}.{resource} "
                    f"{_amount(resource, amount)} > {_amount(resource, limits[resource])} "
                    "set on this queue",
                )


def _check_ancestor_capability(tree: QueueTree, name: str, diag: Diagnostics) -> None:
    """``validateChildAgainstAncestor``: per resource, the capability of the nearest ancestor that
    sets it (``findNearestAncestorCapability``) bounds the child's."""
    for resource, amount in tree.queue(name).capability.items():
        for ancestor in reversed(tree.ancestors(name)):
            limits = tree.queue(ancestor).capability
            if resource in limits:
                if amount > limits[resource]:
                    diag.error(
                        _obj(name),
                        f"capability.{resource}",
                        f"{_amount(resource, amount)} exceeds capability.{resource} "
                        f'{_amount(resource, limits[resource])} of ancestor queue "{ancestor}"',
                    )
                break


@dataclass(frozen=True)
class QueueAttrs:
    """The capacity plugin's derived values for one queue (``queueAttr``)."""

    deserved: Resources
    capability: Resources
    real_capability: Resources
    guarantee: Resources


def _infinite_cpu_memory(capability: Resources) -> Resources:
    """Flat mode: an unset (or ≤ 0) cpu or memory capability means unlimited."""
    unset = {r: INFINITE for r in (CPU, MEMORY) if capability.get(r) <= 0}
    return Resources({**capability, **unset})


def capacity_flat(
    tree: QueueTree, total: Resources, queues_with_jobs: Iterable[str]
) -> dict[str, QueueAttrs]:
    """capacity's ``buildQueueAttrs`` (volcano-scheduler.md §5.2).

    Only the queues in ``queues_with_jobs`` get attributes, but every queue's guarantee is set
    aside: realCapability = min_dim(max₀(T − G) + guarantee, capability), and deserved is the
    user's value clipped to it (a scalar realCapability lacks is unlimited), raised to the
    guarantee. No water-filling.
    """
    reserved: Resources = sum((tree.queue(n).guarantee for n in tree.names), EMPTY)
    free = (total - reserved).clip_negative()
    attrs: dict[str, QueueAttrs] = {}
    for name in queues_with_jobs:
        if name in attrs:
            continue
        q = tree.queue(name)
        capability = _infinite_cpu_memory(q.capability)
        real = (free + q.guarantee).min_dim(capability)
        deserved = q.deserved.min_dim(real).max_dim(q.guarantee)
        attrs[name] = QueueAttrs(deserved, capability, real, q.guarantee)
    return attrs


def _inherit_capability(own: Resources, parent: Resources) -> Resources:
    """``checkHierarchicalQueue``: cpu/memory ≤ 0 and every scalar the child leaves unset come
    from the parent's *capability* (not its realCapability)."""
    out = dict(own)
    for resource, amount in parent.items():
        if resource in (CPU, MEMORY):
            if own.get(resource) <= 0:
                out[resource] = amount
        elif resource not in own:
            out[resource] = amount
    return Resources(out)


def capacity_hierarchical(tree: QueueTree, total: Resources) -> dict[str, QueueAttrs]:
    """capacity's ``buildHierarchicalQueueAttrs`` + ``checkHierarchicalQueue`` (§5.3), for every
    queue, root included.

    Root's capability is its spec or, when empty, infinite on cpu, memory and every scalar of
    ``total``; its realCapability is its capability. Top-down, each child takes
    deserved = max(deserved, guarantee) (not clipped), inherits unset capability dimensions from
    its parent, and gets realCapability = min_dim(max₀(realCapability_parent − Σ siblings'
    guarantee, itself included) + guarantee, capability). Root's deserved and guarantee are the
    sums over its children.
    """
    root = tree.queue(ROOT)
    root_capability = root.capability
    if root_capability.is_empty():
        root_capability = Resources(
            {CPU: INFINITE, MEMORY: INFINITE, **dict.fromkeys(total, INFINITE)}
        )
    capability = {ROOT: root_capability}
    real = {ROOT: root_capability}
    deserved: dict[str, Resources] = {}
    pending = [ROOT]
    for parent in pending:
        kids = tree.children(parent)
        siblings_guarantee: Resources = sum((tree.queue(k).guarantee for k in kids), EMPTY)
        free = (real[parent] - siblings_guarantee).clip_negative()
        for kid in kids:
            q = tree.queue(kid)
            deserved[kid] = q.deserved.max_dim(q.guarantee)
            capability[kid] = _inherit_capability(q.capability, capability[parent])
            real[kid] = (free + q.guarantee).min_dim(capability[kid])
            pending.append(kid)
    top = tree.children(ROOT)
    deserved[ROOT] = sum((deserved[k] for k in top), EMPTY)
    guarantee = {name: tree.queue(name).guarantee for name in tree.names}
    guarantee[ROOT] = sum((guarantee[k] for k in top), EMPTY)
    return {
        name: QueueAttrs(deserved[name], capability[name], real[name], guarantee[name])
        for name in tree.names
    }


def _min_missing_zero(amounts: Resources, limits: Mapping[str, int]) -> Resources:
    """Volcano ``MinDimensionResource(limits, Zero)``: a dimension ``limits`` lacks becomes 0."""
    return Resources({r: min(v, limits.get(r, 0)) for r, v in amounts.items()})


def proportion_deserved(
    queues: Sequence[Queue],
    total: Resources,
    requests: Mapping[str, Resources],
    real_capability: Mapping[str, Resources],
) -> dict[str, Resources]:
    """proportion's water-filling of ``total`` over ``queues`` by weight (§5.5).

    Each round splits the start-of-round remainder among the queues not yet met, clips each
    queue's deserved to its realCapability (a scalar it lacks is unlimited) and then to its
    request (a scalar the request lacks is 0), raises it to the guarantee, and marks the queue
    met when its request fits or its deserved did not move. The loop stops when nothing remains
    or the remainder did not change.

    Volcano splits in float64; vcopt floors each weighted share to whole vcopt units
    (``remaining · weight // Σweight``), so amounts stay exact integers. The floored crumbs stay
    in the remainder for the next round. ``queues`` are the queues with jobs; a queue missing
    from ``requests`` requests nothing; ``real_capability`` must name every queue.
    """
    deserved = {q.name: EMPTY for q in queues}
    met: set[str] = set()
    remaining = total
    while True:
        active = [q for q in queues if q.name not in met]
        weights = sum(q.weight for q in active)
        if weights == 0:
            break
        increased = decreased = EMPTY
        for q in active:
            old = deserved[q.name]
            request = requests.get(q.name, EMPTY)
            split = Resources({r: v * q.weight // weights for r, v in remaining.items()})
            new = (old + split).min_dim(real_capability[q.name])
            new = _min_missing_zero(new, request).max_dim(q.guarantee)
            if request.less_equal(new) or new == old:
                met.add(q.name)
            increased += (new - old).clip_negative()
            decreased += (old - new).clip_negative()
            deserved[q.name] = new
        left = (remaining + decreased - increased).clip_negative()
        if left.is_empty() or left == remaining:
            break
        remaining = left
    return deserved


def share(allocated: Resources, deserved: Resources, *, empty_share: float) -> float:
    """A queue's share: the largest allocated/deserved over the dimensions deserved sets.

    ``empty_share`` is the share of a queue whose deserved is empty: 1 for capacity (a
    best-effort queue sorts after every queue that has a deserved), 0 for proportion. Only the
    positive dimensions of deserved count (Volcano's ``ResourceNames`` skips the rest), so
    Volcano's ``Share(x, 0)`` case never arises.
    """
    dims = deserved.dims()
    if not dims:
        return empty_share
    return max(allocated.get(r) / deserved[r] for r in dims)
