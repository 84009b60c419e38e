"""Run autograd's own example programs against transpile, with only their imports changed,
and compare their gradients with autograd's at the very same arguments.

    python tests/peer_examples.py --autograd-repo /work/.mirror/HIPS+autograd/repo
    python tests/peer_examples.py --examples-dir ~/src/autograd/examples -k rnn -k lstm

Each example runs twice, in subprocesses with MPLBACKEND=Agg: as written, with autograd, and
with its import statements rewritten, line for line, to the equivalents of
docs/autograd_users.md (`import autograd.numpy as np` -> `import numpy as np`, `from autograd
import grad` -> `from transpile import grad`, autograd.scipy.* -> scipy.*, ...). The body is
never touched: an import with no equivalent makes the example NEEDS-EDIT. Where a small edit
is known the example runs again as `name [edited]`: convnet names
`autograd.scipy.signal.convolve` in its body (autograd's own function, not scipy's), edited
to transpile.signal's.

A hook records the first CALLS_PER_FN calls of each gradient function a program makes
(numbered by first call); the autograd run, after transpile's, evaluates its own at the
arguments transpile's got (same random state: both draw the same numbers), and the results
are compared. Past --budget seconds, the next call not to be recorded raises StopExample:
training loops end early, which counts as finishing. The most-called gradient function is
then timed at its first arguments (median of up to 20 calls after a warm-up). Data files are
read from the original examples (`__file__` is the original's path: rnn, lstm and hmm_em
read their own source). MNIST cannot be downloaded here: `data_mnist` is replaced in both
runs by a stand-in in its format, sklearn's 8x8 digits made 28x28, 0..255.

Statuses: OK; WRONG (max |tp - autograd| over a gradient > --rtol * max |autograd|);
REFUSED (a TransformError); CRASH (another exception, or a timeout); NEEDS-EDIT; NO-GRADS
(none compared); AG-FAILS (the example fails with autograd too, here).
With --jit, transpile's side calls each gradient function through `tp.jit` of it
(specialized from its first call), so the examples check jit's code against autograd too.
Not part of the test suite: about half an hour on 2 cores.
"""
import argparse
import ast
import copy
import functools
import io
import os
import pickle
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)

# the issue's list first, then the other examples of autograd's examples/ directory
ISSUE = ["neural_net", "convnet", "rnn", "lstm", "gaussian_process", "black_box_svi",
         "bayesian_neural_net", "hmm_em", "negative_binomial_maxlike",
         "variational_autoencoder", "fluidsim/fluidsim", "ode_net", "rkhs",
         "mixture_variational_inference", "natural_gradient_black_box_svi", "sinusoid",
         "tanh", "rosenbrock"]
NOT_PROGRAMS = {"__init__", "data", "data_mnist"}
CALLS_PER_FN = 3        # calls recorded (and compared) per gradient function
MAX_RECORDS = 40        # in all (negative_binomial makes a new grad function per Newton step)

# ----------------------------------------------------------------- import rewriting
NAMES = {"grad": "grad", "value_and_grad": "value_and_grad", "hessian": "hessian",
         "elementwise_grad": "elementwise_grad", "jacobian": "jacfwd",
         "hessian_vector_product": "hessian_vector_product"}  # from autograd import
MODULES = {"autograd.numpy": "numpy", "autograd.numpy.random": "numpy.random",
           "autograd.numpy.linalg": "numpy.linalg", "autograd.numpy.fft": "numpy.fft",
           "autograd.scipy.special": "scipy.special", "autograd.scipy.misc": "scipy.special",
           "autograd.scipy.stats": "scipy.stats", "autograd.scipy.linalg": "scipy.linalg",
           "autograd.scipy.integrate": "scipy.integrate",
           "autograd.scipy.signal": "transpile.signal",
           "autograd.misc": "transpile.misc",
           "autograd.misc.optimizers": "transpile.misc.optimizers",
           "autograd.misc.flatten": "transpile.misc.flatten",
           "autograd.extend": "transpile.extend", "autograd.util": "transpile.extend",
           "autograd.test_util": "transpile.test_util"}
