"""Run autograd's own test suite against transpile (code nobody here wrote, checked against
finite differences): a routine search for wrong answers and refusals.

    python tests/peer_autograd.py                  # downloads autograd's sdist (pip)
    python tests/peer_autograd.py --sdist autograd-1.9.1.tar.gz -k linalg

autograd's sdist holds its tests; they are unpacked into a temporary directory beside
tests/peer_autograd_conftest.py (as their conftest.py), which makes `autograd.*` names for
numpy, scipy and transpile: each test's functions are then transformed by transpile and
checked by our check_grads, in both modes to second order. Nothing of autograd's is kept in
this project. A failure not in EXPECTED below is new: a wrong derivative fails its finite-
difference check, a refusal names its line. EXPECTED lists what is refused on purpose or
is autograd's own API, with the reason; one of them passing is reported too.

Not part of the test suite (it needs the network for the sdist and takes about 3 minutes on
2 cores): 517 passed, 21 failed, all of them in EXPECTED, on autograd 1.9.1's tests.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)

# autograd's test modules about numbers (the others test its tracer, vspaces and wrappers)
MODULES = ["test_binary_ops", "test_builtins", "test_complex", "test_dict", "test_direct",
           "test_fft", "test_jacobian", "test_linalg", "test_list", "test_logic", "test_misc",
           "test_numpy", "test_scalar_ops", "test_scipy", "test_systematic", "test_truediv",
           "test_tuple"]

EXPECTED = {
    "test_dict.py::test_make_dict": "dict() of a list of pairs is refused (keywords only)",
    "test_direct.py::test_grad_complex_output": "grad of a complex output needs "
                                                "holomorphic=True, as in JAX",
    "test_fft.py::test_rfftn_odd_not_implemented": "autograd refuses rfftn of odd "
                                                   "lengths; transpile differentiates it",
    "test_jacobian.py::test_jacobian_higher_order": "reverse mode through "
                                                    "jacrev(jacrev(f)) is refused (forward "
                                                    "mode works)",
    "test_linalg.py::test_pinv": "calls autograd's private np.linalg._dot and np.linalg.T",
    "test_linalg.py::test_cholesky_reparameterization_trick": "np.random.RandomState made "
                                                              "inside the function",
    "test_logic.py::test_nograd": "grad of a function returning a bool is refused",
    "test_logic.py::test_no_vjp_def": "autograd's primitive/defvjp API",
    "test_logic.py::test_no_jvp_def": "autograd's primitive/defvjp API",
    "test_numpy.py::test_make_diagonal": "autograd's own np.make_diagonal",
    "test_numpy.py::test_diagonal": "autograd's own np.make_diagonal",
    "test_scipy.py::test_mvn_pdf": "f(*args) after `args = list(args)` (length unknown)",
    "test_scipy.py::test_mvn_logpdf": "f(*args) after `args = list(args)`",
    "test_scipy.py::test_mvn_entropy": "f(*args) after `args = list(args)`",
    "test_scipy.py::test_mvn_pdf_broadcast": "f(*args) after `args = list(args)`",
    "test_scipy.py::test_mvn_logpdf_broadcast": "f(*args) after `args = list(args)`",
    "test_scipy.py::test_sqrtm": "f(*args) after `args = list(args)`",
    "test_scipy.py::test_mvn_sing_cov": "a partial of a function returned by a factory",
    "test_scipy.py::test_odeint": "odeint's args= held in a variable",
    "test_scipy.py::test_gammasgn": "scipy.special.gammasgn has no rule",
    "test_scipy.py::test_solve_banded": "scipy.linalg.solve_banded has no rule",
}


def sdist(path):
    if path:
        return path
    where = tempfile.mkdtemp(prefix="peer-autograd-sdist-")
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--no-binary", ":all:", "--dest", where, "autograd"], check=True)
    return os.path.join(where, next(f for f in os.listdir(where) if f.endswith(".tar.gz")))


def unpack_tests(archive, where):
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if re.match(r"[^/]+/tests/[^/]+\.py$", m.name)]
        for m in members:
            m.name = os.path.basename(m.name)
            tar.extract(m, where, filter="data")
    shutil.copy(os.path.join(HERE, "peer_autograd_conftest.py"),
                os.path.join(where, "conftest.py"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", help="autograd's .tar.gz (downloaded with pip if not given)")
    ap.add_argument("-k", default="", help="pytest -k expression")
    args = ap.parse_args()
    where = tempfile.mkdtemp(prefix="peer-autograd-")
    unpack_tests(sdist(args.sdist), where)
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
           "-W", "ignore", "--continue-on-collection-errors"] + [m + ".py" for m in MODULES] + (["-k", args.k] if args.k else [])
    run = subprocess.run(cmd, cwd=where, capture_output=True, text=True,
                         env=dict(os.environ, TRANSPILE_PROJECT=PROJECT))
    print(run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-2000:])
    failed = {re.sub(r"\[.*\]$", "", line.split()[1]) for line in run.stdout.splitlines()
              if line.startswith(("FAILED ", "ERROR "))}
    new = sorted(failed - set(EXPECTED))
    fixed = sorted(t for t in EXPECTED if t not in failed and
                   (not args.k or args.k in t))
    for t in new:
        print(f"NEW FAILURE  {t}")
        print("\n".join("    " + line for line in run.stdout.splitlines()
                        if line.startswith("FAILED " + t)))
    for t in fixed:
        print(f"now passes   {t} (listed as: {EXPECTED[t]})")
    print(f"{len(failed & set(EXPECTED))} expected failures, {len(new)} new; tests in {where}")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
