"""Bad input: every validation rule of DESIGN §3, and files that are not instances at all.

Every file in ``tests/data/bad/`` is ``tests/data/base.yaml`` with one thing broken. Its first
line says what; then one ``# expect: OBJECT | FIELD | MESSAGE FRAGMENT`` line per error the
file must produce (``-`` where a file-level problem has no object or field). The expectations
come from the rule each file breaks (DESIGN §3 and the Volcano rules it cites), so a file also
fails when a second, cascading error appears. ``tests/data/warn/`` holds files that break only
what Volcano merely logs: they must load, with one ``# expect-warning:`` line per warning.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from models.errors import InputError, Problem
from models.load import load
from optimizer.cli import main

DATA = Path(__file__).parent / "data"
BASE = DATA / "base.yaml"
BAD = sorted((DATA / "bad").glob("*.yaml"))
WARN = sorted((DATA / "warn").glob("*.yaml"))
VCOPT = Path(sys.executable).with_name("vcopt")

RULES = {
    # HyperNode: CRD schema, CEL rules, admission webhook, tree rules
    "hypernode_tier_negative",
    "hypernode_tiername_too_long",
    "hypernode_no_members",
    "hypernode_zero_selectors",
    "hypernode_two_selectors",
    "hypernode_exact_name_not_rfc1123",
    "hypernode_regex_not_re2",
    "hypernode_labelmatch_on_hypernode",
    "hypernode_cycle",
    "hypernode_two_parents",
    "hypernode_duplicate_name",
    # Queue: webhook and scheduler rules
    "queue_self_parent",
    "queue_cycle",
    "queue_depth",
    "queue_sibling_deserved",
    "queue_sibling_guarantee",
    "queue_capability_over_ancestor",
    "queue_job_in_non_leaf",
    "queue_unknown_parent",
    "queue_duplicate_name",
    # TDM
    "tdm_bad_window",
    "tdm_zone_not_configured",
    # GPU devices and what running pods hold on them
    "gpu_device_memory_zero",
    "gpu_share_over_memory",
    "gpu_share_over_cores",
    "gpu_shares_sum_over_memory",
    "gpu_missing_device",
    # files that are no instance, and shapes
    "not_yaml",
    "empty",
    "wrong_kind",
    "wrong_api_version",
    "deep_nesting",
    "alias_bomb",
    "unknown_field_top",
    "unknown_field_node",
    "unknown_field_task",
    "unknown_field_selector",
    "unknown_field_running",
    "unknown_field_scheduler",
    "unknown_field_plugin",
    "bad_quantity",
    "negative_quantity",
    # duplicates and references
    "duplicate_node",
    "duplicate_job",
    "duplicate_task",
    "job_missing_queue",
    "job_missing_priority_class",
    "running_missing_node",
    "running_index_ge_replicas",
    "min_available_over_replicas",
    # names as the API server accepts them (models/names.py)
    "name_node_uppercase",
    "name_node_leading_dash",
    "name_node_too_long",
    "name_node_rtl_override",
    "name_job_underscore",
    "name_job_too_long",
    "name_namespace_slash",
    "name_queue_zero_width_space",
    "name_queue_newline",
    "name_priority_class_capitals",
    "duplicate_key",
    # values within the ranges Kubernetes accepts
    "hypernode_tier_over_int64",
    "duration_negative",
    "priority_class_over_int32",
    "quantity_out_of_range",
    "actions_empty",
    # top-level fields and the scheduler configuration
    "bad_now",
    "bad_timezone",
    "unknown_action",
    "enable_not_boolean",
    # pod (anti-)affinity, topology spread, preferred node affinity: the API server's rules
    "affinity_label_key_in_selector",
    "affinity_label_keys_without_selector",
    "affinity_match_and_mismatch_key",
    "affinity_namespace_name",
    "affinity_selector_operator",
    "affinity_topology_key_empty",
    "affinity_unknown_kind",
    "affinity_weight_out_of_range",
    "node_preference_field_key",
    "namespace_name",
    "node_preference_gt_not_integer",
    "node_preference_weight_zero",
    "spread_duplicate_pair",
    "spread_label_key_in_selector",
    "spread_max_skew_zero",
    "spread_min_domains_soft",
    "spread_min_domains_zero",
    "spread_missing_max_skew",
    "spread_policy",
    "spread_topology_key_invalid",
    "spread_when_unsatisfiable",
    "spread_max_skew_over_int32",
    # labels, annotations, taints, tolerations and resources: the API server's rules
    "label_key_two_slashes",
    "label_value_too_long",
    "label_key_yaml_boolean",
    "task_label_key_emoji",
    "node_selector_key_invalid",
    "annotation_key_invalid",
    "taint_key_invalid",
    "taint_duplicate",
    "toleration_exists_with_value",
    "toleration_effect_unknown",
    "allocatable_gpu_fraction",
    "request_over_limit",
    "gpu_request_not_limit",
    "running_gpu_memory_over_int64",
}
"""The rules the issue and DESIGN §3 name; each must have its own file."""


@dataclass(frozen=True)
class Expected:
    obj: str
    field: str
    fragment: str

    def matches(self, problem: Problem, file: Path) -> bool:
        return (
            problem.file == str(file)
            and problem.obj == self.obj
            and problem.field == self.field
            and self.fragment in problem.message
        )

    def line(self, file: Path) -> str:
        """How ``vcopt validate`` starts the line of this problem (up to the message)."""
        return ": ".join(part for part in (str(file), self.obj, self.field) if part) + ": "


def expectations(path: Path, key: str) -> list[Expected]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"# {key}: "):
            obj, field, fragment = (p.strip() for p in line.split(": ", 1)[1].split(" | ", 2))
            out.append(Expected("" if obj == "-" else obj, "" if field == "-" else field, fragment))
    return out


def assert_refused_exactly(path: Path, read: Callable[[Path], object]) -> None:
    """``read(path)`` raises once with exactly the problems ``path``'s ``# expect:`` lines
    name, in order: file, object, field and a fragment of the message."""
    expected = expectations(path, "expect")
    assert expected, f"{path.name} has no '# expect:' line"
    with pytest.raises(InputError) as caught:
        read(path)
    problems = caught.value.problems
    assert len(problems) == len(expected), [str(p) for p in problems]
    for want, got in zip(expected, problems, strict=True):
        assert want.matches(got, path), f"wanted {want}, got {got!r}"


def assert_command_says_exactly(
    path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, ...] = ("validate",)
) -> None:
    """``vcopt <command> path`` exits 2 and prints one ``error:`` line per expected problem,
    nothing on standard output and no traceback."""
    expected = expectations(path, "expect")
    assert main([*command, str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == len(expected), lines
    for want, line in zip(expected, lines, strict=True):
        assert line.startswith("error: " + want.line(path)), line
        assert want.fragment in line


def test_base_is_valid_without_warnings() -> None:
    """The corpus is only meaningful if its base is clean: every error of a bad file then comes
    from its one change."""
    instance = load(BASE)
    assert instance.warnings == ()
    assert [n.name for n in instance.nodes] == ["node-1", "node-2"]


def test_every_rule_has_its_own_file() -> None:
    names = {p.stem for p in BAD}
    assert RULES - names == set()


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_file_gives_exactly_the_expected_problems(path: Path) -> None:
    """load() raises once with every problem; each names the file, the object and the field."""
    assert_refused_exactly(path, load)


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_validate_prints_each_problem_and_exits_2(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_command_says_exactly(path, capsys)


@pytest.mark.parametrize("path", WARN, ids=lambda p: p.stem)
def test_what_volcano_only_logs_is_a_warning(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """HyperNode members naming nothing, unknown plugins and unknown highestTierName are
    accepted by Volcano (it logs them), so validate exits 0 and prints a warning line each."""
    expected = expectations(path, "expect-warning")
    assert expected
    instance = load(path)
    assert len(instance.warnings) == len(expected), [str(w) for w in instance.warnings]
    for want, got in zip(expected, instance.warnings, strict=True):
        assert want.matches(got, path), f"wanted {want}, got {got!r}"
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "valid" in out
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == len(expected)
    assert "error" not in err
    for want, line in zip(expected, warnings, strict=True):
        assert line.startswith("warning: " + want.line(path))


@pytest.mark.parametrize("name", ["not_yaml", "queue_cycle", "alias_bomb"])
def test_the_installed_command_prints_no_traceback(name: str) -> None:
    """A real process: what reaches the terminal is the error lines and exit code 2."""
    path = DATA / "bad" / f"{name}.yaml"
    run = subprocess.run(
        [str(VCOPT), "validate", str(path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith(f"error: {path}: ")
    assert len(run.stderr.splitlines()) == 1


def _refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The single error line ``vcopt validate`` prints for a file that is no instance."""
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {path}: ")
    return lines[0]


