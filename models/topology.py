"""The HyperNode tree: what Volcano's network-topology scheduling sees of the data centre.

HyperNodes group nodes into racks, spines and super-spines (seed 000). The scheduler turns them into
a tree with one parent per HyperNode, adds a virtual root above everything
(``addClusterTopHyperNode``), and reasons with node sets, tiers and lowest common ancestors
(volcano-scheduler.md §4.1). This module validates the objects the way the CRD schema, its CEL rules
and the admission policy do, and answers the tree questions the engines, the verifier and the
metrics ask, so that none of them re-derives the tree on its own.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

import networkx as nx
import re2

from .errors import Diagnostics, obj_name
from .selectors import LabelSelector, validate_label_selector

NODE = "Node"
HYPERNODE = "HyperNode"
MEMBER_TYPES = (NODE, HYPERNODE)

MAX_NAME_LENGTH = 253
QUALIFIED_NAME_MAX_LENGTH = 63
RFC1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""The CRD's exactMatch pattern; seed 000 §5.2 prints it without its ``*``s."""


def _re2_options() -> re2.Options:
    """RE2 options that keep bad patterns off stderr: vcopt reports them as diagnostics."""
    options = re2.Options()
    options.log_errors = False
    return options


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> re2._Regexp | str:
    """The compiled RE2 pattern, or RE2's complaint about it.

    Go's ``regexp`` is RE2, so google-re2 accepts and rejects the same syntax Volcano does and
    matches in linear time; Python's ``re`` would accept lookarounds and backtrack exponentially.
    """
    try:
        return re2.compile(pattern, _re2_options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)


_RFC1123 = re2.compile(RFC1123_SUBDOMAIN, _re2_options())


@dataclass(frozen=True)
class MemberSelector:
    """How a member is chosen; the schema wants exactly one of the three set."""

    exact_name: str | None = None
    regex: str | None = None
    label: LabelSelector | None = None

    def kinds(self) -> tuple[str, ...]:
        """The selector kinds that are set, spelled as in the YAML."""
        present = (
            ("exactMatch", self.exact_name),
            ("regexMatch", self.regex),
            ("labelMatch", self.label),
        )
        return tuple(kind for kind, value in present if value is not None)


@dataclass(frozen=True)
class Member:
    """One ``spec.members[]`` entry: a Node or a child HyperNode, chosen by ``selector``."""

    type: str
    selector: MemberSelector


@dataclass(frozen=True)
class HyperNode:
    """The spec of one HyperNode object; its status (nodeCount) is derived by :class:`Topology`."""

    name: str
    tier: int
    tier_name: str = ""
    members: tuple[Member, ...] = ()


def label_index(nodes: Mapping[str, Mapping[str, str]]) -> dict[tuple[str, str], list[str]]:
    """Node names by (label key, value), in node order: a labelMatch member then reads the
    nodes carrying its first label instead of every node (thousands of nodes × hundreds of
    racks would otherwise be millions of label checks)."""
    index: dict[tuple[str, str], list[str]] = {}
    for name, labels in nodes.items():
        for pair in labels.items():
            index.setdefault(pair, []).append(name)
    return index


def _select(
    member: Member,
    nodes: Mapping[str, Mapping[str, str]],
    hypernode_names: Collection[str],
    index: Mapping[tuple[str, str], Sequence[str]] | None = None,
) -> list[str]:
    """Names the member selects, sorted; invalid selectors select nothing.

    When several selector kinds are set (invalid input), exactMatch wins over regexMatch over
    labelMatch, the order in which Volcano's member lookup tests them. labelMatch only selects
    Nodes: Volcano ignores it on HyperNode members.
    """
    sel = member.selector
    if member.type == NODE:
        candidates: Collection[str] = nodes.keys()
    elif member.type == HYPERNODE:
        candidates = hypernode_names
    else:
        return []
    if sel.exact_name is not None:
        return [sel.exact_name] if sel.exact_name in candidates else []
    if sel.regex is not None:
        compiled = _compile(sel.regex) if sel.regex else None
        if compiled is None or isinstance(compiled, str):
            return []
        return sorted(name for name in candidates if compiled.search(name) is not None)
    if sel.label is not None and member.type == NODE:
        among: Collection[str] = nodes.keys()
        if index is not None and sel.label.match_labels:
            among = index.get(sel.label.match_labels[0], ())
        return sorted(name for name in among if sel.label.matches(nodes[name]))
    return []


