"""Measure trainwatch's import graph: modules, rooms, arrows between rooms, layers and import circles.

A room is a top-level package or module of `trainwatch` (`cli`, `engine`, `rules`, ...); the package's own
`__init__` (its version string) is a module but no room, and imports of it are no arrows. Every import in a
module counts, lazy ones inside functions and those under `TYPE_CHECKING` included: a circle that only
closes at run time is still a circle to the reader, and import-linter counts them the same way.

    python benchmarks/import_graph.py [--package trainwatch] [--edges] [--circles]

Prints the module and room counts, the room arrows, the strongly connected components (circles) of the
room graph, and the layers of the graph with each circle folded into one node (longest path from the top).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package by dotted name (a package is its `__init__`)."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: dict[str, Path], package: str) -> set[str]:
    """The package's modules that `name` imports, anywhere in its body."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found: set[str] = set()

    def add(target: str) -> None:
        # the deepest known module that the dotted name starts with
        parts = target.split(".")
        while parts:
            cand = ".".join(parts)
            if cand in known:
                found.add(cand)
                return
            parts.pop()

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == package:
                    add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else list(here)
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != package:
                continue
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                if sub in known:
                    found.add(sub)
                else:
                    add(mod)
    found.discard(name)
    return found


def room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def sccs(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (the graph is small, but recursion is not needed)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def layers(nodes: list[str], edges: dict[str, set[str]]) -> dict[str, int]:
    """Each node's layer: 0 for a node nothing imports, else one below the deepest importer (acyclic input)."""
    depth: dict[str, int] = {}
    importers: dict[str, set[str]] = defaultdict(set)
    for a, bs in edges.items():
        for b in bs:
            importers[b].add(a)

    def deep(n: str) -> int:
        if n not in depth:
            depth[n] = 1 + max((deep(p) for p in importers[n]), default=-1)
        return depth[n]

    sys.setrecursionlimit(10_000)
    for n in nodes:
        deep(n)
    return depth


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="trainwatch")
    ap.add_argument("--root", default=None, help="folder that holds the package (default: the repository)")
    ap.add_argument("--edges", action="store_true", help="print every room arrow")
    ap.add_argument("--circles", action="store_true", help="print the module arrows inside each circle")
    args = ap.parse_args()
    base = Path(args.root) if args.root else Path(__file__).resolve().parents[1]
    known = modules(base / args.package, args.package)
    mod_edges = {m: imports_of(m, p, known, args.package) for m, p in known.items()}
    rooms = sorted({r for m in known if (r := room(m)) is not None})
    room_edges: dict[str, set[str]] = defaultdict(set)
    via: dict[tuple[str, str], list[str]] = defaultdict(list)
    for a, bs in mod_edges.items():
        for b in bs:
            ra, rb = room(a), room(b)
            if ra is not None and rb is not None and ra != rb:
                room_edges[ra].add(rb)
                via[(ra, rb)].append(f"{a} -> {b}")
    arrows = sum(len(v) for v in room_edges.values())
    comps = sccs(rooms, room_edges)
    circles = [c for c in comps if len(c) > 1]
    node_of = {r: "+".join(c) for c in comps for r in c}
    cond: dict[str, set[str]] = defaultdict(set)
    for a, bs in room_edges.items():
        for b in bs:
            if node_of[a] != node_of[b]:
                cond[node_of[a]].add(node_of[b])
    depth = layers(sorted(set(node_of.values())), cond)
    inside = sum(1 for a, bs in room_edges.items() for b in bs if node_of[a] == node_of[b])
    mod_circles = [c for c in sccs(sorted(known), mod_edges) if len(c) > 1]
    print(f"modules: {len(known)}")
    print(f"module import arrows: {sum(len(v) for v in mod_edges.values())}")
    print(f"module circles: {len(mod_circles)} (largest {max((len(c) for c in mod_circles), default=0)})")
    print(f"rooms: {len(rooms)}")
    print(f"room arrows: {arrows}")
    print(f"room circles: {len(circles)} (sizes {[len(c) for c in circles]}); arrows inside circles: {inside}")
    print(f"layers: {1 + max(depth.values(), default=-1)}")
    for level in range(1 + max(depth.values(), default=-1)):
        print(f"  {level:2d}: {', '.join(sorted(n for n, d in depth.items() if d == level))}")
    if args.edges:
        for a in sorted(room_edges):
            print(f"{a} -> {', '.join(sorted(room_edges[a]))}")
    if args.circles:
        for c in circles:
            print("circle:", ", ".join(c))
            for a in c:
                for b in sorted(room_edges[a]):
                    if b in c:
                        print(f"  {a} -> {b}: {'; '.join(via[(a, b)])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
