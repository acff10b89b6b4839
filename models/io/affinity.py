"""A task's ``affinity`` and ``topologySpreadConstraints``, read into ``models.affinity`` terms.

Both input forms reach this reader: the compact task writes the pod-spec fields verbatim, and a
kubectl dump's pods are turned into compact tasks first. Only the shape is checked here (field
names and JSON types, by ``schema``'s models, at the path written); the API server's rules on
the values are ``models.affinity``'s validators, run on the finished task.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..affinity import (
    HONOR,
    IGNORE,
    NodeRequirement,
    PodAffinity,
    PodAffinityTerm,
    PreferredNodeTerm,
    SpreadConstraint,
)
from ..errors import Diagnostics
from ..selectors import LabelRequirement, LabelSelector
from .errors import sub_problems
from .schema import (
    LabelExpressionIn,
    LabelSelectorIn,
    PodAffinityIn,
    PodAffinityTermIn,
    PreferredSchedulingTermIn,
    SpreadConstraintIn,
)

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


_POD_AFFINITY = TypeAdapter(PodAffinityIn | None)
_PREFERRED_NODE = TypeAdapter(list[PreferredSchedulingTermIn])
_SPREAD = TypeAdapter(list[SpreadConstraintIn])


def selector(raw: LabelSelectorIn | None) -> LabelSelector | None:
    if raw is None:
        return None
    return LabelSelector(
        tuple(raw.matchLabels.items()),
        tuple(LabelRequirement(e.key, e.operator, tuple(e.values)) for e in raw.matchExpressions),
    )


def _term(raw: PodAffinityTermIn, weight: int = 0) -> PodAffinityTerm:
    return PodAffinityTerm(
        topology_key=raw.topologyKey,
        label_selector=selector(raw.labelSelector),
        namespaces=tuple(raw.namespaces),
        namespace_selector=selector(raw.namespaceSelector),
        match_label_keys=tuple(raw.matchLabelKeys),
        mismatch_label_keys=tuple(raw.mismatchLabelKeys),
        weight=weight,
    )


def pod_affinity(
    raw: Mapping[str, Any] | None, key: str, obj: str, field: str, diag: Diagnostics
) -> PodAffinity | None:
    """``affinity.<key>`` (podAffinity or podAntiAffinity); None when absent or malformed."""
    if not raw or key not in raw:
        return None
    try:
        parsed = _POD_AFFINITY.validate_python(raw[key])
    except ValidationError as err:
        diag.errors.extend(sub_problems(err, obj, f"{field}.{key}"))
        return None
    if parsed is None:
        return None
    return PodAffinity(
        tuple(_term(t) for t in parsed.requiredDuringSchedulingIgnoredDuringExecution),
        tuple(
            _term(t.podAffinityTerm, t.weight)
            for t in parsed.preferredDuringSchedulingIgnoredDuringExecution
        ),
    )


def preferred_node_terms(
    node_affinity: object, obj: str, field: str, diag: Diagnostics
) -> tuple[PreferredNodeTerm, ...]:
    """``nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution``."""
    if not isinstance(node_affinity, Mapping) or not node_affinity.get(PREFERRED):
        return ()
    try:
        terms = _PREFERRED_NODE.validate_python(node_affinity[PREFERRED])
    except ValidationError as err:
        diag.errors.extend(sub_problems(err, obj, f"{field}.nodeAffinity.{PREFERRED}"))
        return ()

    def reqs(items: list[LabelExpressionIn]) -> tuple[NodeRequirement, ...]:
        return tuple(NodeRequirement(e.key, e.operator, tuple(e.values)) for e in items)

    return tuple(
        PreferredNodeTerm(
            t.weight, reqs(t.preference.matchExpressions), reqs(t.preference.matchFields)
        )
        for t in terms
    )


def spread_constraints(
    raw: list[Any], obj: str, field: str, diag: Diagnostics
) -> tuple[SpreadConstraint, ...]:
    """``topologySpreadConstraints`` with the scheduler's defaults for the policies."""
    if not raw:
        return ()
    try:
        parsed = _SPREAD.validate_python(raw)
    except ValidationError as err:
        diag.errors.extend(sub_problems(err, obj, field))
        return ()
    return tuple(
        SpreadConstraint(
            max_skew=c.maxSkew,
            topology_key=c.topologyKey,
            when_unsatisfiable=c.whenUnsatisfiable,
            label_selector=selector(c.labelSelector),
            min_domains=c.minDomains,
            node_affinity_policy=c.nodeAffinityPolicy or HONOR,
            node_taints_policy=c.nodeTaintsPolicy or IGNORE,
            match_label_keys=tuple(c.matchLabelKeys),
        )
        for c in parsed
    )