def validate_hypernodes(
    hypernodes: Sequence[HyperNode], nodes: Mapping[str, Mapping[str, str]], diag: Diagnostics
) -> None:
    """Every rule of the HyperNode CRD schema, its CEL rules and Volcano's admission checks,
    plus the tree rules the scheduler relies on (no cycles, one parent).

    Volcano accepts a member that selects nothing (seed 000 §8.4 references a ``spine-2`` it never
    defines), so that is only a warning, as is a child whose tier is not below its parent's.
    """
    seen: set[str] = set()
    for hn in hypernodes:
        obj = obj_name(HYPERNODE, hn.name)
        if not hn.name:
            diag.error(obj, "name", "must not be empty")
        elif hn.name in seen:
            diag.error(obj, "name", "duplicate HyperNode name")
        seen.add(hn.name)
        _validate_spec(hn, obj, diag)
    names = frozenset(hn.name for hn in hypernodes)
    _warn_unmatched(hypernodes, nodes, names, diag)
    edges = _hypernode_edges(hypernodes, names)
    _check_cycles(edges, diag)
    _check_parents(edges, diag)
    _warn_tiers(hypernodes, edges, diag)
    _warn_tier_names(hypernodes, diag)


def _validate_spec(hn: HyperNode, obj: str, diag: Diagnostics) -> None:
    if hn.tier < 0:
        diag.error(obj, "tier", f"must be greater than or equal to 0, got {hn.tier}")
    if len(hn.tier_name) > MAX_NAME_LENGTH:
        diag.error(
            obj,
            "tierName",
            f"must be at most {MAX_NAME_LENGTH} characters, got {len(hn.tier_name)}",
        )
    if not hn.members:
        diag.error(obj, "members", "must have at least one member")
    for i, member in enumerate(hn.members):
        _validate_member(member, obj, f"members[{i}]", diag)


def _validate_member(member: Member, obj: str, path: str, diag: Diagnostics) -> None:
    if member.type not in MEMBER_TYPES:
        diag.error(obj, f"{path}.type", f'must be Node or HyperNode, got "{member.type}"')
    sel = member.selector
    kinds = sel.kinds()
    if not kinds:
        diag.error(
            obj,
            f"{path}.selector",
            "either exactMatch, regexMatch or labelMatch must be specified",
        )
    elif len(kinds) > 1:
        diag.error(
            obj, f"{path}.selector", "only one of exactMatch, regexMatch, labelMatch may be set"
        )
    if sel.exact_name is not None:
        _validate_exact_name(sel.exact_name, obj, f"{path}.selector.exactMatch.name", diag)
    if sel.regex is not None:
        _validate_regex(sel.regex, obj, f"{path}.selector.regexMatch.pattern", diag)
    if sel.label is not None:
        label_path = f"{path}.selector.labelMatch"
        if member.type == HYPERNODE:
            diag.error(
                obj,
                label_path,
                "labelMatch is only allowed for Node members; "
                "select HyperNode members with exactMatch or regexMatch",
            )
        validate_label_selector(sel.label, obj, label_path, diag)


def _validate_exact_name(name: str, obj: str, path: str, diag: Diagnostics) -> None:
    if not name:
        diag.error(obj, path, "must not be empty")
    elif len(name) > MAX_NAME_LENGTH:
        diag.error(obj, path, f"must be at most {MAX_NAME_LENGTH} characters, got {len(name)}")
    elif _RFC1123.search(name) is None:
        diag.error(
            obj,
            path,
            f'"{name}" is not a lowercase RFC 1123 subdomain: use lowercase letters, digits, '
            "'-' and '.', starting and ending with a letter or digit",
        )
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        diag.warn(
            obj,
            path,
            f"is longer than {QUALIFIED_NAME_MAX_LENGTH} characters: Volcano's "
            "hypernode-validation-policy (format.qualifiedName) rejects it where installed",
        )


def _validate_regex(pattern: str, obj: str, path: str, diag: Diagnostics) -> None:
    if not pattern:
        diag.error(obj, path, "must not be empty")
        return
    compiled = _compile(pattern)
    if isinstance(compiled, str):
        diag.error(obj, path, f"is not a valid RE2 regular expression: {compiled}")
        return
    for opening, closing in ("()", "[]", "{}"):
        if opening in pattern and pattern.count(opening) != pattern.count(closing):
            diag.warn(
                obj,
                path,
                f"has unequal counts of '{opening}' and '{closing}': Volcano's "
                "hypernode-validation-policy rejects it where installed, although RE2 accepts it",
            )