DROPPED = {"autograd.builtins"}   # autograd's boxed tuple/list/dict: the builtins do here
# `import autograd.X` binds the name autograd, used in full in the body: the edit for it
DOTTED = {"autograd.scipy.signal": ("transpile.signal", r"\bautograd\.scipy\.signal\.",
                                    "transpile.signal.")}


def map_import(node, edited):
    """(statements replacing one import statement, problems, edits made)."""
    stmts, problems, edits = [], [], []
    where = f"line {node.lineno}"
    if isinstance(node, ast.Import):
        for a in node.names:
            parent, _, leaf = a.name.rpartition(".")
            if not a.name.startswith("autograd"):
                stmts.append(f"import {a.name}" + (f" as {a.asname}" if a.asname else ""))
            elif a.asname is None and edited and a.name in DOTTED:
                stmts.append(f"import {DOTTED[a.name][0]}")
                edits.append(f"body's {a.name}.* -> {DOTTED[a.name][0]}.*")
            elif a.asname is None:
                problems.append(f"{where}: `import {a.name}` binds `autograd`; the body "
                                f"names {a.name}.* in full")
            elif a.name in MODULES:
                stmts.append(f"import {MODULES[a.name]} as {a.asname}")
            elif parent in MODULES:
                stmts.append(f"from {MODULES[parent]} import {leaf} as {a.asname}")
            else:
                problems.append(f"{where}: {a.name} has no transpile equivalent")
        return stmts, problems, edits
    mod, missing = node.module or "", []
    for a in node.names:
        full, alias = f"{mod}.{a.name}", a.asname or a.name
        if mod == "autograd":
            target = ("transpile", NAMES[a.name]) if a.name in NAMES else None
        else:
            target = (MODULES[mod], a.name) if mod in MODULES else None
        if target is None and mod not in DROPPED:
            missing.append(full)
        elif target is not None:
            stmts.append(f"from {target[0]} import {target[1]}" +
                         (f" as {alias}" if alias != target[1] else ""))
    if missing:
        problems.append(f"{where}: {', '.join(missing)}: no transpile equivalent")
    return stmts, problems, edits


def rewrite(src, edited=False):
    """The program with its autograd imports rewritten, keeping every line where it was
    (so that line numbers in tracebacks are the original's); problems; edits made."""
    lines = src.splitlines(keepends=True)
    problems, edits = [], []
    for node in ast.walk(ast.parse(src)):
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograd")
                or isinstance(node, ast.Import) and any(a.name.startswith("autograd")
                                                        for a in node.names)):
            continue
        stmts, p, e = map_import(node, edited)
        problems += p
        edits += e
        indent = lines[node.lineno - 1][:node.col_offset]
        lines[node.lineno - 1] = indent + ("; ".join(stmts) or "pass") + "\n"
        for i in range(node.lineno, node.end_lineno):
            lines[i] = "\n"
    out = "".join(lines)
    if edited:
        for _, pattern, repl in DOTTED.values():
            out = re.sub(pattern, repl, out)
    return out, problems, sorted(set(edits))


def local_imports(path, root):
    """The example modules (files of the examples directory) a program imports."""
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and node.module else []):
            for d in (os.path.dirname(path), root):
                if os.path.exists(os.path.join(d, name + ".py")):
                    found.add(os.path.relpath(os.path.join(d, name + ".py"), root))
    return found - {"data_mnist.py"}


STAND_IN_MNIST = '''"""Stand-in for autograd's data_mnist, by tests/peer_examples.py (no
network here): sklearn's 8x8 digits, pixels made 3x3, padded to 28x28, 0..255: MNIST's format."""
import numpy as np
from sklearn.datasets import load_digits


def mnist():
    digits = load_digits()
    images = np.pad(np.kron(digits.images, np.ones((1, 3, 3))), ((0, 0), (2, 2), (2, 2)))
    images = np.round(images * 255 / 16).astype(np.uint8)
    labels = digits.target.astype(np.uint8)
    return images[:1500], labels[:1500], images[1500:], labels[1500:]
'''

# ----------------------------------------------------------------- the child: one run


class StopExample(Exception):
    """Raised by the hook to end an example's training loop early."""


