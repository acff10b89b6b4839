"""``volcano-scheduler.conf`` as Volcano reads it (spec/volcano-scheduler.md §1.1).

Defaults from the spec: actions ``enqueue, allocate, backfill``; every ``enable*`` switch true
(``plugins/defaults.go``) except Hierarchy (``session.go:HierarchyEnabled``); the Helm chart's
tiers when the configuration is omitted; ``proportion`` and ``drf`` with hierarchy refused
together (``util.go:UnmarshalSchedulerConf``).
"""

from __future__ import annotations

import pytest

from models.errors import Diagnostics, Problem
from models.scheduler_conf import HELM_DEFAULT, flag_of, parse_scheduler_conf


def parse(raw: object, field: str = "scheduler") -> tuple[object, Diagnostics]:
    diag = Diagnostics()
    return parse_scheduler_conf(raw, 'Instance "x"', diag, field), diag


def only_error(diag: Diagnostics) -> Problem:
    assert diag.warnings == []
    [error] = diag.errors
    assert error.obj == 'Instance "x"'
    return error


@pytest.mark.parametrize(
    "actions", ["enqueue, allocate, backfill, reclaim", "enqueue,allocate,backfill,reclaim"]
)
def test_actions_as_a_comma_string(actions: object) -> None:
    conf, diag = parse({"actions": actions, "tiers": []})
    assert conf.actions == ("enqueue", "allocate", "backfill", "reclaim")
    assert diag.errors == diag.warnings == []


def test_actions_as_a_list_is_refused() -> None:
    """Volcano's SchedulerConfiguration.Actions is a Go string: a YAML list does not
    unmarshal into it, so the scheduler refuses the configuration."""
    _, diag = parse({"actions": ["enqueue", "allocate"], "tiers": []})
    assert [e.field for e in diag.errors] == ["scheduler.actions"]
    assert "one comma-separated string" in diag.errors[0].message


def test_actions_default_when_tiers_are_given_alone() -> None:
    conf, _ = parse({"tiers": [{"plugins": [{"name": "gang"}]}]})
    assert conf.actions == ("enqueue", "allocate", "backfill")


def test_unknown_action_is_an_error_at_its_path() -> None:
    _, diag = parse({"actions": "enqueue, teleport"})
    error = only_error(diag)
    assert error.field == "scheduler.actions"
    assert "unknown action 'teleport'" in error.message


def test_volcano_actions_vcopt_does_not_model_are_warnings() -> None:
    """gangpreempt is a real Volcano action vcopt does not model: dropped with a warning;
    shuffle (TDM's evictions, §6) is modelled and kept in place."""
    conf, diag = parse({"actions": "enqueue, gangpreempt, allocate, shuffle"})
    assert conf.actions == ("enqueue", "allocate", "shuffle")
    assert diag.errors == []
    [warning] = diag.warnings
    assert "gangpreempt" in warning.message


@pytest.mark.parametrize(
    ("key", "flag"),
    [
        ("enablePreemptable", "Preemptable"),
        ("enabledPreemptable", "Preemptable"),
        ("enabledVictim", "Victim"),
        ("enableVictim", "Victim"),
        ("enabledOverused", "Overused"),
        ("enableHierarchy", "Hierarchy"),
        ("EnableJobOrder", "JobOrder"),
        ("enableHyperNodeGradient", "HyperNodeGradient"),
    ],
)
def test_flag_spellings(key: str, flag: str) -> None:
    """Volcano spells some switches enableXxx, others enabledXxx; both mean the same."""
    assert flag_of(key) == flag


@pytest.mark.parametrize(
    "key", ["enableFoo", "enable", "hierarchy", "arguments", "enablehierarchy"]
)
def test_not_flags(key: str) -> None:
    assert flag_of(key) is None


def test_switches_default_to_true_except_hierarchy() -> None:
    conf, _ = parse({"tiers": [{"plugins": [{"name": "gang", "enablePreemptable": False}]}]})
    gang = conf.plugin("gang")
    assert gang.enabled("Preemptable") is False
    assert gang.enabled("JobOrder") is True
    assert gang.enabled("Hierarchy") is False


@pytest.mark.parametrize(
    ("plugins", "hierarchy"),
    [
        ([{"name": "capacity", "enableHierarchy": True}], True),
        ([{"name": "capacity", "enabledHierarchy": True}], True),
        ([{"name": "capacity"}], False),
        ([{"name": "capacity", "enableHierarchy": False}], False),
        ([{"name": "proportion"}], False),
    ],
)
def test_hierarchy_means_capacity_with_enable_hierarchy(
    plugins: list[dict[str, object]], hierarchy: bool
) -> None:
    conf, _ = parse({"tiers": [{"plugins": plugins}]})
    assert conf.hierarchy() is hierarchy


def test_omitted_configuration_is_the_helm_default() -> None:
    """Helm chart: same actions; tier 1 priority, gang (enablePreemptable false), conformance;
    tier 2 overcommit, drf (enablePreemptable false), predicates, proportion, nodeorder,
    binpack."""
    conf, diag = parse(None)
    assert conf is HELM_DEFAULT
    assert diag.errors == diag.warnings == []
    assert conf.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in tier] for tier in conf.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    assert not conf.plugin("gang").enabled("Preemptable")
    assert not conf.plugin("drf").enabled("Preemptable")
    assert conf.plugin("priority").enabled("Preemptable")
    assert not conf.hierarchy()


