"""The term semantics every engine and the verifier share (models/affinity.py), from
spec/k8s-affinity-spread.md §1, §4.1 and §5."""

from __future__ import annotations

from models.affinity import (
    NodeRequirement,
    PodAffinityTerm,
    PreferredNodeTerm,
    SpreadConstraint,
    preferred_node_score,
)
from models.errors import Diagnostics
from models.selectors import LabelRequirement, LabelSelector
from models.workload import Job as JobModel
from models.workload import Task, validate_job

WEB = LabelSelector((("app", "web"),))


def test_match_label_keys_merge_with_the_owners_labels_and_are_idempotent() -> None:
    """§1.2: matchLabelKeys [version] on a pod with version=v1 adds ``version In [v1]``; a key
    the pod lacks is dropped; merging an already merged selector adds nothing."""
    term = PodAffinityTerm("zone", WEB, match_label_keys=("version", "absent"))
    merged = term.selector_for({"app": "web", "version": "v1"})
    assert merged == LabelSelector((("app", "web"),), (LabelRequirement("version", "In", ("v1",)),))
    again = PodAffinityTerm("zone", merged, match_label_keys=("version",))
    assert again.selector_for({"version": "v1"}) == merged
    assert term.matches(merged, "ns", "ns", {"app": "web", "version": "v1"})
    assert not term.matches(merged, "ns", "ns", {"app": "web", "version": "v2"})


def test_mismatch_label_keys_add_not_in() -> None:
    term = PodAffinityTerm("zone", LabelSelector(), mismatch_label_keys=("tenant",))
    sel = term.selector_for({"tenant": "a"})
    assert not term.matches(sel, "ns", "ns", {"tenant": "a"})
    assert term.matches(sel, "ns", "ns", {"tenant": "b"})
    assert term.matches(sel, "ns", "ns", {})  # NotIn holds where the key is absent


def test_namespaces_default_listed_and_selected() -> None:
    """§1.2: no namespaces and no namespaceSelector → the owner's namespace only; a list →
    those; ``namespaceSelector: {}`` → every namespace; a nil labelSelector matches nothing."""
    own = PodAffinityTerm("zone", WEB)
    assert own.matches(WEB, "a", "a", {"app": "web"})
    assert not own.matches(WEB, "a", "b", {"app": "web"})
    listed = PodAffinityTerm("zone", WEB, namespaces=("b",))
    assert listed.matches(WEB, "a", "b", {"app": "web"})
    assert not listed.matches(WEB, "a", "a", {"app": "web"})
    everywhere = PodAffinityTerm("zone", WEB, namespace_selector=LabelSelector())
    assert everywhere.matches(WEB, "a", "z", {"app": "web"})
    nil = PodAffinityTerm("zone", None)
    assert not nil.matches(None, "a", "a", {"app": "web"})


def test_spread_selector_empty_counts_nothing_and_nil_too() -> None:
    """§4.1: ``labelSelector: {}`` counts no pod (the Empty() short-circuit); nil neither."""
    c = SpreadConstraint(1, "zone", "DoNotSchedule", LabelSelector())
    assert not c.counts(LabelSelector(), {"app": "web"})
    assert not c.counts(None, {"app": "web"})
    assert c.counts(WEB, {"app": "web"})


def test_preferred_node_terms_score_as_node_affinity_does() -> None:
    """§5: Σ weights of matching terms; an empty preference matches nothing; Gt/Lt compare
    integers; matchFields reads the node name. Node A{zone z1, gen 5}: 80 (zone=z1) + 15
    (gen > 3) + 5 (name A) = 100; the empty term adds nothing."""
    terms = (
        PreferredNodeTerm(80, (NodeRequirement("zone", "In", ("z1",)),)),
        PreferredNodeTerm(15, (NodeRequirement("gen", "Gt", ("3",)),)),
        PreferredNodeTerm(5, fields=(NodeRequirement("metadata.name", "In", ("A",)),)),
        PreferredNodeTerm(50),
    )
    assert preferred_node_score(terms, "A", {"zone": "z1", "gen": "5"}) == 100
    assert preferred_node_score(terms, "B", {"zone": "z1", "gen": "x"}) == 80
    assert NodeRequirement("gen", "Lt", ("3",)).matches("2")
    assert not NodeRequirement("gen", "Lt", ("3",)).matches(None)


def test_a_merged_selector_read_back_from_the_api_is_valid() -> None:
    """The API server's merge writes ``key In [value]`` into the selector; a pod read back
    with it and its matchLabelKeys is valid, while a different requirement on the key is not."""
    from models.affinity import PodAffinity

    def problems(selector: LabelSelector) -> list[str]:
        term = PodAffinityTerm("zone", selector, match_label_keys=("version",))
        task = Task(
            "t", 1, labels={"version": "v1"}, pod_anti_affinity=PodAffinity(required=(term,))
        )
        diag = Diagnostics()
        validate_job(JobModel("j", tasks=(task,)), diag)
        return [p.field for p in diag.errors]

    merged = LabelSelector((), (LabelRequirement("version", "In", ("v1",)),))
    assert problems(merged) == []
    other = LabelSelector((), (LabelRequirement("version", "In", ("v2",)),))
    key = "tasks[0].affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
    assert problems(other) == [f"{key}.matchLabelKeys[0]"]
