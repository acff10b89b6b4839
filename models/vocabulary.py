"""The names vcopt shares with Kubernetes, Volcano and HAMi, each spelled once.

A snapshot is read and a plan written in the words the cluster's own components use:
annotation, label and taint keys, priority classes, vcopt's API version, and the scheduler
configuration Volcano's Helm chart installs. The loader, both engines, the verifier and the
plan writer must agree on every spelling, so they all import it from here. Names that only one
domain module reads (GPU request resources in ``models.gpu``, disruption budgets in
``models.tdm``) stay with that module.
"""

from __future__ import annotations

import copy
from typing import Any

API_VERSION = "vcopt/v1alpha1"
"""``apiVersion`` of vcopt's own documents: the compact instance and the plan."""
API_GROUP = API_VERSION.split("/")[0]

# -- Kubernetes --------------------------------------------------------------------------------

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
"""The taint a cordoned node (``spec.unschedulable``) counts as for NodeUnschedulable."""
HOSTNAME_LABEL = "kubernetes.io/hostname"
"""The label the kubelet puts on every node (its name); the per-node topology key."""
DEFAULT_NAMESPACE = "default"
VOLCANO_SCHEDULER = "volcano"
"""The scheduler name Volcano answers to unless started with other ``--scheduler-name`` flags."""
SYSTEM_NAMESPACE = "kube-system"
CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
"""The built-in classes Volcano's ``conformance`` plugin never evicts."""

# -- Volcano -----------------------------------------------------------------------------------

TASK_SPEC = "volcano.sh/task-spec"
"""Pod annotation naming the vcjob task (role) a pod belongs to."""
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
"""Node label naming a TDM zone; on a pod or PodGroup, ``*`` allows revocable nodes."""
PREEMPTABLE = "volcano.sh/preemptable"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
GROUP_NAME = "scheduling.k8s.io/group-name"
"""Pod annotation naming its PodGroup: the one key the scheduler maps pods to jobs by."""
JOB_NAME = "volcano.sh/job-name"
TASK_INDEX = "volcano.sh/task-index"
"""Pod annotations (and labels) the job controller writes: the vcjob and the replica index."""
TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
TOPOLOGY_HIGHEST_TIER = "volcano.sh/network-topology-highest-tier"
"""PodGroup annotations that stand for ``spec.networkTopology`` (mode, highestTierAllowed)."""
VOLCANO_REGISTER = "volcano.sh/node-vgpu-register"
"""Node annotation of Volcano's vGPU device plugin: the device inventory."""
VOLCANO_ALLOCATED = "volcano.sh/vgpu-ids-new"
"""Pod annotation in which Volcano's vGPU code records the devices a bound pod holds."""
NETWORK_TOPOLOGY_PLUGIN = "network-topology-aware"
"""The scheduler plugin without which Volcano enforces no hard topology limit (spec §9.6)."""

# -- HAMi and the NVIDIA device plugin ---------------------------------------------------------

HAMI_REGISTER = "hami.io/node-nvidia-register"
"""Node annotation of HAMi's device plugin: the device inventory."""
HAMI_TO_ALLOCATE = "hami.io/vgpu-devices-to-allocate"
HAMI_ALLOCATED = "hami.io/vgpu-devices-allocated"
HAMI_NODE = "hami.io/vgpu-node"
"""Pod annotations HAMi's scheduler writes when it binds a GPU pod (hami-gpu.md §6)."""
DEVICE_CORDON = "hami.io/device-cordon"
"""Node annotation: comma-separated UUIDs of devices no new pod may use."""
GPU_SCHEDULER_POLICY = "hami.io/gpu-scheduler-policy"
"""Pod annotation: HAMi's device policy (``binpack``, ``spread``, ``mutex``, ``numa`` …)."""
MUTEX_POLICY = "mutex"
"""A GPU policy containing it gives the pod no device already in use (hami-gpu.md §3.3 step 7)."""
NUMA_BIND = "nvidia.com/numa-bind"
"""Pod annotation: a container's GPUs must share one NUMA node."""
USE_GPU_TYPE = "nvidia.com/use-gputype"
NOUSE_GPU_TYPE = "nvidia.com/nouse-gputype"
"""Pod annotations restricting the device types a pod may use (comma lists)."""

# -- Volcano's Helm chart ----------------------------------------------------------------------

_HELM_DEFAULT_SCHEDULER: dict[str, Any] = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {
            "plugins": [
                {"name": "priority"},
                {"name": "gang", "enablePreemptable": False},
                {"name": "conformance"},
            ]
        },
        {
            "plugins": [
                {"name": "overcommit"},
                {"name": "drf", "enablePreemptable": False},
                {"name": "predicates"},
                {"name": "proportion"},
                {"name": "nodeorder"},
                {"name": "binpack"},
            ]
        },
    ],
}


def helm_default_scheduler() -> dict[str, Any]:
    """``installer/helm/chart/volcano/config/volcano-scheduler.conf``, in the same shape.

    A fresh copy on every call: generators extend it (an extra plugin, other actions) and
    must not change what an omitted configuration means.
    """
    return copy.deepcopy(_HELM_DEFAULT_SCHEDULER)
