"""Admission of a Volcano Job (vcjob): the defaults the mutating webhook writes and the rules
the validating webhook, the CRD schema and Kubernetes' pod template checks refuse a job by
(``spec/volcano-job.md`` §3, §4.1, §4.2, §4.4).

A dump holds jobs the API server accepted, but a manifest a user wants to try does not: a job
Volcano would refuse must not be planned as if it ran. Each refusal is reported on the job and
the field it concerns, with the webhook's own reason, so that the message matches what
``kubectl apply`` would print. The rules run on the mutated job, as the webhook sees it; the
queue rules (#10–#13) need every Queue of the dump and are :func:`queue_refusals`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import Diagnostics, shown, shown_value
from ...names import label_problem
from ...quantity import QuantityError, parse_quantity
from ...queues import DEFAULT_QUEUE, ROOT

REFUSED = "Volcano's job webhook refuses the job"
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
EXTERNAL_EVENTS = (
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
)
EXTERNAL_ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
JOB_PLUGINS = ("ssh", "env", "svc", "tensorflow", "mpi", "pytorch", "hcclrank", "ray")
TOPOLOGY_POLICIES = ("", "none", "best-effort", "restricted", "single-numa-node")
TOPOLOGY_MODES = ("hard", "soft")


def mutate(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The job spec after the CRD defaults and the mutating webhook (§1, §3), as a copy."""
    out = dict(spec)
    out["queue"] = out.get("queue") or DEFAULT_QUEUE
    tasks = []
    for i, raw in enumerate(_items(out.get("tasks"))):
        task = dict(raw)
        task["name"] = task.get("name") or f"default{i}"
        if task.get("minAvailable") is None:
            partition = task.get("partitionPolicy")
            size, least = _partition_sizes(partition)
            replicas = _int(task.get("replicas"))
            task["minAvailable"] = least * size if partition and least > 0 else replicas
        tasks.append(task)
    out["tasks"] = tasks
    if not _int(out.get("minAvailable")):
        out["minAvailable"] = sum(_int(t.get("minAvailable")) for t in tasks)
    for key in ("networkTopology",):
        if isinstance(out.get(key), Mapping):
            out[key] = {"mode": "hard", **out[key]}
    return out


def refusals(name: str, spec: Mapping[str, Any], obj: str, diag: Diagnostics) -> None:
    """Record every reason the webhook and the schema give for refusing the mutated ``spec``
    of job ``name``; the two rules that stop the webhook at once (#1, #2) stop here too."""
    errors = len(diag.errors)
    tasks = spec.get("tasks") or []
    if not tasks:
        diag.error(obj, "spec.tasks", f"No task specified in job spec ({REFUSED})")
        return
    if not _mpi_master_found(spec):
        diag.error(
            obj, "spec.plugins.mpi", f"The specified mpi master task was not found ({REFUSED})"
        )
        return
    _topology(spec.get("networkTopology"), obj, "spec.networkTopology", diag)
    replicas = _tasks(name, tasks, obj, diag)
    if _QUALIFIED.match(name) is None or len(name) > 63:
        diag.error(
            obj,
            "metadata.name",
            f"create job with name {shown(name)} validate failed: must be a qualified name of at "
            f"most 63 characters ({REFUSED})",
        )
    if replicas < _int(spec.get("minAvailable")):
        diag.error(
            obj,
            "spec.minAvailable",
            f"job 'minAvailable' should not be greater than total replicas in tasks ({REFUSED})",
        )
    if _int(spec.get("minAvailable")) < 0:
        diag.error(obj, "spec.minAvailable", f"must be >= 0 ({REFUSED})")
    _policies(spec.get("policies"), obj, "spec.policies", diag)
    for plugin in _mapping(spec.get("plugins")):
        if plugin not in JOB_PLUGINS:
            diag.error(
                obj,
                f"spec.plugins.{shown(str(plugin))}",
                f"unable to find job plugin: {shown(str(plugin))} ({REFUSED})",
            )
    _volumes(spec.get("volumes"), obj, diag)
    _schema(spec, obj, diag)
    if len(diag.errors) == errors:
        _dependencies(tasks, obj, diag)


