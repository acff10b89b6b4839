"""GPU devices and GPU requests, as HAMi and Volcano's vGPU code read them.

This module only *describes*: what a node's GPUs are (from vcopt's ``gpus:`` list or from the
node annotations the device plugins write) and what a container asks for once HAMi's admission
webhook and scheduler parser (or Volcano's parser) have normalised it. Whether a request fits a
device is decided by the engines and the verifier, which implement ``spec/hami-gpu.md`` §3
separately; the one piece of matching shared by all of them is :meth:`GpuFilter.allows`.

Section numbers (§) refer to ``spec/hami-gpu.md``; memory is in MiB throughout.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import Diagnostics, shown_value
from .golang import parse_go_bool
from .quantity import QuantityError, parse_quantity
from .resources import NVIDIA_GPU
from .vocabulary import NOUSE_GPU_TYPE, USE_GPU_TYPE

HAMI_COUNT = NVIDIA_GPU
HAMI_MEMORY = "nvidia.com/gpumem"
HAMI_MEMORY_PERCENTAGE = "nvidia.com/gpumem-percentage"
HAMI_CORES = "nvidia.com/gpucores"
VOLCANO_COUNT = "volcano.sh/vgpu-number"
VOLCANO_MEMORY = "volcano.sh/vgpu-memory"
VOLCANO_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"
VOLCANO_CORES = "volcano.sh/vgpu-cores"

_HAMI_NAMES = (HAMI_COUNT, HAMI_MEMORY, HAMI_MEMORY_PERCENTAGE, HAMI_CORES)
_VOLCANO_NAMES = (VOLCANO_COUNT, VOLCANO_MEMORY, VOLCANO_MEMORY_PERCENTAGE, VOLCANO_CORES)
GPU_RESOURCE_NAMES: frozenset[str] = frozenset(_HAMI_NAMES + _VOLCANO_NAMES)
"""Every container resource name read as a GPU request, HAMi's and Volcano's (§1.1, §1.5)."""

DEVICE_MODES = ("hami-core", "mig", "mps")
MAX_DEVICE_MEMORY = 2**24
"""MiB of one device: 16 TiB, some fifty times the largest GPU made (an H200 has 141 GB); a
larger ``devmem`` is a typo or a hostile value, not hardware."""
MAX_DEVICE_CORES = 10_000
"""HAMi counts a device's compute as 100; a hundred times that is beyond any configuration."""
MAX_DEVICE_COUNT = 10_000
"""Time-slices of one device (HAMi's ``deviceSplitCount``, 10 by default)."""
MAX_DEVICE_INDEX = 10_000
"""NVML indices and NUMA nodes of one machine."""
MAX_DEVICES = 1_024
"""Devices one node registers: MIG instances included, far beyond a real machine's."""
MAX_REGISTER_DEPTH = 8
"""The register's JSON is an array of flat objects; deeper nesting is refused before parsing
(Python's JSON parser recurses, so 100,000 ``[`` would exhaust the stack)."""
DEFAULT_SPLIT = 10
"""HAMi's ``deviceSplitCount`` default: time-slice slots per physical GPU (§1.1)."""
FULL_CORES = 100
PLAIN_GPU_SHARE = (
    "nvidia.com/gpu is a plain count on this node (no device inventory): only whole-GPU "
    "requests fit, not a share of memory or cores"
)
"""Why a GPU share never fits a node of the plain NVIDIA device plugin."""
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class GpuDevice:
    """One physical GPU as HAMi registers it (§2.1 ``DeviceInfo``).

    ``cores`` is HAMi's Totalcore (100 × deviceCoreScaling) and ``count`` its time-slice slots
    (deviceSplitCount); a device with ``count`` 0 is legal input but can never be used (§1.4).
    """

    id: str
    index: int
    type: str
    memory: int
    cores: int = FULL_CORES
    count: int = DEFAULT_SPLIT
    numa: int = 0
    health: bool = True
    mode: str = "hami-core"


