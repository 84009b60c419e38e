"""The import graph of transpile/ and runtime/ runs one way: no module imports a module that
(directly or through others) imports it back, and no import hides inside a function.

The layers, top to bottom: the API (api, custom, jacobians, cli), the pipeline, the passes
(reverse, forward, batching, jit), clean-up and emission (optimize, emit), the front end, the
custom-rule objects, the IR tools (ir/), the primitive table (rules), the annotations and
errors, runtime/. A module never imports another module's private names.
"""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("transpile", "runtime")


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules():
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out[_module_name(path)] = path
    return out


def _resolve(module, is_package, node):
    """Absolute names a `from ... import ...` or `import ...` node refers to."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level == 0:
        base = node.module
    else:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    names = [f"{base}.{a.name}" for a in node.names]
    return names if all(n in _modules() for n in names) else [base] + names


def _graph():
    modules = _modules()
    graph, nested, private = {}, [], []
    for module, path in modules.items():
        tree = ast.parse(path.read_text())
        top = set(id(n) for n in tree.body)
        deps = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [n for n in _resolve(module, path.name == "__init__.py", node)
                     if n in modules]
            if names and id(node) not in top:
                nested.append(f"{module}: line {node.lineno}")
            deps.update(n for n in names if n != module)
            if isinstance(node, ast.ImportFrom):
                private += [f"{module} imports {a.name} from {names[0]}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")
                            and names and names[0] != module]
        graph[module] = deps
    return graph, nested, private


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if d not in graph:
                continue
            # a package's __init__ importing its own submodules is how packages are built
            if m.startswith(d + "."):
                continue
            if state.get(d) == "open":
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycle():
    graph, _, _ = _graph()
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_inside_a_function():
    _, nested, _ = _graph()
    assert nested == [], "imports of project modules inside functions: " + ", ".join(nested)


def test_no_private_names_across_modules():
    _, _, private = _graph()
    assert private == [], "\n".join(private)


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_lower_layers_do_not_import_higher_ones():
    graph, _, _ = _graph()
    # the table's rules annotate nodes (ir.anno); the IR tools that build and bind calls of
    # primitives look them up in the table
    layers = [("runtime",), ("transpile.errors", "transpile.ir.anno"), ("transpile.rules",),
              ("transpile.ir",),
              ("transpile.custom",), ("transpile.frontend",),
              ("transpile.optimize", "transpile.emit"),
              ("transpile.reverse", "transpile.forward", "transpile.batching",
               "transpile.specialize"),
              ("transpile.pipeline",), ("transpile.api", "transpile.stand_ins")]

    def layer(m):
        for i, prefixes in enumerate(layers):
            if any(m == p or m.startswith(p + ".") for p in prefixes):
                return i
        return len(layers)      # the public surface: __init__, jacobians, cli, test_util

    upward = [f"{m} -> {d}" for m, deps in graph.items() for d in deps
              if layer(d) > layer(m) and not m.startswith(d + ".")]
    assert upward == [], "\n".join(sorted(upward))
