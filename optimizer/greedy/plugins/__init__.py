"""Volcano's plugins, one module each; :data:`REGISTRY` maps configuration names to classes."""

from __future__ import annotations

from ..session import Plugin
from .binpack import BinpackPlugin
from .capacity import CapacityPlugin
from .conformance import ConformancePlugin
from .deviceshare import DeviceSharePlugin
from .drf import DrfPlugin
from .gang import GangPlugin
from .network_topology_aware import NetworkTopologyAwarePlugin
from .nodeorder import NodeOrderPlugin
from .overcommit import OvercommitPlugin
from .predicates import PredicatesPlugin
from .priority import PriorityPlugin
from .proportion import ProportionPlugin
from .tdm import TdmPlugin

REGISTRY: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (
        PriorityPlugin,
        GangPlugin,
        ConformancePlugin,
        DrfPlugin,
        ProportionPlugin,
        CapacityPlugin,
        PredicatesPlugin,
        NodeOrderPlugin,
        BinpackPlugin,
        OvercommitPlugin,
        TdmPlugin,
        DeviceSharePlugin,
        NetworkTopologyAwarePlugin,
    )
}
