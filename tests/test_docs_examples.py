"""The runnable examples of the documentation pages run as written."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["extending.md"]
SNIPPETS = [(page, i, code) for page in PAGES
            for i, code in enumerate(re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S))]


def test_every_listed_page_has_examples():
    assert {page for page, _, _ in SNIPPETS} == set(PAGES)


@pytest.mark.parametrize("page, index, code", SNIPPETS, ids=[f"{p}-{i}" for p, i, _ in SNIPPETS])
def test_docs_example_runs(page, index, code, capsys):
    exec(compile(code, f"{page} example {index}", "exec"), {"__name__": f"docs_example_{index}"})
    assert capsys.readouterr().out.strip()
