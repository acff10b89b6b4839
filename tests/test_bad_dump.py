"""Bad input in the dump form: every refusal names the object and field as the dump writes them.

Every file in ``tests/data/kube/bad/`` is ``tests/data/kube/dump_base.yaml`` with one thing
broken; its first line says what, then one ``# expect: OBJECT | FIELD | MESSAGE FRAGMENT``
line per problem the file must give. The expectations come from the rule each file breaks
(the API server's ``ValidatePodSpec``, ``ValidateLabels``, ``ValidateResourceRequirements``,
``ValidateTolerations``, ``validateNodeTaints``; the vcjob CRD and webhooks of
``spec/volcano-job.md``; Volcano's queue webhook), and from the object the user wrote: a bare
Pod's spread constraint is the Pod's ``spec.topologySpreadConstraints``, never the
``tasks[0]`` of the job vcopt reads it as. Problems vcopt finds only after translating the dump
carry the compact path as a hint at the end of the message, where the written field holds a
value vcopt derived (a HAMi allocation annotation read as devices).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from models.errors import InputError, Problem
from models.io.kube.provenance import INSTANCE, Origin, Provenance, Rest
from models.load import load, load_inputs
from optimizer.cli import main
from tests.test_bad_input import assert_command_says_exactly, assert_refused_exactly

DATA = Path(__file__).parent / "data" / "kube"
BASE = DATA / "dump_base.yaml"
BAD = sorted((DATA / "bad").glob("*.yaml"))

RULES = {
    # pod spec, as the API server validates it
    "pod_spread_max_skew_over_int32",
    "pod_spread_max_skew_zero",
    "pod_scheduler_name_list",
    "pod_node_name_number",
    "pod_node_name_unknown",
    "pod_priority_not_integer",
    "pod_phase_number",
    "pod_toleration_exists_with_value",
    "pod_toleration_effect_unknown",
    "pod_toleration_seconds_without_no_execute",
    "pod_toleration_empty_key_equal",
    "pod_node_selector_value_invalid",
    # container resources
    "pod_cpu_request_over_limit",
    "pod_gpu_request_not_limit",
    "pod_extended_request_without_limit",
    "pod_resource_name_unknown",
    # names, labels and annotations
    "pod_name_digits",
    "pod_label_key_two_slashes",
    "pod_label_key_too_long",
    "pod_label_key_emoji",
    "pod_label_value_too_long",
    "podgroup_label_key_yaml_boolean",
    "node_label_key_null",
    "pod_annotation_key_invalid",
    # HAMi allocation annotations
    "pod_allocation_digits",
    "pod_allocation_device_twice",
    "pod_allocation_over_device",
    # nodes
    "node_allocatable_gpu_fraction",
    "node_taint_duplicate",
    "node_taint_key_invalid",
    # PodGroups and queues, named as written after translation
    "podgroup_min_member_negative",
    "podgroup_queue_missing",
    "podgroup_pods_toleration_effect",
    "pod_queue_annotation_missing",
    "queue_self_parent",
    "queue_spec_key_yaml_boolean",
    # ConfigMaps
    "configmap_scheduler_conf_option",
    "snapshot_now_not_a_time",
    # vcjob: CRD schema and webhook
    "vcjob_max_retry_negative",
    "vcjob_ttl_negative",
    "vcjob_min_success_zero",
    "vcjob_task_max_retry_negative",
    "vcjob_replicas_over_int32",
    "vcjob_template_scheduler_name_list",
    "vcjob_container_name_invalid",
}
"""The cases of the issue that are rules of their own; each must have its own file."""


def test_base_dump_is_valid_without_warnings() -> None:
    """Every error of a bad file comes from its one change only if the base is clean."""
    instance = load(BASE)
    assert instance.warnings == ()
    assert [j.key for j in instance.jobs] == ["default/pg1", "default/bare", "default/train"]


def test_every_rule_has_its_own_file() -> None:
    assert {p.stem for p in BAD} >= RULES


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_dump_gives_exactly_the_expected_problems(path: Path) -> None:
    assert_refused_exactly(path, load)


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_validate_names_the_object_as_written_and_exits_2(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_command_says_exactly(path, capsys)


def test_annotations_over_256_kib_are_refused(tmp_path: Path) -> None:
    """The API server keeps at most 256 KiB (262,144 bytes) of annotation keys and values per
    object; the bare pod here carries 300 KiB in one value."""
    text = BASE.read_text(encoding="utf-8")
    written = "  annotations: {scheduling.volcano.sh/queue-name: team-a}"
    assert text.count(written) == 1
    big = f"{written[:-1]}, example.com/blob: {'x' * 300 * 1024}}}"
    path = tmp_path / "dump.yaml"
    path.write_text(text.replace(written, big), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load(path)
    assert [(p.obj, p.field) for p in caught.value.problems] == [
        ('Pod "default/bare"', "metadata.annotations")
    ]
    assert "262,144" in caught.value.problems[0].message


@pytest.mark.parametrize("form", [BASE, DATA.parent / "base.yaml"], ids=["dump", "compact"])
def test_now_given_as_an_option_is_named_as_the_option(
    form: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--now tomorrow`` replaces the input's own time: the problem is the option's, in
    either form, and names no file."""
    with pytest.raises(InputError) as caught:
        load_inputs([form], now="tomorrow")
    assert [(p.file, p.obj, p.field) for p in caught.value.problems] == [("", "", "--now")]
    assert main(["validate", "--now", "tomorrow", str(form)]) == 2
    assert capsys.readouterr().err.startswith("error: --now: expected an RFC 3339 time")


