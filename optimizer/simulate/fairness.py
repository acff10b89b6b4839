"""How each queue fares against what it deserves, instant by instant and over a whole run.

A queue's GPUs are counted here as the quota plugins count them: the ``nvidia.com/gpu``
requests of its bound pods (a pod on a shared device counts its whole request, as it does in
Volcano's queue accounting), so that they compare with the deserved amount the configured
plugin derives in the same unit. Deserved is what the session derives at that instant:
hierarchical capacity, flat capacity, or proportion's water-filling over the requests of the
queues' arrived jobs (every pod, bound or not); with neither plugin, the queue's
``spec.deserved`` as written. A queue none of whose jobs is pending or running at that
instant has no job in the session and deserves nothing.

Over a run, a queue is *starved* while it has GPU work waiting (an unbound pod of an arrived
job that requests GPUs) and holds fewer GPUs than it deserves. Its *share* (held / deserved)
counts while it deserves GPUs and wants some (holds or waits for them). It is due the share
``min(1, wanted / deserved)``: its deserved, or all it wants when that is less (a quota
that capacity sets by hand is often more than the queue's work at the time, and holding all
it wants is then no shortfall). The share error is the time mean of ``|share - due|``: 0 when
the queue held its due whenever it wanted GPUs, above 0 when it held less (starved, or not
placed yet) or more (borrowing beyond its deserved). Proportion clips deserved to what the
queue requests (unless its guarantee is more), so there the due share is 1 and the error is
``|share - 1|``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from models.instance import Instance
from models.queues import capacity_flat, capacity_hierarchical, proportion_deserved
from models.resources import EMPTY, NVIDIA_GPU, Resources
from models.workload import Job

MILLI = 1000
"""``nvidia.com/gpu`` is kept in milli-units (``models.resources``)."""


class QueueLevel(NamedTuple):
    """One queue at one instant, in GPUs as the quota plugins count them."""

    held: float
    deserved: float
    waiting: float
    """GPUs requested by the unbound pods of the queue's arrived jobs."""

    @property
    def share(self) -> float | None:
        """held / deserved while the queue deserves GPUs and holds or waits for some."""
        if self.deserved <= 0 or self.held + self.waiting <= 0:
            return None
        return self.held / self.deserved

    @property
    def due(self) -> float:
        """The share the queue is due: 1, or less when it wants less than it deserves."""
        return min(1.0, (self.held + self.waiting) / self.deserved) if self.deserved > 0 else 0.0

    @property
    def starved(self) -> bool:
        """GPU work waits while the queue holds less than it deserves."""
        return self.waiting > 0 and self.held < self.deserved


def job_request(job: Job) -> Resources:
    """Every pod's request summed: what proportion adds to the queue's request."""
    return sum((t.resources.scaled(t.replicas) for t in job.tasks), EMPTY)


def deserved_gpus(instance: Instance, requests: Mapping[str, Resources]) -> dict[str, int]:
    """Milli ``nvidia.com/gpu`` each queue of ``requests`` (the queues with arrived jobs and
    what their pods request) deserves under the instance's quota plugin; the plugin is chosen
    as ``optimizer.metrics`` chooses it for a snapshot's queue rows."""
    tree = instance.queue_tree
    total = instance.total_allocatable
    scheduler = instance.scheduler
    names = list(requests)
    if scheduler.hierarchy():
        attrs = capacity_hierarchical(tree, total)
        deserved = {n: attrs[n].deserved for n in names}
    elif scheduler.has("capacity"):
        deserved = {n: a.deserved for n, a in capacity_flat(tree, total, names).items()}
    elif scheduler.has("proportion"):
        real = {n: a.real_capability for n, a in capacity_flat(tree, total, names).items()}
        deserved = proportion_deserved([tree.queue(n) for n in names], total, requests, real)
    else:
        deserved = {n: tree.queue(n).deserved for n in names}
    return {n: d.get(NVIDIA_GPU) for n, d in deserved.items()}


class QueueTimes(NamedTuple):
    """A queue's fairness over a run."""

    starved_s: float
    share_error: float | None
    """None when the queue never both deserved and wanted GPUs."""


def queue_times(
    times: Sequence[datetime], levels: Sequence[QueueLevel], end: datetime
) -> QueueTimes:
    """Integrate a queue's levels, each holding from its time to the next (the last to
    ``end``)."""
    starved = weighted = span = 0.0
    for i, level in enumerate(levels):
        until = times[i + 1] if i + 1 < len(times) else end
        seconds = (until - times[i]).total_seconds()
        if level.starved:
            starved += seconds
        share = level.share
        if share is not None:
            weighted += abs(share - level.due) * seconds
            span += seconds
    return QueueTimes(starved, weighted / span if span > 0 else None)