def queue_refusals(
    spec: Mapping[str, Any], queues: Sequence[Mapping[str, Any]], obj: str, diag: Diagnostics
) -> None:
    """Rules #10–#13: the job's queue exists (``default`` always does: Volcano creates it),
    is Open, is not ``root`` and has no child queue (by ``spec.parent`` only)."""
    queue = spec.get("queue") or DEFAULT_QUEUE
    field = "spec.queue"
    if queue == ROOT:
        diag.error(obj, field, f"can not submit job to root queue ({REFUSED})")
        return
    found = next((q for q in queues if q.get("name") == queue), None)
    if found is None:
        if queue != DEFAULT_QUEUE:
            diag.error(
                obj,
                field,
                f'unable to find job queue: queue.scheduling.volcano.sh "{shown(queue)}" not found '
                f"({REFUSED}; add the Queue to the input)",
            )
        return
    state = found.get("state", "Open")
    if state != "Open":
        diag.error(
            obj,
            field,
            f"can only submit job to queue with state `Open`, queue `{shown(queue)}` status is "
            f"`{state}` ({REFUSED})",
        )
    # A queue that names itself as parent is no child of its own: the queue webhook refuses
    # it, and that refusal is the one to read (``models.queues``).
    children = [
        q.get("name") for q in queues if q.get("parent") == queue and q.get("name") != queue
    ]
    if children:
        diag.error(
            obj,
            field,
            f"can only submit job to leaf queue, queue `{shown(queue)}` has {len(children)} child "
            f"queues ({REFUSED})",
        )


# -- per-task rules ---------------------------------------------------------------------------


def _tasks(job: str, tasks: Sequence[Mapping[str, Any]], obj: str, diag: Diagnostics) -> int:
    """Rules 4a–4g in the webhook's order; the replicas counted up to a duplicated name."""
    seen: set[str] = set()
    replicas = 0
    for i, task in enumerate(tasks):
        field = f"spec.tasks[{i}]"
        name = str(task.get("name"))
        count = _int(task.get("replicas"))
        least = task.get("minAvailable")
        if isinstance(least, int) and least > count:
            diag.error(
                obj,
                f"{field}.minAvailable",
                f"'minAvailable' is greater than 'replicas' in task: {shown(name)}, "
                f"job: {shown(job)} ({REFUSED})",
            )
        replicas += count
        if name in seen:
            diag.error(obj, f"{field}.name", f"duplicated task name {shown(name)} ({REFUSED})")
            break
        seen.add(name)
        _policies(task.get("policies"), obj, f"{field}.policies", diag)
        pod = f"{job}-{name}-{i}"
        if _QUALIFIED.match(pod) is None or len(pod) > 63:
            diag.error(
                obj,
                f"{field}.name",
                f"create pod with name {shown(pod)} validate failed: a pod name must be a "
                f"qualified name of at most 63 characters ({REFUSED})",
            )
        _template(task.get("template"), obj, i, diag)
        _integer_cpus(task, obj, i, diag)
        _partition(job, task, obj, field, diag)
    return replicas


def _template(template: object, obj: str, i: int, diag: Diagnostics) -> None:
    """The part of Kubernetes' ``ValidatePodTemplate`` that manifests get wrong: at least one
    container, each with a unique DNS-1123 label as its name and an image."""
    spec = _mapping(_mapping(template).get("spec"))
    field = f"spec.tasks[{i}].template.spec"
    containers = _items(spec.get("containers"))
    if not containers:
        diag.error(
            obj, f"{field}.containers", f"spec.task[{i}].containers: Required value ({REFUSED})"
        )
    names: set[str] = set()
    for kind in ("initContainers", "containers"):
        for c, container in enumerate(_items(spec.get(kind))):
            where = f"{field}.{kind}[{c}]"
            cname = container.get("name")
            if not cname:
                diag.error(obj, f"{where}.name", f"Required value ({REFUSED})")
            elif not isinstance(cname, str) or label_problem(cname):
                problem = label_problem(cname) if isinstance(cname, str) else "not a string"
                diag.error(obj, f"{where}.name", f"{shown_value(cname)}: {problem} ({REFUSED})")
            elif cname in names:
                diag.error(obj, f"{where}.name", f'Duplicate value: "{shown(cname)}" ({REFUSED})')
            names.add(str(cname))
            if not container.get("image"):
                diag.error(obj, f"{where}.image", f"Required value ({REFUSED})")


