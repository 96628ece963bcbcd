"""The asset graph: who reads whom, a stable run order, cycles, and what lies downstream.

Pure functions over ``{name: inputs}``; ties are broken by name so the same project always runs in
the same order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

__all__ = ["Graph"]


class Graph:
    def __init__(self, inputs: Mapping[str, Iterable[str]]):
        self.inputs: dict[str, tuple[str, ...]] = {
            name: tuple(sorted({i for i in ins if i in inputs and i != name})) for name, ins in inputs.items()
        }
        self.missing: dict[str, tuple[str, ...]] = {
            name: tuple(sorted({i for i in ins if i not in inputs})) for name, ins in inputs.items()
        }
        self.readers: dict[str, list[str]] = {name: [] for name in inputs}
        for name, ins in self.inputs.items():
            for source in ins:
                self.readers[source].append(name)
        for names in self.readers.values():
            names.sort()

    def order(self) -> tuple[list[str], list[str]]:
        """(topological order, names on or after a cycle). Kahn's algorithm with a name-ordered heap."""
        waiting = {name: len(ins) for name, ins in self.inputs.items()}
        ready = [name for name, count in waiting.items() if count == 0]
        heapq.heapify(ready)
        ordered: list[str] = []
        while ready:
            name = heapq.heappop(ready)
            ordered.append(name)
            for reader in self.readers[name]:
                waiting[reader] -= 1
                if waiting[reader] == 0:
                    heapq.heappush(ready, reader)
        stuck = sorted(name for name in self.inputs if name not in set(ordered))
        return ordered, stuck

    def downstream(self, names: Iterable[str]) -> set[str]:
        """Every asset that reads, directly or not, any of ``names`` (the names themselves excluded)."""
        seen: set[str] = set()
        names = set(names)
        todo = [reader for name in names for reader in self.readers.get(name, [])]
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(self.readers.get(name, []))
        return seen - set(names)

    def upstream(self, name: str) -> set[str]:
        seen: set[str] = set()
        todo = list(self.inputs.get(name, ()))
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(self.inputs.get(current, ()))
        return seen

    def components(self, names: Iterable[str]) -> list[list[str]]:
        """Group ``names`` into connected pieces of the graph (edges in either direction, shared inputs too)."""
        chosen = set(names)
        parent = {name: name for name in chosen}

        def find(name: str) -> str:
            while parent[name] != name:
                parent[name] = parent[parent[name]]
                name = parent[name]
            return name

        for name in chosen:
            linked = [i for i in self.inputs.get(name, ()) if i in chosen]
            shared = [r for i in self.inputs.get(name, ()) for r in self.readers.get(i, []) if r in chosen]
            for other in linked + shared:
                parent[find(other)] = find(name)
        groups: dict[str, list[str]] = {}
        for name in sorted(chosen):
            groups.setdefault(find(name), []).append(name)
        return sorted(groups.values())
