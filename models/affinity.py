"""Pod (anti-)affinity, topology spread and preferred node affinity: the Kubernetes rules a pod
carries about *other pods* and about the nodes it prefers.

The types hold the terms as the API server stores them; the matching rules are kube-scheduler's
(``spec/k8s-affinity-spread.md`` §1–§5), because the greedy engine, the CP-SAT engine and the
verifier must all read a term the same way while sharing no decision code. Validation is the
API server's (``ValidatePodSpec``: affinity, ``topologySpreadConstraints``), each error on the
path the user wrote.

``matchLabelKeys`` / ``mismatchLabelKeys`` are merged into the selector for the pod that owns
the term (:meth:`PodAffinityTerm.selector_for`, :meth:`SpreadConstraint.selector_for`): the
API server does it when a pod is created from a template (§1.2, §4.1), and the merge is
idempotent, so pods read back from a cluster (already merged) give the same selector.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import Diagnostics, shown_value
from .golang import parse_int64
from .names import qualified_name_problem
from .selectors import IN, NOT_IN, LabelRequirement, LabelSelector, validate_label_selector
from .vocabulary import HOSTNAME_LABEL

if TYPE_CHECKING:
    from .cluster import Node
    from .workload import Task

HOSTNAME = HOSTNAME_LABEL
"""The topology key PodTopologySpread's Score counts per node (§4.4)."""
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
WHEN_UNSATISFIABLE = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)
HONOR, IGNORE = "Honor", "Ignore"
INCLUSION_POLICIES = (HONOR, IGNORE)
GT, LT = "Gt", "Lt"
NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", GT, LT)
NAME_FIELD = "metadata.name"
MIN_WEIGHT, MAX_WEIGHT = 1, 100

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def is_everything(selector: LabelSelector | None) -> bool:
    """``{}``: no matchLabels and no matchExpressions (``Selector.Empty()`` is true)."""
    return selector is not None and not selector.match_labels and not selector.match_expressions


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector pointer as kube-scheduler reads it: nil matches nothing."""
    return selector is not None and selector.matches(labels)


def _merge_keys(
    selector: LabelSelector | None,
    labels: Mapping[str, str],
    match: Sequence[str],
    mismatch: Sequence[str] = (),
) -> LabelSelector | None:
    """``selector`` AND ``key In [labels[key]]`` per match key (``NotIn`` per mismatch key)
    present in ``labels``; a nil selector is left alone, an equal requirement is not added
    twice (the merge is idempotent on pods the API server already merged)."""
    if selector is None:
        return None
    added = [LabelRequirement(k, IN, (labels[k],)) for k in match if k in labels]
    added += [LabelRequirement(k, NOT_IN, (labels[k],)) for k in mismatch if k in labels]
    fresh = tuple(r for r in added if r not in selector.match_expressions)
    if not fresh:
        return selector
    return LabelSelector(selector.match_labels, selector.match_expressions + fresh)


@dataclass(frozen=True)
class PodAffinityTerm:
    """One ``PodAffinityTerm`` (a preferred one carries its ``weight``, a required one 0)."""

    topology_key: str
    label_selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()
    weight: int = 0

    def selector_for(self, owner_labels: Mapping[str, str]) -> LabelSelector | None:
        """The selector after the API server's matchLabelKeys/mismatchLabelKeys merge."""
        return _merge_keys(
            self.label_selector, owner_labels, self.match_label_keys, self.mismatch_label_keys
        )

    def namespace_listed(self, owner_namespace: str, namespace: str) -> bool:
        """``NS(t)``: the owner's namespace when neither field is set, else the listed ones."""
        if not self.namespaces and self.namespace_selector is None:
            return namespace == owner_namespace
        return namespace in self.namespaces

    def matches(
        self,
        selector: LabelSelector | None,
        owner_namespace: str,
        namespace: str,
        labels: Mapping[str, str],
        namespace_labels: Mapping[str, str] | None = None,
    ) -> bool:
        """``match(t, Y, nsLabels)`` (§1.2, §1.3) for a pod Y in ``namespace`` with ``labels``;
        ``selector`` is :meth:`selector_for` the owner. ``namespaceSelector: {}`` takes every
        namespace; another one is judged on the labels of Y's Namespace (none known: empty),
        which is what resolving it to namespace names (the owner's own terms) or testing the
        incoming pod's namespace labels (an existing pod's terms) both come to."""
        if not selector_matches(selector, labels):
            return False
        if self.namespace_listed(owner_namespace, namespace):
            return True
        ns_selector = self.namespace_selector
        return ns_selector is not None and ns_selector.matches(namespace_labels or {})


