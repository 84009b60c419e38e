"""Every public function and class of the API has a docstring: the documentation site's
API reference (mkdocs.yml, docs/reference.md) is generated from them, and .ci/run builds
it in strict mode."""
import importlib
import inspect
import pathlib

import pytest

MODULES = ["transpile", "transpile.lax", "transpile.tree_util", "transpile.nn.layers",
           "transpile.nn.functions", "transpile.nn.initializers",
           "transpile.optim.transforms", "transpile.optim.optimizers", "transpile.profile",
           "transpile.profiler", "runtime.random", "transpile.extend",
           "transpile.misc.optimizers", "transpile.misc.flatten"]


@pytest.mark.parametrize("module", MODULES)
def test_public_names_have_docstrings(module):
    mod = importlib.import_module(module)
    missing = [name for name in mod.__all__
               if not inspect.ismodule(getattr(mod, name)) and callable(getattr(mod, name))
               and not (getattr(mod, name).__doc__ or "").strip()]
    assert not missing, f"{module}: no docstring for {missing}"


def test_the_reference_page_covers_the_modules():
    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "reference.md").read_text()
    for module in MODULES[1:]:
        assert f"::: {module}" in page, f"docs/reference.md does not document {module}"
