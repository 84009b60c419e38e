"""tp.profile: where the time of transformed code goes, by the user's source line.

    g = tp.profile(tp.jit(tp.grad(loss)))
    grads = g(params, x, y)         # runs, prints the table below, returns the gradients
    print(g.last.annotated())       # the generated code, each line with its time

    with tp.profile() as prof:      # or everything transformed code runs in a block
        train(steps=10)
    print(prof)

Generated code runs as Python, so a line tracer (sys.settrace) times each of its lines:
the time from one line to the next, spent in NumPy and the runtime helpers that line calls
(a call of another generated function is timed on that function's lines instead: self
time). Each generated line is mapped back to the line of your code it came from through
the `# 12: ...` markers the generated code carries (emit.origin_of), so the table names your
lines: the forward line `h = np.tanh(x @ W)` and its adjoint add up. A plain function given
to `tp.profile` has its own file's lines timed as they run. Tracing costs a few
microseconds per line: read the shares, not the absolute times, of code with many tiny
lines. The first call of a transformed function also generates its code: the table's
header tells that time (the total) from the time on traced lines.
"""
import collections
import linecache
import sys
import time

from . import emit
from .api import Jitted, Transformed

__all__ = ["profile", "Profile"]

_GENERATED = "<transpile:"


class Profile:
    """Seconds and hits per generated line, and their sum per line of the user's code."""

    def __init__(self, seconds, hits, total):
        self.seconds = dict(seconds)     # (generated file, line) -> seconds
        self.hits = dict(hits)
        self.total = total               # wall-clock seconds of the profiled run

    def by_source_line(self):
        """[(file, line, text, seconds, hits)], slowest first; generated lines that no marker
        maps back are grouped under their generated file."""
        rows = collections.defaultdict(lambda: [0.0, 0])
        for (filename, line), seconds in self.seconds.items():
            origin = emit.origin_of(filename, line)
            if origin is not None:
                src, user_line = origin
                key = (str(src.filename), user_line)
            else:
                key = (filename, line)
            rows[key][0] += seconds
            rows[key][1] += self.hits.get((filename, line), 0)
        out = [(f, n, linecache.getline(f, n).strip(), s, h) for (f, n), (s, h) in rows.items()]
        return sorted(out, key=lambda r: -r[3])

    def table(self, limit=20):
        rows = self.by_source_line()
        traced = sum(r[3] for r in rows) or 1e-300
        lines = [f"transpile profile: {self.total * 1e3:.2f} ms in all (generating code on "
                 f"a first call included), {traced * 1e3:.2f} ms on traced lines",
                 f"{'ms':>9} {'share':>6} {'hits':>6}  line"]
        for filename, line, text, seconds, hits in rows[:limit]:
            where = f"{filename.rsplit('/', 1)[-1]}:{line}"
            lines.append(f"{seconds * 1e3:9.3f} {seconds / traced:6.1%} {hits:6d}  "
                         f"{where}  {text[:60]}")
        if len(rows) > limit:
            lines.append(f"... {len(rows) - limit} more lines")
        return "\n".join(lines)

    def annotated(self):
        """Every generated file that ran, each line prefixed with its time in ms."""
        out = []
        for filename in sorted({f for f, _ in self.seconds}):
            out.append(f"# {filename}")
            for number, text in enumerate(linecache.getlines(filename), 1):
                seconds = self.seconds.get((filename, number))
                mark = f"{seconds * 1e3:9.3f} ms | " if seconds else " " * 12 + " | "
                out.append(mark + text.rstrip("\n"))
        return "\n".join(out)

    def __str__(self):
        return self.table()


class _Tracer:
    """Self time per line of generated code (see the module docstring)."""

    def __init__(self, filenames=()):
        self.filenames = set(filenames)     # files of plain code to time too
        self.seconds = collections.defaultdict(float)
        self.hits = collections.defaultdict(int)
        self.stack = []              # [frame, current line key, time that line started]

    def charge(self, now):
        if self.stack:
            entry = self.stack[-1]
            self.seconds[entry[1]] += now - entry[2]
            entry[2] = now

    def global_trace(self, frame, event, arg):
        code = frame.f_code
        if event != "call" or code.co_name == "<module>" or not (
                code.co_filename.startswith(_GENERATED) or code.co_filename in self.filenames):
            return None
        now = time.perf_counter()
        self.charge(now)
        key = (frame.f_code.co_filename, frame.f_lineno)
        self.stack.append([frame, key, now])
        return self.local_trace

    def local_trace(self, frame, event, arg):
        now = time.perf_counter()
        if not self.stack or self.stack[-1][0] is not frame:
            return self.local_trace
        if event == "line":
            self.charge(now)
            key = (frame.f_code.co_filename, frame.f_lineno)
            self.stack[-1][1] = key
            self.hits[key] += 1
        elif event == "return":
            self.charge(now)
            self.stack.pop()
            if self.stack:
                self.stack[-1][2] = time.perf_counter()
        return self.local_trace

    def __enter__(self):
        self.previous = sys.gettrace()
        self.start = time.perf_counter()
        sys.settrace(self.global_trace)
        return self

    def __exit__(self, *exc):
        sys.settrace(self.previous)
        self.total = time.perf_counter() - self.start
        return False

    def result(self):
        return Profile(self.seconds, self.hits, self.total)


class _Block:
    """`with tp.profile() as prof:`: prof is the Profile of the block once it ends."""

    def __enter__(self):
        self._tracer = _Tracer().__enter__()
        return self

    def __exit__(self, *exc):
        self._tracer.__exit__(*exc)
        self.result = self._tracer.result()
        return False

    def __getattr__(self, name):      # the Profile's methods, once the block has run
        if name in ("_tracer", "result"):
            raise AttributeError(name)
        return getattr(self.result, name)

    def __str__(self):
        return str(self.result)


class _Profiled:
    """f, timed line by line at each call; `.last` is the latest call's Profile."""

    def __init__(self, f, show):
        self.f = f
        self.show = show
        self.last = None
        plain = not isinstance(f, (Transformed, Jitted)) and hasattr(f, "__code__")
        self.filenames = (f.__code__.co_filename,) if plain else ()

    def __call__(self, *args, **kwargs):
        with _Tracer(self.filenames) as tracer:
            out = self.f(*args, **kwargs)
        self.last = tracer.result()
        if self.show:
            print(self.last.table())
        return out


def profile(f=None, show=True):
    """Time transformed code by the user's source lines.

    tp.profile(f)(*args): call f (a transformed or jitted function, or a plain one, whose
    file's lines are timed), print the table (unless show=False) and return f's
    result; the wrapper's `.last` holds the Profile (`.table()`, `.annotated()`,
    `.by_source_line()`). `with tp.profile() as prof:` profiles every transformed function
    run in the block; `print(prof)` after it."""
    if f is None:
        return _Block()
    return _Profiled(f, show)