@dataclass(frozen=True)
class PodAffinity:
    """``podAffinity`` or ``podAntiAffinity``: required and preferred terms.

    An object with no terms still matters: kube-scheduler lists its pod among the pods "with
    affinity" (§1.4), which Volcano's frozen lists read."""

    required: tuple[PodAffinityTerm, ...] = ()
    preferred: tuple[PodAffinityTerm, ...] = ()


@dataclass(frozen=True)
class SpreadConstraint:
    """One ``topologySpreadConstraints`` entry, defaults applied as the scheduler reads it."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE
    match_label_keys: tuple[str, ...] = ()

    @property
    def hard(self) -> bool:
        return self.when_unsatisfiable == DO_NOT_SCHEDULE

    @property
    def domains_needed(self) -> int:
        """``MinDomains``: 1 when unset."""
        return self.min_domains if self.min_domains is not None else 1

    def includes(self, task: Task, node: Node) -> bool:
        """``matchNodeInclusionPolicies``: whether ``node`` counts among the domains for a pod
        of ``task`` — when ``nodeAffinityPolicy`` is Honor (the default), only if the pod's
        node selector and required affinity match it; when ``nodeTaintsPolicy`` is Honor
        (default Ignore), only if the pod tolerates its NoSchedule/NoExecute taints."""
        if self.node_affinity_policy == HONOR and not task.node_affinity_matches(node.labels):
            return False
        return self.node_taints_policy != HONOR or task.tolerates_all(node.hard_taints)

    def selector_for(self, owner_labels: Mapping[str, str]) -> LabelSelector | None:
        return _merge_keys(self.label_selector, owner_labels, self.match_label_keys)

    def counts(self, selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
        """``countPodsMatchSelector``: whether a pod with ``labels`` counts; ``{}`` and nil
        count nothing (the ``Empty()`` short-circuit, §4.1)."""
        return not is_everything(selector) and selector_matches(selector, labels)


@dataclass(frozen=True)
class NodeRequirement:
    """One NodeSelectorRequirement; unlike a label selector it knows ``Gt`` and ``Lt``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, value: str | None) -> bool:
        """``value`` is the node's label (or its name for matchFields), None when absent."""
        if self.operator in (GT, LT):
            if value is None or len(self.values) != 1:
                return False
            have, bound = parse_int64(value), parse_int64(self.values[0])
            if have is None or bound is None:
                return False
            return have > bound if self.operator == GT else have < bound
        labels = {} if value is None else {self.key: value}
        return LabelRequirement(self.key, self.operator, self.values).matches(labels)


@dataclass(frozen=True)
class PreferredNodeTerm:
    """One ``preferredDuringSchedulingIgnoredDuringExecution`` node affinity term."""

    weight: int
    expressions: tuple[NodeRequirement, ...] = ()
    fields: tuple[NodeRequirement, ...] = ()

    def matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """All expressions and fields hold; a preference with neither matches no node."""
        if not self.expressions and not self.fields:
            return False
        return all(r.matches(labels.get(r.key)) for r in self.expressions) and all(
            r.matches(node_name) for r in self.fields
        )


