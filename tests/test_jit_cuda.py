"""The CUDA kernels jit generates, checked without a GPU: every kernel that the programs of
tests/jit_programs.py produce under `tp.jit(f, backend="cuda")` must compile with NVRTC for
two architectures, and, compiled with the host C++ compiler (tests/cuda_check.py), compute
what numpy computes. On a machine with a GPU, the same programs also run on cupy arrays."""
import sys

import numpy as np
import pytest

import transpile as tp
from cuda_check import (host_compiler, host_cupy, host_run, nvrtc_archs, nvrtc_available,
                        nvrtc_compile)
from jit_programs import PROGRAMS
from runtime.trees import tree_leaves
from transpile.specialize import kernels as kernel_text

cupy = pytest.importorskip("cupy", reason="cupy is not installed (pip install -e '.[test]')")

def cuda_specialization(name, seed=1):
    fn, make_args, options = PROGRAMS[name]
    return tp.jit(fn, backend="cuda", **options).lower(*make_args(seed))


def test_a_cuda_specialization_binds_np_to_cupy():
    spec = cuda_specialization("slow_f_f32")
    assert "import cupy as np" in spec.source
    assert 'extern "C" __global__ void fused(' in spec.source
    assert spec.env["np"] is cupy


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not installed "
                    "(pip install cupy-cuda12x nvidia-cuda-nvrtc-cu12)")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_kernel_compiles_with_nvrtc(name):
    spec = cuda_specialization(name)
    kernels = spec.cuda_kernels()
    if name not in ("grad_mlp", "vmap_grad_mlp"):
        assert kernels, "no kernel was generated"
    for kernel_name, source in kernels:
        for arch in nvrtc_archs():
            assert ".entry " + kernel_name in nvrtc_compile(kernel_name, source, arch)


def _inputs(kernel, seed):
    """Random values for a kernel's inputs, of the shapes and dtypes it was made for."""
    rng = np.random.default_rng(seed)
    values = []
    for leaf in kernel.inputs:
        a = leaf.abstract
        if a.weak:
            values.append({"f": 0.75, "i": 3, "b": True}[a.dtype.kind] if a.dtype.kind != "f"
                          else float(rng.uniform(0.5, 2.0)))
        elif a.dtype.kind == "b":
            values.append(rng.random(a.shape) > 0.5)
        else:
            values.append((rng.random(a.shape) + 0.25).astype(a.dtype))   # log, sqrt defined
    return values


@pytest.mark.skipif(host_compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_kernel_computes_what_numpy_computes(name):
    spec = cuda_specialization(name)
    for k, kernel in enumerate(spec.kernels):
        env = {"np": np}
        exec(kernel_text.numpy_fallback(kernel), env)        # the statements, in numpy
        inputs = _inputs(kernel, k)
        expected = np.empty(kernel.out.shape, kernel.out.dtype)
        with np.errstate(all="ignore"):
            env[f"{kernel.name}_numpy"](*inputs, expected)
        got = np.full(kernel.out.shape, -12345, kernel.out.dtype)
        host_run(spec.env[kernel.name].source, inputs, kernel_text.input_kinds(kernel), got)
        rtol = 4e-6 if kernel.out.dtype == np.float32 else 1e-13
        scale = max(1.0, float(np.max(np.abs(expected[np.isfinite(expected)]), initial=0)))
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * scale,
                                   equal_nan=True, err_msg=spec.env[kernel.name].source)


def test_the_host_check_finds_a_wrong_kernel():
    spec = cuda_specialization("slow_f_f64")
    kernel = spec.kernels[0]
    source = spec.env[kernel.name].source.replace("2.0", "2.5")
    inputs = _inputs(kernel, 0)
    got = np.empty(kernel.out.shape)
    host_run(source, inputs, kernel_text.input_kinds(kernel), got)
    assert not np.allclose(got, inputs[0] * inputs[0] + inputs[0] * 2.0)


@pytest.mark.skipif(not nvrtc_available(), reason="NVRTC is not installed")
def test_nvrtc_reports_a_kernel_that_does_not_compile():
    with pytest.raises(RuntimeError, match="does not compile"):
        nvrtc_compile("broken", 'extern "C" __global__ void broken() { undefined_name; }',
                      "compute_70")


def _gpu():
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="no GPU")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jit_on_cupy_arrays_matches_numpy(name):
    fn, make_args, options = PROGRAMS[name]
    args = make_args(1)
    expected = fn(*args)
    got = tp.jit(fn, **options)(*tp.device_put(args))
    got_leaves, expected_leaves = tree_leaves(got), tree_leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    for g, e in zip(got_leaves, expected_leaves):
        np.testing.assert_allclose(cupy.asnumpy(g), e, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(host_compiler() is None, reason="no host C++ compiler")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cuda_specializations_run_end_to_end_through_the_host_compiler(name, monkeypatch):
    # the cupy module replaced by numpy plus host-compiled kernels: the specialized module
    # (np bound to "cupy"), CudaKernel's launcher and pool, and the kernels run as on a GPU
    monkeypatch.setitem(sys.modules, "cupy", host_cupy())
    fn, make_args, options = PROGRAMS[name]
    jitted = tp.jit(fn, backend="cuda", **options)
    for seed in (1, 2):
        args = make_args(seed)
        expected = fn(*args)
        got = jitted(*args)
        got_leaves, expected_leaves = tree_leaves(got), tree_leaves(expected)
        assert len(got_leaves) == len(expected_leaves)
        for g, e in zip(got_leaves, expected_leaves):
            g, e = np.asarray(g), np.asarray(e)
            assert g.shape == e.shape and g.dtype == e.dtype
            rtol = 4e-6 if e.dtype == np.float32 else 1e-12
            scale = max(1.0, float(np.max(np.abs(e[np.isfinite(e)]), initial=0)))
            np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale, equal_nan=True)
    if name not in ("grad_mlp", "vmap_grad_mlp"):
        assert "rt.CudaKernel(" in jitted.source and "import cupy as np" in jitted.source
