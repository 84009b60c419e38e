"""Checks of generated CUDA kernels on machines without a GPU.

`nvrtc_compile` compiles a kernel's source to PTX with NVRTC (cupy-cuda12x and
nvidia-cuda-nvrtc-cu12 from PyPI; no driver needed) and raises with NVRTC's log when it does
not compile. `host_run` compiles the same source with the host C++ compiler, through a small
header that supplies the CUDA built-ins our kernels use (thread and block indices, the
`__global__` and `__restrict__` qualifiers; math functions come from <math.h>), runs every
thread of a small grid in turn over numpy buffers, and so checks the kernel's numbers.
"""
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

HEADER = r"""
#include <math.h>
#include <stdint.h>
struct transpile_dim3 { unsigned int x, y, z; };
static transpile_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
"""

_BUILD = os.path.join(tempfile.gettempdir(), "transpile-cuda-host")


def nvrtc_available():
    try:
        from cupy_backends.cuda.libs import nvrtc
        nvrtc.getVersion()
        return True
    except Exception:
        return False


def host_compiler():
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def nvrtc_archs():
    """Two virtual architectures to compile for: the oldest this NVRTC supports (sm_70 with
    CUDA 12; CUDA 13 dropped it) and Hopper's compute_90."""
    from cupy_backends.cuda.libs import nvrtc
    try:
        oldest = min(nvrtc.getSupportedArchs())
    except Exception:           # an NVRTC too old to say
        oldest = 70
    return (f"compute_{max(oldest, 70)}", "compute_90")


def nvrtc_compile(name, source, arch):
    """PTX text of `source` for `arch` ("compute_70"); raises RuntimeError with NVRTC's log."""
    from cupy_backends.cuda.libs import nvrtc
    prog = nvrtc.createProgram(source, f"{name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [f"-arch={arch}"])
        except nvrtc.NVRTCError as exc:
            log = nvrtc.getProgramLog(prog)
            raise RuntimeError(f"{name} does not compile for {arch}: {exc}\n{log}\n{source}")
        ptx = nvrtc.getPTX(prog)
        return ptx.decode() if isinstance(ptx, bytes) else ptx
    finally:
        nvrtc.destroyProgram(prog)


_SIGNATURE = re.compile(r'extern "C" __global__ void (\w+)\((.*?)\)\s*\{', re.S)


def _parameters(source):
    name, params = _SIGNATURE.search(source).groups()
    out = []
    for p in params.split(","):
        p = p.replace("__restrict__", "").strip()
        ctype = p.rsplit(None, 1)[0].strip() if "*" not in p else p[:p.rindex("*") + 1]
        out.append((ctype, "*" in p))
    return name, out


def host_library(source):
    """A shared library of `source` plus a launcher `launch(void** args, grid, block)`."""
    name, params = _parameters(source)
    casts = [f"({t})args[{i}]" if pointer else f"*({t}*)args[{i}]"
             for i, (t, pointer) in enumerate(params)]
    launcher = (f'\nextern "C" void launch(void** args, unsigned grid, unsigned block) {{\n'
                f"    gridDim.x = grid; blockDim.x = block;\n"
                f"    for (unsigned b = 0; b < grid; ++b)\n"
                f"        for (unsigned t = 0; t < block; ++t) {{\n"
                f"            blockIdx.x = b; threadIdx.x = t;\n"
                f"            {name}({', '.join(casts)});\n"
                f"        }}\n}}\n")
    text = HEADER + source + launcher
    os.makedirs(_BUILD, exist_ok=True)
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    lib = os.path.join(_BUILD, f"{name}_{digest}.so")
    if not os.path.exists(lib):
        # built under a name of this process's own, then renamed: test workers running at
        # once must never load a library another one is still writing
        tmp = f"{lib[:-3]}.{os.getpid()}"
        with open(tmp + ".cpp", "w") as f:
            f.write(text)
        # -ffp-contract=off: no fused multiply-add, so each operation rounds as numpy's does
        subprocess.run([host_compiler(), "-O1", "-ffp-contract=off", "-shared", "-fPIC",
                        "-o", tmp + ".so", tmp + ".cpp"], check=True, capture_output=True,
                       text=True)
        os.replace(tmp + ".so", lib)
    return ctypes.CDLL(lib), params


def host_run(source, inputs, kinds, out, grid=3, block=32):
    """Run the kernel in `source` over numpy `inputs` (`kinds` as the kernel's launcher
    takes them: arrays and 0-d values by pointer, numbers as double), writing into numpy
    array `out`."""
    lib, params = host_library(source)
    keep, pointers = [], []
    for value, kind in zip(inputs, kinds):
        if kind in ("array", "0-d"):
            a = np.ascontiguousarray(value)
            keep.append(a)
            pointers.append(a.ctypes.data)
        else:
            d = ctypes.c_double(float(value))
            keep.append(d)
            pointers.append(ctypes.addressof(d))
    pointers.append(out.ctypes.data)
    args = (ctypes.c_void_p * len(pointers))(*pointers)
    lib.launch(args, ctypes.c_uint(grid), ctypes.c_uint(block))
    return out


def host_cupy():
    """A stand-in for the `cupy` module that runs on the CPU: numpy's functions, and a
    `RawKernel` that compiles CUDA source with the host C++ compiler (`host_library`) and
    runs every thread in turn. With it in sys.modules["cupy"], code jit specialized for
    cupy arrays runs end to end here: the module that binds np to cupy, the launcher in
    runtime.kernels.CudaKernel, and the kernels' own numbers."""
    import types
    module = types.ModuleType("cupy")
    for name in dir(np):
        if not name.startswith("__"):
            setattr(module, name, getattr(np, name))

    class RawKernel:
        def __init__(self, source, name, options=()):
            self.source, self.name, self.options = source, name, tuple(options)
            self.lib, self.params = host_library(source)

        def __call__(self, grid, block, args):
            keep, pointers = [], []
            for value in args:
                if isinstance(value, np.ndarray):
                    pointers.append(value.ctypes.data)
                else:
                    d = ctypes.c_double(float(value))
                    keep.append(d)
                    pointers.append(ctypes.addressof(d))
            packed = (ctypes.c_void_p * len(pointers))(*pointers)
            self.lib.launch(packed, ctypes.c_uint(grid[0]), ctypes.c_uint(block[0]))

    module.RawKernel = RawKernel
    module.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 0),
        get_current_stream=lambda: types.SimpleNamespace(synchronize=lambda: None))
    return module
