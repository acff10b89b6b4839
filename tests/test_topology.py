"""HyperNode validation and the Topology tree (seed 000, DESIGN §3, volcano-scheduler.md §4.1)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from models.errors import Diagnostics
from models.selectors import LabelRequirement, LabelSelector, validate_label_selector
from models.topology import HyperNode, Member, MemberSelector, Topology, validate_hypernodes

TOP = Topology.TOP
RACK_LABEL = "topology.kubernetes.io/rack"


def exact(name: str, type_: str = "Node") -> Member:
    return Member(type_, MemberSelector(exact_name=name))


def regex(pattern: str, type_: str = "Node") -> Member:
    return Member(type_, MemberSelector(regex=pattern))


def labels(
    match_labels: dict[str, str] | None = None,
    *expressions: LabelRequirement,
    type_: str = "Node",
) -> Member:
    sel = LabelSelector(tuple((match_labels or {}).items()), tuple(expressions))
    return Member(type_, MemberSelector(label=sel))


def child(name: str) -> Member:
    return exact(name, "HyperNode")


def hn(name: str, tier: int, *members: Member, tier_name: str = "") -> HyperNode:
    return HyperNode(name, tier, tier_name, tuple(members))


def validate(hypernodes: list[HyperNode], nodes: dict[str, dict[str, str]]) -> Diagnostics:
    diag = Diagnostics()
    validate_hypernodes(hypernodes, nodes, diag)
    return diag


def only_error(diag: Diagnostics) -> tuple[str, str, str]:
    assert len(diag.errors) == 1, diag.errors
    problem = diag.errors[0]
    return problem.obj, problem.field, problem.message


NODES = {f"node-0{i}": {} for i in range(1, 4)}


def three_members(third: Member) -> list[HyperNode]:
    """A rack whose first two members are fine, so the bad one sits at index 2."""
    return [hn("rack-1", 1, exact("node-01"), exact("node-02"), third)]


# --- seed 000 §8.4 shape -------------------------------------------------------------------------


def seed_shape() -> tuple[list[HyperNode], dict[str, dict[str, str]]]:
    """Seed 000 §8.4: rack-1/rack-2 by label, spine-1 over both racks, super-spine-1 over
    spine-1 and an undefined spine-2. §1.3 says rack-1 has 4 nodes and rack-2 has 3."""
    nodes = {f"node-0{i}": {RACK_LABEL: "rack-1"} for i in range(1, 5)}
    nodes |= {f"node-0{i}": {RACK_LABEL: "rack-2"} for i in range(5, 8)}
    hypernodes = [
        hn("rack-1", 1, labels({RACK_LABEL: "rack-1"}), tier_name="rack"),
        hn("rack-2", 1, labels({RACK_LABEL: "rack-2"}), tier_name="rack"),
        hn("spine-1", 2, child("rack-1"), child("rack-2"), tier_name="spine"),
        hn("super-spine-1", 3, child("spine-1"), child("spine-2"), tier_name="super-spine"),
    ]
    return hypernodes, nodes


def test_seed_shape_is_valid_but_warns_about_missing_spine_2() -> None:
    """Volcano accepts §8.4 although spine-2 is never defined, so it is one warning, no error."""
    diag = validate(*seed_shape())
    assert diag.errors == []
    assert [(w.obj, w.field) for w in diag.warnings] == [
        ('HyperNode "super-spine-1"', "members[1].selector.exactMatch.name")
    ]
    assert "spine-2" in diag.warnings[0].message


def test_node_count_matches_seed_print_columns() -> None:
    """§1.3 prints rack-1 4, rack-2 3, spine-1 7 (= 4 + 3); super-spine-1 sums spine-1 only."""
    topo = Topology.build(*seed_shape())
    assert topo.table() == [
        ("rack-1", 1, "rack", 4),
        ("rack-2", 1, "rack", 3),
        ("spine-1", 2, "spine", 7),
        ("super-spine-1", 3, "super-spine", 7),
    ]


def test_node_count_adds_node_members_and_child_counts() -> None:
    """spine-1 has node-09 directly and rack-1 (2 nodes) as a child: 1 + 2 = 3. A Node member
    beside HyperNode members is legitimate, so it draws no warning."""
    nodes = {"node-01": {}, "node-02": {}, "node-09": {}}
    hypernodes = [
        hn("rack-1", 1, exact("node-01"), exact("node-02")),
        hn("spine-1", 2, exact("node-09"), child("rack-1")),
    ]
    diag = validate(hypernodes, nodes)
    assert diag.errors == [] and diag.warnings == []
    topo = Topology.build(hypernodes, nodes)
    assert topo.node_count("spine-1") == 3
    assert topo.real_nodes("spine-1") == frozenset(nodes)


# --- validation: one bad field each --------------------------------------------------------------


def test_negative_tier() -> None:
    diag = validate([hn("rack-1", -1, exact("node-01"))], NODES)
    assert only_error(diag)[:2] == ('HyperNode "rack-1"', "tier")


def test_tier_zero_is_allowed() -> None:
    """The CRD says minimum 0, and seed 000 §3.1 calls tier 0 the lowest level."""
    assert validate([hn("rack-1", 0, exact("node-01"))], NODES).errors == []


def test_tier_name_too_long() -> None:
    """maxLength 253: 253 characters pass, 254 fail."""
    ok = validate([hn("rack-1", 1, exact("node-01"), tier_name="r" * 253)], NODES)
    assert ok.errors == []
    diag = validate([hn("rack-1", 1, exact("node-01"), tier_name="r" * 254)], NODES)
    assert only_error(diag)[:2] == ('HyperNode "rack-1"', "tierName")


def test_no_members() -> None:
    diag = validate([hn("rack-1", 1)], NODES)
    assert only_error(diag)[:2] == ('HyperNode "rack-1"', "members")


def test_unknown_member_type() -> None:
    diag = validate(three_members(exact("node-03", "Rack")), NODES)
    assert only_error(diag)[:2] == ('HyperNode "rack-1"', "members[2].type")


def test_selector_with_nothing_set() -> None:
    diag = validate(three_members(Member("Node", MemberSelector())), NODES)
    _, field, message = only_error(diag)
    assert field == "members[2].selector"
    assert "must be specified" in message


def test_selector_with_two_kinds_set() -> None:
    """Both parts are individually valid, so the only complaint is the CEL at-most-one rule."""
    both = Member("Node", MemberSelector(exact_name="node-03", regex="^node-03$"))
    diag = validate(three_members(both), NODES)
    _, field, message = only_error(diag)
    assert field == "members[2].selector"
    assert message.startswith("only one of")


@pytest.mark.parametrize(
    "name",
    ["", "n" * 254, "Node-03", "node_03", "node-03-", "-node", "node..03", "node 03"],
)
def test_bad_exact_match_name(name: str) -> None:
    """minLength 1, maxLength 253, and the RFC 1123 subdomain pattern: lowercase alphanumerics,
    '-' inside labels, '.' between non-empty labels. The bad name draws no extra "no Node named"
    warning: the error already says what to fix."""
    diag = validate(three_members(exact(name)), NODES)
    assert only_error(diag)[:2] == ('HyperNode "rack-1"', "members[2].selector.exactMatch.name")
    assert diag.warnings == []


@pytest.mark.parametrize("name", ["node-03", "n", "a.b-c.d", "x" * 63])
def test_good_exact_match_name(name: str) -> None:
    """The real pattern has ``*``s: with the seed's misprint ``[-a-z0-9][a-z0-9]`` a name like
    "node-03" (several middle characters) would be refused."""
    assert validate(three_members(exact(name)), {name: {}, **NODES}).errors == []


def test_exact_match_name_over_63_is_only_a_warning() -> None:
    """253 is the CRD limit; the admission policy's qualifiedName check stops at 63. The brief
    asks for 1..253 as the error rule, so 64 characters is a warning naming the policy."""
    name = "n" * 64
    diag = validate(three_members(exact(name)), {name: {}, **NODES})
    assert diag.errors == []
    assert [w.field for w in diag.warnings] == ["members[2].selector.exactMatch.name"]


def test_empty_regex() -> None:
    diag = validate(three_members(regex("")), NODES)
    assert only_error(diag)[:2] == ('HyperNode "rack-1"', "members[2].selector.regexMatch.pattern")


@pytest.mark.parametrize("pattern", ["(?<=node-)03", "(?=node)", "node-(0", r"(a)\1", "a{1001}"])
def test_regex_not_in_re2_syntax(pattern: str) -> None:
    """Lookarounds and backreferences are Perl, not RE2; Go's regexp.Compile refuses them, as it
    refuses an unclosed group and a repeat count above 1000."""
    diag = validate(three_members(regex(pattern)), NODES)
    field = only_error(diag)[1]
    assert field == "members[2].selector.regexMatch.pattern"


def test_regex_compile_errors_stay_off_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """google-re2 logs bad patterns to stderr unless log_errors is off (DESIGN §3)."""
    validate(three_members(regex("(?<=x)unlogged")), NODES)
    assert "unlogged" not in capfd.readouterr().err


def test_unbalanced_parenthesis_count_is_a_policy_warning() -> None:
    r"""``node-\(`` compiles in RE2 (an escaped parenthesis) but Volcano's admission policy
    counts '(' against ')' and would refuse it: warning only."""
    diag = validate(three_members(regex(r"node-\(")), NODES)
    assert diag.errors == []
    assert any(w.field == "members[2].selector.regexMatch.pattern" for w in diag.warnings)


def test_label_match_on_hypernode_member() -> None:
    hypernodes = [
        hn("rack-1", 1, exact("node-01")),
        hn("spine-1", 2, labels({RACK_LABEL: "rack-1"}, type_="HyperNode")),
    ]
    diag = validate(hypernodes, NODES)
    assert only_error(diag)[:2] == ('HyperNode "spine-1"', "members[0].selector.labelMatch")


@pytest.mark.parametrize(
    ("requirement", "sub"),
    [
        (LabelRequirement("gpu", "Gt", ("4",)), "operator"),
        (LabelRequirement("gpu", "In", ()), "values"),
        (LabelRequirement("gpu", "NotIn", ()), "values"),
        (LabelRequirement("gpu", "Exists", ("a100",)), "values"),
        (LabelRequirement("gpu", "DoesNotExist", ("a100",)), "values"),
    ],
)
def test_bad_match_expression(requirement: LabelRequirement, sub: str) -> None:
    """Expression 0 is fine, expression 1 breaks one rule of metav1.LabelSelectorRequirement."""
    member = labels(None, LabelRequirement("pool", "Exists"), requirement)
    diag = validate([hn("rack-1", 1, member)], {"node-01": {"pool": "a"}})
    expected = f"members[0].selector.labelMatch.matchExpressions[1].{sub}"
    assert only_error(diag)[:2] == ('HyperNode "rack-1"', expected)


def test_validate_label_selector_uses_the_given_field() -> None:
    """Generic helper: the caller's field prefix is kept verbatim."""
    diag = Diagnostics()
    sel = LabelSelector(match_expressions=(LabelRequirement("k", "Exists", ("v",)),))
    validate_label_selector(sel, 'Job "default/x"', "tasks[0].affinity", diag)
    assert only_error(diag)[:2] == (
        'Job "default/x"',
        "tasks[0].affinity.matchExpressions[0].values",
    )


def test_cycle_between_two_hypernodes() -> None:
    """a lists b (member 1) and b lists a: one error, reported from the cycle's smallest name."""
    hypernodes = [
        hn("a", 1, exact("node-01"), child("b")),
        hn("b", 2, exact("node-02"), child("a")),
    ]
    obj, field, message = only_error(validate(hypernodes, NODES))
    assert (obj, field) == ('HyperNode "a"', "members[1]")
    assert message.endswith("cycle: a -> b -> a")


def test_self_member_is_a_cycle() -> None:
    """A regex that matches its own HyperNode's name makes it its own member."""
    hypernodes = [
        hn("rack-1", 1, exact("node-01")),
        hn("rack-all", 2, regex("^rack-", "HyperNode")),
    ]
    obj, field, message = only_error(validate(hypernodes, NODES))
    assert (obj, field) == ('HyperNode "rack-all"', "members[0]")
    assert "rack-all -> rack-all" in message


def test_two_parents() -> None:
    """rack-1 is listed by spine-1 first (file order), so spine-2's member 0 is the error, and the
    message names both parents."""
    hypernodes = [
        hn("rack-1", 1, exact("node-01")),
        hn("spine-1", 2, child("rack-1")),
        hn("spine-2", 2, child("rack-1")),
    ]
    obj, field, message = only_error(validate(hypernodes, NODES))
    assert (obj, field) == ('HyperNode "spine-2"', "members[0]")
    assert '"spine-1"' in message and '"spine-2"' in message and '"rack-1"' in message


def test_duplicate_name() -> None:
    hypernodes = [hn("rack-1", 1, exact("node-01")), hn("rack-1", 1, exact("node-02"))]
    assert only_error(validate(hypernodes, NODES))[:2] == ('HyperNode "rack-1"', "name")


# --- validation: warnings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("member", "field"),
    [
        (exact("node-99"), "members[0].selector.exactMatch.name"),
        (regex("^gpu-"), "members[0].selector.regexMatch.pattern"),
        (labels({RACK_LABEL: "rack-9"}), "members[0].selector.labelMatch"),
        (child("spine-9"), "members[0].selector.exactMatch.name"),
        (regex("^spine-", "HyperNode"), "members[0].selector.regexMatch.pattern"),
    ],
)
def test_member_selecting_nothing_is_a_warning(member: Member, field: str) -> None:
    diag = validate([hn("rack-1", 1, member)], NODES)
    assert diag.errors == []
    assert [(w.obj, w.field) for w in diag.warnings] == [('HyperNode "rack-1"', field)]