def exclusive_on(cores: int, device: GpuDevice) -> bool:
    """HAMi's exclusive rule (hami-gpu §3.3 step 13, pitfall 5): a share booking all 100
    cores of a 100-core device has that device to itself; on a device with another core total
    it is an ordinary share."""
    return cores >= FULL_CORES and device.cores == FULL_CORES


def validate_device(dev: GpuDevice, obj: str, field: str, diag: Diagnostics) -> None:
    """Record what makes ``dev`` unusable as input; ``field`` is its path, e.g. ``gpus[2]``."""

    def at(name: str) -> str:
        return f"{field}.{name}" if field else name

    if not dev.id:
        diag.error(obj, at("id"), "must not be empty")
    elif len(dev.id) > 253:
        diag.error(obj, at("id"), f"must be at most 253 characters, got {len(dev.id)}")
    if not 0 <= dev.index <= MAX_DEVICE_INDEX:
        diag.error(
            obj, at("index"), f"must be ≥ 0 and at most {MAX_DEVICE_INDEX:,}, got {_n(dev.index)}"
        )
    if not 0 < dev.memory <= MAX_DEVICE_MEMORY:
        diag.error(
            obj,
            at("memory"),
            f"must be > 0 MiB and at most {MAX_DEVICE_MEMORY:,} MiB (16 TiB), got {_n(dev.memory)}",
        )
    if not 0 <= dev.cores <= MAX_DEVICE_CORES:
        diag.error(
            obj,
            at("cores"),
            f"must be ≥ 0 (normally 100) and at most {MAX_DEVICE_CORES:,}, got {_n(dev.cores)}",
        )
    if not 0 <= dev.count <= MAX_DEVICE_COUNT:
        diag.error(
            obj,
            at("count"),
            f"must be ≥ 0 time-slices and at most {MAX_DEVICE_COUNT:,}, got {_n(dev.count)}",
        )
    if not 0 <= dev.numa <= MAX_DEVICE_INDEX:
        diag.error(
            obj, at("numa"), f"must be ≥ 0 and at most {MAX_DEVICE_INDEX:,}, got {_n(dev.numa)}"
        )
    if dev.mode not in DEVICE_MODES:
        diag.error(obj, at("mode"), f"must be one of {', '.join(DEVICE_MODES)}, got {dev.mode!r}")


def _n(value: int) -> str:
    """An integer as a message shows it, however long."""
    return shown_value(value)


def shorthand_devices(
    node: str,
    count: int,
    type: str,
    memory: int,
    *,
    split: int = DEFAULT_SPLIT,
    cores: int = FULL_CORES,
) -> tuple[GpuDevice, ...]:
    """The devices behind ``gpus: {count: 8, type: X, memory: 81920}`` on node ``node``.

    Ids are made up as ``GPU-<node>-<i>`` so that they are unique across the cluster and a plan
    can name them; indices follow NVML's 0..count-1.
    """
    if count < 0:
        raise ValueError(f"gpus.count must be ≥ 0, got {count}")
    return tuple(
        GpuDevice(f"GPU-{node}-{i}", i, type, memory, cores=cores, count=split)
        for i in range(count)
    )


def parse_hami_register(text: str) -> tuple[GpuDevice, ...]:
    """Devices from a ``hami.io/node-nvidia-register`` value, JSON (≥ v2.8) or legacy text.

    JSON keys are ``omitempty`` and Go's decoder leaves a missing key at its zero value, so a
    missing ``health`` is *unhealthy*, a missing ``index``/``numa``/``count``/``devcore`` is 0.
    A missing ``mode`` is read as ``hami-core``: the device plugin always writes it, and an
    empty mode only comes from hand-written values. Like Go's decoder, keys match
    case-insensitively and unknown keys (``migProfiles``) are ignored.

    The legacy text form ``UUID,count,devmem,devcore,type,numa,health[,index,mode]:`` has no
    index in its 7-field variant; the position in the list stands in for it, since the plugin
    writes devices in NVML order.
    """
    body = text.strip()
    if not body:
        return ()
    if body.startswith("["):
        return _parse_hami_json(body)
    return tuple(_parse_hami_text_entry(i, entry) for i, entry in enumerate(_entries(body)))


