"""Loading instance files: the entry points scripts and notebooks call.

``load(path)``, ``loads(text)``, ``from_documents(docs, file)`` and ``from_dict(doc, file)``
read either input form into a validated :class:`~models.instance.Instance`; the readers
themselves live in ``models.io``.
"""

from .io import from_dict, from_documents, load, loads

__all__ = ["from_dict", "from_documents", "load", "loads"]