def test_child_tier_not_below_parent_is_a_warning() -> None:
    """rack-1 has tier 2 like its parent spine-1: allowed, but warned about."""
    hypernodes = [hn("rack-1", 2, exact("node-01")), hn("spine-1", 2, child("rack-1"))]
    diag = validate(hypernodes, NODES)
    assert diag.errors == []
    assert [(w.obj, w.field) for w in diag.warnings] == [('HyperNode "spine-1"', "members[0]")]


# --- label selectors -----------------------------------------------------------------------------

GPU_NODE = {"gpu": "a100", "pool": "a"}


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (LabelRequirement("gpu", "In", ("a100", "h100")), True),
        (LabelRequirement("gpu", "In", ("h100",)), False),
        (LabelRequirement("zone", "In", ("a100",)), False),
        (LabelRequirement("gpu", "NotIn", ("h100",)), True),
        (LabelRequirement("gpu", "NotIn", ("a100",)), False),
        (LabelRequirement("zone", "NotIn", ("x",)), True),
        (LabelRequirement("gpu", "Exists"), True),
        (LabelRequirement("zone", "Exists"), False),
        (LabelRequirement("zone", "DoesNotExist"), True),
        (LabelRequirement("gpu", "DoesNotExist"), False),
    ],
)
def test_label_operators(requirement: LabelRequirement, expected: bool) -> None:
    """Kubernetes: In needs the key with a listed value; NotIn and DoesNotExist hold when the
    key is absent; Exists only tests the key."""
    assert LabelSelector(match_expressions=(requirement,)).matches(GPU_NODE) is expected


