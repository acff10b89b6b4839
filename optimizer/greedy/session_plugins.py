"""How the registered plugin functions combine (``framework/session_plugins.go``), as tabled
in ``spec/volcano-scheduler.md`` §1.2: the first non-zero order wins, predicates AND with
short-circuit, scores add up, votes for pipelined/enqueueable follow the Permit/Abstain/Reject
rule, evictable candidates intersect per tier and an empty intersection passes to the next
tier."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from models.scheduler_conf import PluginOption

from .api import (
    JobInfo,
    NodeInfo,
    QueueInfo,
    TaskInfo,
)
from .framework import (
    ABSTAIN,
    HOOK_FLAGS,
    EventHandler,
    FitFailure,
    ScoreSkip,
    compare_task,
)
from .node_arrays import NodeArrays


class SessionPlugins:
    """The hook registry of a session and the combined calls actions make on it."""

    _hooks: dict[str, list[tuple[str, Callable[..., Any]]]]
    _options: dict[str, PluginOption]

    def add(self, hook: str, plugin: str, fn: Callable[..., Any]) -> None:
        """Register ``fn`` for ``hook`` on behalf of ``plugin``."""
        self._hooks[hook].append((plugin, fn))
        self._tier_cache.pop(hook, None)
        self._fn_cache.pop(hook, None)

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def _tiers(self, hook: str) -> list[list[Callable[..., Any]]]:
        """The enabled functions of ``hook``, grouped by tier, in registration order.

        Cached: hooks are registered at open and never change afterwards, and this is called
        for every (task, node) pair."""
        cached = self._tier_cache.get(hook)
        if cached is None:
            cached = self._tier_cache[hook] = self._group(hook)
            self._fn_cache[hook] = [fn for tier in cached for fn in tier]
        return cached

    def _group(self, hook: str) -> list[list[Callable[..., Any]]]:
        flag = HOOK_FLAGS[hook]
        grouped: dict[int, list[Callable[..., Any]]] = {}
        for plugin, fn in self._hooks[hook]:
            if flag is not None and not self._options[plugin].enabled(flag):
                continue
            grouped.setdefault(self._tier_of[plugin], []).append(fn)
        return [grouped[t] for t in sorted(grouped)]

    def _fns(self, hook: str) -> list[Callable[..., Any]]:
        fns = self._fn_cache.get(hook)
        if fns is None:
            self._tiers(hook)
            fns = self._fn_cache[hook]
        return fns

    def has_hook(self, hook: str) -> bool:
        return bool(self._fns(hook))

    # -- orders --------------------------------------------------------------------------

    def _first_nonzero(self, hook: str, *args: Any) -> int:
        for fn in self._fns(hook):
            result = fn(*args)
            if result != 0:
                return result
        return 0

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> bool:
        """True if ``left`` is scheduled before ``right``."""
        result = self._first_nonzero("queue_order", left, right)
        if result != 0:
            return result < 0
        return (left.order, left.uid) < (right.order, right.uid)

    def job_order(self, left: JobInfo, right: JobInfo) -> bool:
        result = self._first_nonzero("job_order", left, right)
        if result != 0:
            return result < 0
        return (left.order, left.uid) < (right.order, right.uid)

    def job_order_compare(self, left: JobInfo, right: JobInfo) -> int:
        """``JobOrderCompareFn``: the plugin result, 0 when every plugin ties."""
        return self._first_nonzero("job_order", left, right)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> bool:
        result = self._first_nonzero("task_order", left, right)
        if result != 0:
            return result < 0
        return compare_task(left, right) < 0

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> bool:
        """True if victims of ``left`` go before victims of ``right``."""
        for fn in self._fns("victim_queue_order"):
            result = fn(left, right, preemptor)
            if result != 0:
                return result < 0
        return not self.queue_order(left, right)

    # -- predicates and scores -------------------------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> FitFailure | None:
        for fn in self._fns("pre_predicate"):
            failure = fn(task)
            if failure is not None:
                return failure
        return None

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitFailure | None:
        """AND over plugins, short-circuit at the first failure."""
        for fn in self._fns("predicate"):
            failure = fn(task, node)
            if failure is not None:
                return failure
        return None

    def predicate_key(self, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """What the PredicateFns read of ``task``, one part per plugin (the fit-cache hook,
        see ``fit_cache``); None when the verdicts cannot be reused."""
        return self._hook_key("predicate", "predicate_key", task)

    def node_order_key(self, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """What the NodeOrderFns read of ``task`` besides the node's own state (the same hook
        for scores, see ``nodes.node_orders``); None when the scores cannot be reused."""
        return self._hook_key("node_order", "node_order_key", task)

    def _hook_key(self, hook: str, key_hook: str, task: TaskInfo) -> tuple[Hashable, ...] | None:
        """One key part per enabled function of ``hook``, from its plugin's ``key_hook``; None
        if a plugin has no key function or its key function returns None."""
        keys = {plugin: fn for plugin, fn in self._hooks[key_hook]}
        flag = HOOK_FLAGS[hook]
        parts: list[Hashable] = []
        for plugin, _ in self._hooks[hook]:
            if flag is not None and not self._options[plugin].enabled(flag):
                continue
            key_fn = keys.get(plugin)
            part = key_fn(task) if key_fn is not None else None
            if part is None:
                return None
            parts.append(part)
        return tuple(parts)

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """Σ NodeOrderFn; a plugin error drops the node's whole NodeOrder part (PrioritizeNodes)."""
        total = 0.0
        try:
            for fn in self._fns("node_order"):
                total += fn(task, node)
        except ScoreSkip:
            return 0.0
        return total

    def batch_node_order(self, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
        fns = self._fns("batch_node_order")
        if not fns:
            return {}
        scores = dict(fns[0](task, nodes))
        for fn in fns[1:]:
            for name, score in fn(task, nodes).items():
                scores[name] = scores.get(name, 0.0) + score
        return scores

    def batch_node_order_array(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], indices: np.ndarray, arrays: NodeArrays
    ) -> np.ndarray | None:
        """:meth:`batch_node_order` as an array over ``nodes`` (their indices ``indices``),
        added in the same order; None unless every BatchNodeOrderFn has an array twin
        (``batch_node_order_array``, registered by the same plugin) and it gives an array."""
        plugins = self._plugins_of("batch_node_order")
        if plugins != self._plugins_of("batch_node_order_array"):
            return None
        total = np.zeros(len(nodes), dtype=np.float64)
        for fn in self._fns("batch_node_order_array"):
            part = fn(task, nodes, indices, arrays)
            if part is None:
                return None
            total = total + part
        return total

    def _plugins_of(self, hook: str) -> list[str]:
        """The plugins whose functions of ``hook`` are enabled, in call order."""
        flag = HOOK_FLAGS[hook]
        return [
            plugin
            for plugin, _ in self._hooks[hook]
            if flag is None or self._options[plugin].enabled(flag)
        ]

    def hypernode_order(
        self, job: JobInfo, hypernodes: dict[str, list[NodeInfo]]
    ) -> dict[str, float]:
        scores: dict[str, float] = {}
        for fn in self._fns("hypernode_order"):
            for name, score in fn(job, hypernodes).items():
                scores[name] = scores.get(name, 0.0) + score
        return scores

    def hypernode_gradient(
        self, job: JobInfo, hypernode: str, purpose: str, subjob: bool
    ) -> list[list[str]]:
        """``HyperNodeGradientFor{Job,SubJob}Fn``: the first registered plugin decides; none →
        ``[[hypernode]]``. ``subjob`` selects the subjob variant (its minResource is the Σ
        InitResreq of its pending tasks instead of the PodGroup's minResources)."""
        fns = self._fns("hypernode_gradient")
        if not fns:
            return [[hypernode]]
        return fns[0](job, hypernode, purpose, subjob)

    # -- job and queue predicates ------------------------------------------------------------

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self._fns("allocatable"))

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self._fns("job_ready"))

    def _vote(self, hook: str, job: JobInfo) -> bool:
        for tier in self._tiers(hook):
            permit = False
            for fn in tier:
                vote = fn(job)
                if vote < 0:
                    return False
                permit = permit or vote > 0
            if permit:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._vote("job_enqueueable", job)

    def enqueue_rejecters(self, job: JobInfo) -> list[str]:
        """The enabled plugins whose JobEnqueueable votes Reject for ``job`` (for reasons)."""
        flag = HOOK_FLAGS["job_enqueueable"]
        return [
            plugin
            for plugin, fn in self._hooks["job_enqueueable"]
            if (flag is None or self._options[plugin].enabled(flag)) and fn(job) < 0
        ]

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self._fns("job_enqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """Only the first tier with a starving function decides, as an AND inside it
        (Volcano quirk (§9.5): with gang and priority in tier 1 that is gang's test)."""
        for tier in self._tiers("job_starving"):
            return all(fn(job) for fn in tier)
        return False

    def job_valid(self, job: JobInfo) -> str | None:
        for fn in self._fns("job_valid"):
            reason = fn(job)
            if reason is not None:
                return reason
        return None

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self._fns("overused"))

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self._fns("preemptive"))

    def _evictable(
        self, hook: str, preemptor: TaskInfo, candidates: list[TaskInfo]
    ) -> list[TaskInfo]:
        """Per tier, intersect the candidate lists of the non-abstaining plugins; an empty
        result moves on to the next tier.

        Volcano quirk (§9.4): a plugin answering "none" (TDM's Reject included) is no veto;
        a later tier decides, and a non-empty earlier tier skips the later ones."""
        for tier in self._tiers(hook):
            victims: list[TaskInfo] | None = None
            for fn in tier:
                chosen, vote = fn(preemptor, candidates)
                if vote == ABSTAIN:
                    continue
                if not chosen:
                    victims = None
                    break
                if victims is None:
                    victims = list(chosen)
                else:
                    keep = {t.uid for t in chosen}
                    victims = [t for t in victims if t.uid in keep]
            if victims:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("reclaimable", reclaimer, candidates)

    def victim_tasks(self) -> list[TaskInfo]:
        """Union per tier; the first tier with a non-empty union wins."""
        for tier in self._tiers("victim_tasks"):
            seen: dict[str, TaskInfo] = {}
            for fn in tier:
                for task in fn():
                    seen.setdefault(task.uid, task)
            if seen:
                return list(seen.values())
        return []

    # -- task operations ---------------------------------------------------------------------
