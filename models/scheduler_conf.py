"""The scheduler configuration, in Volcano's own ``volcano-scheduler.conf`` format.

Users paste the ConfigMap they run, so vcopt reads the same keys with the same defaults:
actions as one comma-separated string, tiers of plugins, ``enableXxx`` switches that default to
true (``pkg/scheduler/plugins/defaults.go``) and free-form plugin ``arguments``. An omitted
configuration means the Helm chart's default, which is what most clusters run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .errors import Diagnostics
from .golang import parse_go_bool
from .vocabulary import NETWORK_TOPOLOGY_PLUGIN, helm_default_scheduler

KNOWN_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle")
"""The actions vcopt runs; the greedy engine implements every one of them."""
EVICTING_ACTIONS = ("preempt", "reclaim")
OTHER_ACTIONS = ("gangpreempt", "gangreclaim")
MODELLED_PLUGINS = frozenset(
    {
        "priority",
        "gang",
        "conformance",
        "drf",
        "proportion",
        "capacity",
        "predicates",
        "nodeorder",
        "binpack",
        "overcommit",
        "tdm",
        "deviceshare",
        NETWORK_TOPOLOGY_PLUGIN,
    }
)

KNOWN_PLUGINS = MODELLED_PLUGINS | {
    "sla",
    "task-topology",
    "numaaware",
    "nodegroup",
    "usage",
    "extender",
    "resource-strategy-fit",
    "cdp",
    "rescheduling",
    "pdb",
    "resourcequota",
    "capacity-card",
}
"""Plugins Volcano ships; vcopt models a subset and warns about the rest."""

EVICTION_HOOKS: Mapping[str, frozenset[str]] = {
    "Preemptable": frozenset({"conformance", "drf", "gang", "priority"}),
    "Reclaimable": frozenset({"capacity", "conformance", "gang", "proportion"}),
}
"""The modelled plugins whose eviction hook (``AddPreemptableFn`` / ``AddReclaimableFn``) can
hand out any running pod as a victim. ``tdm`` registers Preemptable too, but its answer only
holds pods on revocable nodes, which TDM's own rules cover."""

FLAGS = (
    "JobOrder",
    "SubJobOrder",
    "NamespaceOrder",
    "Hierarchy",
    "JobReady",
    "SubJobReady",
    "JobPipelined",
    "SubJobPipelined",
    "TaskOrder",
    "Preemptable",
    "Reclaimable",
    "Preemptive",
    "QueueOrder",
    "ClusterOrder",
    "Predicate",
    "BestNode",
    "NodeOrder",
    "TargetJob",
    "ReservedNodes",
    "JobEnqueued",
    "Victim",
    "JobStarving",
    "Overused",
    "Allocatable",
    "HyperNodeOrder",
    "HyperNodeGradient",
)
"""The ``enable*`` switches of Volcano's ``conf.PluginOption``.

Volcano spells some ``enableXxx`` and others ``enabledXxx`` (``enabledVictim``,
``enabledOverused``…); both spellings of every flag are accepted.
"""

_FLAG_KEY = re.compile(r"^[eE]nabled?(?P<flag>[A-Z][A-Za-z]*)$")
_FLAGS_BY_LOWER = {f.lower(): f for f in FLAGS}


def flag_of(key: str) -> str | None:
    """The canonical flag name of a plugin option key, or None if it is not a flag."""
    match = _FLAG_KEY.match(key)
    if not match:
        return None
    return _FLAGS_BY_LOWER.get(match["flag"].lower())


PREEMPT_FLAGS = ("enableTopologyAwarePreemption", "predicateErrorCacheEnable")
PREEMPT_COUNTS = (
    "minCandidateNodesPercentage",
    "minCandidateNodesAbsolute",
    "maxCandidateNodesAbsolute",
    "topologyAwarePreemptWorkerNum",
)
"""The arguments ``actions/preempt/preempt.go:parseArguments`` reads with ``GetBool`` and with
``GetInt``. vcopt scans nodes sequentially and keeps no predicate error cache, so
``topologyAwarePreemptWorkerNum`` and ``predicateErrorCacheEnable`` are accepted and change
nothing."""


