"""`python -m transpile dump`: the dumped module runs without transpile and agrees with it.

The round trip: write a module, dump it (its module-level transformed functions plus an
`--apply` expression), import the dump in a fresh interpreter where `import transpile`
fails, and compare its results with the original transformed functions on fresh random
inputs.
"""
import subprocess
import sys

import numpy as np
import pytest

MODULE = '''
import numpy as np
import transpile as tp

W0 = np.linspace(-1.0, 1.0, 12).reshape(3, 4)     # a global array the code reads


def helper(h, scale):
    return np.tanh(h) * scale


def features(x, scale=2.0):                        # a default argument, a loop, a helper
    h = x @ W0
    for i in range(3):
        h = helper(h, scale) + 0.1 * h
    return np.sum(h ** 2)


@tp.transform
def predict(x, W):
    y = x
    for k in range(2):
        y = np.tanh(y @ W)
    return y


def loss(W, x):
    return np.mean(predict(x, W) ** 2)


loss_grad = tp.grad(loss)
per_example_grads = tp.vmap(tp.grad(loss), in_axes=(None, 0))   # a vmap, dumped too
'''

# Runs in a fresh interpreter: imports the dumped module with `transpile` blocked, evaluates
# its functions on the inputs in a .npz file, and saves the results.
RUN_DUMPED = '''
import sys
sys.modules["transpile"] = None            # any `import transpile` now raises ImportError
import numpy as np
sys.path.insert(0, sys.argv[1])
import out
inputs = np.load(sys.argv[2])
x, W = inputs["x"], inputs["W"]
np.savez(sys.argv[3],
         grad_features=out.grad_features(x),
         grad_features_scale=out.grad_features(x, 0.5),
         predict=out.predict(x, W),
         loss_grad=out.loss_grad(W, x),
         per_example_grads=out.per_example_grads(W, x[:, None, :]))
print("transpile" in sys.modules and sys.modules["transpile"] is not None)
'''


def run(args, cwd, **kwargs):
    return subprocess.run([sys.executable] + args, cwd=cwd, capture_output=True, text=True,
                          timeout=120, **kwargs)


