"""Kubernetes label selectors (``metav1.LabelSelector``), as the API server validates them and
as they match labels.

HyperNode ``labelMatch`` members and required node affinity both select by labels; one
implementation serves them, with Kubernetes' semantics for absent keys and invalid
requirements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .errors import Diagnostics

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
LABEL_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


@dataclass(frozen=True)
class LabelRequirement:
    """One metav1.LabelSelectorRequirement: ``key`` related to ``values`` by ``operator``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def problem(self) -> tuple[str, str] | None:
        """(field, message) of what makes Kubernetes refuse this requirement, or None if valid."""
        if self.operator not in LABEL_OPERATORS:
            allowed = ", ".join(LABEL_OPERATORS)
            return "operator", f'must be one of {allowed}, got "{self.operator}"'
        if self.operator in (IN, NOT_IN) and not self.values:
            return "values", f"must be non-empty for operator {self.operator}"
        if self.operator in (EXISTS, DOES_NOT_EXIST) and self.values:
            return "values", f"must be empty for operator {self.operator}"
        return None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes semantics: NotIn and DoesNotExist also hold when the key is absent."""
        if self.operator == IN:
            return self.key in labels and labels[self.key] in self.values
        if self.operator == NOT_IN:
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return self.key in labels
        if self.operator == DOES_NOT_EXIST:
            return self.key not in labels
        return False


@dataclass(frozen=True)
class LabelSelector:
    """A metav1.LabelSelector; generic, so node affinity and pod selectors can use it too."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """All matchLabels and all expressions hold; an empty selector matches everything.

        An invalid requirement makes the whole selector match nothing, because Kubernetes
        (``LabelSelectorAsSelector``) refuses to build it and Volcano then selects no member.
        """
        if any(req.problem() for req in self.match_expressions):
            return False
        return all(k in labels and labels[k] == v for k, v in self.match_labels) and all(
            req.matches(labels) for req in self.match_expressions
        )


def validate_label_selector(sel: LabelSelector, obj: str, field: str, diag: Diagnostics) -> None:
    """Record what Kubernetes would refuse in ``sel``; ``field`` is the selector's own path."""
    for i, req in enumerate(sel.match_expressions):
        problem = req.problem()
        if problem is not None:
            sub, message = problem
            diag.error(obj, f"{field}.matchExpressions[{i}].{sub}", message)