def test_label_selector_ands_everything() -> None:
    """matchLabels pool=a holds and gpu In (a100) holds → match; pool=b breaks the AND."""
    req = LabelRequirement("gpu", "In", ("a100",))
    assert LabelSelector((("pool", "a"),), (req,)).matches(GPU_NODE)
    assert not LabelSelector((("pool", "b"),), (req,)).matches(GPU_NODE)
    assert not LabelSelector((("zone", ""),)).matches(GPU_NODE)


def test_empty_selector_matches_everything_and_invalid_matches_nothing() -> None:
    assert LabelSelector().matches({})
    assert not LabelSelector(match_expressions=(LabelRequirement("gpu", "In"),)).matches(GPU_NODE)


def test_label_match_members_with_expressions() -> None:
    """pool In (a) and gpu DoesNotExist: only cpu-1 qualifies (gpu-1 has a gpu label, b-1 is
    in pool b)."""
    nodes = {"gpu-1": {"pool": "a", "gpu": "a100"}, "cpu-1": {"pool": "a"}, "b-1": {"pool": "b"}}
    member = labels(
        None, LabelRequirement("pool", "In", ("a",)), LabelRequirement("gpu", "DoesNotExist")
    )
    topo = Topology.build([hn("cpu-rack", 1, member)], nodes)
    assert topo.real_nodes("cpu-rack") == {"cpu-1"}