def test_binary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PNG header is not UTF-8 (0x89 cannot start a character)."""
    path = tmp_path / "image.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    assert "not a UTF-8 text file" in _refused(path, capsys)


def test_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "is a directory" in _refused(tmp_path, capsys)


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "cannot read" in _refused(tmp_path / "nowhere.yaml", capsys)


def test_zero_byte_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.yaml"
    path.write_bytes(b"")
    assert "empty file" in _refused(path, capsys)


def test_thousand_levels_of_block_nesting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Block style (one key per line, indented) reaches the depth check through the event
    stream, unlike the flow-style file of the corpus; the limit is 64 levels."""
    lines = ["apiVersion: vcopt/v1alpha1", "kind: Instance", "metadata:"]
    lines += [f"{'  ' * (depth + 1)}k{depth}:" for depth in range(1000)]
    path = tmp_path / "deep.yaml"
    path.write_text("\n".join(lines) + " x\n", encoding="utf-8")
    assert "nesting deeper than 64 levels" in _refused(path, capsys)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("- 1\n- 2\n", "expected a mapping"),
        ("apiVersion: vcopt/v1alpha1\nkind: Instance\n---\nkind: Instance\n", "one kind: Instance"),
        ("{metadata: {name: x}}\n", "kind: required field is missing"),
        ("a: 2026-13-45\n", "cannot read '2026-13-45' as YAML timestamp"),
        ("a: &x [*x]\n", "refers to a collection inside itself"),
        ("a: !python/object:os.system ls\n", "could not determine a constructor"),
    ],
)
def test_documents_that_are_no_instance(
    text: str, fragment: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sequence, two instances in one file, a mapping without kind, a date that does not
    exist (PyYAML itself would raise a bare ValueError), a self-containing alias and a Python
    tag (never constructed) are each refused with one line."""
    path = tmp_path / "doc.yaml"
    path.write_text(text, encoding="utf-8")
    assert fragment in _refused(path, capsys)


@pytest.mark.parametrize(
    "text",
    [
        "SECRET_TOKEN=hunter2\nOTHER=1\n",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----\n",
        "hunter2\n",
    ],
)
def test_a_file_given_by_mistake_is_not_echoed(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A .env file or a private key is one YAML string; the message says what the file is,
    never what it holds."""
    path = tmp_path / "secret.yaml"
    path.write_text(text, encoding="utf-8")
    line = _refused(path, capsys)
    assert "plain text" in line
    for secret in ("hunter2", "b3Bl", "BEGIN", "SECRET"):
        assert secret not in line


def test_kubectl_dump_names_are_checked_too(tmp_path: Path) -> None:
    """The kubectl form goes through the same loader: a Node the API server could not hold is
    refused there as in the compact form, on the field the dump writes (metadata.name)."""
    text = (DATA / "kube" / "snapshot.yaml").read_text(encoding="utf-8")
    assert "\n  name: gpu-2\n" in text
    path = tmp_path / "dump.yaml"
    path.write_text(text.replace("\n  name: gpu-2\n", "\n  name: GPU_2\n", 1), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load(path)
    names = [p for p in caught.value.problems if p.obj == 'Node "GPU_2"']
    assert [(p.field, p.file) for p in names] == [("metadata.name", str(path))]
    assert "not a DNS-1123 subdomain" in names[0].message
