"""Loading instance files: the entry points scripts and notebooks call.

``load(path)``, ``load_inputs(paths, scheduler_conf=…, now=…)`` (several files or ``-``),
``loads(text)``, ``from_documents(docs, file)`` and ``from_dict(doc, file)``
read either input form into a validated :class:`~models.instance.Instance`; the readers
themselves live in ``models.io``.
"""

from .io import STDIN, from_dict, from_documents, load, load_inputs, loads

__all__ = ["STDIN", "from_dict", "from_documents", "load", "load_inputs", "loads"]