# --- regex members -------------------------------------------------------------------------------


def test_regex_member_is_an_unanchored_search() -> None:
    """Go's MatchString finds the pattern anywhere: "node-1" hits node-1, node-10 and xnode-1y,
    not node-2."""
    nodes = {"node-1": {}, "node-10": {}, "xnode-1y": {}, "node-2": {}}
    topo = Topology.build([hn("r", 1, regex("node-1"))], nodes)
    assert topo.real_nodes("r") == {"node-1", "node-10", "xnode-1y"}


def test_regex_hypernode_members() -> None:
    """spine-1 takes every HyperNode whose name starts with rack-: both racks, 2 + 1 nodes."""
    nodes = {"n1": {}, "n2": {}, "n3": {}}
    hypernodes = [
        hn("rack-1", 1, exact("n1"), exact("n2")),
        hn("rack-2", 1, exact("n3")),
        hn("spine-1", 2, regex("^rack-", "HyperNode")),
    ]
    topo = Topology.build(hypernodes, nodes)
    assert topo.children("spine-1") == ("rack-1", "rack-2")
    assert topo.node_count("spine-1") == 3


def test_regex_is_linear_time() -> None:
    """``(a+)+$`` against 100,000 a's and a final b backtracks exponentially in Python's re;
    RE2 answers in linear time. Neither node name matches except the all-a one."""
    bad = "a" * 100_000 + "b"
    good = "a" * 100_000
    start = time.perf_counter()
    topo = Topology.build([hn("r", 1, regex("(a+)+$"))], {bad: {}, good: {}})
    assert time.perf_counter() - start < 2.0
    assert topo.real_nodes("r") == {good}