def _integer_cpus(task: Mapping[str, Any], obj: str, i: int, diag: Diagnostics) -> None:
    """Rule 4f: a NUMA topology policy needs whole CPUs in every container (a missing request
    is 0, so it is refused too); limits stand in when no request is written."""
    if task.get("topologyPolicy") in (None, "", "none"):
        return
    spec = _mapping(_mapping(task.get("template")).get("spec"))
    containers = [*_items(spec.get("containers")), *_items(spec.get("initContainers"))]
    for c, container in enumerate(containers):
        resources = _mapping(container.get("resources"))
        amounts = _mapping(resources.get("requests")) or _mapping(resources.get("limits"))
        try:
            cpu = parse_quantity(amounts.get("cpu", 0))
        except QuantityError:
            continue
        if cpu <= 0 or cpu.denominator != 1:
            diag.error(
                obj,
                f"spec.tasks[{i}].topologyPolicy",
                f"the cpu request isn't an integer in spec.task[{i}] container[{c}] ({REFUSED})",
            )


def _partition(job: str, task: Mapping[str, Any], obj: str, field: str, diag: Diagnostics) -> None:
    """Rule 4g: the first failing check of the partition chain, then its topology."""
    policy = task.get("partitionPolicy")
    if not isinstance(policy, Mapping):
        return
    name = task.get("name")
    total, size = _int(policy.get("totalPartitions")), _int(policy.get("partitionSize"))
    least = _int(policy.get("minPartitions"))
    where = f"{field}.partitionPolicy"
    checks = (
        (total <= 0, "totalPartitions", "'TotalPartitions' must be greater than 0"),
        (size <= 0, "partitionSize", "'PartitionSize' must be greater than 0"),
        (
            _int(task.get("replicas")) != total * size,
            "totalPartitions",
            "'Replicas' are not equal to TotalPartitions*PartitionSize",
        ),
        (
            task.get("minAvailable") is not None
            and least > 0
            and least * size != task.get("minAvailable"),
            "minPartitions",
            "'MinAvailable' is not equal to MinPartitions*PartitionSize",
        ),
    )
    for failed, key, text in checks:
        if failed:
            diag.error(
                obj,
                f"{where}.{key}",
                f"{text} in task: {shown(name)}, job: {shown(job)} ({REFUSED})",
            )
            break
    _topology(policy.get("networkTopology"), obj, f"{where}.networkTopology", diag)


def _topology(raw: object, obj: str, field: str, diag: Diagnostics) -> None:
    topology = _mapping(raw)
    if "highestTierAllowed" in topology and "highestTierName" in topology:
        diag.error(
            obj,
            field,
            "must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology "
            f"simultaneously ({REFUSED})",
        )
    if topology.get("mode", "hard") not in TOPOLOGY_MODES:
        diag.error(obj, f"{field}.mode", f"Unsupported value: must be hard or soft ({REFUSED})")
    tier = topology.get("highestTierAllowed")
    if isinstance(tier, int) and tier < 0:
        diag.error(obj, f"{field}.highestTierAllowed", f"must be >= 0 ({REFUSED})")


# -- policies, plugins, volumes, dependencies ---------------------------------------------------


def _policies(raw: object, obj: str, field: str, diag: Diagnostics) -> None:
    """``validatePolicies`` (§4.2): the walk stops at the first bad policy; a ``*`` with any
    other event is refused even then."""
    events_seen: list[str] = []
    codes_seen: set[int] = set()
    for policy in _items(raw):
        problem = _policy(policy, events_seen, codes_seen)
        if problem is not None:
            diag.error(obj, field, f"{problem} ({REFUSED})")
            break
    if "*" in events_seen and len(set(events_seen)) > 1:
        diag.error(obj, field, f"if there's * here, no other policy should be here ({REFUSED})")


def _policy(policy: Mapping[str, Any], events_seen: list[str], codes_seen: set[int]) -> str | None:
    events = [*_strings(policy.get("events")), *_strings([policy.get("event")])]
    code = policy.get("exitCode")
    if events and code is not None:
        return "must not specify event and exitCode simultaneously"
    if not events and code is None:
        return "either event and exitCode should be specified"
    if code is not None:
        if code == 0:
            return "0 is not a valid error code"
        if code in codes_seen:
            return f"duplicate exitCode {code}"
        codes_seen.add(code)
        return None
    for event in dict.fromkeys(events):
        if event not in EXTERNAL_EVENTS:
            return f'Invalid value: "{shown(event)}": invalid policy event'
        action = policy.get("action") or ""
        if action not in EXTERNAL_ACTIONS:
            return f'Invalid value: "{shown(action)}": invalid policy action'
        if event in events_seen:
            return f"duplicate event {shown(event)}  across different policy"
        events_seen.append(event)
    return None


