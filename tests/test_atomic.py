"""Every output goes through one atomic write: complete files only, no symlink followed, the
replaced file's mode kept (else the umask's), errors naming the target."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from optimizer.atomic import write_atomic
from optimizer.cli import main

DEMO = str(Path(__file__).resolve().parents[1] / "instances" / "demo.yaml")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_file_gets_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o640
    assert (tmp_path / "a.txt").read_text() == "x"


def test_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "plan.yaml"
    target.write_text("old")
    target.chmod(0o644)
    write_atomic(target, b"new")
    assert _mode(target) == 0o644
    assert target.read_bytes() == b"new"


def test_symlink_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real.csv"
    real.write_text("keep")
    link = tmp_path / "out.csv"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert not link.is_symlink()
    assert real.read_text() == "keep"
    assert link.read_text() == "new"


def test_planted_predictable_temporary_name_is_not_followed(tmp_path: Path) -> None:
    """The old Parquet path wrote through ``NAME.tmp``; a symlink planted there stays as is."""
    victim = tmp_path / "victim"
    victim.write_text("secret")
    (tmp_path / "out.parquet.tmp").symlink_to(victim)
    (tmp_path / ".out.parquet.tmp").symlink_to(victim)
    write_atomic(tmp_path / "out.parquet", b"PAR1")
    assert victim.read_text() == "secret"
    assert (tmp_path / "out.parquet").read_bytes() == b"PAR1"


def test_directory_as_target_is_refused_naming_it(tmp_path: Path) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    with pytest.raises(OSError) as caught:
        write_atomic(target, "x")
    assert caught.value.filename == str(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]
    assert list(target.iterdir()) == []


def test_missing_folder_names_the_target(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "x.json"
    with pytest.raises(OSError) as caught:
        write_atomic(target, "x")
    assert caught.value.filename == str(target)


def test_solve_into_a_directory_is_bad_input_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    target.mkdir()
    assert main(["solve", "--engine", "greedy", "-q", "-o", str(target), DEMO]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {target}: ")
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == [target]


def test_plan_and_png_share_the_umask(tmp_path: Path) -> None:
    """Plans were 0600 and PNGs 0644; both now follow the umask."""
    old = os.umask(0o022)
    try:
        plan, png = tmp_path / "plan.yaml", tmp_path / "plan.png"
        args = ["solve", "--engine", "greedy", "-q", "-o", str(plan), "--plot", str(png), DEMO]
        assert main(args) == 0
    finally:
        os.umask(old)
    assert _mode(plan) == _mode(png) == 0o644


def test_a_stream_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    """``-o /dev/stdout`` and FIFOs: renaming over them would replace the device node."""
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_atomic(fifo, "plan\n")
    reader.join(10)
    assert got == [b"plan\n"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_dev_full_reports_the_target(tmp_path: Path) -> None:
    with pytest.raises(OSError) as caught:
        write_atomic("/dev/full", "x" * 10_000)
    assert caught.value.filename == "/dev/full"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_legal_250_byte_name_is_written(tmp_path: Path) -> None:
    """ext4 and tmpfs allow 255 bytes per name; the temporary name must not push a 250-byte
    target past that (it would, adding the ten bytes of ``mkstemp``'s suffix)."""
    target = tmp_path / ("p" * 246 + ".csv")
    assert len(target.name) == 250
    write_atomic(target, "a,b\n")
    assert target.read_text() == "a,b\n"
    assert sorted(os.listdir(tmp_path)) == [target.name]


def test_a_kernel_file_system_gives_the_real_reason() -> None:
    """/proc holds no files that can be created: the reason says so, not "No such file"."""
    from optimizer.atomic import unwritable

    assert unwritable("/proc/version") == (
        "/proc is on a proc file system, where no file can be written"
    )


def test_a_queue_budget_given_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["solve", "instances/demo.yaml", "--queue-eviction-budget", "team-a=1,team-a=2"]) == 2
    )
    assert "queue 'team-a' is given twice" in capsys.readouterr().err


def test_several_outputs_are_written_all_or_none(tmp_path: Path) -> None:
    """The second output cannot be written (its folder is missing): the first, complete and
    staged, is not renamed into place, and no temporary file is left behind."""
    from optimizer.atomic import write_all

    first, second = tmp_path / "c.csv", tmp_path / "missing" / "c.json"
    first.write_text("old\n")
    with pytest.raises(OSError) as err:
        write_all([(first, "new\n"), (second, "{}")])
    assert err.value.filename == str(second)
    assert first.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["c.csv"]
    write_all([(first, "new\n"), (tmp_path / "c.json", "{}")])
    assert first.read_text() == "new\n" and (tmp_path / "c.json").read_text() == "{}"