@dataclass(frozen=True)
class PreemptArguments:
    """The preempt action's arguments (``configurations: [{name: preempt, arguments}]``),
    with ``preempt.go:New``'s defaults."""

    topology_aware: bool = False
    """``enableTopologyAwarePreemption``: dry-run victims per node with reprieve (spec §8.1)."""
    min_candidates_percentage: int = 10
    min_candidates_absolute: int = 1
    max_candidates_absolute: int = 100

    @classmethod
    def read(
        cls, arguments: Mapping[str, object], warn: Callable[[str, str], None] | None = None
    ) -> PreemptArguments:
        """The arguments as Volcano reads them: a value of the wrong type keeps the default
        (Volcano only logs it; ``warn(key, message)`` is told)."""
        flags: dict[str, bool] = {}
        counts: dict[str, int] = {}
        for key in PREEMPT_FLAGS:
            if key in arguments:
                flag = _go_bool(arguments[key])
                if flag is not None:
                    flags[key] = flag
                elif warn is not None:
                    warn(key, f"must be true or false, got {arguments[key]!r}; Volcano ignores it")
        for key in PREEMPT_COUNTS:
            if key in arguments:
                value = arguments[key]
                if isinstance(value, int) and not isinstance(value, bool):
                    counts[key] = value
                elif warn is not None:
                    warn(key, f"must be an integer, got {value!r}; Volcano ignores it")
        return cls(
            flags.get("enableTopologyAwarePreemption", cls.topology_aware),
            counts.get("minCandidateNodesPercentage", cls.min_candidates_percentage),
            counts.get("minCandidateNodesAbsolute", cls.min_candidates_absolute),
            counts.get("maxCandidateNodesAbsolute", cls.max_candidates_absolute),
        )


def _go_bool(value: object) -> bool | None:
    """``Arguments.GetBool``: a bool, or a string ``strconv.ParseBool`` reads; None where Go
    keeps the default."""
    if isinstance(value, bool):
        return value
    return parse_go_bool(value) if isinstance(value, str) else None


@dataclass(frozen=True)
class PluginOption:
    """One plugin entry of a tier."""

    name: str
    flags: Mapping[str, bool] = field(default_factory=dict)
    arguments: Mapping[str, object] = field(default_factory=dict)

    def enabled(self, flag: str) -> bool:
        """Whether hook ``flag`` (e.g. ``"Preemptable"``) is on: every switch defaults to true
        except ``Hierarchy``, which is off unless set (``session.go:HierarchyEnabled``)."""
        return self.flags.get(flag, flag != "Hierarchy")