def parse_volcano_register(text: str) -> tuple[GpuDevice, ...]:
    """Devices from a ``volcano.sh/node-vgpu-register`` value.

    Entries are ``UUID,count,devmem,type,health,mode:``. Volcano identifies a device by its
    position and hard-codes compute capacity to 100; the format has no NUMA field (§2.3).
    """
    devices = []
    for i, entry in enumerate(_entries(text.strip())):
        fields = entry.split(",")
        if len(fields) != 6:
            raise ValueError(
                f"device {i} {shown_value(entry)}: expected 6 comma-separated fields "
                f"(UUID,count,devmem,type,health,mode), got {len(fields)}"
            )
        uuid, count, devmem, type_, health, mode = fields
        devices.append(
            GpuDevice(
                id=uuid,
                index=i,
                type=type_,
                memory=_text_int(i, "devmem", devmem),
                cores=FULL_CORES,
                count=_text_int(i, "count", count),
                health=_text_bool(i, health),
                mode=mode,
            )
        )
    return tuple(devices)


def _entries(body: str) -> list[str]:
    """The ``:``-terminated device entries of a text register value, blanks dropped."""
    entries = [e.strip() for e in body.split(":") if e.strip()]
    if len(entries) > MAX_DEVICES:
        raise ValueError(f"{len(entries):,} devices, more than {MAX_DEVICES:,} on one node")
    return entries


def _text_int(i: int, name: str, raw: str) -> int:
    try:
        return _bounded_int(raw.strip())
    except ValueError:
        raise ValueError(f"device {i}: {name} {shown_value(raw)} is not an integer") from None


def _text_bool(i: int, raw: str) -> bool:
    """Go's ``strconv.ParseBool`` vocabulary, which the device plugins' decoders use."""
    parsed = parse_go_bool(raw)
    if parsed is None:
        raise ValueError(f"device {i}: health {raw!r} is not a boolean")
    return parsed


def _parse_hami_text_entry(i: int, entry: str) -> GpuDevice:
    fields = entry.split(",")
    if len(fields) not in (7, 9):
        raise ValueError(
            f"device {i} {shown_value(entry)}: expected 7 or 9 comma-separated fields "
            f"(UUID,count,devmem,devcore,type,numa,health[,index,mode]), got {len(fields)}"
        )
    uuid, count, devmem, devcore, type_, numa, health = fields[:7]
    index, mode = (_text_int(i, "index", fields[7]), fields[8]) if len(fields) == 9 else (i, "")
    return GpuDevice(
        id=uuid,
        index=index,
        type=type_,
        memory=_text_int(i, "devmem", devmem),
        cores=_text_int(i, "devcore", devcore),
        count=_text_int(i, "count", count),
        numa=_text_int(i, "numa", numa),
        health=_text_bool(i, health),
        mode=mode or "hami-core",
    )


def _parse_hami_json(body: str) -> tuple[GpuDevice, ...]:
    if _nesting(body) > MAX_REGISTER_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_REGISTER_DEPTH} levels")
    try:
        data = json.loads(body, parse_int=_bounded_int)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON: {err}") from None
    if not isinstance(data, list):
        raise ValueError("expected a JSON array of devices")
    if len(data) > MAX_DEVICES:
        raise ValueError(f"{len(data):,} devices, more than {MAX_DEVICES:,} on one node")
    devices = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"device {i}: expected a JSON object, got {type(item).__name__}")
        fields = {str(k).lower(): v for k, v in item.items()}
        devices.append(
            GpuDevice(
                id=_json_value(i, fields, "id", str, ""),
                index=_json_value(i, fields, "index", int, 0),
                type=_json_value(i, fields, "type", str, ""),
                memory=_json_value(i, fields, "devmem", int, 0),
                cores=_json_value(i, fields, "devcore", int, 0),
                count=_json_value(i, fields, "count", int, 0),
                numa=_json_value(i, fields, "numa", int, 0),
                health=_json_value(i, fields, "health", bool, False),
                mode=_json_value(i, fields, "mode", str, "") or "hami-core",
            )
        )
    return tuple(devices)


