"""pmap: one program, many devices (SPMD), with collectives over a named axis.

`tp.pmap(f, axis_name="i")(x)` gives each device one slice of x along the mapped axis and
runs f on it there, all devices at once: on the CPU, virtual devices are threads
(`TRANSPILE_CPU_DEVICES`, default 8; runtime/spmd.py). tp.psum(v, "i") and the other
collectives inside f meet the other devices through a communicator. The result is a
`ShardedArray`: each device's output stays where it is for the next pmap call.

The meaning is vmap's: pmap(f)(x) equals vmap(f)(x), which the tests check program by
program. Transformations see a pmapped function as a function with rules of its own (a
CustomRule), all of them pmaps again, so their work runs on the devices too:
  reverse mode   forward: the pmapped call, saving the arguments (already on the devices);
                 backward: pmap of each device's vector-Jacobian product, with the
                 cotangents of unmapped arguments psum'd over the axis (the transpose of
                 handing every device the same value)
  forward mode   pmap of each device's jvp
  vmap           pmap of vmap(f), the device axes moved past the batch axis (arguments
                 batched only in part: vmap of vmap(f), on the calling thread)
"""
import functools
import inspect
import itertools

import numpy as np

import runtime as rt
from runtime import nccl, spmd
from .api import Transformed, Jitted, add_transformation, grad, jvp, vmap
from .custom import CustomRule, file_backed, identifier, positional_names
from .errors import TransformError

_names = itertools.count()


# ---------------------------------------------------------------------------- devices
def devices(backend=None):
    """The devices pmap spreads work over: TRANSPILE_CPU_DEVICES virtual CPU devices
    (default 8) in each process (see `tp.distributed.initialize`); with backend="gpu",
    the CUDA GPUs cupy sees."""
    if _is_gpu(backend):
        return spmd.gpu_devices()
    return list(spmd.cpu_devices())


def local_devices(process_index=None, backend=None):
    """The devices of this process (or of process `process_index`)."""
    if _is_gpu(backend):
        return spmd.gpu_devices()
    if process_index is None:
        return spmd.local_cpu_devices()
    return [d for d in spmd.cpu_devices() if d.process_index == process_index]


def device_count(backend=None):
    """How many devices pmap can use."""
    return len(devices(backend))


def local_device_count(backend=None):
    """How many devices this process has (all of them: one process)."""
    return len(local_devices(backend=backend))


def process_index():
    """This process's index among the processes of a computation (0 for one process)."""
    return spmd.process_index()


def process_count():
    """How many processes share the computation (1 unless tp.distributed joined more)."""
    return spmd.process_count()


def _is_gpu(backend):
    if backend in (None, "cpu"):
        return False
    if backend in ("gpu", "cuda"):
        return True
    raise ValueError(f"pmap: backend must be None, 'cpu' or 'gpu', got {backend!r}")


def _gpu_devices_or_error():
    found = spmd.gpu_devices()
    if not found:
        raise TransformError("pmap(backend='gpu'): no CUDA GPU is visible (cupy sees "
                             "none).\n  hint: leave backend=None for virtual CPU devices.")
    return found


# ---------------------------------------------------------------------------- pmap
def pmap(f=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, donate_argnums=()):
    """Run `f` on many devices at once, each on one slice of the mapped axis (JAX's pmap).

    Args:
      f: a Python function written for one slice (or any transformed function).
      axis_name: a name for the mapped axis, for tp.psum/pmean/pmax/pmin/all_gather/
        psum_scatter/ppermute/all_to_all/axis_index inside f.
      in_axes: int, None, or a tuple with one entry per argument (an int, None, or a pytree
        of them matching the argument): which axis of each argument is mapped.
      out_axes: where the device axis goes in the outputs (int or None; None: the output
        is the same on every device and device 0's is returned).
      static_broadcasted_argnums: arguments passed to every device unchanged.
      devices: the devices to use (default: `tp.devices()`); the mapped axis may not be
        longer.
      backend: None or "cpu" (virtual CPU devices), or "gpu": the CUDA GPUs, one thread
        and one NCCL communicator each (never run here: no GPU was lent yet).
      donate_argnums: accepted for JAX compatibility; nothing is donated.
    Returns:
      A callable returning `ShardedArray`s (one buffer per device; `np.asarray` gathers).
    """
    if f is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes,
                                 out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices, backend=backend,
                                 donate_argnums=donate_argnums)
    if _is_gpu(backend) and devices is None:
        devices = _gpu_devices_or_error()
    return Pmapped(f, axis_name, in_axes, out_axes, static_broadcasted_argnums, devices)


