"""Random valid programs under every transformation: no silent wrong answers, no crashes.

Each test is one program, generated from its seed by tests/program_generator.py and checked
under transform, grad, value_and_grad, vjp, jvp, grad(grad), hessian, jvp(grad), vmap and
vmap(grad) against plain Python, central finite differences or a Python loop. A WRONG
(a number, shape or structure differs) or a CRASH (an exception other than
tp.TransformError) fails the test; REFUSED (tp.TransformError) and SKIP do not.

The failure message shows every check's outcome and, for each failing check, a standalone
program that reproduces it. To shrink it to a minimal program:

    python tests/program_generator.py --seed SEED

and to look for more failures than this fixed budget covers:

    python tests/program_generator.py --count 2000 --seed 1000
"""
import pytest

from program_generator import check_seed, repro_text

# The CI budget: these 16 programs take 70-100 s on the 2-core development machine (more
# than half of it generating hessian code). The long mode of program_generator.py covers
# any number of other seeds.
CI_SEEDS = range(16)


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_program(seed):
    report = check_seed(seed)
    if report.failures:
        repros = "\n".join(f"---- {o.check}: {o.status} ----\n" + repro_text(report.program, o)
                           for o in report.failures)
        pytest.fail(f"seed {seed}: {len(report.failures)} failing checks\n{report.table()}\n\n"
                    f"{repros}\nshrink with: python tests/program_generator.py --seed {seed}",
                    pytrace=False)
