"""A narrow public surface: every exported name exists, and no package reaches into another's private modules."""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("expfam", "inference", "models")


@pytest.mark.parametrize("module", ["efvi", "efvi.expfam", "efvi.inference", "efvi.models", "efvi.models.glm",
                                    "efvi.models.gp", "efvi.models.gp.kernels", "efvi.models.lds",
                                    "efvi.models.likelihoods", "efvi.models.mixture", "efvi.models.nn", "efvi.inference.conjugate",
                                    "efvi.inference.generic", "efvi.inference.ngvi",
                                    "efvi.inference.vpng", "efvi.inference.bbvi"])
def test_every_exported_name_exists_and_none_is_private(module):
    mod = importlib.import_module(module)
    assert mod.__all__, f"{module} has an empty __all__"
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.__all__ lists {name!r}, which does not exist"
        assert not name.startswith("_") or name == "__version__", f"{module} exports a private name {name!r}"


def _imports(path):
    """(package the file is in, absolute dotted name) of every relative import in ``path``."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    package = parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            target = base + tuple(node.module.split(".")) if node.module else base
            for alias in node.names:
                yield target + (alias.name,)


def test_no_package_imports_another_packages_private_module():
    offences = []
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            for target in _imports(path):
                if target and target[0] in PACKAGES and target[0] != top:
                    # the imported module path, without the final imported name when that is not a module
                    modules = target[:-1] if not (ROOT.joinpath(*target).with_suffix(".py").exists()
                                                  or (ROOT.joinpath(*target) / "__init__.py").exists()) else target
                    if any(part.startswith("_") for part in modules[1:]):
                        offences.append(f"{path.relative_to(ROOT)} imports {'.'.join(target)}")
    assert not offences, "\n".join(offences)
