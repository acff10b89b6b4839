"""The fragmentation stage's inputs read off a compiled instance: which typical mix the options
ask for, and a device class's free milli-GPU. The mix and F themselves are domain facts
(``models.fragmentation``), shared with the metric and the Alibaba simulator;
``frag_stage.py`` writes F into the model.

A device's free milli-GPU is min(free cores / cores, free memory / memory) × 1000 (0 when it
has no time-slice left or is not in the pool): one dimension, as FGD's milli, exact for shares
asked as percentages of cores and memory.
"""

from __future__ import annotations

from models.fragmentation import MILLI, TypicalTask, instance_mix
from models.instance import Instance

from ...options import SolveOptions
from .classes import DeviceClass

SCALE = 1000
"""F (milli-GPU) enters the model as integers ⌊SCALE·F⌉."""


def device_free(dc: DeviceClass, used_memory: int = 0, used_cores: int = 0, slots: int = 0) -> int:
    """Free milli-GPU of a device of ``dc`` after running pods and the given new use."""
    dev = dc.device
    if not dc.pool or dc.free_slots - slots <= 0:
        return 0
    parts = []
    if dev.cores > 0:
        parts.append(MILLI * (dc.free_cores - used_cores) // dev.cores)
    if dev.memory > 0:
        parts.append(MILLI * (dc.free_memory - used_memory) // dev.memory)
    return max(0, min(parts, default=0))


def typical_for(instance: Instance, options: SolveOptions) -> tuple[TypicalTask, ...]:
    """The mix the stage optimises against: none while the stage is off, else the options'
    (``--typical-mix``) or the instance's own; the metric reports F against the same mix
    (``models.fragmentation.instance_mix``, ``optimizer.solve.with_metrics``)."""
    if "fragmentation" not in options.objective.active_stages:
        return ()
    if options.objective.typical_mix is not None:
        return options.objective.typical_mix
    return instance_mix(instance)
