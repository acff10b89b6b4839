"""The ``deviceshare`` plugin: Volcano's vGPU device policy and its optional node score.

The device fit itself is the framework's (:mod:`optimizer.greedy.devices`), because vcopt puts
every GPU pod on devices whether or not this plugin is configured. What the plugin adds is
Volcano's configuration of it (``volcano-scheduler.md`` §7.1, §7.4): the device order
(``deviceshare.SchedulePolicy``) and, only with a positive ``deviceshare.ScheduleWeight``, a
node score that prefers the nodes where the chosen devices are fullest (binpack).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..api import NodeInfo, TaskInfo
from ..devices import fit
from ..nodes import device_key
from ..session import FitFailure, Plugin, Session

VGPU_ENABLE = "deviceshare.VGPUEnable"
SCHEDULE_POLICY = "deviceshare.SchedulePolicy"
SCHEDULE_WEIGHT = "deviceshare.ScheduleWeight"


def _bool(arguments: Mapping[str, object], key: str, default: bool) -> bool:
    """Volcano's ``Arguments.GetBool``: a value of another YAML type is ignored."""
    value = arguments.get(key, default)
    return value if isinstance(value, bool) else default


def _int(arguments: Mapping[str, object], key: str, default: int) -> int:
    """``Arguments.GetInt``: only a YAML integer is read (Go's ``.(int)`` assertion)."""
    value = arguments.get(key, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class DeviceSharePlugin(Plugin):
    name = "deviceshare"

    def on_session_open(self, ssn: Session) -> None:
        """Nothing happens unless ``deviceshare.VGPUEnable`` is true, Volcano's default being
        false; the policy then orders devices for every GPU task of the session."""
        if not _bool(self.arguments, VGPU_ENABLE, False):
            return
        policy = self.arguments.get(SCHEDULE_POLICY, "")
        policy = policy if isinstance(policy, str) else ""
        weight = _int(self.arguments, SCHEDULE_WEIGHT, 0)
        ssn.device_policy = policy
        if weight <= 0:
            return

        def node_order(task: TaskInfo, node: NodeInfo) -> float:
            """``⌊gs.Score + 0.5⌋ × ScheduleWeight`` (§7.4); Volcano rounds half up."""
            if not task.gpu_requests or not node.gpus:
                return 0.0
            result = fit(task, node, policy)
            if isinstance(result, FitFailure):
                return 0.0
            return float(math.floor(result.score + 0.5) * weight)

        ssn.add("node_order", self.name, node_order)
        ssn.add("node_order_key", self.name, lambda task: (device_key(task),))
