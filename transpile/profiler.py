"""tp.profiler: which lines of your code hold the memory that is live now.

    tp.profiler.start_memory_tracing()        # before the allocations of interest
    grads = step(params, x, y)
    tp.profiler.save_device_memory_profile("memory.prof")     # pprof's format
    print(tp.profiler.memory_table("memory.prof"))             # or: pprof -top memory.prof

NumPy reports every array buffer it allocates to Python's tracemalloc, with the Python
stack that allocated it; a snapshot of the buffers still alive is grouped by the stack's
frames in your code. A frame of generated code stands for the line of your code it was
made from (the `# 12: ...` markers, emit.origin_of), so the arrays a gradient keeps for its
backward pass are charged to the lines that computed them. Frames inside numpy, the
runtime helpers and transpile itself are left out of the stacks. CuPy allocates from its
memory pool, which records no stacks: its bytes in use appear as one sample,
"cupy memory pool".

The file is pprof's: a gzip-compressed `perftools.profiles.Profile` protocol buffer with
two sample types, (objects, count) and (space, bytes), written by the small encoder below
(`read_memory_profile` decodes it again).
"""
import gzip
import linecache
import os
import sys
import time
import tracemalloc

import numpy as np

from . import emit

__all__ = ["start_memory_tracing", "stop_memory_tracing", "save_device_memory_profile",
           "read_memory_profile", "memory_table"]

_NUMPY_DOMAIN = getattr(np.lib, "tracemalloc_domain", 389047)   # where numpy reports buffers
_SKIP = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
              for m in (np, sys.modules["runtime"], sys.modules[__package__]))


def start_memory_tracing(frames=64):
    """Start recording the stack of every allocation (tracemalloc), `frames` deep."""
    if not tracemalloc.is_tracing():
        tracemalloc.start(frames)


def stop_memory_tracing():
    """Stop recording allocations (and forget those recorded)."""
    tracemalloc.stop()


def _user_stack(traceback):
    """(file, line, function) frames of the user's code, innermost first."""
    out = []
    for frame in reversed(traceback):      # tracemalloc lists the outermost frame first...
        filename, line = frame.filename, frame.lineno
        if filename.startswith("<transpile:"):
            origin = emit.origin_of(filename, line)
            if origin is None:
                continue
            src, line = origin
            filename, name = str(src.filename), src.name
        elif filename.startswith(_SKIP) or filename.startswith("<"):
            continue
        else:
            name = _function_at(filename, line)
        if not out or out[-1][:2] != (filename, line):
            out.append((filename, line, name))
    return out


def _function_at(filename, line):
    """The name of the def around `line` (the nearest one above it, indented less)."""
    text = linecache.getline(filename, line)
    indent = len(text) - len(text.lstrip())
    for number in range(line - 1, 0, -1):
        above = linecache.getline(filename, number)
        stripped = above.lstrip()
        if stripped and len(above) - len(stripped) < indent:
            if stripped.startswith(("def ", "async def ")):
                return stripped.split("def ", 1)[1].split("(")[0]
            indent = len(above) - len(stripped)
    return "<module>"


def save_device_memory_profile(filename, backend=None):
    """Write the arrays alive now, by the stacks of your code that allocated them, to
    `filename` in pprof's format. Needs start_memory_tracing() before the allocations
    (JAX's signature; `backend` is accepted and ignored)."""
    if not tracemalloc.is_tracing():
        raise RuntimeError("no allocations were recorded: call "
                           "tp.profiler.start_memory_tracing() before the code to profile")
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.DomainFilter(True, _NUMPY_DOMAIN)])
    samples = {}
    for stat in snapshot.statistics("traceback"):
        stack = tuple(_user_stack(stat.traceback)) or (("<outside your code>", 0, "?"),)
        count, size = samples.get(stack, (0, 0))
        samples[stack] = (count + stat.count, size + stat.size)
    pool = _cupy_pool_bytes()
    if pool:
        samples[(("cupy memory pool", 0, "cupy memory pool"),)] = (1, pool)
    with gzip.open(filename, "wb") as f:
        f.write(_encode_profile(samples))


def _cupy_pool_bytes():
    cupy = sys.modules.get("cupy")
    try:
        return int(cupy.get_default_memory_pool().used_bytes()) if cupy is not None else 0
    except Exception:          # cupy without a usable device
        return 0


