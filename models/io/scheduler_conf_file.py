"""A scheduler configuration given on its own (``--scheduler-conf FILE``): the raw
``volcano-scheduler.conf``, or the ConfigMap that holds it as a cluster stores it.

Users capture the configuration with ``kubectl get configmap -n volcano-system
volcano-scheduler-configmap -o yaml``, so that form is read exactly as the dump reader reads
it (``models.io.kube.cluster``), and a raw conf as ``models.scheduler_conf`` reads it. The
configuration is checked here, on its own, so that a problem in it names this file and the
field as written in it, not the snapshot it is applied to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import Diagnostics, InputError, Problem
from ..scheduler_conf import parse_scheduler_conf
from ..tdm import TDM_PLUGIN, TdmConfig
from ..vocabulary import helm_default_scheduler
from ..yamlio import STDIN, STDIN_NAME, load_documents, read_text
from .kube.cluster import SCHEDULER_CONF_KEY, ClusterReader
from .kube.objects import ObjectReader

EXPECTED = (
    "expected a volcano-scheduler.conf (actions, tiers) or the ConfigMap holding it "
    f"(data.{SCHEDULER_CONF_KEY})"
)


def read_scheduler_conf(file: str) -> Mapping[str, Any]:
    """The configuration ``file`` holds, checked; :class:`InputError` names ``file``.

    An empty configuration in a ConfigMap means the Helm chart's default, as Volcano reads
    it; that default is returned then, so the caller always gets a configuration.
    """
    name = STDIN_NAME if file == STDIN else file
    docs = load_documents(read_text(file), name)
    if len(docs) == 1 and isinstance(docs[0], Mapping) and "kind" not in docs[0]:
        conf, obj, field = docs[0], "", ""
    else:
        conf, obj = _from_configmap(docs, name)
        field = f"data.{SCHEDULER_CONF_KEY}"
    diag = Diagnostics()
    parsed = parse_scheduler_conf(conf, obj, diag, field)
    position = parsed.plugin_position(TDM_PLUGIN)
    if position is not None:
        tier, index = position
        where = f"{field}.tiers[{tier}].plugins[{index}]".lstrip(".")
        local = Diagnostics()
        TdmConfig.from_arguments(parsed.tiers[tier][index].arguments, obj, local)
        diag.errors.extend(Problem(p.message, obj, f"{where}.{p.field}") for p in local.errors)
    diag.raise_if_errors(name)
    return conf


def _from_configmap(docs: list[object], name: str) -> tuple[Mapping[str, Any], str]:
    """The configuration of the one ConfigMap among ``docs`` that holds one, and how
    messages name that ConfigMap."""
    diag = Diagnostics()
    reader = ClusterReader(diag)
    for o in ObjectReader(diag).objects(docs):
        if o.kind == "ConfigMap":
            reader.configmap(o)
        else:
            diag.error(o.obj, "", EXPECTED)
    diag.raise_if_errors(name)
    if not reader.scheduler_source:
        raise InputError([Problem(EXPECTED, file=name)])
    conf = reader.scheduler
    return (
        conf if isinstance(conf, Mapping) else helm_default_scheduler()
    ), reader.scheduler_source