# --- the tree ------------------------------------------------------------------------------------


def tree() -> Topology:
    """Seed 000 §7.1: super-spine-1 (tier 3) → spine-1, spine-2 (tier 2) → rack-1..4 (tier 1) →
    node-01..08, two per rack. node-09 is in no HyperNode."""
    nodes = {f"node-0{i}": {} for i in range(1, 10)}
    racks = [
        hn(f"rack-{r}", 1, exact(f"node-0{2 * r - 1}"), exact(f"node-0{2 * r}"))
        for r in (1, 2, 3, 4)
    ]
    hypernodes = [
        *racks,
        hn("spine-1", 2, child("rack-1"), child("rack-2"), tier_name="spine"),
        hn("spine-2", 2, child("rack-3"), child("rack-4"), tier_name="spine"),
        hn("super-spine-1", 3, child("spine-1"), child("spine-2"), tier_name="super-spine"),
    ]
    assert validate(hypernodes, nodes).errors == []
    return Topology.build(hypernodes, nodes)


@pytest.mark.parametrize(
    ("nodes", "tier"),
    [
        (["node-01"], 0),
        (["node-01", "node-01"], 0),
        (["node-01", "node-02"], 1),
        (["node-01", "node-03"], 2),
        (["node-01", "node-02", "node-04"], 2),
        (["node-01", "node-05"], 3),
        (["node-01", "node-09"], 4),
    ],
)
def test_lca_tier(nodes: list[str], tier: int) -> None:
    """One node → 0; same rack → 1; racks 1 and 2 share spine-1 → 2; racks 1 and 3 only meet at
    super-spine-1 → 3; node-09 is only under the virtual root, whose tier is 3 + 1 = 4."""
    assert tree().lca_tier(nodes) == tier