def _warn_unmatched(
    hypernodes: Sequence[HyperNode],
    nodes: Mapping[str, Mapping[str, str]],
    names: Collection[str],
    diag: Diagnostics,
) -> None:
    """Warn about members that select no existing Node or HyperNode.

    Members with an error are skipped: the error already says what to fix.
    """
    index = label_index(nodes)
    for hn in hypernodes:
        for i, member in enumerate(hn.members):
            probe = Diagnostics()
            _validate_member(member, "", "", probe)
            if probe.errors or _select(member, nodes, names, index):
                continue
            sel = member.selector
            kinds = sel.kinds()
            path = f"members[{i}].selector"
            if kinds == ("exactMatch",):
                field_path = f"{path}.exactMatch.name"
                message = f'no {member.type} named "{sel.exact_name}"'
            elif kinds == ("regexMatch",):
                field_path, message = f"{path}.regexMatch.pattern", f"matches no {member.type}"
            else:
                field_path, message = f"{path}.labelMatch", f"matches no {member.type}"
            diag.warn(obj_name(HYPERNODE, hn.name), field_path, message)


def tiers_by_name(hypernodes: Iterable[HyperNode]) -> dict[str, int]:
    """How ``highestTierName`` resolves: each ``tierName`` to the lowest tier that uses it
    (volcano-scheduler.md §4.2); a name used at several tiers is warned about on its own."""
    out: dict[str, int] = {}
    for hn in hypernodes:
        if hn.tier_name:
            out[hn.tier_name] = min(hn.tier, out.get(hn.tier_name, hn.tier))
    return out


@dataclass(frozen=True)
class _Edge:
    """``parent`` lists ``child`` through its member number ``index``."""

    parent: str
    index: int
    child: str


def _hypernode_edges(hypernodes: Sequence[HyperNode], names: Collection[str]) -> list[_Edge]:
    """Parent→child links in file order, members in order, children by name within a member."""
    edges = []
    for hn in hypernodes:
        for i, member in enumerate(hn.members):
            if member.type == HYPERNODE:
                edges.extend(_Edge(hn.name, i, child) for child in _select(member, {}, names))
    return edges


def _check_cycles(edges: Sequence[_Edge], diag: Diagnostics) -> None:
    """One error per strongly connected group, so a tangle of cycles is reported once."""
    graph = nx.DiGraph()
    for edge in edges:
        if not graph.has_edge(edge.parent, edge.child):
            graph.add_edge(edge.parent, edge.child, index=edge.index)
    for component in nx.strongly_connected_components(graph):
        start = min(component)
        if len(component) == 1 and not graph.has_edge(start, start):
            continue
        cycle = nx.find_cycle(graph.subgraph(component), source=start)
        path = " -> ".join([*(u for u, _ in cycle), cycle[0][0]])
        first = cycle[0]
        diag.error(
            obj_name(HYPERNODE, first[0]),
            f"members[{graph.edges[first]['index']}]",
            f"HyperNode members form a cycle: {path}",
        )


def _check_parents(edges: Sequence[_Edge], diag: Diagnostics) -> None:
    """The first HyperNode (in file order) to list a child is its parent; later ones are errors."""
    parent: dict[str, str] = {}
    for edge in edges:
        if edge.child == edge.parent:
            continue
        first = parent.setdefault(edge.child, edge.parent)
        if first != edge.parent:
            diag.error(
                obj_name(HYPERNODE, edge.parent),
                f"members[{edge.index}]",
                f'HyperNode "{edge.child}" already has parent "{first}", so "{edge.parent}" '
                "cannot also be its parent: a HyperNode may have at most one parent",
            )


def _warn_tiers(hypernodes: Sequence[HyperNode], edges: Sequence[_Edge], diag: Diagnostics) -> None:
    tier: dict[str, int] = {}
    for hn in hypernodes:
        tier.setdefault(hn.name, hn.tier)
    for edge in edges:
        if edge.child != edge.parent and tier[edge.child] >= tier[edge.parent]:
            diag.warn(
                obj_name(HYPERNODE, edge.parent),
                f"members[{edge.index}]",
                f'member HyperNode "{edge.child}" has tier {tier[edge.child]}, '
                f"not lower than this HyperNode's tier {tier[edge.parent]}",
            )


def _warn_tier_names(hypernodes: Sequence[HyperNode], diag: Diagnostics) -> None:
    """A tierName used at several tiers makes ``highestTierName`` ambiguous."""
    tiers: dict[str, set[int]] = {}
    for hn in hypernodes:
        if hn.tier_name:
            tiers.setdefault(hn.tier_name, set()).add(hn.tier)
    for hn in hypernodes:
        used = tiers.get(hn.tier_name, set())
        if len(used) > 1 and hn.tier != min(used):
            diag.warn(
                obj_name(HYPERNODE, hn.name),
                "tierName",
                f'tierName "{hn.tier_name}" is also used at tier {min(used)}; '
                f"highestTierName {hn.tier_name} resolves to tier {min(used)}",
            )