def plain(x):
    """A deep copy of arguments or results that the parent can unpickle (no user classes)."""
    import numpy as np
    if isinstance(x, (list, tuple, dict)):
        items = x.items() if isinstance(x, dict) else enumerate(x)
        copied = {k: plain(v) for k, v in items}
        return copied if isinstance(x, dict) else (list if isinstance(x, list) else tuple)(
            copied.values())
    if isinstance(x, (np.ndarray, np.generic, int, float, complex, bool, str, type(None))):
        return copy.deepcopy(x)
    if hasattr(x, "__dict__") and not callable(x) and not isinstance(x, types.ModuleType):
        # an object of the example's own (rkhs's function in a Hilbert space): its data
        return {"<class>": type(x).__name__, **{k: plain(v) for k, v in vars(x).items()}}
    return f"<{type(x).__name__}>"


def stands_in(x):
    """Whether recorded arguments can be passed to the other program: plain data only (a
    copy of an object of the example's own classes cannot)."""
    if isinstance(x, (list, tuple)):
        return all(stands_in(v) for v in x)
    if isinstance(x, dict):
        return "<class>" not in x and all(stands_in(v) for v in x.values())
    return not (isinstance(x, str) and x.startswith("<"))


def signature(x):
    """Shapes and kinds: may transpile's arguments stand in for autograd's?"""
    return [(v.shape, v.dtype.kind) for v in leaves(x)]


class Recorder:
    def __init__(self, theirs, budget):
        self.theirs = theirs          # transpile's records, in the autograd run
        self.budget, self.start = budget, time.time()
        self.index, self.made, self.raw, self.calls = {}, [], [], []
        self.records, self.substituted, self.depth = {}, 0, 0

    def call(self, made, raw, args, kwargs):
        if self.depth:                # a gradient called by a gradient: not the user's call
            return raw(*args, **kwargs)
        if id(made) not in self.index:
            self.index[id(made)] = len(self.made)
            self.made.append(made)    # kept alive, so that its id is not reused
            self.raw.append(raw)
            self.calls.append(0)
        k = self.index[id(made)]
        j = self.calls[k]
        recording = j < CALLS_PER_FN and len(self.records) < MAX_RECORDS
        if not recording and (j >= 100 or time.time() - self.start > self.budget):
            raise StopExample         # hmm_em makes a new gradient function per EM step
        self.calls[k] += 1
        saved = None
        if recording:
            theirs = self.theirs.get((k, j))
            if theirs and stands_in(theirs[0]) and \
                    signature(theirs[0]) == signature(plain((args, kwargs))):
                args, kwargs = copy.deepcopy(theirs[0])
                self.substituted += 1
            saved = plain((args, kwargs))
        self.depth += 1
        try:
            result = raw(*args, **kwargs)
        finally:
            self.depth -= 1
        if saved is not None:
            self.records[(k, j)] = (saved, plain(result))
        return result


def hook_transpile(rec, jit=False):
    """Record the user's calls of transformed functions (not transpile's own calls). With
    `jit`, each user call goes through `tp.jit` of the transformed function instead,
    specialized from its first call."""
    from transpile import api
    inner, package = api.Transformed.__call__, os.path.dirname(api.__file__)
    misc = os.path.join(package, "misc")      # autograd's optimizers: the user's calls
    jitted = {}                               # id(transformed) -> (it, tp.jit of it)
    api.Jitted.calls_before_specializing = 0

    def __call__(self, *args, **kwargs):
        caller = sys._getframe(1).f_code.co_filename
        if caller.startswith(package) and not caller.startswith(misc):
            return inner(self, *args, **kwargs)
        if jit:
            if id(self) not in jitted:
                jitted[id(self)] = (self, api.jit(self))
            return rec.call(self, jitted[id(self)][1], args, kwargs)
        return rec.call(self, functools.partial(inner, self), args, kwargs)
    api.Transformed.__call__ = __call__