def _nesting(body: str) -> int:
    """How deep brackets and braces nest (in strings too: an over-estimate only refuses
    a register no device plugin writes)."""
    depth = deepest = 0
    for char in body:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _bounded_int(text: str) -> int:
    """An integer of at most 100 digits (Python refuses to parse past 4,300, and a value
    that long is no device's); what a device can hold is checked by ``validate_device``."""
    digits = text.lstrip("-")
    if len(digits) > 100:
        raise ValueError(f"an integer of {len(digits):,} digits is beyond any device")
    return int(text)


def _json_value(i: int, fields: Mapping[str, Any], key: str, kind: type, zero: Any) -> Any:
    """A field with Go's zero value when missing or null; a wrong JSON type is an error."""
    value = fields.get(key)
    if value is None:
        return zero
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"device {i}: {key} must be an integer, got {shown_value(value)}")
    if not isinstance(value, kind):
        raise ValueError(f"device {i}: {key} must be a {kind.__name__}, got {shown_value(value)}")
    if key == "index" and value < 0:
        raise ValueError(f"device {i}: index must be ≥ 0 (Go uint), got {value}")
    return value


@dataclass(frozen=True)
class GpuRequest:
    """One container's GPU request after normalisation: ``nums`` GPUs, each getting the same share.

    ``memory`` is absolute MiB (0 = not given) and ``percentage`` the share of each chosen
    device's memory (None = not given). ``cores`` is kept as written (HAMi clamps above 100
    only inside Fit, Volcano never does), see :attr:`booked_cores`. ``flavor`` says whose rules
    apply, because HAMi and Volcano disagree on memory precedence and exclusivity (§3.6).
    """

    nums: int
    memory: int
    percentage: int | None
    cores: int
    flavor: str

    def __post_init__(self) -> None:
        if self.flavor not in ("hami", "volcano"):
            raise ValueError(f"flavor must be 'hami' or 'volcano', got {self.flavor!r}")
        if self.nums < 1:
            raise ValueError(f"nums must be ≥ 1, got {self.nums}")
        if self.memory < 0 or self.cores < 0:
            raise ValueError(f"memory and cores must be ≥ 0, got {self.memory}, {self.cores}")
        if self.percentage is not None and self.percentage < 0:
            raise ValueError(f"percentage must be ≥ 0, got {self.percentage}")

    def memory_on(self, device_memory: int) -> int:
        """MiB booked on a device with ``device_memory`` MiB (§3.3 step 9, §3.5).

        HAMi books the absolute amount when one is given; Volcano lets a percentage override
        it. Percentages are floored per device (pitfall 21).
        """
        by_percentage = (
            device_memory * self.percentage // 100 if self.percentage is not None else None
        )
        if self.flavor == "hami":
            if self.memory > 0:
                return self.memory
            return by_percentage or 0
        return self.memory if by_percentage is None else by_percentage

    @property
    def booked_cores(self) -> int:
        """Cores booked per device: HAMi's Fit clamps above 100 (step 8); Volcano does not."""
        return min(self.cores, FULL_CORES) if self.flavor == "hami" else self.cores

    @property
    def whole(self) -> bool:
        """Whether the request asks for whole cards only (``nvidia.com/gpu`` alone, as HAMi
        normalises it): the one kind of request a node without a device inventory, where
        ``nvidia.com/gpu`` is a plain count, can take."""
        return (
            self.flavor == "hami"
            and self.memory == 0
            and self.percentage == 100
            and self.booked_cores == FULL_CORES
        )

    @property
    def exclusive(self) -> bool:
        """Whether the request needs each of its devices to itself.

        In HAMi this holds only on devices with Totalcore 100 (pitfall 5); the fit code checks
        that. Volcano's rule is ``cores == 100`` and anything above never fits at all.
        """
        return self.booked_cores == FULL_CORES

    def share_of(self, device_memory: int) -> float:
        """GPU-equivalents one assignment to a device of that size takes; a whole GPU is 1.0."""
        if device_memory <= 0:
            raise ValueError(f"device memory must be > 0 MiB, got {device_memory}")
        return max(self.booked_cores / FULL_CORES, self.memory_on(device_memory) / device_memory)


