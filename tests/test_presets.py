"""Solve options in three parts: flat names routed to their part, each part's checks, preset
files (``SolveOptions.from_toml``, ``--preset``) and the command line overriding a preset."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from models.errors import InputError
from models.fragmentation import TypicalTask
from optimizer.arguments import solve_options
from optimizer.cli import build_parser, main
from optimizer.options import (
    DisruptionOptions,
    ObjectiveOptions,
    OptionError,
    SearchOptions,
    SolveOptions,
)
from optimizer.plan import Plan
from optimizer.presets import TABLES

ROOT = Path(__file__).resolve().parents[1]
DEMO = str(ROOT / "instances" / "demo.yaml")
FAST = ROOT / "instances" / "presets" / "fast.toml"


# -- of / replaced -----------------------------------------------------------------------------


def test_of_routes_each_flat_name_to_its_part() -> None:
    options = SolveOptions.of(
        time_limit=5,
        seed=7,
        dask="tcp://scheduler:8786",
        objective="weighted",
        weights={"packing": 0},
        tdm_lookahead=True,
        max_evictions=0,
        queue_eviction_budgets={"team-a": 2},
    )
    assert options.search == SearchOptions(time_limit=5, seed=7, dask="tcp://scheduler:8786")
    assert options.objective == ObjectiveOptions(
        kind="weighted", weights={"packing": 0}, tdm_lookahead=True
    )
    assert options.disruption == DisruptionOptions(
        max_evictions=0, queue_eviction_budgets={"team-a": 2}
    )
    assert options.start is None


def test_of_without_names_is_the_default() -> None:
    assert SolveOptions.of() == SolveOptions()
    assert SolveOptions().search.time_limit == 30.0
    assert SolveOptions().objective.kind == "lexicographic"


def test_replaced_changes_only_what_it_names_on_a_copy() -> None:
    base = SolveOptions.of(time_limit=5, workers=1, max_evictions=3)
    start = Plan()
    changed = base.replaced(workers=2, objective="weighted", start=start)
    assert (changed.search.time_limit, changed.search.workers) == (5, 2)
    assert changed.objective.kind == "weighted"
    assert changed.disruption.max_evictions == 3
    assert changed.start is start
    assert (base.search.workers, base.objective.kind, base.start) == (1, "lexicographic", None)


@pytest.mark.parametrize("name", ["kind", "quiet", "reasons", "search", "timelimit"])
def test_an_unknown_flat_name_is_a_type_error(name: str) -> None:
    """``kind`` is the objective's field, spelled ``objective`` flat; ``quiet`` and
    ``reasons`` are the commands', not the engines'."""
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
        SolveOptions.of(**{name: 1})
    with pytest.raises(
        TypeError, match=f"replaced\\(\\) got an unexpected keyword argument '{name}'"
    ):
        SolveOptions().replaced(**{name: 1})


def test_replaced_checks_the_new_values() -> None:
    with pytest.raises(OptionError) as caught:
        SolveOptions().replaced(gap=2.0)
    assert str(caught.value) == "--gap: must be a relative gap between 0 and 1, got 2.0"


# -- each part's checks ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "values", "option", "fragment"),
    [
        (SearchOptions, {"time_limit": 0.0}, "--time-limit", "positive number of seconds"),
        (SearchOptions, {"time_limit": float("inf")}, "--time-limit", "positive number"),
        (SearchOptions, {"workers": 0}, "--workers", "between 1 and 256"),
        (SearchOptions, {"seed": 2**31}, "--seed", "between 0 and 2147483647"),
        (SearchOptions, {"gap": -0.1}, "--gap", "between 0 and 1"),
        (SearchOptions, {"strategy": "greedy"}, "--strategy", "one of auto, monolithic"),
        (SearchOptions, {"dask": ""}, "--dask", "a Dask scheduler's address, got ''"),
        (SearchOptions, {"dask": "  "}, "--dask", "a Dask scheduler's address"),
        (ObjectiveOptions, {"kind": "best"}, "--objective", "one of lexicographic, weighted"),
        (ObjectiveOptions, {"weights": {"colour": 1}}, "--weights", "unknown stage 'colour'"),
        (ObjectiveOptions, {"weights": {"work": True}}, "--weights", "work: expected an integer"),
        (ObjectiveOptions, {"weights": {"work": 10**6 + 1}}, "--weights", "between 0 and"),
        (DisruptionOptions, {"max_evictions": -1}, "--max-evictions", "non-negative integer"),
        (DisruptionOptions, {"max_evictions": False}, "--max-evictions", "non-negative"),
        (
            DisruptionOptions,
            {"queue_eviction_budgets": {"team-a": -2}},
            "--queue-eviction-budget",
            "team-a: must be a non-negative integer, got -2",
        ),
    ],
)
def test_each_part_refuses_what_no_engine_can_honour(
    part: type, values: dict[str, object], option: str, fragment: str
) -> None:
    with pytest.raises(OptionError) as caught:
        part(**values)
    assert caught.value.option == option
    assert str(caught.value).startswith(f"{option}: ")
    assert fragment in caught.value.message


def test_a_dask_address_is_kept() -> None:
    assert SearchOptions(dask="tcp://10.0.0.1:8786").dask == "tcp://10.0.0.1:8786"
    assert SearchOptions().dask is None


def test_weight_and_active_stages_belong_to_the_objective() -> None:
    """Fragmentation is off unless weighted; a weight of 0 switches a stage off."""
    objective = ObjectiveOptions(weights={"fragmentation": 2, "fairness": 0})
    assert objective.weight("fragmentation") == 2
    assert objective.weight("work") == 1
    assert objective.active_stages == ["work", "topology", "fragmentation", "packing"]


# -- preset files ------------------------------------------------------------------------------

GOOD = """\
[search]
time_limit = 5
workers = 1
seed = 3
deterministic = true
gap = 0.01
strategy = "monolithic"
bound = false
aggregate = false
parameters = { log_search_progress = false }
dask = "tcp://scheduler:8786"