def test_lowest_common() -> None:
    topo = tree()
    assert topo.lowest_common([]) is None
    assert topo.lowest_common(["node-03"]) == "rack-2"
    assert topo.lowest_common(["node-09"]) == TOP
    assert topo.lowest_common(["node-03", "node-04"]) == "rack-2"
    assert topo.lowest_common(["node-01", "node-09"]) == TOP
    assert topo.lowest_common(["node-01", "ghost"]) is None
    with pytest.raises(ValueError):
        topo.lca_tier([])


def test_leaf_of() -> None:
    """The lowest tier is 1 (the racks): node-05 is in rack-3, node-09 in no rack."""
    topo = tree()
    assert topo.leaf_of("node-05") == "rack-3"
    assert topo.leaf_of("node-09") is None
    assert topo.leaf_of("ghost") is None


def test_leaf_of_only_looks_at_the_lowest_tier() -> None:
    """FindHyperNodeForNode searches HyperNodesTiers[0] only: node-02 sits directly in a tier-2
    HyperNode while tier 1 exists, so it has no leaf."""
    nodes = {"node-01": {}, "node-02": {}}
    hypernodes = [
        hn("rack-1", 1, exact("node-01")),
        hn("spine-1", 2, child("rack-1"), exact("node-02")),
    ]
    topo = Topology.build(hypernodes, nodes)
    assert topo.leaf_of("node-01") == "rack-1"
    assert topo.leaf_of("node-02") is None


def test_lca() -> None:
    """Walk b's chain and stop at the first entry that is a or above a."""
    topo = tree()
    assert topo.lca("", "rack-1") == "rack-1"
    assert topo.lca("rack-1", "") == "rack-1"
    assert topo.lca("rack-1", "rack-2") == "spine-1"
    assert topo.lca("rack-1", "rack-3") == "super-spine-1"
    assert topo.lca("spine-1", "rack-1") == "spine-1"
    assert topo.lca("rack-1", "spine-2") == "super-spine-1"
    assert topo.lca("rack-1", TOP) == TOP


def test_tree_structure() -> None:
    topo = tree()
    assert topo.ancestors("rack-1") == ["spine-1", "super-spine-1", TOP]
    assert topo.ancestors(TOP) == []
    assert topo.parent("super-spine-1") == TOP
    assert topo.parent(TOP) is None
    assert topo.children(TOP) == ("super-spine-1",)
    assert topo.children("spine-2") == ("rack-3", "rack-4")
    assert topo.tiers() == [1, 2, 3, 4]
    assert (topo.min_tier, topo.top_tier) == (1, 4)
    assert topo.at_tier(1) == ["rack-1", "rack-2", "rack-3", "rack-4"]
    assert topo.at_tier(4) == [TOP]
    assert topo.real_nodes(TOP) == frozenset(f"node-0{i}" for i in range(1, 10))
    assert topo.real_nodes("spine-2") == {"node-05", "node-06", "node-07", "node-08"}
    assert topo.tier_name("spine-1") == "spine"
    assert TOP not in topo.names