def _mpi_master_found(spec: Mapping[str, Any]) -> bool:
    plugins = _mapping(spec.get("plugins"))
    if "mpi" not in plugins:
        return True
    master = "master"
    for arg in _strings(plugins.get("mpi") or []):
        flag, _, value = arg.lstrip("-").partition("=")
        if flag == "master" and value:
            master = value
    return any(t.get("name") == master for t in spec.get("tasks") or [])


def _volumes(raw: object, obj: str, diag: Diagnostics) -> None:
    """``validateIO``: only the first failing volume is reported."""
    paths: set[str] = set()
    for i, volume in enumerate(_items(raw)):
        field = f"spec.volumes[{i}]"
        path = volume.get("mountPath")
        path = path if isinstance(path, str) else ""
        claim_name, claim = volume.get("volumeClaimName"), volume.get("volumeClaim")
        problem = None
        if not path:
            problem = "mountPath", "mountPath is required"
        elif path in paths:
            problem = "mountPath", f"duplicated mountPath: {shown(path)}"
        elif not claim_name and claim is None:
            problem = "", "either VolumeClaim or VolumeClaimName must be specified"
        elif claim_name and claim is not None:
            problem = "", "conflict: set either volumeClaimName (an existing PVC) or volumeClaim"
        if problem is not None:
            key, text = problem
            diag.error(obj, f"{field}.{key}" if key else field, f"{text} ({REFUSED})")
            return
        paths.add(str(path))


def _dependencies(tasks: Sequence[Mapping[str, Any]], obj: str, diag: Diagnostics) -> None:
    """Rule 14: ``dependsOn`` must form a DAG of existing tasks (Kahn's algorithm; a name
    repeated in one list, or one that is no task, never reaches in-degree 0)."""
    if not any(t.get("dependsOn") is not None for t in tasks):
        return
    names = [str(t.get("name")) for t in tasks]
    indegree = dict.fromkeys(names, 0)
    edges: dict[str, list[str]] = {}
    broken = False
    for task in tasks:
        for dep in _strings(_mapping(task.get("dependsOn")).get("name")):
            if dep not in indegree:
                broken = True
                continue
            edges.setdefault(dep, []).append(str(task.get("name")))
            indegree[str(task.get("name"))] += 1
    ready = [n for n, d in indegree.items() if d == 0]
    done = 0
    while ready:
        node = ready.pop()
        done += 1
        for nxt in edges.get(node, []):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    if broken or done < len(indegree):
        diag.error(
            obj,
            "spec.tasks",
            "job has dependencies between tasks, but doesn't form a directed acyclic "
            f"graph(DAG) ({REFUSED})",
        )


_JOB_TYPES = {
    "minAvailable": int,
    "minSuccess": int,
    "maxRetry": int,
    "ttlSecondsAfterFinished": int,
    "queue": str,
    "priorityClassName": str,
    "schedulerName": str,
    "tasks": list,
    "policies": list,
    "plugins": Mapping,
    "volumes": list,
    "networkTopology": Mapping,
}
_TASK_TYPES = {
    "name": str,
    "replicas": int,
    "minAvailable": int,
    "maxRetry": int,
    "template": Mapping,
    "policies": list,
    "dependsOn": Mapping,
    "partitionPolicy": Mapping,
    "topologyPolicy": str,
}
_TYPE_NAMES = {int: "an integer", str: "a string", list: "a list", Mapping: "a mapping"}


_POD_TYPES = {
    "schedulerName": str,
    "nodeName": str,
    "priorityClassName": str,
    "priority": int,
    "preemptionPolicy": str,
}
"""Pod spec fields of a task template that vcopt reads: the API server decodes them into
a string or an int32 before anything else looks at the template."""
_PARTITION_TYPES = {"totalPartitions": int, "partitionSize": int, "minPartitions": int}
_INT32 = (-(2**31), 2**31 - 1)
"""Every integer of a vcjob and of a pod spec is an int32 in the Go types."""