def hook_autograd(rec):
    """Wrap the functions autograd's grad & co. make (transpile needs no wrapper: it would
    transform the wrapper's source, so there the class is patched instead)."""
    import autograd

    def hooked(maker):
        @functools.wraps(maker)
        def make(fun, *a, **kw):
            raw = maker(getattr(fun, "_peer_raw", fun), *a, **kw)   # grad(grad(f)): unwrap

            def made(*args, **kwargs):
                return rec.call(made, raw, args, kwargs)
            made._peer_raw = raw
            return made
        return make
    for name in ["grad", "value_and_grad", "elementwise_grad", "jacobian", "hessian",
                 "holomorphic_grad", "hessian_vector_product", "tensor_jacobian_product",
                 "grad_named"]:
        if hasattr(autograd, name):
            setattr(autograd, name, hooked(getattr(autograd, name)))


def describe(e, root):
    tb = traceback.extract_tb(e.__traceback__)
    ours = [f for f in tb if f.filename.startswith(root)]
    where = (f"{os.path.relpath(ours[-1].filename, root)}:{ours[-1].lineno}: "
             f"{ours[-1].line}") if ours else "?"
    return {"type": type(e).__name__, "message": str(e).strip()[:2000],
            "refused": any(c.__name__ == "TransformError" for c in type(e).__mro__),
            "where": where, "innermost": f"{tb[-1].filename}:{tb[-1].lineno}" if tb else "?",
            "traceback": "".join(traceback.format_exception(e))[-4000:]}


