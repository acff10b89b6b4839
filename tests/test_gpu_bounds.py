"""Device inventories within what hardware has, and one node per GPU UUID: a register
annotation or a ``gpus`` list beyond that is refused with the node and field, never a
traceback or a device of 10^25 MiB."""

from __future__ import annotations

import json
from typing import Any

import pytest

from models.errors import InputError
from models.load import from_dict
from models.vocabulary import HAMI_REGISTER


def _device(uuid: str, **changes: Any) -> dict[str, Any]:
    return {
        "id": uuid,
        "index": 0,
        "count": 10,
        "devmem": 81920,
        "devcore": 100,
        "type": "NVIDIA-H100",
        "numa": 0,
        "health": True,
        "mode": "hami-core",
        **changes,
    }


def _doc(*registers: str) -> dict[str, Any]:
    return {
        "apiVersion": "vcopt/v1alpha1",
        "kind": "Instance",
        "now": "2026-11-30T14:00:00Z",
        "nodes": [
            {
                "name": f"h{i}",
                "allocatable": {"cpu": "8", "memory": "16Gi"},
                "annotations": {HAMI_REGISTER: register},
            }
            for i, register in enumerate(registers, 1)
        ],
    }


def _errors(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(InputError) as err:
        from_dict(doc, "cluster.yaml")
    return [str(p) for p in err.value.problems]


def test_a_register_nested_100000_deep_is_refused_before_parsing() -> None:
    errors = _errors(_doc("[" * 100_000))
    assert len(errors) == 1
    assert 'Node "h1"' in errors[0] and HAMI_REGISTER in errors[0]
    assert "nested deeper than" in errors[0]


@pytest.mark.parametrize(
    ("changes", "field", "said"),
    [
        ({"devmem": 10**25}, "memory", "at most 16,777,216 MiB"),
        ({"devcore": 10**12}, "cores", "at most 10,000"),
        ({"count": 10**9}, "count", "time-slices"),
        ({"numa": 10**9}, "numa", "at most 10,000"),
    ],
)
def test_values_beyond_hardware_are_refused(changes: dict[str, int], field: str, said: str) -> None:
    register = json.dumps([_device("GPU-a", **changes)])
    errors = _errors(_doc(register))
    assert any(field in e and said in e and 'Node "h1"' in e for e in errors), errors


def test_an_integer_of_5000_digits_is_no_traceback() -> None:
    register = '[{"id": "GPU-a", "devmem": ' + "9" * 5000 + "}]"
    errors = _errors(_doc(register))
    assert any("5,000 digits" in e for e in errors), errors
    assert all(len(e) < 400 for e in errors)


def test_more_devices_than_a_node_can_hold() -> None:
    register = json.dumps([_device(f"GPU-{i}", index=i % 8) for i in range(2000)])
    assert any("more than 1,024 on one node" in e for e in _errors(_doc(register)))


def test_one_uuid_on_two_nodes_is_refused() -> None:
    """h2 registers h1's GPU-x: a plan could bind two pods on different nodes to it."""
    errors = _errors(_doc(json.dumps([_device("GPU-x")]), json.dumps([_device("GPU-x")])))
    assert errors == [
        'cluster.yaml: Node "h2": gpus[0].id: GPU "GPU-x" is also registered by node "h1": '
        "a device UUID names one physical GPU"
    ]


def test_a_gpus_list_is_bounded_the_same_way() -> None:
    doc = _doc()
    doc["nodes"] = [
        {
            "name": "n1",
            "allocatable": {"cpu": "8"},
            "gpus": [{"id": "GPU-0", "index": 0, "type": "A100", "memory": 10**25}],
        }
    ]
    errors = _errors(doc)
    assert any('Node "n1": gpus[0].memory' in e and "16 TiB" in e for e in errors), errors
