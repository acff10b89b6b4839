"""Go's ``container/heap`` with a comparison evaluated at every sift.

Volcano keeps queues and jobs in ``util.PriorityQueue`` heaps whose ``Less`` reads live
session state (shares change as tasks are allocated) and never re-heapifies the items already
inside. Which item pops first therefore depends on the exact sift sequence, so this class
copies the algorithm of ``container/heap`` (``up``/``down`` on a slice) instead of using
``heapq`` with frozen keys.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cmp_to_key
from typing import Generic, TypeVar

T = TypeVar("T")


class GoHeap(Generic[T]):
    def __init__(self, less: Callable[[T, T], bool]) -> None:
        self._less = less
        self._items: list[T] = []

    def __len__(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def push(self, item: T) -> None:
        self._items.append(item)
        self._up(len(self._items) - 1)

    def pop(self) -> T:
        items = self._items
        n = len(items) - 1
        items[0], items[n] = items[n], items[0]
        self._down(0, n)
        return items.pop()

    def items(self) -> list[T]:
        return list(self._items)

    def copy(self) -> GoHeap[T]:
        """The same heap, slice for slice: it pops what this one would, whatever ``less``."""
        twin: GoHeap[T] = GoHeap(self._less)
        twin._items = list(self._items)
        return twin

    def _up(self, j: int) -> None:
        items, less = self._items, self._less
        while True:
            i = (j - 1) // 2
            if i == j or j <= 0 or not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            j = i

    def _down(self, i0: int, n: int) -> None:
        items, less = self._items, self._less
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and less(items[j2], items[j1]):
                j = j2
            if not less(items[j], items[i]):
                break
            items[i], items[j] = items[j], items[i]
            i = j


class SortedQueue(Generic[T]):
    """Items popped in the order of a ``less`` that never changes: what a :class:`GoHeap` of
    them pops, without a comparison per sift.

    A heap pops a strict total order's items in sorted order whatever the push order, so when
    the order is fixed for the session (task order: pod priority, index, UID) the items are
    sorted once and popped from the front; a copy shares the sorted items and pops its own
    way through them."""

    def __init__(self, items: list[T], less: Callable[[T, T], bool]) -> None:
        def compare(left: T, right: T) -> int:
            return -1 if less(left, right) else (1 if less(right, left) else 0)

        self._items = sorted(items, key=cmp_to_key(compare))
        self._next = 0

    def __len__(self) -> int:
        return len(self._items) - self._next

    def empty(self) -> bool:
        return self._next >= len(self._items)

    def pop(self) -> T:
        item = self._items[self._next]
        self._next += 1
        return item

    def items(self) -> list[T]:
        return self._items[self._next :]

    def copy(self) -> SortedQueue[T]:
        twin: SortedQueue[T] = SortedQueue.__new__(SortedQueue)
        twin._items = self._items
        twin._next = self._next
        return twin