def container_gpu_request(
    limits: Mapping[str, object], requests: Mapping[str, object]
) -> GpuRequest | None:
    """The GPU request of one container, or None when the scheduler sees no GPU request.

    HAMi names (``nvidia.com/*``) go through HAMi's admission webhook and then its scheduler
    parser (§1.2, §1.3); Volcano names (``volcano.sh/vgpu-*``) through Volcano's parser (§1.5).
    A container that carries names of both families is read with HAMi's rules only: HAMi's
    names win, and the Volcano ones are ignored.

    Values are Kubernetes quantities (ints or strings). The API server only admits non-negative
    whole numbers for extended resources, so anything else raises ValueError, as does a HAMi
    ``gpumem-percentage`` outside 0..100 (the webhook rejects the pod). A ``gpumem`` that is a
    whole number but overflows int32, like ``16Gi``, silently drops the request (pitfall 8).

    Volcano reads ``volcano.sh/vgpu-memory-percentage`` only when ``resourceMemoryPercentageName``
    is configured (empty by default); vcopt always reads it, on the assumption that an input
    which writes it means it. Volcano ignores init containers; that choice is the caller's.
    """
    hami_limits = _gpu_values("limits", limits, _HAMI_NAMES)
    hami_requests = _gpu_values("requests", requests, _HAMI_NAMES)
    if hami_limits or hami_requests:
        return _hami_request(hami_limits, hami_requests)
    return _volcano_request(
        _gpu_values("limits", limits, _VOLCANO_NAMES),
        _gpu_values("requests", requests, _VOLCANO_NAMES),
    )


def _gpu_values(source: str, raw: Mapping[str, object], names: Sequence[str]) -> dict[str, int]:
    values: dict[str, int] = {}
    for name in names:
        if name not in raw:
            continue
        value = raw[name]
        try:
            amount = parse_quantity(value)
        except QuantityError as err:
            raise ValueError(f"{source}[{name}]: {err}") from None
        if amount < 0:
            raise ValueError(f"{source}[{name}]: must not be negative, got {value!r}")
        if amount.denominator != 1:
            raise ValueError(
                f"{source}[{name}]: extended resources must be whole numbers, got {value!r}"
            )
        values[name] = int(amount)
    return values


def _hami_request(limits: dict[str, int], requests: dict[str, int]) -> GpuRequest | None:
    for source, values in (("limits", limits), ("requests", requests)):
        pct = values.get(HAMI_MEMORY_PERCENTAGE)
        if pct is not None and pct > 100:
            raise ValueError(
                f"{source}[{HAMI_MEMORY_PERCENTAGE}]: must be within 0..100, got {pct} "
                "(HAMi's admission webhook rejects the pod)"
            )
    limits = dict(limits)
    if HAMI_COUNT not in limits and any(
        k in limits for k in (HAMI_CORES, HAMI_MEMORY, HAMI_MEMORY_PERCENTAGE)
    ):
        limits[HAMI_COUNT] = 1  # webhook: defaultGPUNum

    def given(name: str) -> bool:
        return name in limits or name in requests

    def value(name: str) -> int:
        return limits.get(name, requests.get(name, 0))

    if given(HAMI_COUNT) and not given(HAMI_CORES):
        if given(HAMI_MEMORY_PERCENTAGE):
            whole_card = value(HAMI_MEMORY_PERCENTAGE) == 100
        else:
            whole_card = not given(HAMI_MEMORY)
        if whole_card:
            limits[HAMI_CORES] = FULL_CORES  # webhook: defaultExclusiveCoreIfNeeded

    nums = value(HAMI_COUNT)
    memory = value(HAMI_MEMORY)
    if nums == 0 or memory > _INT32_MAX:
        return None
    percentage: int | None = value(HAMI_MEMORY_PERCENTAGE) or None
    if memory == 0 and percentage is None:
        percentage = 100
    return GpuRequest(nums, memory, percentage, value(HAMI_CORES), "hami")