def _signature(f):
    if isinstance(f, Jitted):
        f = f.inner
    if isinstance(f, (Transformed, CustomRule)):
        return f.signature
    return inspect.signature(f)


class Pmapped(CustomRule):
    """A pmapped function: call it, or transform it (it carries its own rules)."""

    def __init__(self, f, axis_name, in_axes, out_axes, static_argnums, device_list):
        self.f = f
        self.signature = _signature(f)
        functools.update_wrapper(self, f, updated=())
        params = [p for p in self.signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if any(p.kind == p.VAR_POSITIONAL for p in self.signature.parameters.values()):
            raise TransformError(f"pmap of {self.__name__}: *args is not supported.\n  "
                                 "hint: list the parameters explicitly.")
        self.signature = self.signature.replace(parameters=params)
        self.params = [p.name for p in params]
        # an int in_axes maps the parameters without defaults; a tuple says it for each
        self.defaulted = set() if isinstance(in_axes, (tuple, list)) else \
            {i for i, p in enumerate(params) if p.default is not p.empty}
        self.static = tuple(static_argnums) if isinstance(static_argnums, (tuple, list)) \
            else (static_argnums,)
        n = len(self.params)
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)
        if isinstance(in_axes, tuple):
            if len(in_axes) != n:
                raise ValueError(f"pmap: in_axes has {len(in_axes)} entries but "
                                 f"{self.__name__} takes {n} arguments")
        else:
            in_axes = (in_axes,) * n
        self.in_axes = tuple(None if i in self.static or i in self.defaulted else a
                             for i, a in enumerate(in_axes))
        self.out_axes = out_axes
        self.axis_name = axis_name
        self.device_list = list(device_list) if device_list is not None else None
        # the name collectives of the derivative code use when the user gave none
        self.inner_axis = axis_name if axis_name is not None else f"_pmap{next(_names)}"

    def __repr__(self):
        return f"<transpile.pmap of {getattr(self.f, '__qualname__', self.f)}>"

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        for i in self.defaulted:
            # an array passed there would be mapped by JAX; a default passed on (as
            # derivative code passes every argument) or a number is not
            value = bound.arguments.get(self.params[i])
            if value is not self.signature.parameters[self.params[i]].default and \
                    any(np.ndim(leaf) > 0 for leaf in rt.tree_leaves(value)):
                raise TypeError(
                    f"pmap of {self.__name__}: an array is passed as {self.params[i]}, but "
                    "an int "
                    "in_axes maps only the parameters without defaults.\n  hint: give "
                    "in_axes as a tuple with an entry for each parameter.")
        bound.apply_defaults()
        args = bound.args
        size = self._mapped_size(args)
        available = self.device_list if self.device_list is not None else local_devices()
        if size > len(available):
            raise ValueError(
                f"pmap of {self.__name__}: the mapped axis has {size} entries but there are "
                f"only {len(available)} devices.\n  hint: map over at most {len(available)} "
                "(vmap inside pmap handles more), or set TRANSPILE_CPU_DEVICES before "
                "importing transpile for more virtual CPU devices.")
        used = available[:size]
        per_rank = [tuple(_slice(a, axes, r) for a, axes in zip(args, self.in_axes))
                    for r in range(size)]
        if used[0].platform == "gpu":
            # each device's thread computes on its GPU, collectives through NCCL
            results = spmd.run(_on_its_gpu(self.f), per_rank, self.inner_axis, used,
                               nccl.communicator([d.id for d in used]))
        else:
            results = spmd.run(self.f, per_rank, self.inner_axis, used)
        return _combine(results, self.out_axes, used)

    def _mapped_size(self, args):
        sizes = []
        for name, a, axes in zip(self.params, args, self.in_axes):
            for path, leaf, axis in rt.leaves_with_axes(a, axes, name):
                if axis is None:
                    continue
                shape = np.shape(leaf)
                if not -len(shape) <= axis < len(shape):
                    raise ValueError(f"pmap of {self.__name__}: in_axes maps axis {axis} of "
                                     f"{path}, which has shape {shape}")
                sizes.append((path, shape[axis]))
        if not sizes:
            raise ValueError(f"pmap of {self.__name__}: no argument is mapped (in_axes "
                             "are all None); pmap needs at least one mapped argument.")
        if len({s for _, s in sizes}) > 1:
            listed = ", ".join(f"{p} has {s}" for p, s in sizes)
            raise ValueError(f"pmap of {self.__name__}: the mapped axes differ in size "
                             f"({listed}); they must all be the same.")
        return sizes[0][1]

    # ------------------------------------------------------------------ rules
    @functools.cached_property
    def fn(self):
        """The same values as vmap: what batching transforms (vmap of pmap)."""
        mapped = vmap(self.f, in_axes=self.in_axes, out_axes=self.out_axes,
                      axis_name=self.axis_name)
        return self._source("pmap_value", f"return mapped({self._args()})",
                            {"mapped": mapped})

    def batched(self, specs, axis_name, _vmap=None):
        """vmap of pmap on the devices: pmap of the vmapped function, each device mapping
        its slice of the batch; the device axes move past the batch axis (first)."""
        if not all(spec is True or spec is False for spec in specs) or \
                not _flat_axes(self.out_axes) or \
                not all(a is None or isinstance(a, int) for a in self.in_axes):
            return None        # containers batched in part: vmap of vmap (same values)
        made = self.__dict__.setdefault("_batched", {})
        key = (specs, axis_name)
        if key not in made:
            inner = vmap(self.f, in_axes=tuple(0 if b else None for b in specs),
                         axis_name=axis_name)
            in_axes = tuple(_past_batch(a) if b else a for a, b in zip(self.in_axes, specs))
            mapped = Pmapped(inner, self.axis_name, in_axes, _past_batch(self.out_axes),
                             (), self.device_list)
            made[key] = self._source("pmap_vmap", f"return mapped({self._args()})",
                                     {"mapped": mapped}, params=["batch_size"] +
                                     self._arg_names())
        return made[key]

    @functools.cached_property
    def fwd(self):
        self._check_differentiable()
        args = self._args()
        one = "," if len(self.params) == 1 else ""
        return self._source("pmap_fwd", f"return pmapped({args}), ({args}{one})",
                            {"pmapped": self})

    @functools.cached_property
    def bwd(self):
        """pmap of each device's vector-Jacobian product (recomputing its forward pass)."""
        args, axis = self._args(), repr(self.inner_axis)
        product = self._source("pmap_product", f"return rt.tree_vdot(f({args}), g)",
                               {"f": self.f, "rt": rt}, extra=["g"])
        cotangents = grad(product, argnums=tuple(range(len(self.params))))
        lines = []
        if _has_none(self.out_axes):
            # an output with out_axes None is device 0's: the other devices' copies of it
            # get no cotangent
            lines.append(f"first = rt.axis_index({axis}) == 0")
            lines.append(f"g = {_zero_unreturned('g', self.out_axes)}")
        lines.append(f"cts = cotangents({args}, g)")
        outs = [f"cts[{i}]" if i in self.static else _psum_unmapped(f"cts[{i}]", a, axis)
                for i, a in enumerate(self.in_axes)]
        lines.append(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        device_bwd = self._source("pmap_device_bwd", "\n    ".join(lines),
                                  {"cotangents": cotangents, "rt": rt}, extra=["g"])
        backward = Pmapped(device_bwd, self.inner_axis, self.in_axes + (self.out_axes,),
                           tuple(self.in_axes), (), self.device_list)
        one = "," if len(self.params) == 1 else ""
        return self._source("pmap_bwd", f"{args}{one} = saved\n    "
                            f"return backward({args}, g)", {"backward": backward},
                            params=["saved", "g"])

    @functools.cached_property
    def rule(self):
        """Forward mode: pmap of each device's jvp."""
        self._check_differentiable()
        args = self._args()
        tans = ", ".join(f"t_{p}" for p in self._arg_names())
        one = "," if len(self.params) == 1 else ""
        device_jvp = self._source("pmap_device_jvp",
                                  f"return jvp(f, ({args}{one}), ({tans}{one}))",
                                  {"f": self.f, "jvp": jvp},
                                  extra=[f"t_{p}" for p in self._arg_names()])
        forward = Pmapped(device_jvp, self.inner_axis, self.in_axes * 2,
                          (self.out_axes, self.out_axes), (), self.device_list)
        return self._source("pmap_jvp", f"{args}{one} = primals\n    "
                            f"{tans}{one} = tangents\n    "
                            f"return forward({args}, {tans})", {"forward": forward},
                            params=["primals", "tangents"])

    def _check_differentiable(self):
        for axes in self.in_axes + (self.out_axes,):
            if not _flat_axes(axes):
                raise TransformError(f"pmap of {self.__name__} is differentiated with "
                                     f"in_axes/out_axes {axes!r}; derivatives of pmap take "
                                     "an int, None or a tuple of them for each argument "
                                     "and the output.")

    def _args(self):
        return ", ".join(self._arg_names())

    def _arg_names(self):
        return positional_names(len(self.params))

    def _source(self, what, body, env, extra=(), params=None):
        name = f"{identifier(self.__name__)}{what}"
        params = self._arg_names() + list(extra) if params is None else params
        text = f"def {name}({', '.join(params)}):\n    {body}\n"
        return file_backed(text, dict(env), name)


def _past_batch(axes):
    """Device axes (an int, None or a tuple of them) of values whose batch axis now leads."""
    if isinstance(axes, tuple):
        return tuple(_past_batch(a) for a in axes)
    return axes + 1 if isinstance(axes, int) and axes >= 0 else axes


def _on_its_gpu(f):
    """f, run in a device's thread with that GPU current and its arguments moved there."""
    def run_on_gpu(*args):
        gpu = spmd.current_device().id
        with rt.cuda_device(gpu):
            return f(*rt.device_put(args, rt.cuda_device(gpu)))
    return run_on_gpu


def _flat_axes(axes):
    return axes is None or isinstance(axes, int) or \
        isinstance(axes, tuple) and all(_flat_axes(a) for a in axes)


def _has_none(axes):
    return axes is None or isinstance(axes, tuple) and any(_has_none(a) for a in axes)


def _psum_unmapped(expr, axes, axis):
    """Source for the cotangent `expr` of an argument mapped by `axes`, with the parts
    every device received whole (axes None) summed over the devices."""
    if axes is None:
        return f"rt.psum({expr}, {axis})"
    if isinstance(axes, int):
        return expr
    parts = [_psum_unmapped(f"{expr}[{k}]", a, axis) for k, a in enumerate(axes)]
    return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"


def _zero_unreturned(expr, axes):
    """Source for the output cotangent `expr` with the parts of outputs that device 0
    alone returns (out_axes None) zero on the other devices (`first` is False there)."""
    if axes is None:
        return f"({expr} if first else rt.tangent_zeros({expr}))"
    if isinstance(axes, int):
        return expr
    parts = [_zero_unreturned(f"{expr}[{k}]", a) for k, a in enumerate(axes)]
    return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"


# ---------------------------------------------------------------------------- slicing
def _slice(x, axes, rank):
    """Device `rank`'s part of argument x, mapped by `axes` (an int, None or a prefix tree)."""
    return rt.tree_axes(x, axes, lambda leaf, axis: spmd.shard_of(leaf, _positive(axis, leaf),
                                                                  rank))


def _positive(axis, leaf):
    if isinstance(leaf, spmd.ShardedArray):
        return axis % leaf.ndim
    return axis % max(np.ndim(leaf), 1)


def _combine(results, out_axes, used):
    """One output from every device's: a ShardedArray per leaf (device 0's where out_axes
    is None)."""
    first = results[0]
    if isinstance(out_axes, (tuple, list)) and isinstance(first, (tuple, list)):
        return rt.rebuild_like(first, [_combine([r[i] for r in results], a, used)
                                       for i, a in enumerate(out_axes)])
    if isinstance(out_axes, dict) and isinstance(first, dict):
        return {k: _combine([r[k] for r in results], out_axes[k], used) for k in first}
    if out_axes is None:
        return first
    if not isinstance(out_axes, int):
        raise ValueError(f"pmap: out_axes {out_axes!r} does not match the output")
    if isinstance(first, (tuple, list)):
        return rt.rebuild_like(first, [_combine([r[i] for r in results], out_axes, used)
                                       for i in range(len(first))])
    if isinstance(first, dict):
        return {k: _combine([r[k] for r in results], out_axes, used) for k in first}
    shards = [rt.array_module(r).asarray(r) for r in results]     # a GPU's stays there
    axis = out_axes % (shards[0].ndim + 1)
    return spmd.ShardedArray(shards, axis, used)


add_transformation("pmap", pmap)
