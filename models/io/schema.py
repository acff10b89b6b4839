"""The shape of the compact instance file (DESIGN §3), checked by pydantic.

This layer only knows field names and JSON types; it rejects unknown fields and wrong types
with their exact location. Meaning (quantities, references, Volcano's admission rules) is
checked afterwards by ``models.io.compact`` and the domain modules, which also name the object.
Field names are spelled as in YAML, so a location can be printed back to the user verbatim.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from pydantic_core import PydanticCustomError

from ..names import key_type_problem
from ..queues import DEFAULT_QUEUE
from ..vocabulary import DEFAULT_NAMESPACE, VOLCANO_SCHEDULER


def _string_keys(value: Any) -> Any:
    """Refuse a key YAML did not read as a string (``on:`` is True, ``~:`` is None) on the
    map itself: a path through the key would print ``labels.True``, which nobody wrote."""
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise PydanticCustomError("key_type", key_type_problem(key))
    return value


StringMap = Annotated[dict[StrictStr, StrictStr], BeforeValidator(_string_keys)]
"""Labels, annotations, a node selector: strings to strings."""
ResourceList = Annotated[dict[StrictStr, Any], BeforeValidator(_string_keys)]
Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]
"""Priorities, gang sizes, weights, ``maxSkew``: Kubernetes and Volcano keep them in an int32."""
Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
"""Integers of a CRD schema without a format, which the API server reads as int64."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MetadataIn(_Strict):
    name: StrictStr = ""
    namespace: StrictStr = ""
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)


class GpuDeviceIn(_Strict):
    id: StrictStr = Field(min_length=1)
    index: StrictInt
    type: StrictStr = "NVIDIA"
    memory: StrictInt
    cores: StrictInt = 100
    count: StrictInt = 10
    numa: StrictInt = 0
    health: StrictBool = True
    mode: StrictStr = "hami-core"


class GpuShorthandIn(_Strict):
    count: StrictInt = Field(ge=0, le=1024)
    type: StrictStr = "NVIDIA"
    memory: StrictInt
    split: StrictInt = Field(default=10, ge=0)
    cores: StrictInt = 100


class TaintIn(_Strict):
    key: StrictStr = Field(min_length=1)
    value: StrictStr = ""
    effect: StrictStr
    timeAdded: Any = None


class NodeIn(_Strict):
    name: StrictStr = Field(min_length=1)
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    taints: list[TaintIn] = Field(default_factory=list)
    allocatable: ResourceList = Field(default_factory=dict)
    unschedulable: StrictBool = False
    gpus: Any = None
    """A list of devices or the ``{count, type, memory}`` shorthand; checked by the loader."""


class NodeGroupIn(_Strict):
    namePrefix: StrictStr = Field(min_length=1)
    count: StrictInt = Field(ge=1, le=100_000)
    start: StrictInt = Field(default=0, ge=0, le=10**15)
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    taints: list[TaintIn] = Field(default_factory=list)
    allocatable: ResourceList = Field(default_factory=dict)
    unschedulable: StrictBool = False
    gpus: GpuShorthandIn | None = None


class ExactMatchIn(_Strict):
    name: StrictStr


class RegexMatchIn(_Strict):
    pattern: StrictStr


class LabelExpressionIn(_Strict):
    key: StrictStr
    operator: StrictStr
    values: list[StrictStr] = Field(default_factory=list)


class LabelSelectorIn(_Strict):
    matchLabels: StringMap = Field(default_factory=dict)
    matchExpressions: list[LabelExpressionIn] = Field(default_factory=list)


class PodAffinityTermIn(_Strict):
    """A pod (anti-)affinity term: ``affinity`` of a task is read with these by
    ``models.io.affinity``."""

    topologyKey: StrictStr = ""
    labelSelector: LabelSelectorIn | None = None
    namespaces: list[StrictStr] = Field(default_factory=list)
    namespaceSelector: LabelSelectorIn | None = None
    matchLabelKeys: list[StrictStr] = Field(default_factory=list)
    mismatchLabelKeys: list[StrictStr] = Field(default_factory=list)


class WeightedPodAffinityTermIn(_Strict):
    weight: Int32
    podAffinityTerm: PodAffinityTermIn


class PodAffinityIn(_Strict):
    requiredDuringSchedulingIgnoredDuringExecution: list[PodAffinityTermIn] = Field(
        default_factory=list
    )
    preferredDuringSchedulingIgnoredDuringExecution: list[WeightedPodAffinityTermIn] = Field(
        default_factory=list
    )


class NodeSelectorTermIn(_Strict):
    matchExpressions: list[LabelExpressionIn] = Field(default_factory=list)
    matchFields: list[LabelExpressionIn] = Field(default_factory=list)


class PreferredSchedulingTermIn(_Strict):
    weight: Int32
    preference: NodeSelectorTermIn


class SpreadConstraintIn(_Strict):
    maxSkew: Int32
    topologyKey: StrictStr
    whenUnsatisfiable: StrictStr
    labelSelector: LabelSelectorIn | None = None
    minDomains: Int32 | None = None
    nodeAffinityPolicy: StrictStr | None = None
    nodeTaintsPolicy: StrictStr | None = None
    matchLabelKeys: list[StrictStr] = Field(default_factory=list)