def median_ms(fn, args, kwargs):
    fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))          # warm-up (code generation)
    times = []
    while len(times) < 20 and (len(times) < 3 or sum(times) < 2) and sum(times) < 5:
        a, kw = copy.deepcopy(args), copy.deepcopy(kwargs)
        t0 = time.perf_counter()
        fn(*a, **kw)
        times.append(time.perf_counter() - t0)
    return 1e3 * sorted(times)[len(times) // 2], len(times)


def child(side, root, rel, data_root, out, theirs_file, budget):
    theirs = pickle.load(open(theirs_file, "rb")) if theirs_file else {}
    rec = Recorder(theirs.get("records", {}), budget)
    if side == "tp":
        hook_transpile(rec, jit=os.environ.get("PEER_EXAMPLES_JIT") == "1")
    else:
        hook_autograd(rec)
    src, data_file = os.path.join(root, rel), os.path.join(data_root, rel)
    sys.path[:0] = [os.path.dirname(src), root]
    # run as __main__, its code from the rewritten file, its __file__ the original's
    mod = types.ModuleType("__main__")
    mod.__file__, sys.argv = data_file, [data_file]
    sys.modules["__main__"] = mod
    result = {"end": "finished"}
    try:
        exec(compile(open(src).read(), src, "exec"), mod.__dict__)
    except StopExample:
        result["end"] = "stopped"
    except BaseException as e:  # noqa: B036 -- SystemExit too: the report says what ended it
        result.update(end="error", error=describe(e, root))
    k = theirs.get("timed_fn")     # the autograd run times the function transpile's timed
    if k is None:
        k = max(range(len(rec.calls)), key=lambda i: (rec.calls[i], -i), default=None)
    result.update(records=rec.records, calls=rec.calls, substituted=rec.substituted,
                  timed_fn=k)
    if k is not None and (k, 0) in rec.records:
        try:
            result["ms"] = median_ms(rec.raw[k], *rec.records[(k, 0)][0])
        except BaseException as e:  # noqa: B036
            result["timing_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    with open(out, "wb") as f:
        pickle.dump(result, f)

# ----------------------------------------------------------------- the parent


def leaves(x):
    import numpy as np
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in leaves(v)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in leaves(x[k])]
    if isinstance(x, str):
        return []           # a class name or a placeholder: not a number to compare
    return [np.asarray(x)]


def rel_diff(a, b):
    """max |a - b| / max |b| over all the arrays of two results, together (inf: they differ
    in shape). Not leaf by leaf: a bias feeding a batch normalization has a gradient that is
    zero but for rounding, which no two programs round alike."""
    import numpy as np
    la, lb = leaves(a), leaves(b)
    if len(la) != len(lb) or any(x.shape != y.shape or x.dtype.kind in "OUS"
                                 for x, y in zip(la, lb)):
        return float("inf")
    diff = scale = 0.0
    for x, y in zip(la, lb):
        if x.size:
            nan = np.isnan(x) & np.isnan(y)
            diff = max(diff, float(np.max(np.where(nan, 0, np.abs(x - y)))))
            scale = max(scale, float(np.max(np.where(nan, 0, np.abs(y)))))
    worst = diff / max(scale, 1e-300)
    return worst if np.isfinite(worst) else float("inf")


def run_child(args, side, root, rel, data_root, tag, theirs=None):
    work = tempfile.mkdtemp(prefix=f"{tag}-{side}-", dir=args.where)   # savefig lands here
    out, log = os.path.join(work, "result.pkl"), os.path.join(work, "log.txt")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0",
               PEER_EXAMPLES_JIT="1" if args.jit and side == "tp" else "0",
               PYTHONPATH=os.pathsep.join([PROJECT, os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, os.path.abspath(__file__), "--child", side, root, rel, data_root,
           out, theirs or "", str(args.budget)]
    with open(log, "w") as f:
        try:
            subprocess.run(cmd, cwd=work, env=env, stdout=f, stderr=subprocess.STDOUT,
                           timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return out, failed("Timeout", f"no result in {args.timeout:g} s")
    if not os.path.exists(out):
        return out, failed("ChildDied", open(log).read()[-1500:])
    return out, pickle.load(open(out, "rb"))


def failed(kind, message):
    return {"error": {"type": kind, "message": message, "refused": False, "where": "?",
                      "innermost": "?", "traceback": ""}}


def compare(args, rel, tp_root, ag_root, tag):
    """One table row: (status, max rel. diff, tp ms, autograd ms, detail)."""
    tp_file, tp = run_child(args, "tp", tp_root, rel, ag_root, tag)
    _, ag = run_child(args, "ag", ag_root, rel, ag_root, tag,
                      tp_file if os.path.exists(tp_file) else None)
    common = set(tp.get("records", {})) & set(ag.get("records", {}))
    diff = max((rel_diff(tp["records"][key][1], ag["records"][key][1]) for key in common),
               default=None)
    detail, err = "", tp.get("error")
    if err:
        status = "REFUSED" if err["refused"] else "CRASH"
        detail = f"{err['type']}: {(err['message'].splitlines() or [''])[0][:150]}"
    elif diff is None:
        status = "NO-GRADS"
    else:
        status = "WRONG" if diff > args.rtol else "OK"
    if ag.get("error"):               # the example fails as written, here
        status = "AG-FAILS"
        detail += f" (autograd run: {ag['error']['type']}: " \
                  f"{(ag['error']['message'].splitlines() or [''])[0][:100]})"
    if common and ag.get("substituted", 0) < len(common):
        detail += f" (autograd at its own arguments for {len(common) - ag['substituted']})"
    return {"status": status, "diff": diff, "tp": tp, "ag": ag, "detail": detail,
            "compared": len(common)}


def fmt(row, name):
    diff = "-" if row.get("diff") is None else f"{row['diff']:.1e}"
    tp_ms, ag_ms = (row.get(s, {}).get("ms", (None,))[0] for s in ("tp", "ag"))
    ratio = f"{tp_ms / ag_ms:.2f}" if tp_ms and ag_ms else "-"
    tp_ms, ag_ms = (f"{ms:.3g}" if ms else "-" for ms in (tp_ms, ag_ms))
    return f"{name:42} {row['status']:10} {row.get('compared', 0):>2} {diff:>9} {tp_ms:>8} " \
           f"{ag_ms:>8} {ratio:>6}  {row['detail']}"


def prepare(args, ag_root, tp_root, ed_root):
    """The examples as written (ag_root), rewritten (tp_root) and edited (ed_root): the
    programs to run, the problems of each file (strict, edited) and the edits made."""
    if args.autograd_repo:
        tar = subprocess.run(["git", "-C", args.autograd_repo, "archive", "HEAD", "examples"],
                             check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            t.extractall(args.where, filter="data")
        os.rename(os.path.join(args.where, "examples"), ag_root)
    else:
        shutil.copytree(args.examples_dir, ag_root)
    with open(os.path.join(ag_root, "data_mnist.py"), "w") as f:
        f.write(STAND_IN_MNIST)
    programs, problems, edits = [], {}, {}
    for d, _, files in os.walk(ag_root):
        for rel in sorted(os.path.relpath(os.path.join(d, f), ag_root) for f in files
                          if f.endswith(".py")):
            src = open(os.path.join(ag_root, rel)).read()
            for dest, edited in ((tp_root, False), (ed_root, True)):    # edits: the last's
                text, problems[rel, edited], edits[rel] = (
                    rewrite(src, edited) if rel != "data_mnist.py" else (src, [], []))
                os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
                with open(os.path.join(dest, rel), "w") as out:
                    out.write(text)
            if os.path.basename(rel)[:-3] not in NOT_PROGRAMS:
                programs.append(rel[:-3])
    programs = [p for p in ISSUE if p in programs] + sorted(set(programs) - set(ISSUE))
    return [p for p in programs if not args.k or any(k in p for k in args.k)], problems, edits


def details(rows, verbose):
    print("\nDetails:")
    for name, row, strict in rows:
        if row["status"] != "OK":
            print(f"\n{name}: {row['status']}")
            print("".join(f"    {p}\n" for p in strict), end="")
            err = row.get("tp", {}).get("error")
            if err:
                print(f"    at {err['where']}\n    innermost {err['innermost']}")
                print("".join(f"    | {line}\n" for line in err["message"].splitlines()[:6]),
                      end="")
                if verbose:
                    print("".join(f"    {line}\n" for line in err["traceback"].splitlines()))
            if row.get("diff") is not None:
                print(f"    {row['compared']} gradient(s) compared, max rel. diff "
                      f"{row['diff']:.3g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--autograd-repo", help="autograd's git repository (bare or not)")
    source.add_argument("--examples-dir", help="autograd's examples/ directory")
    ap.add_argument("-k", action="append", default=[], help="only examples naming this")
    ap.add_argument("--budget", type=float, default=15, help="seconds before stopping")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run")
    ap.add_argument("--rtol", type=float, default=1e-6)
    ap.add_argument("-v", action="store_true", help="print the tracebacks")
    ap.add_argument("--jit", action="store_true",
                    help="call every transformed function through tp.jit (transpile's side)")
    args = ap.parse_args()
    args.where = tempfile.mkdtemp(prefix="peer-examples-")
    roots = [os.path.join(args.where, d) for d in ("ag", "tp", "edited")]
    programs, problems, edits = prepare(args, *roots)
    print(f"{'example':42} {'status':10} {'n':>2} {'max rdiff':>9} {'tp ms':>8} {'ag ms':>8} "
          f"{'tp/ag':>6}  detail")     # n: gradients compared
    rows = []
    for name in programs:
        rel, tag = name + ".py", name.replace("/", "_")
        files = [rel] + sorted(local_imports(os.path.join(roots[0], rel), roots[0]))
        strict = [f"{f}: {p}" for f in files for p in problems[f, False]]
        row = compare(args, rel, roots[1], roots[0], tag) if not strict else {
            "status": "NEEDS-EDIT", "detail": strict[0] + (
                f" (+{len(strict) - 1} more)" if len(strict) > 1 else "")}
        rows.append((name, row, strict))
        print(fmt(row, name), flush=True)
        fixes = sorted({e for f in files for e in edits[f]})
        if row["status"] != "OK" and fixes and not any(problems[f, True] for f in files):
            row = compare(args, rel, roots[2], roots[0], tag + "-edited")
            row["detail"] = f"edit: {'; '.join(fixes)}. {row['detail']}".strip()
            rows.append((name + " [edited]", row, []))
            print(fmt(row, name + " [edited]"), flush=True)
    details(rows, args.v)
    print(f"\nruns and their logs in {args.where}")
    return 1 if any(row["status"] != "OK" for _, row, _ in rows) else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        side, root, rel, data_root, out, theirs, budget = sys.argv[2:9]
        child(side, root, rel, data_root, out, theirs or None, float(budget))
    else:
        sys.exit(main())
