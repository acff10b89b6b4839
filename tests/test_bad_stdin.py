"""Standard input is read as a file path is: bounded, UTF-8, no NUL; and read once."""

from __future__ import annotations

import io
import sys

import pytest

from optimizer.cli import main


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


class _Endless(io.RawIOBase):
    """A stream that never ends, as ``/dev/zero`` or ``yes`` piped in."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        buffer[:] = b"a" * len(buffer)
        return len(buffer)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\0" * 4096, "NUL bytes"),
        ("kind: Pod\nmetadata: {name: caf\xe9}\n".encode("latin-1"), "not a UTF-8 text file"),
    ],
)
def test_bad_bytes_on_standard_input(
    data: bytes, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, data)
    assert main(["validate", "-"]) == 2
    err = capsys.readouterr().err
    assert "<stdin>" in err and said in err and "Traceback" not in err


def test_endless_standard_input_stops_at_the_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("models.yamlio.MAX_BYTES", 4 * 2**20)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(_Endless())))
    assert main(["validate", "-"]) == 2
    assert "more than the limit" in capsys.readouterr().err


def test_standard_input_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-", "-"]) == 2
    assert "named twice" in capsys.readouterr().err