class SelectorIn(_Strict):
    exactMatch: ExactMatchIn | None = None
    regexMatch: RegexMatchIn | None = None
    labelMatch: LabelSelectorIn | None = None


class MemberIn(_Strict):
    type: StrictStr = ""
    selector: SelectorIn = Field(default_factory=SelectorIn)


class HyperNodeIn(_Strict):
    name: StrictStr = Field(min_length=1)
    tier: Int64
    tierName: StrictStr = ""
    members: list[MemberIn] = Field(default_factory=list)


class QueueIn(_Strict):
    name: StrictStr = Field(min_length=1)
    parent: StrictStr = ""
    weight: Int32 = 1
    priority: Int32 = 0
    deserved: ResourceList = Field(default_factory=dict)
    capability: ResourceList = Field(default_factory=dict)
    guarantee: ResourceList = Field(default_factory=dict)
    reclaimable: StrictBool = True
    state: StrictStr = "Open"
    affinity: Any = None
    type: Any = None
    extendClusters: Any = None
    dequeueStrategy: Any = None


class NamespaceIn(_Strict):
    name: StrictStr = Field(min_length=1)
    labels: StringMap = Field(default_factory=dict)


class PriorityClassIn(_Strict):
    name: StrictStr = Field(min_length=1)
    value: Int32
    globalDefault: StrictBool = False
    description: StrictStr = ""
    preemptionPolicy: StrictStr = "PreemptLowerPriority"


class NetworkTopologyIn(_Strict):
    mode: StrictStr = "hard"
    highestTierAllowed: Int64 | None = None
    highestTierName: StrictStr | None = None


class TolerationIn(_Strict):
    key: StrictStr = ""
    operator: StrictStr = "Equal"
    value: StrictStr = ""
    effect: StrictStr = ""
    tolerationSeconds: Int64 | None = None


class TaskIn(_Strict):
    name: StrictStr = Field(min_length=1)
    replicas: StrictInt = Field(default=1, ge=0, le=1_000_000)
    resources: ResourceList = Field(default_factory=dict)
    initResources: ResourceList | None = None
    priority: Int32 | None = None
    priorityClassName: StrictStr = ""
    preemptionPolicy: StrictStr = "PreemptLowerPriority"
    minAvailable: Int32 | None = None
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    nodeSelector: StringMap = Field(default_factory=dict)
    affinity: Annotated[dict[StrictStr, Any], BeforeValidator(_string_keys)] | None = None
    tolerations: list[TolerationIn] = Field(default_factory=list)
    topologySpreadConstraints: list[Any] = Field(default_factory=list)
    podNames: list[StrictStr] = Field(default_factory=list)


class DeviceShareIn(_Strict):
    id: StrictStr = Field(min_length=1)
    memory: Int64 = 0
    cores: Int64 = 0


class RunningIn(_Strict):
    index: Int32 = Field(ge=0)
    node: StrictStr = Field(min_length=1)
    task: StrictStr | None = None
    gpus: Any = None
    """Devices of a one-container pod, or one list per GPU container; checked by the loader."""


class JobIn(_Strict):
    name: StrictStr = Field(min_length=1)
    namespace: StrictStr = DEFAULT_NAMESPACE
    queue: StrictStr = DEFAULT_QUEUE
    priorityClassName: StrictStr = ""
    priority: Int32 | None = None
    minAvailable: Int32 | None = None
    minTaskMember: Annotated[dict[StrictStr, Int32], BeforeValidator(_string_keys)] = Field(
        default_factory=dict
    )
    minResources: ResourceList | None = None
    networkTopology: NetworkTopologyIn | None = None
    labels: StringMap = Field(default_factory=dict)
    annotations: StringMap = Field(default_factory=dict)
    duration: StrictStr | StrictInt | StrictFloat | None = None
    """A Go duration, or seconds as a number."""
    arrival: Any = None
    """An RFC 3339 time, or a Go duration after ``now``; read by ``models.io.jobs``."""
    startedAt: Any = None
    remaining: StrictStr | StrictInt | StrictFloat | None = None
    phase: StrictStr | None = None
    creationTimestamp: Any = None
    copyAnnotations: StrictBool = True
    schedulerName: StrictStr = Field(default=VOLCANO_SCHEDULER, min_length=1, max_length=63)
    tasks: list[TaskIn] | None = Field(default=None, min_length=1)
    """Omitted for a PodGroup whose pods do not exist yet; an explicit empty list is refused,
    as Volcano's CRD refuses ``tasks: []``."""
    running: list[RunningIn] = Field(default_factory=list)


class InstanceIn(_Strict):
    apiVersion: StrictStr
    kind: StrictStr
    metadata: MetadataIn = Field(default_factory=MetadataIn)
    now: Any = None
    timezone: StrictStr = "UTC"
    scheduler: Any = None
    schedulerNames: list[StrictStr] = Field(default=[VOLCANO_SCHEDULER], min_length=1)
    priorityClasses: list[PriorityClassIn] = Field(default_factory=list)
    namespaces: list[NamespaceIn] = Field(default_factory=list)
    nodes: list[NodeIn] = Field(default_factory=list)
    nodeGroups: list[NodeGroupIn] = Field(default_factory=list)
    hypernodes: list[HyperNodeIn] = Field(default_factory=list)
    queues: list[QueueIn] = Field(default_factory=list)
    jobs: list[JobIn] = Field(default_factory=list)
