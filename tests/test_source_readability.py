"""The generated text itself: names, no clutter, tapes only where needed, stable, self-contained.

These tests read `.source` (what a user reads and what runs), not only the numbers it
computes.
"""
import ast
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import transpile as tp


# ---------------------------------------------------------------- functions under test

def mlp_loss(params, x, y):
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum((x - y) ** 2)


def straight(x, W, b):
    h = np.tanh(x @ W + b)
    z = np.exp(-h) * 2.0
    return np.mean(z ** 2) + np.sum(h * 3.0)


def overwrite_in_loop(x, n):
    for i in range(n):
        x = np.sin(x) * 1.5
    return np.sum(x)


def polynomial(x):
    return np.sum(3.0 * x ** 3 - x ** 2 + 0.5 * x)


def branchy(x):
    if np.sum(x) > 0.0:
        y = x * 2.0
    else:
        y = np.cos(x)
    return np.sum(y ** 2)


def code_of(source):
    """The generated module without its docstring and comments (the statements only)."""
    tree = ast.parse(source)
    if tree.body and isinstance(tree.body[0], ast.Expr):
        tree.body = tree.body[1:]
    return ast.unparse(tree)


def assigned_names(source):
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def line_of(fn, text):
    """File line number of the first line of `fn` containing `text`."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


# ---------------------------------------------------------------- names

def test_adjoint_names_come_from_user_names():
    source = tp.grad(mlp_loss).source
    names = assigned_names(source)
    for adjoint in ("dW", "db", "dx", "dparams"):
        assert adjoint in names, f"{adjoint} not assigned in:\n{source}"
    assert "def grad_mlp_loss(params, x, y):" in source


def test_names_are_words_not_counters_or_hashes():
    for f in (mlp_loss, straight, overwrite_in_loop, branchy):
        source = tp.grad(f).source
        for name in assigned_names(source):
            assert not re.search(r"\d{3,}|_[0-9a-f]{6,}$|^tmp|^_t\d", name), \
                f"unreadable name {name!r} in:\n{source}"


# ---------------------------------------------------------------- no clutter

CLUTTER = [
    (r"\*\s*1(\.0*)?(?![\w.])", "multiplication by one"),
    (r"(?<![\w.])1(\.0*)?\s*\*(?!\*)", "multiplication by one"),
    (r"\*\*\s*1(\.0*)?(?![\w.])", "power of one"),
    (r"[+-]\s*0(\.0*)?(?![\w.])", "addition of zero"),
    (r"(?<![\w.])0(\.0*)?\s*\+", "addition of zero"),
    (r"\(\s*\d+\s*[-+*]\s*\d+\s*\)", "unfolded constant"),
]


@pytest.mark.parametrize("f", [mlp_loss, straight, overwrite_in_loop, polynomial, branchy])
def test_no_identity_operations(f):
    source = code_of(tp.grad(f).source)
    for pattern, what in CLUTTER:
        found = re.findall(r".*" + pattern + r".*", source)
        assert not found, f"{what} in the gradient of {f.__name__}: {found}"


def test_straight_line_code_has_no_dead_statements():
    """Every name assigned in the gradient of straight-line code is read afterwards."""
    tree = ast.parse(tp.grad(straight).source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    for i, stmt in enumerate(fn.body):
        if not isinstance(stmt, ast.Assign):
            continue
        later = {n.id for s in fn.body[i + 1:] for n in ast.walk(s)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for target in stmt.targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    assert name.id in later, f"{ast.unparse(stmt)!r} is dead code"


# ---------------------------------------------------------------- tapes only where needed

def test_straight_line_code_has_no_tape():
    for g in (tp.grad(straight), tp.grad(straight, argnums=(0, 1, 2)),
              tp.value_and_grad(straight, argnums=1)):
        source = g.source
        assert "rt.push" not in source and "rt.pop" not in source, source
        assert "_stack" not in source, source


def test_loop_that_overwrites_x_saves_x_on_a_stack():
    source = tp.grad(overwrite_in_loop).source
    assert "x_stack = []" in source, source
    assert "rt.push(x_stack, x)" in source, source
    assert "x = rt.pop(x_stack)" in source, source
    g = tp.grad(overwrite_in_loop)(np.linspace(-1.0, 1.0, 4), 3)
    x, eps = np.linspace(-1.0, 1.0, 4), 1e-6
    numeric = [(overwrite_in_loop(x + eps * e, 3) - overwrite_in_loop(x - eps * e, 3)) / (2 * eps)
               for e in np.eye(4)]
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def test_only_overwritten_values_are_saved():
    """In the MLP loss, `y` and the final output are never overwritten: no stacks for them."""
    source = tp.grad(mlp_loss).source
    stacks = set(re.findall(r"(\w+)_stack = \[\]", source))
    assert "x" in stacks
    assert not stacks & {"y", "out", "power", "subtract"}, stacks


# ---------------------------------------------------------------- comments point at the user

def test_comments_point_at_user_lines():
    source = tp.grad(mlp_loss).source
    n = line_of(mlp_loss, "x = np.tanh(x @ W + b)")
    assert f"# {n}: x = np.tanh(x @ W + b)" in source, source
    assert f"# adjoint of {n}: x = np.tanh(x @ W + b)" in source, source
    r = line_of(mlp_loss, "return np.sum((x - y) ** 2)")
    assert f"# {r}: return np.sum((x - y) ** 2)" in source, source


def test_comment_lines_name_real_lines_of_the_file():
    source = tp.grad(branchy).source
    file_lines = open(__file__).read().splitlines()
    comments = re.findall(r"# (?:adjoint of )?(\d+): (.*)", source)
    assert comments, source
    for number, text in comments:
        assert file_lines[int(number) - 1].strip() == text.strip(), (number, text)


def test_comments_of_grad_of_a_transformed_function_point_at_user_lines():
    decorated = tp.transform(mlp_loss)
    source = tp.grad(decorated).source
    n = line_of(mlp_loss, "x = np.tanh(x @ W + b)")
    assert f"# {n}: x = np.tanh(x @ W + b)" in source, source


# ---------------------------------------------------------------- stable text

def test_source_is_identical_across_calls():
    g = tp.grad(mlp_loss)
    assert g.source == g.source
    assert tp.grad(mlp_loss).source == g.source
    out, vjp_fn = tp.vjp(straight, np.ones((2, 3)), np.ones((3, 4)), np.ones(4))
    _, vjp_again = tp.vjp(straight, np.ones((2, 3)), np.ones((3, 4)), np.ones(4))
    assert vjp_fn.source == vjp_again.source


PRINT_SOURCES = """
import sys
sys.path.insert(0, {tests!r})
import numpy as np
import transpile as tp
if sys.argv[-1] == "warm":   # other transformations first: the text must not depend on them
    tp.grad(lambda x: np.sum(x * x)).source
    tp.grad(tp.grad(lambda x: x ** 3)).source