def load_module(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("cli_roundtrip_mod", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dumped(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "mod.py").write_text(MODULE)
    result = run(["-m", "transpile", "dump", "mod.py", "-o", "out.py",
                  "--apply", "grad(features)"], cwd=tmp)
    assert result.returncode == 0, result.stderr
    return tmp


def test_dump_writes_one_module_without_transpile(dumped):
    text = (dumped / "out.py").read_text()
    imports = [line for line in text.splitlines()
               if line.lstrip().startswith(("import ", "from "))]
    assert not [line for line in imports if "transpile" in line], imports
    assert "import runtime as rt" in imports
    for name in ("def grad_features(", "def predict(", "loss_grad = ", "W0 = np.array("):
        assert name in text, f"{name!r} missing from the dump:\n{text}"
    assert "def grad_features(x, scale=2.0)" in text, "the default argument was lost"
    compile(text, "out.py", "exec")


def test_dumped_module_agrees_with_transpile(dumped, tmp_path):
    rng = np.random.default_rng()
    x, W = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    np.savez(tmp_path / "inputs.npz", x=x, W=W)
    script = tmp_path / "run_dumped.py"
    script.write_text(RUN_DUMPED)
    result = run([str(script), str(dumped), str(tmp_path / "inputs.npz"),
                  str(tmp_path / "results.npz")], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False", "the dumped module imported transpile"
    got = np.load(tmp_path / "results.npz")

    import transpile as tp
    mod = load_module(dumped / "mod.py")
    expected = {
        "grad_features": tp.grad(mod.features)(x),
        "grad_features_scale": tp.grad(mod.features)(x, 0.5),
        "predict": mod.predict(x, W),
        "loss_grad": mod.loss_grad(W, x),
        "per_example_grads": mod.per_example_grads(W, x[:, None, :]),
    }
    for name, value in expected.items():
        assert np.shape(got[name]) == np.shape(value), name
        assert np.allclose(got[name], value, rtol=1e-12, atol=1e-12), name
    # and the transformed functions are right in the first place
    assert np.allclose(expected["predict"], np.tanh(np.tanh(x @ W) @ W))
    eps = 1e-6
    e = np.zeros_like(x)
    e[1, 2] = eps
    numeric = (mod.features(x + e) - mod.features(x - e)) / (2 * eps)
    assert np.isclose(expected["grad_features"][1, 2], numeric, rtol=1e-5, atol=1e-6)
    per_example = [mod.loss_grad(W, x[k:k + 1]) for k in range(len(x))]
    assert np.allclose(expected["per_example_grads"], per_example, rtol=1e-12, atol=1e-12)


def test_help_mentions_dump():
    result = run(["-m", "transpile", "--help"], cwd=None)
    assert result.returncode == 0, result.stderr
    assert "dump" in result.stdout
    assert "--apply" in run(["-m", "transpile", "dump", "--help"], cwd=None).stdout


@pytest.mark.parametrize("expr,words", [
    ("grad(nonexistent)", ["nonexistent", "NameError"]),
    ("grad(", ["grad(", "SyntaxError"]),
    ("features", ["features", "transformed function"]),
], ids=["undefined-name", "syntax-error", "not-transformed"])
def test_bad_apply_expression(dumped, tmp_path, expr, words):
    result = run(["-m", "transpile", "dump", str(dumped / "mod.py"), "-o",
                  str(tmp_path / "bad.py"), "--apply", expr], cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    message = result.stderr.strip()
    assert message.startswith("error:"), message
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    assert not (tmp_path / "bad.py").exists(), "a failed dump must not write its output"


def test_dump_to_stdout_is_the_same_text(dumped):
    result = run(["-m", "transpile", "dump", "mod.py", "--apply", "grad(features)"],
                 cwd=dumped)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (dumped / "out.py").read_text()



JIT_MODULE = '''
import numpy as np
import transpile as tp


def slow_f(x):
    return x * x + x * 2.0


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


step = tp.jit(tp.grad(lambda w, x: np.sum(np.tanh(x @ w) ** 2)))
'''

RUN_JIT_DUMPED = '''
import sys
sys.modules["transpile"] = None
import numpy as np
sys.path.insert(0, sys.argv[1])
import out
rng = np.random.default_rng(int(sys.argv[3]))
x32 = rng.standard_normal((300, 250)).astype(np.float32)
x = rng.standard_normal((300, 300))
w, xs = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
np.savez(sys.argv[2], slow_f=out.slow_f(x32), selu=out.selu(x), step=out.step(w, xs))
'''


def test_dump_writes_jit_specializations_with_their_kernels(tmp_path):
    (tmp_path / "jmod.py").write_text(JIT_MODULE)
    result = run(["-m", "transpile", "dump", "jmod.py", "-o", "out.py",
                  "--lower", "slow_f(np.ones((300, 250), np.float32))",
                  "--lower", "selu(np.ones((300, 300)))",
                  "--lower", "step(np.ones((3, 2)), np.ones((4, 3)))"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "out.py").read_text()
    assert text.count("rt.CpuKernel(") == 2 and "for i1 in range(250):" in text
    seed = int(np.random.default_rng().integers(1 << 30))
    (tmp_path / "run.py").write_text(RUN_JIT_DUMPED)
    result = run(["run.py", str(tmp_path), str(tmp_path / "r.npz"), str(seed)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    got = np.load(tmp_path / "r.npz")
    mod = load_module(tmp_path / "jmod.py")
    rng = np.random.default_rng(seed)
    x32 = rng.standard_normal((300, 250)).astype(np.float32)
    x = rng.standard_normal((300, 300))
    w, xs = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    np.testing.assert_allclose(got["slow_f"], mod.slow_f(x32), rtol=1e-6)
    assert got["slow_f"].dtype == np.float32
    np.testing.assert_allclose(got["selu"], mod.selu(x), rtol=1e-13)
    np.testing.assert_allclose(got["step"], mod.step(w, xs), rtol=1e-13)


def test_dump_for_cuda_writes_cupy_code_and_cuda_kernels(tmp_path):
    pytest.importorskip("cupy")
    (tmp_path / "jmod.py").write_text(JIT_MODULE)
    result = run(["-m", "transpile", "dump", "jmod.py", "--backend", "cuda",
                  "--lower", "slow_f(np.ones((300, 250), np.float32))"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "import cupy as np" in result.stdout
    assert 'extern "C" __global__ void fused(const float* __restrict__ x' in result.stdout


def test_lower_needs_a_call(tmp_path):
    (tmp_path / "jmod.py").write_text(JIT_MODULE)
    result = run(["-m", "transpile", "dump", "jmod.py", "--lower", "slow_f"], cwd=tmp_path)
    assert result.returncode == 1 and "must be a call" in result.stderr
