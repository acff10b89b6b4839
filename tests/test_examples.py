"""Every manifest of Volcano's and HAMi's own examples (/work/shared/examples, 80 files) is used
as intended, or refused or ignored with a message that says why.

Expected outcomes are read off the files and spec/volcano-job.md §10, not off vcopt's output:
a vcjob gives its pods (replicas summed over tasks); a fragment without a kind, a file Volcano's
webhook refuses, and YAML that does not parse are bad input naming the reason; objects that are
no part of a scheduling snapshot are ignored with a warning naming them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from models.errors import InputError
from models.load import load, load_inputs

ROOT = Path(__file__).resolve().parents[2] / "shared" / "examples"
"""Volcano's and HAMi's own manifests, beside the checkout (as the Alibaba trace is)."""
V, H = ROOT / "volcano", ROOT / "hami"

pytestmark = pytest.mark.skipif(not ROOT.is_dir(), reason="the shared examples are not here")

LOADED: dict[str, dict[str, int]] = {
    # vcjobs: pods = Σ replicas of the tasks
    "volcano/job.yaml": {"test-job": 6},
    "volcano/vcjob.yaml": {"test-job": 6},
    "volcano/elastic-job.yaml": {"elastic-job": 10},
    "volcano/mindspore-gpu.yaml": {"mindspore-gpu": 3},
    "volcano/how_to_configure_priorityclass_for_job.L12.priorityclasses-job.yaml": {"job": 2},
    "volcano/how_to_use_network_topology_aware_scheduling.L185.job-hard-tier1.yaml": {
        "network-topology-job": 8
    },
    "volcano/how_to_use_network_topology_aware_scheduling.L230.job-partitioned.yaml": {
        "network-topology-job": 8
    },
    "volcano/how_to_use_network_topology_aware_scheduling.L280.job-no-topology.yaml": {
        "network-topology-job": 2
    },
    # PodGroups whose pods are not there: jobs without pods
    "volcano/podgroup.yaml": {"test-pg": 0},
    "volcano/spark-pi.yaml": {"spark-pi-group": 0},
    # bare pods: one-pod jobs named after the pod
    "volcano/dynamic-mig.L131.pod-vgpu-mig.yaml": {"gpu-pod1": 1},
    "hami/default_use.yaml": {"gpu-pod": 1},
    "hami/default_use_legacy.yaml": {"gpu-pod": 1},
    "hami/dynamic_mig_example.yaml": {"gpu-pod": 1},
    "hami/mig_example.yaml": {"gpu-pod": 1},
    "hami/specify_card_type_not_use.yaml": {"gpu-pod": 1},
    "hami/specify_card_type_to_use.yaml": {"gpu-pod": 1},
    "hami/specify_scheduling_policy.yaml": {"gpu-pod": 1},
    "hami/specify_uuid_not_use.yaml": {"gpu-pod": 1},
    "hami/specify_uuid_to_use.yaml": {"gpu-pod": 1},
    "hami/use_exclusive_card.yaml": {"gpu-pod1": 1},
    "hami/use_memory_fraction.yaml": {"gpu-pod": 1},
    "hami/use_as_normal.yaml": {"gpu-pod1": 1, "gpu-pod2": 1},
    "hami/use_sharing_card.yaml": {"gpu-pod1": 1, "gpu-pod2": 1},
}
"""Files that load into jobs: job name → pods."""

CLUSTER: dict[str, tuple[int, int, int]] = {
    "volcano/benchmark-README.L295.hypernode-labelmatch.yaml": (1, 0, 0),
    "volcano/benchmark-gang-queue.yaml": (0, 1, 0),
    "volcano/high-priority.yaml": (0, 0, 1),
    "volcano/normal-priority.yaml": (0, 0, 1),
    "volcano/how_to_use_capacity_plugin.L108.queue1.yaml": (0, 1, 0),
    "volcano/how_to_use_capacity_plugin.L122.queue2.yaml": (0, 1, 0),
    "volcano/how_to_use_dra_quota.L119.queue-ml-team.yaml": (0, 1, 0),
    "volcano/how_to_use_dra_quota.L251.queues-a-b.yaml": (0, 2, 0),
    "volcano/how_to_use_nodegroup_plugin.L19.queue-spec-under-metadata.yaml": (0, 1, 0),
    "volcano/how_to_use_nodegroup_plugin.L224.queue-root.yaml": (0, 1, 0),
    "volcano/how_to_use_nodegroup_plugin.L238.queues-children.yaml": (0, 2, 0),
    "volcano/how_to_use_nodegroup_plugin.L491.queue-empty-parent.yaml": (0, 1, 0),
    "volcano/queue-scoped-overcommit.L73.queue-batch.yaml": (0, 1, 0),
    "volcano/queue.yaml": (0, 1, 0),
    "volcano/queues.yaml": (0, 4, 0),
}
"""Files of cluster objects only: (HyperNodes, Queues, PriorityClasses)."""

SCHEDULER: dict[str, str] = {
    "volcano/how_to_use_capacity_plugin.L29.configmap-capacity.yaml": "capacity",
    "volcano/how_to_use_capacity_plugin.L64.configmap-hierarchy.yaml": "capacity",
    "volcano/how_to_use_network_topology_aware_scheduling.L134.configmap.yaml": (
        "network-topology-aware"
    ),
    "volcano/how_to_use_volcano_vgpu.L63.configmap-deviceshare.yaml": "deviceshare",
    "volcano/scheduler-config.yaml": "priority",
    "volcano/volcano-development.volcano-scheduler-configmap.yaml": "proportion",
}
"""Scheduler ConfigMaps: a plugin their configuration must have."""

IGNORED: dict[str, tuple[str, str]] = {
    "volcano/how_to_use_capacity_plugin.L138.deployment-demo-1.yaml": (
        'Deployment "demo-1"',
        "its pods are not in the input",
    ),
    "volcano/how_to_use_capacity_plugin.L184.deployment-demo-2.yaml": (
        'Deployment "demo-2"',
        "its pods are not in the input",
    ),
    "volcano/hypernodes-validating.yaml": (
        'ValidatingAdmissionPolicy "hypernode-validation-policy"',
        "not a snapshot object",
    ),
    "volcano/queues-validating.yaml": (
        'ValidatingAdmissionPolicy "queue-validation-policy"',
        "not a snapshot object",
    ),
    "volcano/scheduling.volcano.sh_queues.yaml": (
        'CustomResourceDefinition "queues.scheduling.volcano.sh"',
        "not a snapshot object",
    ),
    "volcano/topology.volcano.sh_hypernodes.yaml": (
        'CustomResourceDefinition "hypernodes.topology.volcano.sh"',
        "not a snapshot object",
    ),
    "hami/example.yaml": ('Deployment "cuda-sample-vector-add"', "its pods are not in the input"),
    "hami/job-on-hami.yml": ('Job "default/ai-benchmark-on-hami"', "its pods are not in the input"),
    "hami/vllm_cross_vgpu.yaml": ('Deployment "vllm-cross-vgpu"', "its pods are not in the input"),
}
"""Files with nothing to schedule: (object, why) of the warning."""

_FRAGMENT = ("", "kind", "required field is missing")
_CONF = ("", "", "a volcano-scheduler.conf, not an instance")
_NOT_YAML = ("", "", "not valid YAML")
WEBHOOK = "Volcano's job webhook refuses the job"
REFUSED: dict[str, tuple[str, str, str]] = {
    # a design-document snippet whose PodGroup is named with a placeholder the API server refuses
    "volcano/network-topology-aware-scheduling-design.L637.podgroup-subgroups.yaml": (
        'PodGroup "default/network-topology-job-<jobUID>"',
        "metadata.name",
        "not a DNS-1123 subdomain",
    ),
    "volcano/duplicatedTaskName-webhook-deny.yaml": (
        'Job "default/test-job-webhook-disallow"',
        "spec.tasks[1].name",
        "duplicated task name task-1",
    ),
    "volcano/minAvailable-webhook-deny.yaml": (
        'Job "default/test-job-webhook-disallow"',
        "spec.minAvailable",
        "job 'minAvailable' should not be greater than total replicas in tasks",
    ),
    "volcano/how_to_use_cdp_plugin.L128.job-preemptable-fragment.yaml": (
        'Job "default/test-job"',
        "spec",
        "expected a mapping",
    ),
    "volcano/how_to_use_cdp_plugin.L144.job-task-preemptable.yaml": (
        'Job "default/test-job"',
        "spec.volumes[0]",
        "either VolumeClaim or VolumeClaimName must be specified",
    ),
    "volcano/network-topology-aware-scheduling-design.L601.job-two-partitioned-tasks.yaml": (
        'Job "default/network-topology-job"',
        "spec.tasks[0].template.spec.containers",
        "Required value",
    ),
    "volcano/jobs.yaml": (
        'Job "default/eng-prod-job"',
        "spec.queue",
        'queue.scheduling.volcano.sh "root-eng-prod" not found',
    ),
    "volcano/how_to_use_nodegroup_plugin.L260.queue-frontend-team.yaml": (
        'Queue "frontend-team"',
        "spec.parent",
        'parent queue "engineering" does not exist',
    ),
    "volcano/network-topology-aware-scheduling-design.L102.hypernodes-tree.yaml": (
        "HyperNode (document 1)",
        "metadata.name",
        "required field is missing",
    ),
    "volcano/network-topology-aware-scheduling-design.L171.hypernodes-roce-nvlink.yaml": (
        "HyperNode (document 1)",
        "metadata.name",
        "required field is missing",
    ),
    "volcano/how_to_use_network_topology_aware_scheduling.L54.fragment-tier-allowed.yaml": (
        _FRAGMENT
    ),
    "volcano/how_to_use_network_topology_aware_scheduling.L63.fragment-tier-name.yaml": _FRAGMENT,
    "volcano/how_to_use_network_topology_aware_scheduling.L84.fragment-partition.yaml": _FRAGMENT,
    "volcano/how_to_use_volcano_vgpu.L130.pod-hami-core-fragment.yaml": _FRAGMENT,
    "volcano/how_to_use_volcano_vgpu.L192.exclusive-rules-fragment.yaml": (
        "",
        "",
        "expected a mapping",
    ),
    "volcano/how_to_use_volcano_vgpu.L206.pod-exclusive-fragment.yaml": _FRAGMENT,
    "volcano/how_to_use_volcano_vgpu.L57.node-allocatable-fragment.yaml": _FRAGMENT,
    "volcano/tdm-plugin.L22.conf-fragment.yaml": _CONF,
    "volcano/volcano-scheduler.conf": _CONF,
    "volcano/volcano-scheduler-ci.conf": _CONF,
    "volcano/queue-guarantee-resource-reservation-design.L121.queue-q1.yaml": _NOT_YAML,
    "hami/dynamic-mig.L28.device-config-mig.yaml": _FRAGMENT,
    "hami/protocol.L23.node-register-annotations.txt": _NOT_YAML,
    "hami/protocol.L69.pod-allocation-annotations.txt": _FRAGMENT,
    "hami/scheduler-policy.L177.scoring-weights-fragment.yaml": _FRAGMENT,
    "hami/values.yaml": _FRAGMENT,
}
"""Files that are bad input: (object, field, reason) of one of their errors."""


def _files() -> list[str]:
    skip = {"LICENSE", "NOTICE.txt", "README.md"}
    return sorted(
        f"{d.name}/{f.name}"
        for d in (V, H)
        if d.is_dir()
        for f in d.iterdir()
        if f.name not in skip
    )


def test_every_file_has_an_expected_outcome() -> None:
    expected = set(LOADED) | set(CLUSTER) | set(SCHEDULER) | set(IGNORED) | set(REFUSED)
    assert len(_files()) == 80
    assert set(_files()) == expected


@pytest.mark.parametrize("name", sorted(LOADED))
def test_files_that_load_into_jobs(name: str) -> None:
    instance = load(ROOT / name)
    assert {j.name: len(j.pods) for j in instance.jobs} == LOADED[name]
    for job in instance.jobs:
        assert all(p.key.startswith(f"{job.namespace}/") for p in job.pods)


@pytest.mark.parametrize("name", sorted(CLUSTER))
def test_files_of_cluster_objects(name: str) -> None:
    instance = load(ROOT / name)
    counts = (len(instance.hypernodes), len(instance.queues), len(instance.priority_classes))
    assert counts == CLUSTER[name]


@pytest.mark.parametrize("name", sorted(SCHEDULER))
def test_scheduler_configmaps(name: str) -> None:
    assert load(ROOT / name).scheduler.plugin(SCHEDULER[name]) is not None


@pytest.mark.parametrize("name", sorted(IGNORED))
def test_files_with_nothing_to_schedule_say_so(name: str) -> None:
    instance = load(ROOT / name)
    obj, why = IGNORED[name]
    assert instance.jobs == ()
    assert any(w.obj == obj and why in w.message for w in instance.warnings)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_files_that_are_bad_input_say_why(name: str) -> None:
    with pytest.raises(InputError) as err:
        load(ROOT / name)
    obj, field, why = REFUSED[name]
    assert any(
        p.obj == obj and p.field == field and why in p.message for p in err.value.problems
    ), err.value.problems
    if obj.startswith("Job ") and field.startswith("spec."):
        assert all(
            WEBHOOK in p.message
            for p in err.value.problems
            if p.obj == obj and p.field.startswith("spec.")
        )


def test_the_duplicate_task_name_is_the_only_refusal() -> None:
    """§10.3: the 4 replicas counted before the loop breaks match minAvailable 4."""
    with pytest.raises(InputError) as err:
        load(V / "duplicatedTaskName-webhook-deny.yaml")
    assert [p.field for p in err.value.problems] == ["spec.tasks[1].name"]


def test_hierarchical_jobs_load_with_their_queues() -> None:
    """§10.9: the queues have no spec.parent, so each is a leaf and the jobs are admitted;
    the annotation hierarchy is warned about."""
    instance = load_inputs([V / "queues.yaml", V / "jobs.yaml"])
    assert sorted(j.queue for j in instance.jobs) == sorted(
        ["root-eng-prod", "root-eng-dev", "root-sci-prod", "root-sci-dev"]
    )
    assert any("volcano.sh/hierarchy" in w.field for w in instance.warnings)


def test_task_priority_falls_back_to_the_jobs_class() -> None:
    """The preempt task names task-priority (10); the other falls back to job-priority (1)."""
    instance = load(V / "how_to_configure_priorityclass_for_job.L12.priorityclasses-job.yaml")
    job = instance.jobs[0]
    assert {t.name: t.priority for t in job.tasks} == {"preempt-task": 10, "non-preempt-task": 1}
    assert job.priority == 1