[objective]
kind = "weighted"
weights = { fragmentation = 1, packing = 0 }
tdm_lookahead = true
typical_mix = "mix.yaml"

[disruption]
max_evictions = 2

[disruption.queue_eviction_budgets]
team-a = 1
team-b = 0
"""
MIX = "- {cpu: 4000, gpuMilli: 1000, gpus: 1, weight: 3}\n- {cpu: 1000, weight: 1}\n"


def test_a_preset_equals_the_same_options_given_flat(tmp_path: Path) -> None:
    """Every key of every table, the mix file read beside the preset (weights 3 : 1)."""
    (tmp_path / "mix.yaml").write_text(MIX)
    preset = tmp_path / "all.toml"
    preset.write_text(GOOD)
    assert SolveOptions.from_toml(preset) == SolveOptions.of(
        time_limit=5.0,
        workers=1,
        seed=3,
        deterministic=True,
        gap=0.01,
        strategy="monolithic",
        bound=False,
        aggregate=False,
        parameters={"log_search_progress": False},
        dask="tcp://scheduler:8786",
        objective="weighted",
        weights={"fragmentation": 1, "packing": 0},
        tdm_lookahead=True,
        typical_mix=(TypicalTask(4000, 1000, 1, (), 0.75), TypicalTask(1000, 0, 0, (), 0.25)),
        max_evictions=2,
        queue_eviction_budgets={"team-a": 1, "team-b": 0},
    )


def test_an_empty_preset_is_the_default(tmp_path: Path) -> None:
    preset = tmp_path / "empty.toml"
    preset.write_text("# nothing set\n[search]\n")
    assert SolveOptions.from_toml(preset) == SolveOptions()


def test_the_shipped_preset_reads() -> None:
    """instances/presets/fast.toml: ten seconds, a 1 % gap, one weighted solve."""
    assert SolveOptions.from_toml(FAST) == SolveOptions.of(
        time_limit=10.0, workers=2, gap=0.01, objective="weighted"
    )


def test_the_preset_tables_have_the_parts_fields() -> None:
    """The schema a preset is read with names the fields of the options, part by part."""
    parts = {
        "search": SearchOptions,
        "objective": ObjectiveOptions,
        "disruption": DisruptionOptions,
    }
    assert list(TABLES) == list(parts)
    for table, schema in TABLES.items():
        assert list(schema.model_fields) == [f.name for f in fields(parts[table])]


@pytest.mark.parametrize(
    ("text", "field", "fragment"),
    [
        ("[colour]\nx = 1\n", "colour", "not a table of a preset (tables: search, objective"),
        ("time_limit = 5\n", "time_limit", "not a table of a preset"),
        ("[search]\ntimelimit = 5\n", "search.timelimit", "unknown key (keys: time_limit,"),
        ("[objective]\nobjective = 'weighted'\n", "objective.objective", "unknown key"),
        ("[search]\ntime_limit = '5'\n", "search.time_limit", "expected a number, got '5'"),
        ("[search]\ntime_limit = -1\n", "search.time_limit", "must be a positive number"),
        ("[search]\ntime_limit = nan\n", "search.time_limit", "must be a positive number"),
        ("[search]\nworkers = 1.5\n", "search.workers", "expected an integer, got 1.5"),
        ("[search]\nseed = 4294967296\n", "search.seed", "must be between 0 and 2147483647"),
        ("[search]\nseed = -1\n", "search.seed", "must be between 0 and 2147483647"),
        ("[search]\ndeterministic = 1\n", "search.deterministic", "expected true or false"),
        ("[search]\nstrategy = 'fast'\n", "search.strategy", "must be one of auto"),
        ("[search]\ndask = ''\n", "search.dask", "a Dask scheduler's address"),
        ("[search]\nparameters = 3\n", "search.parameters", "expected a mapping"),
        ("[search.parameters]\nno_such = 1\n", "search.parameters.no_such", "not a CP-SAT"),
        ("[search.parameters]\nnum_workers = 'x'\n", "search.parameters.num_workers", "refuses"),
        ("[objective]\nkind = 'best'\n", "objective.kind", "must be one of lexicographic"),
        ("[objective.weights]\ncolour = 1\n", "objective.weights", "unknown stage 'colour'"),
        ("[objective.weights]\nwork = 'a'\n", "objective.weights.work", "expected an integer"),
        ("[objective.weights]\nwork = 2000000\n", "objective.weights", "work: must be between"),
        ("[objective]\ntypical_mix = 'none.yaml'\n", "objective.typical_mix", "cannot read"),
        ("[disruption]\nmax_evictions = -1\n", "disruption.max_evictions", "non-negative"),
        (
            "[disruption.queue_eviction_budgets]\nteam-a = -1\n",
            "disruption.queue_eviction_budgets",
            "team-a: must be a non-negative integer, got -1",
        ),
        (
            "[disruption]\nqueue_eviction_budgets = ['team-a']\n",
            "disruption.queue_eviction_budgets",
            "expected a mapping",
        ),
    ],
)
def test_a_bad_preset_names_its_file_and_key(
    tmp_path: Path, text: str, field: str, fragment: str
) -> None:
    preset = tmp_path / "bad.toml"
    preset.write_text(text)
    with pytest.raises(InputError) as caught:
        SolveOptions.from_toml(preset)
    (problem,) = caught.value.problems
    assert (problem.file, problem.field) == (str(preset), field)
    assert fragment in problem.message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[search\ntime_limit = 5\n", "not a valid TOML file"),
        ("[search]\nseed = " + "9" * 5000 + "\n", "not a valid TOML file"),
        ("[search]\nseed = 1\nseed = 2\n", "not a valid TOML file"),
    ],
)
def test_a_preset_that_is_not_toml_names_its_file(tmp_path: Path, text: str, fragment: str) -> None:
    preset = tmp_path / "bad.toml"
    preset.write_text(text)
    with pytest.raises(InputError) as caught:
        SolveOptions.from_toml(preset)
    (problem,) = caught.value.problems
    assert problem.file == str(preset)
    assert problem.message.startswith(fragment)


# -- the command line --------------------------------------------------------------------------


def test_options_given_on_the_command_line_override_the_preset(tmp_path: Path) -> None:
    """The preset sets the limit, the workers, the objective and switches the bound off; the
    command line gives another limit and asks for the bound: those win, the rest is the
    preset's, and what neither gives keeps its default."""
    preset = tmp_path / "p.toml"
    preset.write_text(
        "[search]\ntime_limit = 4\nworkers = 1\nbound = false\n"
        "[objective]\nkind = 'weighted'\n[disruption]\nmax_evictions = 2\n"
    )
    parser = build_parser()
    for command in ("solve", "compare", "explain"):
        tail = ["default/llm-pretrain"] if command == "explain" else []
        argv = [command, "--preset", str(preset), "--time-limit", "7", "--bound", DEMO, *tail]
        options = solve_options(parser.parse_args(argv))
        assert options.search == SearchOptions(time_limit=7.0, workers=1, bound=True)
        assert options.objective == ObjectiveOptions(kind="weighted")
        assert options.disruption == DisruptionOptions(max_evictions=2)
    no_cap = parser.parse_args(["solve", "--preset", str(preset), "--no-bound", DEMO])
    assert solve_options(no_cap).search.bound is False
    bare = solve_options(parser.parse_args(["solve", DEMO]))
    assert bare == SolveOptions()


def test_a_bad_preset_is_a_usage_error_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    preset = tmp_path / "bad.toml"
    preset.write_text("[search]\ntime_limit = 0\n")
    assert main(["solve", "--engine", "greedy", "--preset", str(preset), DEMO]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"error: {preset}: search.time_limit: must be a positive number of seconds, got 0.0\n"
    )


def test_a_missing_preset_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.toml"
    assert main(["compare", "-q", "--preset", str(missing), DEMO]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {missing}: ") and "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_a_bad_option_beside_a_preset_names_the_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["solve", "-q", "--preset", str(FAST), "--workers", "0", DEMO]) == 2
    assert capsys.readouterr().err == "error: --workers: must be between 1 and 256, got 0\n"


def test_the_preset_and_the_instance_cannot_both_be_standard_input(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["solve", "-q", "--preset", "-", "-"]) == 2
    assert capsys.readouterr().err.startswith("error: --preset: standard input is read once")