def test_arguments_and_configurations() -> None:
    conf, diag = parse(
        {
            "tiers": [
                {"plugins": [{"name": "capacity", "arguments": {"ancestorReclaimLevel": 1}}]}
            ],
            "configurations": [
                {"name": "preempt", "arguments": {"enableTopologyAwarePreemption": True}}
            ],
        }
    )
    assert diag.errors == []
    assert conf.plugin("capacity").arguments == {"ancestorReclaimLevel": 1}
    assert conf.configurations == {"preempt": {"enableTopologyAwarePreemption": True}}


@pytest.mark.parametrize(
    ("raw", "field", "fragment"),
    [
        ({"configurations": {"preempt": {}}}, "scheduler.configurations", "must be a list"),
        (
            {"configurations": [{"name": "preempt", "args": {}}]},
            "scheduler.configurations[0].args",
            "unknown field",
        ),
        ({"tier": []}, "scheduler.tier", "unknown field"),
        ({"tiers": "gang"}, "scheduler.tiers", "must be a list"),
        ({"tiers": [{"plugins": [], "name": "x"}]}, "scheduler.tiers[0]", "only 'plugins'"),
        (
            {"tiers": [{"plugins": [{"name": "gang", "enablePreemptable": "false"}]}]},
            "scheduler.tiers[0].plugins[0].enablePreemptable",
            "must be true or false",
        ),
        (
            {"tiers": [{"plugins": [{"name": "gang", "preemptable": False}]}]},
            "scheduler.tiers[0].plugins[0].preemptable",
            "unknown plugin option",
        ),
        (
            {"tiers": [{"plugins": [{"enableJobOrder": True}]}]},
            "scheduler.tiers[0].plugins[0].name",
            "the plugin name",
        ),
        (
            {"tiers": [{"plugins": [{"name": "tdm", "arguments": ["a"]}]}]},
            "scheduler.tiers[0].plugins[0].arguments",
            "must be a mapping",
        ),
        ("enqueue, allocate", "scheduler", "must be a volcano-scheduler.conf mapping"),
    ],
)
def test_errors_name_the_field_under_scheduler(raw: object, field: str, fragment: str) -> None:
    _, diag = parse(raw)
    error = only_error(diag)
    assert error.field == field
    assert fragment in error.message


def test_proportion_and_capacity_together_is_one_warning_on_the_later_entry() -> None:
    """Volcano's ``util.go:UnmarshalSchedulerConf`` refuses only proportion with hierarchical
    drf; proportion with capacity loads and both plugins' hooks run. vcopt warns once, on the
    entry written second: proportion, in tier 1, after capacity in tier 0 (by position, not by
    name)."""
    _, diag = parse(
        {
            "tiers": [
                {"plugins": [{"name": "gang"}, {"name": "capacity"}]},
                {"plugins": [{"name": "proportion"}]},
            ]
        }
    )
    assert not diag.errors
    assert len(diag.warnings) == 1
    warning = diag.warnings[0]
    assert warning.field == "scheduler.tiers[1].plugins[0].name"
    assert "proportion and capacity" in warning.message


def test_proportion_and_hierarchical_drf_conflict() -> None:
    _, diag = parse(
        {"tiers": [{"plugins": [{"name": "drf", "enableHierarchy": True}, {"name": "proportion"}]}]}
    )
    error = only_error(diag)
    assert error.field == "scheduler.tiers[0].plugins[0].enableHierarchy"


def test_hierarchical_drf_without_proportion_is_accepted() -> None:
    _, diag = parse(
        {"tiers": [{"plugins": [{"name": "drf", "enableHierarchy": True}, {"name": "capacity"}]}]}
    )
    assert diag.errors == []


def test_unknown_unmodelled_and_repeated_plugins_are_warnings() -> None:
    """Volcano would fail to start with an unknown plugin name, but vcopt can still reason
    about the rest; sla is a real plugin vcopt does not model; a repeated plugin is legal."""
    conf, diag = parse(
        {
            "tiers": [
                {
                    "plugins": [
                        {"name": "magic"},
                        {"name": "sla"},
                        {"name": "gang"},
                        {"name": "gang"},
                    ]
                }
            ]
        }
    )
    assert diag.errors == []
    assert [w.field for w in diag.warnings] == [
        "scheduler.tiers[0].plugins[0].name",
        "scheduler.tiers[0].plugins[1].name",
        "scheduler.tiers[0].plugins[3].name",
    ]
    assert "unknown plugin 'magic'" in diag.warnings[0].message
    assert conf.plugin("gang") is conf.tiers[0][2]


def test_without_a_field_prefix_paths_start_at_the_configuration() -> None:
    _, diag = parse({"actions": "teleport"}, field="")
    assert only_error(diag).field == "actions"


def test_to_volcano_round_trips() -> None:
    raw = {
        "actions": "enqueue, allocate, reclaim",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang", "enablePreemptable": False}]},
            {
                "plugins": [
                    {
                        "name": "capacity",
                        "enableHierarchy": True,
                        "arguments": {"ancestorReclaimLevel": 1},
                    }
                ]
            },
        ],
        "configurations": [{"name": "preempt", "arguments": {"x": 1}}],
    }
    conf, _ = parse(raw)
    again, diag = parse(conf.to_volcano())
    assert diag.errors == []
    assert again == conf
    assert parse(HELM_DEFAULT.to_volcano())[0] == HELM_DEFAULT