@dataclass(frozen=True)
class SchedulerConf:
    """Actions in order and plugin tiers."""

    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    configurations: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    def plugin(self, name: str) -> PluginOption | None:
        """The first configured entry of plugin ``name``."""
        for tier in self.tiers:
            for option in tier:
                if option.name == name:
                    return option
        return None

    def has(self, name: str) -> bool:
        return self.plugin(name) is not None

    def plugin_position(self, name: str) -> tuple[int, int] | None:
        """(tier, index in the tier) of the first entry of plugin ``name``, for messages."""
        for t, tier in enumerate(self.tiers):
            for p, option in enumerate(tier):
                if option.name == name:
                    return t, p
        return None

    def passed_on(self, name: str, hook: str) -> bool:
        """Whether plugin ``name``'s verdict on eviction hook ``hook`` can be passed over: a
        tier whose plugins leave no victim hands the choice to the next tier (§8.2, §9 item
        4), so a later tier with another plugin of that hook can evict what ``name`` kept."""
        position = self.plugin_position(name)
        if position is None:
            return False
        return any(
            option.name in EVICTION_HOOKS[hook] and option.enabled(hook)
            for tier in self.tiers[position[0] + 1 :]
            for option in tier
        )

    def preempt_arguments(self) -> PreemptArguments:
        """The preempt action's arguments (defaults where a value is missing or mistyped)."""
        return PreemptArguments.read(self.configurations.get("preempt", {}))

    @property
    def evicts(self) -> bool:
        """Whether a configured action can evict running pods: preempt, reclaim, or shuffle
        with the tdm plugin's Victim hook on. ``shuffle`` evicts only what ``VictimTasks``
        names, and among the modelled plugins only tdm answers that hook; it is Volcano's one
        caller, so TDM evicts nothing without ``shuffle`` in the actions."""
        if any(action in EVICTING_ACTIONS for action in self.actions):
            return True
        tdm = self.plugin("tdm")
        return "shuffle" in self.actions and tdm is not None and tdm.enabled("Victim")

    @property
    def enforces_topology(self) -> bool:
        """Whether hard network topology is enforced: only with ``network-topology-aware``
        configured (volcano-scheduler.md §4.3, §9.6); without it the only gradient is the
        cluster top."""
        return self.has(NETWORK_TOPOLOGY_PLUGIN)

    def reclaim_level(self) -> int:
        """hierarchical capacity's ``ancestorReclaimLevel`` (0 without hierarchy)."""
        capacity = self.plugin("capacity")
        if capacity is None or not capacity.enabled("Hierarchy"):
            return 0
        return reclaim_level(capacity.arguments)

    def hierarchy(self) -> bool:
        """Hierarchical capacity (``capacity`` with ``enableHierarchy: true``)."""
        capacity = self.plugin("capacity")
        return capacity is not None and capacity.enabled("Hierarchy")

    def to_volcano(self) -> dict[str, object]:
        """Back to the ``volcano-scheduler.conf`` shape."""
        tiers = []
        for tier in self.tiers:
            plugins = []
            for option in tier:
                entry: dict[str, object] = {"name": option.name}
                entry.update({f"enable{k}": v for k, v in option.flags.items()})
                if option.arguments:
                    entry["arguments"] = dict(option.arguments)
                plugins.append(entry)
            tiers.append({"plugins": plugins})
        out: dict[str, object] = {"actions": ", ".join(self.actions), "tiers": tiers}
        if self.configurations:
            out["configurations"] = [
                {"name": name, "arguments": dict(args)}
                for name, args in self.configurations.items()
            ]
        return out


def _at(prefix: str, sub: str) -> str:
    """The path of ``sub`` below ``prefix`` (the key the configuration sits under)."""
    if not prefix:
        return sub
    return f"{prefix}.{sub}" if sub else prefix


def _actions(raw: object, obj: str, path: str, diag: Diagnostics) -> tuple[str, ...]:
    if not isinstance(raw, str):
        # Volcano's SchedulerConfiguration.Actions is a Go string: a YAML list does not
        # unmarshal into it, and the scheduler refuses the whole configuration.
        diag.error(
            obj,
            path,
            'must be one comma-separated string, e.g. "enqueue, allocate" (Volcano reads '
            "actions as a string and refuses a list)",
        )
        return ()
    names = [a.strip() for a in raw.split(",") if a.strip()]
    if not names:
        diag.error(obj, path, "names no action (Volcano refuses a configuration without one)")
        return ()
    for name in names:
        if name not in KNOWN_ACTIONS:
            if name in OTHER_ACTIONS:
                diag.warn(obj, path, f"action {name!r} is not modelled by vcopt and is skipped")
            else:
                diag.error(
                    obj, path, f"unknown action {name!r} (known: {', '.join(KNOWN_ACTIONS)})"
                )
    return tuple(n for n in names if n in KNOWN_ACTIONS)