def preferred_node_score(
    terms: Sequence[PreferredNodeTerm], node_name: str, labels: Mapping[str, str]
) -> int:
    """NodeAffinity's raw score: Σ weight of the matching terms (weight-0 terms dropped)."""
    return sum(t.weight for t in terms if t.weight and t.matches(node_name, labels))


# -- validation (the API server's) -----------------------------------------------------------


def _check_key(key: str, obj: str, field: str, diag: Diagnostics) -> None:
    """A topology or label key: a qualified name (``models.names``)."""
    if not key:
        diag.error(obj, field, "must not be empty")
    elif problem := qualified_name_problem(key):
        diag.error(obj, field, f"{shown_value(key)}: {problem}")


def _check_label_keys(
    keys: Sequence[str],
    selector: LabelSelector | None,
    owner_labels: Mapping[str, str],
    operator: str,
    obj: str,
    field: str,
    diag: Diagnostics,
) -> None:
    """Valid keys, no duplicates, a selector to merge into, and no key the selector already
    reads unless it reads it exactly as the merge would (the API server's own merge)."""
    seen: set[str] = set()
    for i, key in enumerate(keys):
        _check_key(key, obj, f"{field}[{i}]", diag)
        if key in seen:
            diag.error(obj, f"{field}[{i}]", f"duplicate key {shown_value(key)}")
        seen.add(key)
        if selector is None:
            diag.error(obj, f"{field}[{i}]", "must not be set when labelSelector is not set")
            continue
        merged = (
            LabelRequirement(key, operator, (owner_labels[key],)) if key in owner_labels else None
        )
        others = [r for r in selector.match_expressions if r != merged]
        if key in {k for k, _ in selector.match_labels} or key in {r.key for r in others}:
            diag.error(
                obj, f"{field}[{i}]", f"key {shown_value(key)} also appears in labelSelector"
            )


def validate_affinity_term(
    term: PodAffinityTerm,
    preferred: bool,
    owner_labels: Mapping[str, str],
    obj: str,
    field: str,
    diag: Diagnostics,
) -> None:
    """``validatePodAffinityTerm`` (and the weight of a ``WeightedPodAffinityTerm``); ``field``
    is the term's own path (for a preferred term, the ``podAffinityTerm`` inside it)."""
    if preferred and not MIN_WEIGHT <= term.weight <= MAX_WEIGHT:
        weight_field = field.removesuffix(".podAffinityTerm") + ".weight"
        diag.error(obj, weight_field, f"must be in the range {MIN_WEIGHT}-{MAX_WEIGHT}")
    _check_key(term.topology_key, obj, f"{field}.topologyKey", diag)
    if term.label_selector is not None:
        validate_label_selector(term.label_selector, obj, f"{field}.labelSelector", diag)
    if term.namespace_selector is not None:
        validate_label_selector(term.namespace_selector, obj, f"{field}.namespaceSelector", diag)
    for i, ns in enumerate(term.namespaces):
        if not DNS_LABEL.match(ns) or len(ns) > 63:
            diag.error(
                obj, f"{field}.namespaces[{i}]", f"{shown_value(ns)} is not an RFC 1123 label"
            )
    overlap = set(term.match_label_keys) & set(term.mismatch_label_keys)
    for key in sorted(overlap):
        diag.error(
            obj, f"{field}.mismatchLabelKeys", f"key {shown_value(key)} is also in matchLabelKeys"
        )
    selector = term.label_selector
    _check_label_keys(
        term.match_label_keys, selector, owner_labels, IN, obj, f"{field}.matchLabelKeys", diag
    )
    _check_label_keys(
        term.mismatch_label_keys,
        selector,
        owner_labels,
        NOT_IN,
        obj,
        f"{field}.mismatchLabelKeys",
        diag,
    )