# ---------------------------------------------------------------- pprof's protocol buffer

def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field_varint(number, value):
    return _varint(number << 3) + _varint(value)


def _field_bytes(number, data):
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _packed(number, values):
    return _field_bytes(number, b"".join(_varint(v) for v in values))


def _encode_profile(samples):
    """samples: {stack of (file, line, function): (count, bytes)} -> Profile bytes."""
    strings = {"": 0}

    def string(s):
        return strings.setdefault(s, len(strings))
    functions, locations, body = {}, {}, bytearray()
    for field, (kind, unit) in ((1, ("objects", "count")), (1, ("space", "bytes"))):
        body += _field_bytes(field, _field_varint(1, string(kind)) +
                             _field_varint(2, string(unit)))
    for stack, (count, size) in samples.items():
        ids = []
        for filename, line, name in stack:
            fid = functions.setdefault((name, filename), len(functions) + 1)
            ids.append(locations.setdefault((fid, line), len(locations) + 1))
        body += _field_bytes(2, _packed(1, ids) + _packed(2, [count, size]))
    for (fid, line), lid in locations.items():
        body += _field_bytes(4, _field_varint(1, lid) +
                             _field_bytes(4, _field_varint(1, fid) + _field_varint(2, line)))
    for (name, filename), fid in functions.items():
        body += _field_bytes(5, _field_varint(1, fid) + _field_varint(2, string(name)) +
                             _field_varint(3, string(name)) +
                             _field_varint(4, string(filename)))
    for s in strings:                                   # in index order (dicts keep it)
        body += _field_bytes(6, s.encode())
    body += _field_varint(9, time.time_ns())
    body += _field_varint(14, string("space"))         # default_sample_type
    return bytes(body)


def _fields(data):
    """(field number, wire type, value) of a protocol buffer message."""
    i = 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(data, i)
        elif wire == 2:
            size, i = _read_varint(data, i)
            value, i = data[i:i + size], i + size
        else:
            raise ValueError(f"wire type {wire} is not used by pprof profiles")
        yield number, wire, value


def _read_varint(data, i):
    shift = value = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def _unpacked(wire, value):
    if wire == 0:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = _read_varint(value, i)
        out.append(v)
    return out


def read_memory_profile(filename):
    """The samples of a profile written by save_device_memory_profile (or any pprof file
    of that shape): [(count, bytes, [(file, line, function), ...innermost first])]."""
    with gzip.open(filename, "rb") as f:
        data = f.read()
    strings, functions, locations, raw = [], {}, {}, []
    for number, wire, value in _fields(data):
        if number == 6:
            strings.append(value.decode())
        elif number == 5:
            f = {n: v for n, _, v in _fields(value)}
            functions[f[1]] = (f.get(2, 0), f.get(4, 0))
        elif number == 4:
            fields = list(_fields(value))
            lid = next(v for n, _, v in fields if n == 1)
            line = next(v for n, _, v in fields if n == 4)
            parts = {n: v for n, _, v in _fields(line)}
            locations[lid] = (parts.get(1, 0), parts.get(2, 0))
        elif number == 2:
            ids, values = [], []
            for n, w, v in _fields(value):
                (ids if n == 1 else values if n == 2 else []).extend(_unpacked(w, v))
            raw.append((ids, values))
    out = []
    for ids, (count, size) in raw:
        stack = []
        for lid in ids:
            fid, line = locations[lid]
            name, filename = functions[fid]
            stack.append((strings[filename], line, strings[name]))
        out.append((count, size, stack))
    return out


def memory_table(filename, limit=20):
    """The live bytes of a saved profile by the innermost line of your code, largest first."""
    rows = {}
    for count, size, stack in read_memory_profile(filename):
        where = stack[0] if stack else ("?", 0, "?")
        c, s = rows.get(where, (0, 0))
        rows[where] = (c + count, s + size)
    total = sum(s for _, s in rows.values()) or 1
    lines = [f"{'MB':>10} {'share':>6} {'arrays':>7}  line"]
    for (f, line, name), (count, size) in sorted(rows.items(), key=lambda r: -r[1][1])[:limit]:
        text = linecache.getline(f, line).strip() if line else ""
        lines.append(f"{size / 1e6:10.3f} {size / total:6.1%} {count:7d}  "
                     f"{os.path.basename(f)}:{line} ({name})  {text[:50]}")
    return "\n".join(lines)