@dataclass(frozen=True, eq=False)
class Topology:
    """The scheduler's view of the HyperNodes: a tree under a virtual root, with node sets.

    Immutable: every answer is precomputed by :meth:`build`, so the engines can share one
    instance and query it in inner loops.
    """

    TOP: ClassVar[str] = "<cluster-top-hypernode>"

    names: tuple[str, ...]
    """Real HyperNodes, in input order."""
    _tier: Mapping[str, int] = field(repr=False)
    _tier_name: Mapping[str, str] = field(repr=False)
    _parent: Mapping[str, str | None] = field(repr=False)
    _children: Mapping[str, tuple[str, ...]] = field(repr=False)
    _real_nodes: Mapping[str, frozenset[str]] = field(repr=False)
    _node_count: Mapping[str, int] = field(repr=False)
    _containing: Mapping[str, tuple[str, ...]] = field(repr=False)
    _tiers: tuple[int, ...] = field(repr=False)
    _tier_by_name: Mapping[str, int] = field(repr=False)

    @classmethod
    def build(
        cls, hypernodes: Sequence[HyperNode], nodes: Mapping[str, Mapping[str, str]]
    ) -> Topology:
        """The tree of validated HyperNodes over ``nodes`` (node name → labels).

        Robust to input that failed validation: a repeated name keeps its first object, members
        naming nothing are ignored, and a link that would give a HyperNode a second parent or
        close a cycle is dropped (first parent in input order wins).
        """
        specs: dict[str, HyperNode] = {}
        for hn in hypernodes:
            specs.setdefault(hn.name, hn)
        names = tuple(specs)
        index = label_index(nodes)
        own_nodes: dict[str, frozenset[str]] = {}
        for hn in specs.values():
            selected: set[str] = set()
            for member in hn.members:
                if member.type == NODE:
                    selected.update(_select(member, nodes, (), index))
            own_nodes[hn.name] = frozenset(selected)
        real_parent: dict[str, str] = {}
        for edge in _hypernode_edges(list(specs.values()), specs.keys()):
            if edge.child not in real_parent and not _reaches(real_parent, edge.parent, edge.child):
                real_parent[edge.child] = edge.parent
        top = cls.TOP
        top_tier = max((hn.tier for hn in specs.values()), default=0) + 1
        parent: dict[str, str | None] = {name: real_parent.get(name, top) for name in names}
        parent[top] = None
        children: dict[str, list[str]] = {name: [] for name in (*names, top)}
        for name in names:
            children[real_parent.get(name, top)].append(name)

        real_nodes: dict[str, frozenset[str]] = {top: frozenset(nodes)}
        node_count: dict[str, int] = {top: len(nodes)}
        for name in reversed(_top_down(children, top)[1:]):
            kids = children[name]
            real_nodes[name] = own_nodes[name].union(*(real_nodes[k] for k in kids))
            node_count[name] = len(own_nodes[name]) + sum(node_count[k] for k in kids)

        tier = {name: spec.tier for name, spec in specs.items()} | {top: top_tier}
        containing: dict[str, list[str]] = {node: [] for node in nodes}
        for name in (*names, top):
            for node in real_nodes[name]:
                containing[node].append(name)
        return cls(
            names=names,
            _tier=MappingProxyType(tier),
            _tier_name=MappingProxyType(
                {name: spec.tier_name for name, spec in specs.items()} | {top: ""}
            ),
            _parent=MappingProxyType(parent),
            _children=MappingProxyType({k: tuple(sorted(v)) for k, v in children.items()}),
            _real_nodes=MappingProxyType(real_nodes),
            _node_count=MappingProxyType(node_count),
            _containing=MappingProxyType(
                {
                    node: tuple(sorted(hns, key=lambda h: (tier[h], h)))
                    for node, hns in containing.items()
                }
            ),
            _tiers=tuple(sorted(set(tier.values()))),
            _tier_by_name=MappingProxyType(tiers_by_name(specs.values())),
        )

    def tier(self, hn: str) -> int:
        """``spec.tier``; for the virtual root, one above the highest real tier."""
        return self._tier[hn]

    def tier_name(self, hn: str) -> str:
        """``spec.tierName`` ("" when unset and for the virtual root)."""
        return self._tier_name[hn]

    def parent(self, hn: str) -> str | None:
        """The parent HyperNode: TOP for a parentless real one, None for TOP itself."""
        return self._parent[hn]

    def children(self, hn: str) -> tuple[str, ...]:
        """The child HyperNodes, sorted by name."""
        return self._children[hn]

    def ancestors(self, hn: str) -> list[str]:
        """Parent, grandparent, … up to and including TOP; empty for TOP."""
        chain = []
        up = self._parent[hn]
        while up is not None:
            chain.append(up)
            up = self._parent[up]
        return chain

    def tiers(self) -> list[int]:
        """Volcano's ``HyperNodesTiers``: every tier in use, ascending, the virtual top included."""
        return list(self._tiers)

    @property
    def top_tier(self) -> int:
        """The virtual root's tier: the largest tier, which soft topology uses as its limit."""
        return self._tier[self.TOP]

    @property
    def min_tier(self) -> int:
        """The lowest tier, where ``leaf_of`` looks for a node's HyperNode."""
        return self._tiers[0]

    def real_nodes(self, hn: str) -> frozenset[str]:
        """Volcano's ``RealNodesSet``: the nodes of Node members and, recursively, of children."""
        return self._real_nodes[hn]

    def node_count(self, hn: str) -> int:
        """``status.nodeCount`` as the controller computes it: matched Node members plus the
        children's NodeCounts, so a node reachable twice is counted twice."""
        return self._node_count[hn]

    def leaf_of(self, node: str) -> str | None:
        """Volcano's ``FindHyperNodeForNode``: the lowest-tier HyperNode holding ``node``.

        Only the globally lowest tier is searched: a node that appears first in a higher tier has
        no leaf. With no real HyperNodes the lowest tier is TOP's, so every node's leaf is TOP.
        """
        for hn in self._containing.get(node, ()):
            if self._tier[hn] == self._tiers[0]:
                return hn
        return None

    def lca(self, a: str, b: str) -> str:
        """Volcano's ``GetLCAHyperNode``: the first of ``b``, its parent, … that is ``a`` or one of
        ``a``'s ancestors. An empty argument returns the other; unknown names give ""."""
        if not a:
            return b
        if not b:
            return a
        if a not in self._parent or b not in self._parent:
            return ""
        above_a = {a, *self.ancestors(a)}
        for hn in (b, *self.ancestors(b)):
            if hn in above_a:
                return hn
        return ""

    def lowest_common(self, nodes: Iterable[str]) -> str | None:
        """The lowest-tier HyperNode (TOP included) holding every node; ties go to the smallest
        name. A single node gives its leaf (TOP if it has none), as Volcano records a one-task
        subjob. None for no nodes or a node outside the cluster."""
        wanted = set(nodes)
        if not wanted:
            return None
        first = next(iter(wanted))
        if first not in self._containing:
            return None
        if len(wanted) == 1:
            return self.leaf_of(first) or self.TOP
        for hn in self._containing[first]:
            if wanted <= self._real_nodes[hn]:
                return hn
        return None

    def lca_tier(self, nodes: Iterable[str]) -> int:
        """Tier of the smallest network domain holding a job's pods: 0 when they share a node."""
        wanted = set(nodes)
        if len(wanted) == 1:
            return 0
        common = self.lowest_common(wanted)
        if common is None:
            raise ValueError(f"no HyperNode holds the nodes {sorted(wanted)}")
        return self._tier[common]

    def tier_by_name(self, tier_name: str) -> int | None:
        """Resolve ``highestTierName``; a name used at several tiers gives the lowest of them."""
        return self._tier_by_name.get(tier_name)

    def at_tier(self, t: int) -> list[str]:
        """HyperNodes of tier ``t`` (TOP at the top tier), sorted by name."""
        return sorted(hn for hn, tier in self._tier.items() if tier == t)

    def table(self) -> list[tuple[str, int, str, int]]:
        """``kubectl get hypernodes`` rows (NAME, TIER, TIERNAME, NODECOUNT) by tier, then name."""
        rows = [
            (hn, self._tier[hn], self._tier_name[hn], self._node_count[hn]) for hn in self.names
        ]
        return sorted(rows, key=lambda row: (row[1], row[0]))


def _reaches(parent: Mapping[str, str], start: str, target: str) -> bool:
    """Whether ``target`` is ``start`` or above it in the partial parent map."""
    hn: str | None = start
    while hn is not None:
        if hn == target:
            return True
        hn = parent.get(hn)
    return False


def _top_down(children: Mapping[str, Sequence[str]], root: str) -> list[str]:
    """Breadth-first order from ``root``, so every parent precedes its children."""
    order = [root]
    for hn in order:
        order.extend(children[hn])
    return order