def _volcano_request(limits: dict[str, int], requests: dict[str, int]) -> GpuRequest | None:
    if VOLCANO_COUNT in limits:
        nums = limits[VOLCANO_COUNT]
    elif VOLCANO_MEMORY in limits:
        nums = 1
    else:
        return None
    if nums == 0:
        return None

    def value(name: str) -> int | None:
        return limits.get(name, requests.get(name))

    memory = value(VOLCANO_MEMORY) or 0
    percentage = value(VOLCANO_MEMORY_PERCENTAGE)
    if percentage is None and memory == 0:
        percentage = 100
    return GpuRequest(nums, memory, percentage, value(VOLCANO_CORES) or 0, "volcano")


def _tokens(annotations: Mapping[str, str], key: str, *, trim: bool) -> tuple[str, ...]:
    """A comma list; blank means no constraint. Type tokens are not trimmed, as upstream."""
    raw = annotations.get(key, "")
    if not raw.strip():
        return ()
    return tuple(t.strip() for t in raw.split(",")) if trim else tuple(raw.split(","))


@dataclass(frozen=True)
class GpuFilter:
    """A pod's device restrictions from its annotations (§3.3 steps 3 and 5).

    ``allows`` applies HAMi's rules. Volcano differs (§3.6): it ignores ``nouse`` types when
    ``use`` types are given, and it compares ``volcano.sh/vgpu-mode`` for equality with the
    node-level mode (the last device's, ``mps`` read as ``hami-core``) — engines that model
    Volcano apply those two rules themselves.
    """

    use_types: tuple[str, ...] = ()
    nouse_types: tuple[str, ...] = ()
    use_uuids: tuple[str, ...] = ()
    nouse_uuids: tuple[str, ...] = ()
    mode: str | None = None

    def allows(self, device: GpuDevice) -> bool:
        """Whether the pod may use ``device``.

        Types match as case-insensitive substrings, so ``A10`` also selects an A100
        (pitfall 9); UUIDs match exactly; the mode annotation must contain the device mode.
        """
        dev_type = device.type.upper()
        if self.use_types and not any(t.upper() in dev_type for t in self.use_types):
            return False
        if any(t.upper() in dev_type for t in self.nouse_types):
            return False
        if self.mode is not None and device.mode not in self.mode:
            return False
        if self.use_uuids and device.id not in self.use_uuids:
            return False
        return device.id not in self.nouse_uuids


def gpu_filter(annotations: Mapping[str, str]) -> GpuFilter:
    """The device filter a pod's annotations ask for.

    HAMi's and Volcano's UUID and mode annotations mean the same restriction; when a pod
    carries both spellings of one, the ``nvidia.com`` one wins, as HAMi names do for requests.
    """

    def either(hami_key: str, volcano_key: str) -> str:
        return hami_key if hami_key in annotations else volcano_key

    mode_key = either("nvidia.com/vgpu-mode", "volcano.sh/vgpu-mode")
    return GpuFilter(
        use_types=_tokens(annotations, USE_GPU_TYPE, trim=False),
        nouse_types=_tokens(annotations, NOUSE_GPU_TYPE, trim=False),
        use_uuids=_tokens(
            annotations,
            either("nvidia.com/use-gpuuuid", "volcano.sh/vgpu-use-gpuuuid"),
            trim=True,
        ),
        nouse_uuids=_tokens(
            annotations,
            either("nvidia.com/nouse-gpuuuid", "volcano.sh/vgpu-nouse-gpuuuid"),
            trim=True,
        ),
        mode=annotations.get(mode_key),
    )


def hami_allocation_annotation(containers: Sequence[Sequence[tuple[str, int, int]]]) -> str:
    """The ``hami.io/vgpu-devices-to-allocate`` value (§6.1).

    ``containers`` lists init containers then app containers, in spec order, each as its
    ``(uuid, memory MiB, cores)`` assignments; a container without GPUs still gets its ``;`` so
    that positions line up for the device plugin. The type field is the vendor word ``NVIDIA``.
    """
    parts = []
    for devices in containers:
        for uuid, memory, cores in devices:
            if not uuid or any(c in uuid for c in ",:;"):
                raise ValueError(f"device id {uuid!r} cannot be written into the annotation")
            parts.append(f"{uuid},NVIDIA,{memory},{cores}:")
        parts.append(";")
    return "".join(parts)