def _types(raw: Mapping[str, Any], types: Mapping[str, type], at: str) -> list[tuple[str, str]]:
    """(field, expected type) of each field of ``raw`` whose JSON type the schema refuses;
    an integer out of the int32 range does not decode either."""
    wrong = []
    for key, kind in types.items():
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            wrong.append((f"{at}.{key}", _TYPE_NAMES[kind]))
        elif kind is int and not _INT32[0] <= value <= _INT32[1]:
            wrong.append((f"{at}.{key}", f"an int32 (at most {_INT32[1]:,})"))
    return wrong


def shape_refusals(spec: object, obj: str, diag: Diagnostics) -> bool:
    """The CRD schema's type checks on the job as written; False when any fails (the job is
    then not admitted and its other rules are not judged)."""
    if not isinstance(spec, Mapping):
        diag.error(obj, "spec", "expected a mapping (the CRD schema refuses the job)")
        return False
    problems = _types(spec, _JOB_TYPES, "spec")
    tasks = spec.get("tasks") if isinstance(spec.get("tasks"), list) else []
    for i, task in enumerate(tasks):
        at = f"spec.tasks[{i}]"
        if not isinstance(task, Mapping):
            problems.append((at, "a mapping"))
            continue
        problems += _types(task, _TASK_TYPES, at)
        depends = task.get("dependsOn")
        if isinstance(depends, Mapping) and not isinstance(depends.get("name", []), list):
            problems.append((f"{at}.dependsOn.name", "a list"))
        partition = task.get("partitionPolicy")
        if isinstance(partition, Mapping):
            problems += _types(partition, _PARTITION_TYPES, f"{at}.partitionPolicy")
        template = task.get("template")
        pod = template.get("spec") if isinstance(template, Mapping) else None
        if isinstance(pod, Mapping):
            problems += _types(pod, _POD_TYPES, f"{at}.template.spec")
    for field, expected in problems:
        diag.error(obj, field, f"expected {expected} (the CRD schema refuses the job)")
    return not problems


_LEAST = {"maxRetry": 0, "ttlSecondsAfterFinished": 0, "minSuccess": 1}
"""The CRD's minimums on job fields the webhook does not look at (§4.4)."""


def _schema(spec: Mapping[str, Any], obj: str, diag: Diagnostics) -> None:
    """The CRD schema's checks the webhook relies on (§4.4): name patterns, ranges, enums."""
    for key in ("queue", "priorityClassName"):
        value = spec.get(key)
        if value and (not isinstance(value, str) or not _DNS_SUBDOMAIN.match(value)):
            diag.error(
                obj,
                f"spec.{key}",
                f"must be a lowercase RFC 1123 subdomain, got {shown_value(value)}",
            )
    for key, least in _LEAST.items():
        value = spec.get(key)
        if isinstance(value, int) and value < least:
            diag.error(
                obj,
                f"spec.{key}",
                f"must be >= {least}, got {value} (the CRD schema refuses the job)",
            )
    scheduler = spec.get("schedulerName")
    if isinstance(scheduler, str) and len(scheduler) > 63:
        diag.error(
            obj,
            "spec.schedulerName",
            f"must be at most 63 characters, got {len(scheduler)} (the CRD schema refuses the job)",
        )
    tier_name = _mapping(spec.get("networkTopology")).get("highestTierName")
    if isinstance(tier_name, str) and len(tier_name) > 253:
        diag.error(
            obj,
            "spec.networkTopology.highestTierName",
            f"must be at most 253 characters, got {len(tier_name)} (the CRD schema refuses "
            "the job)",
        )
    for i, task in enumerate(spec.get("tasks") or []):
        field = f"spec.tasks[{i}]"
        name = task.get("name")
        if not isinstance(name, str) or not _DNS_LABEL.match(name) or len(name) > 63:
            diag.error(
                obj, f"{field}.name", f"must be a lowercase RFC 1123 label, got {shown_value(name)}"
            )
        for key in ("replicas", "minAvailable", "maxRetry"):
            value = task.get(key)
            if value is not None and (not isinstance(value, int) or value < 0):
                diag.error(
                    obj, f"{field}.{key}", f"must be an integer >= 0, got {shown_value(value)}"
                )
        if task.get("topologyPolicy", "") not in TOPOLOGY_POLICIES:
            diag.error(
                obj,
                f"{field}.topologyPolicy",
                "must be one of none, best-effort, restricted, single-numa-node",
            )


# -- tolerant access ---------------------------------------------------------------------------


def _partition_sizes(policy: object) -> tuple[int, int]:
    p = _mapping(policy)
    return _int(p.get("partitionSize")), _int(p.get("minPartitions"))


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