import test_source_readability as m
for f in (m.mlp_loss, m.straight, m.overwrite_in_loop, m.branchy):
    print(tp.grad(f).source)
    print("=" * 20)
"""


def run_script(path, text, arg):
    """Run `text` as the file `path` (transformed functions need a file) in a new process."""
    path.write_text(text)
    result = subprocess.run([sys.executable, str(path), arg], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_source_is_identical_in_a_fresh_process(tmp_path):
    here = "".join(tp.grad(f).source + "\n" + "=" * 20 + "\n"
                   for f in (mlp_loss, straight, overwrite_in_loop, branchy))
    script = PRINT_SOURCES.format(tests=str(Path(__file__).parent))
    assert run_script(tmp_path / "print_sources.py", script, "cold") == here
    assert run_script(tmp_path / "print_sources.py", script, "warm") == here


def test_second_order_source_is_identical_in_a_fresh_process(tmp_path):
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import transpile as tp
        def g(x):
            return x * np.sin(x)
        if sys.argv[-1] == "warm":
            tp.grad(lambda x: x * x).source
        print(tp.grad(tp.grad(g)).source)
    """)
    cold = run_script(tmp_path / "second_order.py", script, "cold")
    warm = run_script(tmp_path / "second_order.py", script, "warm")
    assert cold == warm


# ---------------------------------------------------------------- self-contained

@pytest.mark.parametrize("make", [
    lambda: tp.grad(mlp_loss).source,
    lambda: tp.value_and_grad(branchy).source,
    lambda: tp.transform(straight).source,
    lambda: tp.vjp(straight, np.ones((2, 3)), np.ones((3, 4)), np.ones(4))[1].source,
    lambda: tp.grad(tp.grad(lambda x: x * np.sin(x))).source,
    lambda: tp.grad(lambda x: np.sum(tp.grad(polynomial)(x))).source,
], ids=["grad", "value_and_grad", "transform", "vjp", "grad_of_grad", "grad_inside"])
def test_generated_source_never_imports_transpile(make):
    source = make()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] == "transpile" for a in node.names), source
        if isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] != "transpile", source
    assert not re.search(r"^\s*(import|from)\s+transpile\b", source, re.M), source
    assert "import runtime as rt" in source