def test_tier_by_name() -> None:
    topo = tree()
    assert topo.tier_by_name("spine") == 2
    assert topo.tier_by_name("super-spine") == 3
    assert topo.tier_by_name("rack") is None
    assert topo.tier_by_name("core") is None


def test_virtual_top_without_hypernodes() -> None:
    """No HyperNodes: the root has tier 1, holds every node, and is every node's leaf."""
    topo = Topology.build([], {"n1": {}, "n2": {}})
    assert topo.tiers() == [1]
    assert topo.top_tier == 1
    assert topo.leaf_of("n1") == TOP
    assert topo.lca_tier(["n1", "n2"]) == 1
    assert topo.table() == []


def test_virtual_top_above_tier_zero() -> None:
    """Real tiers 0 only: the root's tier is 0 + 1 = 1."""
    topo = Topology.build([hn("r", 0, exact("n1"))], {"n1": {}})
    assert topo.tiers() == [0, 1]
    assert topo.parent("r") == TOP


def test_build_survives_invalid_input() -> None:
    """A cycle and a second parent are dropped (first link in file order wins); unknown member
    names are ignored. a lists b first, so b's link back to a would close a cycle."""
    hypernodes = [
        hn("a", 2, child("b"), exact("ghost")),
        hn("b", 1, exact("n1"), child("a")),
        hn("c", 2, child("b")),
    ]
    topo = Topology.build(hypernodes, {"n1": {}})
    assert topo.parent("b") == "a"
    assert topo.parent("a") == TOP
    assert topo.children("c") == ()
    assert topo.real_nodes("a") == {"n1"}


def test_topology_is_immutable() -> None:
    topo = tree()
    with pytest.raises(dataclasses.FrozenInstanceError):
        topo.names = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        topo._tier["rack-1"] = 9  # type: ignore[index]


def test_tier_name_at_two_tiers_warns_and_resolves_to_the_lowest() -> None:
    """The tier name rack is used at tier 1 (rack-1) and tier 2 (rack-x), so highestTierName
    rack is ambiguous: the tier-2 object is warned about and the name resolves to the safer
    (lower) tier 1."""
    hypernodes = [
        hn("rack-1", 1, exact("node-01"), tier_name="rack"),
        hn("rack-x", 2, exact("node-02"), tier_name="rack"),
    ]
    diag = validate(hypernodes, NODES)
    assert diag.errors == []
    assert [(w.obj, w.field) for w in diag.warnings] == [('HyperNode "rack-x"', "tierName")]
    assert Topology.build(hypernodes, NODES).tier_by_name("rack") == 1


def test_label_index_selects_what_a_full_scan_selects() -> None:
    """labelMatch read through the (key, value) index selects exactly what testing every
    node's labels selects, also with a second label and an expression."""
    from models.selectors import LabelRequirement, LabelSelector
    from models.topology import NODE, Member, MemberSelector, _select, label_index

    nodes = {
        f"n{i}": {"rack": f"r{i % 3}", "gpu": "a100" if i % 2 else "h100", "zone": str(i % 5)}
        for i in range(30)
    }
    selectors = [
        LabelSelector(match_labels=(("rack", "r1"),)),
        LabelSelector(match_labels=(("rack", "r2"), ("gpu", "a100"))),
        LabelSelector(
            match_labels=(("gpu", "h100"),),
            match_expressions=(LabelRequirement("zone", "In", ("1", "3")),),
        ),
        LabelSelector(match_labels=(("rack", "r9"),)),
    ]
    index = label_index(nodes)
    for sel in selectors:
        member = Member(NODE, MemberSelector(label=sel))
        expected = sorted(n for n, labels in nodes.items() if sel.matches(labels))
        assert _select(member, nodes, (), index) == expected == _select(member, nodes, ())