def test_a_scheduler_conf_beside_the_dump_is_named_by_its_file(tmp_path: Path) -> None:
    """A raw volcano-scheduler.conf given as a second file: its problem names that file and
    the path inside it, not the instance's ``scheduler`` field."""
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(
        "actions: enqueue, allocate\ntiers:\n- plugins:\n  - {name: gang, enableFoo: true}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        load_inputs([BASE, conf])
    assert [(p.file, p.obj, p.field) for p in caught.value.problems] == [
        (str(conf), "", "tiers[0].plugins[0].enableFoo")
    ]


# -- the provenance map on its own -------------------------------------------------------------


def _provenance() -> Provenance:
    """A bare Pod read as job default/bare: its task's affinity comes from the Pod's spec,
    its resources are summed over containers; the instance's scheduler comes from a
    ConfigMap; a HyperNode's fields are its spec's, but for its name."""
    origins = Provenance()
    job = 'Job "default/bare"'
    origins.add_object(job, 'Pod "default/bare"', [("tasks[0].affinity", "spec.affinity")])
    origins.add(job, "tasks[0].labels", Origin('Pod "default/bare"', "metadata.labels"))
    origins.add(
        job, "tasks[0].resources", Origin('Pod "default/bare"', "spec.containers", Rest.DERIVED)
    )
    origins.add(
        INSTANCE,
        "scheduler",
        Origin('ConfigMap "v/cm"', "data.volcano-scheduler.conf", Rest.INSIDE),
    )
    hypernode = 'HyperNode "h"'
    origins.add(hypernode, "", Origin(hypernode, "spec"))
    origins.add_object(hypernode, hypernode, [("name", "metadata.name")])
    origins.instance = 'Instance "dump"'
    return origins


@pytest.mark.parametrize(
    ("obj", "field", "written"),
    [
        (
            'Job "default/bare"',
            "tasks[0].affinity.podAffinity",
            ('Pod "default/bare"', "spec.affinity.podAffinity", "m"),
        ),
        # a label key holds dots: the longest recorded prefix is tasks[0].labels
        (
            'Job "default/bare"',
            "tasks[0].labels.example.com/x",
            ('Pod "default/bare"', "metadata.labels.example.com/x", "m"),
        ),
        (
            'Job "default/bare"',
            "tasks[0].resources.requests.cpu",
            (
                'Pod "default/bare"',
                "spec.containers",
                "m (vcopt reads it as tasks[0].resources.requests.cpu)",
            ),
        ),
        # nothing recorded for tasks[0].replicas: the object as a whole, with the hint
        (
            'Job "default/bare"',
            "tasks[0].replicas",
            ('Pod "default/bare"', "", "m (vcopt reads it as tasks[0].replicas)"),
        ),
        (
            'Instance "dump"',
            "scheduler.tiers[1].plugins[0].name",
            ('ConfigMap "v/cm"', "data.volcano-scheduler.conf", "tiers[1].plugins[0].name: m"),
        ),
        # a field recorded for the object as a whole continues below its spec
        ('HyperNode "h"', "tier", ('HyperNode "h"', "spec.tier", "m")),
        ('HyperNode "h"', "name", ('HyperNode "h"', "metadata.name", "m")),
        # an object the map does not know is left as it is
        ('Queue "q"', "weight", ('Queue "q"', "weight", "m")),
    ],
)
def test_a_problem_is_named_through_the_longest_recorded_prefix(
    obj: str, field: str, written: tuple[str, str, str]
) -> None:
    problem = Problem("m", obj, field, "dump.yaml")
    (got,) = _provenance().written([problem])
    assert (got.obj, got.field, got.message) == written
    assert got.file == "dump.yaml"


def test_two_problems_that_become_one_are_reported_once() -> None:
    """A bare Pod's priority is read for its job and for its task: one place in the Pod."""
    origins = Provenance()
    origins.add_object('Job "d/p"', 'Pod "d/p"', [("priority", "spec.priority")])
    origins.add('Job "d/p"', "tasks[0].priority", Origin('Pod "d/p"', "spec.priority"))
    problems = [
        Problem("expected an integer", 'Job "d/p"', "priority"),
        Problem("expected an integer", 'Job "d/p"', "tasks[0].priority"),
    ]
    assert origins.written(problems) == [
        Problem("expected an integer", 'Pod "d/p"', "spec.priority")
    ]


def test_an_option_names_no_file() -> None:
    origins = Provenance()
    origins.add(INSTANCE, "now", Origin("", "--now", file=""))
    origins.instance = 'Instance "x"'
    (got,) = origins.written([Problem("bad time", 'Instance "x"', "now", "x.yaml")])
    assert got == Problem("bad time", "", "--now", "")
