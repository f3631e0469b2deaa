"""The runnable examples of the documentation pages run as written.

A page's ``python`` code blocks run in order in one namespace (a later block
may use what an earlier one defined), and each prints something.
"""

import re
from pathlib import Path

import pytest

from efvi.expfam._registry import _FAMILIES
from efvi.models.likelihoods import LINKS

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["add_a_family.md", "add_a_likelihood.md", "engine.md", "expfam.md", "extending.md", "kernels.md", "models.md", "ngvi.md", "ngvi_torch.md", "nn.md", "vpng.md", "bbvi.md", "dask.md", "getting_started.md", "howto.md", "plot.md", "predict.md"]


def _blocks(page):
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


def test_every_page_with_python_blocks_is_listed():
    assert {page.name for page in DOCS.glob("*.md") if _blocks(page.name)} == set(PAGES)


@pytest.fixture
def restored_registries():
    """Links and families a page registers (a worked "add a link", "add a family") are forgotten afterwards:
    later tests see the library's own."""
    saved = [(registry, dict(registry)) for registry in (LINKS, _FAMILIES)]
    yield
    for registry, entries in saved:
        registry.clear()
        registry.update(entries)


@pytest.mark.parametrize("page", PAGES)
def test_docs_examples_run(page, capsys, restored_registries):
    namespace = {"__name__": f"docs_{page[:-3]}"}
    for index, code in enumerate(_blocks(page)):
        exec(compile(code, f"{page} example {index}", "exec"), namespace)
        assert capsys.readouterr().out.strip(), f"{page} example {index} printed nothing"