def _plugin(raw: object, obj: str, path: str, diag: Diagnostics) -> PluginOption | None:
    if not isinstance(raw, Mapping):
        diag.error(obj, path, "a plugin entry must be a mapping with a name")
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        diag.error(obj, f"{path}.name", "required: the plugin name")
        return None
    flags: dict[str, bool] = {}
    arguments: dict[str, object] = {}
    for key, value in raw.items():
        if key == "name":
            continue
        if key == "arguments":
            if value is None:
                continue
            if not isinstance(value, Mapping):
                diag.error(obj, f"{path}.arguments", "must be a mapping")
                continue
            arguments = {str(k): v for k, v in value.items()}
            continue
        flag = flag_of(str(key))
        if flag is None:
            diag.error(
                obj,
                f"{path}.{key}",
                "unknown plugin option (expected name, arguments or enableXxx)",
            )
        elif not isinstance(value, bool):
            diag.error(obj, f"{path}.{key}", f"must be true or false, got {value!r}")
        else:
            flags[flag] = value
    if name not in KNOWN_PLUGINS:
        diag.warn(
            obj, f"{path}.name", f"unknown plugin {name!r}: Volcano would fail to load it; ignored"
        )
    elif name not in MODELLED_PLUGINS:
        diag.warn(obj, f"{path}.name", f"plugin {name!r} is not modelled by vcopt and is ignored")
    return PluginOption(name, flags, arguments)


def parse_scheduler_conf(
    raw: object, obj: str, diag: Diagnostics, field: str = ""
) -> SchedulerConf:
    """Read a ``volcano-scheduler.conf`` mapping; ``None`` gives the Helm default.

    Problems are recorded on ``obj`` with paths below ``field``, the key the configuration
    sits under in the input (``scheduler`` in an instance file).
    """
    if raw is None:
        return HELM_DEFAULT
    if not isinstance(raw, Mapping):
        diag.error(obj, field, "must be a volcano-scheduler.conf mapping (actions, tiers)")
        return HELM_DEFAULT
    for key in raw:
        if key not in ("actions", "tiers", "configurations", "metrics"):
            diag.error(
                obj, _at(field, str(key)), "unknown field (expected actions, tiers, configurations)"
            )
    actions = _actions(
        raw.get("actions", "enqueue, allocate, backfill"), obj, _at(field, "actions"), diag
    )
    tiers, paths = _tiers(raw.get("tiers") or [], obj, _at(field, "tiers"), diag)
    if "proportion" in paths and "capacity" in paths:
        later = max(paths["proportion"], paths["capacity"], key=_position)
        # Volcano refuses only proportion with hierarchical drf; proportion and capacity both
        # register their hooks, which combine by the tier rules (spec §1.2).
        diag.warn(
            obj,
            f"{later}.name",
            "proportion and capacity are both configured: Volcano runs both, their queue "
            "hooks combine (Allocatable and Preemptive AND, the first non-zero queue order "
            "wins)",
        )
    conf = SchedulerConf(
        actions,
        tiers,
        _configurations(raw.get("configurations"), obj, _at(field, "configurations"), diag),
    )
    drf = conf.plugin("drf")
    if conf.has("proportion") and drf is not None and drf.enabled("Hierarchy"):
        diag.error(
            obj,
            f"{paths['drf']}.enableHierarchy",
            "proportion and drf with hierarchy enabled conflict (Volcano refuses the "
            "configuration)",
        )
    return conf


