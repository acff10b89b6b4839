"""A typical-mix file (``--typical-mix``) is read as every other input: bounded in size, depth
and aliases, UTF-8, no duplicate keys, values within what a task can be; messages quote the
value cut short, never an expanded one."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.errors import InputError
from optimizer.typical_mix import MAX_WEIGHT, load_mix


def _problems(path: Path) -> list[str]:
    with pytest.raises(InputError) as err:
        load_mix(path)
    return [str(p) for p in err.value.problems]


def test_latin1_bytes_are_not_text(tmp_path: Path) -> None:
    path = tmp_path / "mix.yaml"
    path.write_bytes("- {cpu: 1000, types: [caf\xe9]}\n".encode("latin-1"))
    assert any("not a UTF-8 text file" in p for p in _problems(path))


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text("[" * 100_000)
    assert any("nesting deeper than" in p for p in _problems(path))


def test_a_device_is_bounded(tmp_path: Path) -> None:
    """/dev/zero is endless NUL bytes: the first chunk stops the read."""
    assert any("NUL" in p for p in _problems(Path("/dev/zero")))


def test_a_huge_file_is_refused_from_its_size(tmp_path: Path) -> None:
    path = tmp_path / "mix.yaml"
    with path.open("wb") as f:
        f.truncate(300 * 2**20)  # sparse: 300 MiB long, no disk used
    assert any("more than the limit" in p for p in _problems(path))


def test_an_alias_bomb_in_types_is_quick_and_short(tmp_path: Path) -> None:
    """Nine items, each listing the previous item's types ten times: 600 bytes that would
    expand to 10^9 strings. The reader counts the expansion without building it and refuses
    the file; nothing quotes the expanded value."""
    items = ["- {cpu: 1, types: &t0 [x, x, x, x, x, x, x, x, x, x]}"]
    for i in range(1, 9):
        items.append(f"- {{cpu: 1, types: &t{i} [" + ", ".join([f"*t{i - 1}"] * 10) + "]}")
    path = tmp_path / "mix.yaml"
    path.write_text("\n".join(items) + "\n")
    problems = _problems(path)
    assert any("expands to more than" in p for p in problems)
    assert all(len(p) < 400 for p in problems)


def test_values_beyond_any_task_name_item_and_field(tmp_path: Path) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text(
        f"- {{cpu: {10**30}, gpus: 1, gpuMilli: 500}}\n"
        f"- {{cpu: 1000, gpus: {10**30}, gpuMilli: 500}}\n"
        f"- {{cpu: 1000, weight: {10**400}}}\n"
        f"- {{cpu: 1000, weight: {MAX_WEIGHT * 10:g}}}\n"
    )
    problems = _problems(path)
    fields = sorted(p.split(":")[1].strip() for p in problems)
    assert len(problems) == 4
    assert any("typical[0]: cpu" in p for p in problems)
    assert any("typical[1]: gpus" in p for p in problems)
    assert sum("weight" in p for p in problems) == 2, fields
    assert all(len(p) < 400 for p in problems)


def test_duplicate_keys_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text("- {cpu: 1000, cpu: 2000}\n")
    assert any("duplicate key 'cpu'" in p for p in _problems(path))
