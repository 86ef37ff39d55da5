"""Structural figures for docs/architecture.md: source lines, route ceremony, import cycles.

    python bench/house_figures.py            # from the repository root

Routes are the functions decorated with ``@<router>.<verb>(...)`` or registered by the
web layer's ``post(...)`` and ``get(...)`` declarations (counted apart for the API and
the staff console); "decorator lines" are the lines from the first
decorator (or declaration) to the ``def`` line, "body lines" the function's remaining lines.
Import cycles are counted between the first-level packages and modules of ``ridercrm``
(grimp's graph, needs the dev extra).

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=house_figures ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import ast
import itertools
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench import harness

SRC = pathlib.Path("src/ridercrm")
VERBS = {"get", "post", "put", "patch", "delete"}


LATER = ("staff", "reports", "duplicates", "events")  # packages added or grown since


def _later(path: pathlib.Path) -> bool:
    parts = path.relative_to(SRC).parts
    return parts[0] in LATER or "console" in parts


def source_lines(*, all_packages: bool = True) -> int:
    """Lines of ``src/ridercrm/**/*.py``; without the packages the console, duplicates and
    events issues added or grew (``LATER``, the console), when ``all_packages`` is false."""
    return sum(
        len(p.read_text().splitlines()) for p in SRC.rglob("*.py") if all_packages or not _later(p)
    )


def route_ceremony() -> dict[str, tuple[int, int, int]]:
    """Per group ("api GET", "console POST", ...: the API's routes or the staff console's
    pages, by method): routes;
    lines declaring them (decorators, or a module-level ``post(...)``/``get(...)``
    declaration); lines of the functions FastAPI calls (their bodies, with the ``def``)."""
    counts: dict[str, list[int]] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        area = "console" if "console" in path.parts else "api"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and path.parent.name == "routes"
                and _declares(node, _groups(tree))
            ):
                # One declaration; inside a loop it declares one route per pass.
                loops = [
                    n
                    for n in ast.walk(tree)
                    if isinstance(n, ast.For) and node in list(ast.walk(n))
                ]
                passes = (
                    len(loops[0].iter.elts) if loops and isinstance(loops[0].iter, ast.Tuple) else 1
                )  # type: ignore[attr-defined]
                group = counts.setdefault(f"{area} {_verb(node).upper()}", [0, 0, 0])
                group[0] += passes
                group[1] += (node.end_lineno or node.lineno) - node.lineno + 1
                continue
            if not isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef):
                continue
            routed = [
                d
                for d in node.decorator_list
                if isinstance(d, ast.Call)
                and isinstance(d.func, ast.Attribute)
                and d.func.attr in VERBS
            ]
            if not routed:
                continue
            verb = routed[0].func.attr.upper()  # type: ignore[attr-defined]
            group = counts.setdefault(f"{area} {verb}", [0, 0, 0])
            group[0] += 1
            first = min(d.lineno for d in node.decorator_list)
            group[1] += node.lineno - first
            group[2] += (node.end_lineno or node.lineno) - node.lineno + 1
    return {name: (c[0], c[1], c[2]) for name, c in counts.items() if c[0]}


def _verb(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr  # type: ignore[attr-defined]


def _groups(tree: ast.Module) -> set[str]:
    """The names a module binds to ``Operations(...)`` (``admin``, ``crm``)."""
    return {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "Operations"
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _declares(call: ast.Call, groups: set[str]) -> bool:
    """``post(router, ...)``/``get(...)``, or a group's ``admin.post(...)``/``crm.get(...)``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in ("post", "get")
    return (
        isinstance(func, ast.Attribute)
        and func.attr in ("post", "get")
        and isinstance(func.value, ast.Name)
        and func.value.id in groups
    )


def lines_per_route() -> dict[str, tuple[int, int]]:
    """Whole route modules against their routes: ``web/routes/*.py`` and the API's
    routes declared there; the console's modules that declare pages
    (``web/console/*.py`` with ``@router.page``/``@router.form``) and those pages."""
    found: dict[str, list[int]] = {"api": [0, 0], "console": [0, 0]}
    for area, folder in (("api", SRC / "web/routes"), ("console", SRC / "web/console")):
        for path in sorted(folder.glob("*.py")):
            text = path.read_text()
            tree = ast.parse(text)
            groups = _groups(tree)
            routes = 0
            for node in ast.walk(tree):
                if area == "api" and isinstance(node, ast.Call) and _declares(node, groups):
                    loops = [
                        n
                        for n in ast.walk(tree)
                        if isinstance(n, ast.For) and node in list(ast.walk(n))
                    ]
                    first = loops[0].iter if loops else None
                    routes += len(first.elts) if isinstance(first, ast.Tuple) else 1
                elif (
                    area == "console"
                    and isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("page", "form")
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "router"
                ):
                    routes += 1
            if routes:
                found[area][0] += len(text.splitlines())
                found[area][1] += routes
    return {area: (lines, routes) for area, (lines, routes) in found.items()}


def package_graph() -> dict[str, set[str]]:
    """Which first-level package (or module) of ridercrm imports which, directly."""
    import grimp

    graph = grimp.build_graph("ridercrm")
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        top = ".".join(module.split(".")[:2])
        for imported in graph.find_modules_directly_imported_by(module):
            other = ".".join(imported.split(".")[:2])
            if other != top and other.startswith("ridercrm."):
                edges.setdefault(top.removeprefix("ridercrm."), set()).add(
                    other.removeprefix("ridercrm.")
                )
    return edges


def package_cycles(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of packages that import each other directly."""
    return sorted(
        (a, b)
        for a, b in itertools.combinations(sorted(edges), 2)
        if b in edges.get(a, ()) and a in edges.get(b, ())
    )


def tangles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of packages that reach each other through imports (strongly connected, >1)."""
    nodes = set(edges) | {n for targets in edges.values() for n in targets}
    reach = {n: _reachable(edges, n) for n in nodes}
    groups: list[list[str]] = []
    seen: set[str] = set()
    for n in sorted(nodes):
        if n in seen:
            continue
        group = sorted(m for m in nodes if m in reach[n] and n in reach[m])
        if len(group) > 1:
            groups.append(group)
            seen.update(group)
    return groups


def _reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    found: set[str] = set()
    todo = [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in found:
                found.add(nxt)
                todo.append(nxt)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    harness.add_previous(parser)
    args = parser.parse_args()
    if (
        status := harness.compare_with_previous(args, "bench.house_figures", in_checkout=True)
    ) is not None:
        raise SystemExit(status)
    print(f"lines in src/: {source_lines()}")
    print(
        f"lines in src/ without {', '.join(LATER)} and the console:"
        f" {source_lines(all_packages=False)}"
    )
    for group, (routes, decorators, bodies) in sorted(route_ceremony().items()):
        print(
            f"{group} routes: {routes}; lines declaring them (decorators, post()/get()"
            f" declarations): {decorators} ({decorators / routes:.1f} per route);"
            f" lines of the endpoint functions: {bodies}"
        )
    for area, (lines, routes) in lines_per_route().items():
        print(
            f"{area} route modules: {lines} lines for {routes} routes"
            f" ({lines / routes:.1f} lines per route)"
        )
    edges = package_graph()
    cycles = package_cycles(edges)
    print(f"pairs of first-level packages importing each other directly: {len(cycles)}")
    for a, b in cycles:
        print(f"  {a} <-> {b}")
    for group in tangles(edges):
        print(f"packages that reach each other through imports: {', '.join(group)}")


if __name__ == "__main__":
    sys.exit(main())