def _tiers(
    raw: object, obj: str, path: str, diag: Diagnostics
) -> tuple[tuple[tuple[PluginOption, ...], ...], dict[str, str]]:
    """The plugin tiers, and each plugin's first entry → its path (for messages about
    combinations). A tier that cannot be read keeps its place, empty, so that the tiers after
    it keep their positions."""
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        diag.error(obj, path, "must be a list of {plugins: [...]}")
        return (), {}
    tiers: list[tuple[PluginOption, ...]] = []
    paths: dict[str, str] = {}
    for t, tier in enumerate(raw):
        tier_path = f"{path}[{t}]"
        options = []
        for p, entry in enumerate(_tier_entries(tier, obj, tier_path, diag)):
            entry_path = f"{tier_path}.plugins[{p}]"
            option = _plugin(entry, obj, entry_path, diag)
            if option is None:
                continue
            if option.name in paths:
                diag.warn(obj, f"{entry_path}.name", f"plugin {option.name!r} is listed twice")
            paths.setdefault(option.name, entry_path)
            options.append(option)
        tiers.append(tuple(options))
    return tuple(tiers), paths


def _tier_entries(tier: object, obj: str, path: str, diag: Diagnostics) -> Sequence[object]:
    """The plugin entries of one tier; none when the tier cannot be read."""
    if not isinstance(tier, Mapping) or set(tier) - {"plugins"}:
        diag.error(obj, path, "a tier must be a mapping with only 'plugins'")
        return ()
    plugins = tier.get("plugins") or []
    if not isinstance(plugins, Sequence) or isinstance(plugins, str):
        diag.error(obj, f"{path}.plugins", "must be a list")
        return ()
    return plugins


def _position(path: str) -> tuple[int, ...]:
    """Where a ``…tiers[t].plugins[p]`` path sits in the configuration, for ordering."""
    return tuple(int(n) for n in re.findall(r"\[(\d+)\]", path))


def _configurations(
    raw: object, obj: str, path: str, diag: Diagnostics
) -> dict[str, dict[str, object]]:
    if raw is None:
        return {}
    out: dict[str, dict[str, object]] = {}
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        diag.error(obj, path, "must be a list of {name, arguments}")
        return out
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            diag.error(obj, f"{path}[{i}]", "must be a mapping with a name and arguments")
            continue
        for key in entry:
            if key not in ("name", "arguments"):
                diag.error(obj, f"{path}[{i}].{key}", "unknown field (expected name, arguments)")
        args = entry.get("arguments") or {}
        if not isinstance(args, Mapping):
            diag.error(obj, f"{path}[{i}].arguments", "must be a mapping")
            continue
        name = entry["name"]
        if name in out:
            # ``framework.GetArgOfActionFromConf`` returns the first entry of a name.
            diag.warn(
                obj, f"{path}[{i}].name", f"{name!r} is listed twice: Volcano reads the first"
            )
            continue
        out[name] = {str(k): v for k, v in args.items()}
        if name == "preempt":
            _check_preempt(out[name], obj, f"{path}[{i}].arguments", diag)
    return out


def _check_preempt(args: Mapping[str, object], obj: str, path: str, diag: Diagnostics) -> None:
    """Warn about preempt arguments Volcano would ignore: unknown keys and mistyped values."""
    PreemptArguments.read(args, lambda key, message: diag.warn(obj, f"{path}.{key}", message))
    for key in args:
        if key not in PREEMPT_FLAGS and key not in PREEMPT_COUNTS:
            diag.warn(obj, f"{path}.{key}", "unknown preempt argument; Volcano ignores it")


HELM_DEFAULT = parse_scheduler_conf(helm_default_scheduler(), "", Diagnostics())
"""``installer/helm/chart/volcano/config/volcano-scheduler.conf``: what an omitted
configuration means."""


RECLAIM_LEVEL = "ancestorReclaimLevel"


def reclaim_level(arguments: Mapping[str, object]) -> int:
    """capacity's ``parseArguments``: an integer ``ancestorReclaimLevel``, default 0, a
    negative value falling back to 0. Like Volcano's ``Arguments.GetInt``, a value that is not
    an integer is ignored."""
    raw = arguments.get(RECLAIM_LEVEL, 0)
    if isinstance(raw, bool) or not isinstance(raw, int):
        return 0
    return max(raw, 0)