def validate_spread(
    constraints: Sequence[SpreadConstraint],
    owner_labels: Mapping[str, str],
    obj: str,
    field: str,
    diag: Diagnostics,
) -> None:
    """``validateTopologySpreadConstraints``; ``field`` is the list's path."""
    pairs: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        at = f"{field}[{i}]"
        if c.max_skew <= 0:
            diag.error(obj, f"{at}.maxSkew", "must be greater than zero")
        _check_key(c.topology_key, obj, f"{at}.topologyKey", diag)
        if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            diag.error(obj, f"{at}.whenUnsatisfiable", "must be DoNotSchedule or ScheduleAnyway")
        pair = (c.topology_key, c.when_unsatisfiable)
        if pair in pairs:
            diag.error(
                obj,
                f"{at}",
                f"duplicate topologyKey {shown_value(c.topology_key)} with whenUnsatisfiable "
                f"{c.when_unsatisfiable}",
            )
        pairs.add(pair)
        if c.min_domains is not None:
            if c.min_domains <= 0:
                diag.error(obj, f"{at}.minDomains", "must be greater than zero")
            elif not c.hard:
                diag.error(
                    obj,
                    f"{at}.minDomains",
                    "can only be set when whenUnsatisfiable is DoNotSchedule",
                )
        if c.node_affinity_policy not in INCLUSION_POLICIES:
            diag.error(obj, f"{at}.nodeAffinityPolicy", "must be Honor or Ignore")
        if c.node_taints_policy not in INCLUSION_POLICIES:
            diag.error(obj, f"{at}.nodeTaintsPolicy", "must be Honor or Ignore")
        if c.label_selector is not None:
            validate_label_selector(c.label_selector, obj, f"{at}.labelSelector", diag)
        _check_label_keys(
            c.match_label_keys,
            c.label_selector,
            owner_labels,
            IN,
            obj,
            f"{at}.matchLabelKeys",
            diag,
        )


def validate_preferred_node_terms(
    terms: Sequence[PreferredNodeTerm], obj: str, field: str, diag: Diagnostics
) -> None:
    """``validatePreferredSchedulingTerms``; ``field`` is the list's path."""
    for i, term in enumerate(terms):
        at = f"{field}[{i}]"
        if not MIN_WEIGHT <= term.weight <= MAX_WEIGHT:
            diag.error(obj, f"{at}.weight", f"must be in the range {MIN_WEIGHT}-{MAX_WEIGHT}")
        for j, r in enumerate(term.expressions):
            _check_node_requirement(r, obj, f"{at}.preference.matchExpressions[{j}]", diag)
        for j, r in enumerate(term.fields):
            where = f"{at}.preference.matchFields[{j}]"
            if r.key != NAME_FIELD:
                diag.error(obj, f"{where}.key", f"must be {NAME_FIELD}")
            elif r.operator not in (IN, NOT_IN):
                diag.error(obj, f"{where}.operator", "must be In or NotIn for metadata.name")
            elif len(r.values) != 1:
                diag.error(obj, f"{where}.values", "must have exactly one value for metadata.name")


def _check_node_requirement(r: NodeRequirement, obj: str, field: str, diag: Diagnostics) -> None:
    _check_key(r.key, obj, f"{field}.key", diag)
    if r.operator not in NODE_OPERATORS:
        diag.error(obj, f"{field}.operator", f"must be one of {', '.join(NODE_OPERATORS)}")
    elif r.operator in (IN, NOT_IN) and not r.values:
        diag.error(obj, f"{field}.values", f"must be non-empty for operator {r.operator}")
    elif r.operator in ("Exists", "DoesNotExist") and r.values:
        diag.error(obj, f"{field}.values", f"must be empty for operator {r.operator}")
    elif r.operator in (GT, LT):
        if len(r.values) != 1:
            diag.error(obj, f"{field}.values", f"must have one value for operator {r.operator}")
        elif parse_int64(r.values[0]) is None:
            diag.error(
                obj, f"{field}.values", f"{shown_value(r.values[0])} is not an integer (int64)"
            )
