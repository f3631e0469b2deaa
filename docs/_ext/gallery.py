"""A small Sphinx extension: a gallery page for every example script.

At ``builder-inited`` every example script (``examples/*.py`` whose name does not start with ``_``)
runs as ``examples/_runner.py`` runs it for the test suite (``python <script> --quick --output
<folder>``), two at a time on a two-core machine.  Each example gets a Markdown page,
``gallery/<name>.md``, with its docstring, the command, what it printed, every figure it saved and
its source; ``gallery/index.rst`` shows them as a grid of thumbnails.

The pages and figures are generated into ``docs/gallery/`` (ignored by git).
A run is reused while no Python file of the library or the examples has
changed since (a fingerprint of their contents is kept beside the output).
With ``-D gallery_runs=<folder>`` the gallery runs nothing and shows the runs recorded in
``<folder>/<name>/`` instead (``tests/test_docs_build.py`` passes the runs of
``tests/test_examples.py``, so a test session runs each example once).
An example that fails, or has no recorded run, is a Sphinx warning, so ``sphinx-build -W`` fails.
"""

import ast
import hashlib
import importlib.util
import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

FIRST = "quickstart"


def _load_runner(folder):
    """``examples/_runner.py``, which says how an example is run and recorded."""
    spec = importlib.util.spec_from_file_location("_efvi_example_runner", Path(folder) / "_runner.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fingerprint(repository):
    """A hash of every Python file an example can depend on (library and examples; not tests or docs)."""
    digest = hashlib.sha256()
    for path in sorted(repository.rglob("*.py")):
        relative = path.relative_to(repository)
        if relative.parts[0] in {"docs", "tests", "benchmarks"} or any(p.startswith(".") for p in relative.parts):
            continue
        digest.update(str(relative).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _run(runner, script, output, fingerprint, timeout):
    """Run one example into ``output``, reusing an earlier successful run with the same fingerprint.

    Returns the run's record and whether it was reused."""
    stamp = output / ".fingerprint"
    recorded = runner.load(output)
    if recorded is not None and recorded.ok and stamp.is_file() and stamp.read_text() == fingerprint:
        return recorded, True
    recorded = runner.run(script, output, timeout)
    if recorded.ok:
        stamp.write_text(fingerprint)
    return recorded, False


def _copy(runner, script, output, runs):
    """Show the run of ``script`` recorded in ``runs``: its folder is copied to ``output``.

    Returns the run's record (None where ``runs`` holds none) and True: nothing ran."""
    shutil.rmtree(output, ignore_errors=True)
    source = Path(runs) / script.stem
    if runner.load(source) is None:
        return None, True
    shutil.copytree(source, output)
    return runner.load(output), True


def _docstring(script):
    text = ast.get_docstring(ast.parse(script.read_text()), clean=True) or script.stem
    summary, _, body = text.partition("\n")
    return summary.strip().rstrip("."), body.strip()


def _write(path, text):
    """Write only when the content changes, so Sphinx rereads only what changed."""
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def _page(script, options, summary, body, printed, figures):
    fence = "`" * max(3, max((len(run) for run in printed.split("\n") if set(run) == {"`"}), default=0) + 1)
    command = " ".join([f"python examples/{script.name}", *options])
    lines = [f"# {summary}", "", body, "", "## Run it", "",
             "```bash", command, "```", "",
             "What it printed when this page was built:", "",
             f"{fence}text", printed.rstrip() or "(nothing)", fence, ""]
    if figures:
        lines += ["## Figures", ""]
        for figure in figures:
            lines += [f"```{{image}} _output/{script.stem}/{figure.name}", f":alt: {figure.stem}",
                      ":class: gallery-figure", "```", ""]
    lines += ["## Source", "", f"```{{literalinclude}} ../../examples/{script.name}",
              ":language: python", "```", ""]
    return "\n".join(lines)


def _index(entries):
    lines = ["Gallery", "=======", "",
             "Every example script in the repository's ``examples/`` folder, run in quick mode "
             "(``--quick``: smaller data and fewer iterations) when these pages were built. "
             "Each page shows what the script printed, the figures it saved and its source. "
             "Run one yourself from the repository root, e.g. ``python examples/coal_mining.py``; "
             "without ``--quick`` it runs the full-size version and saves its figures in "
             "``examples/output/``.", "",
             ".. toctree::", "   :hidden:", ""]
    lines += [f"   {script.stem}" for script, _, _ in entries]
    lines += ["", ".. container:: gallery-grid", ""]
    for script, summary, figures in entries:
        lines += ["   .. container:: gallery-card", ""]
        if figures:
            lines += [f"      .. image:: _output/{script.stem}/{figures[0].name}",
                      f"         :target: {script.stem}.html", f"         :alt: {script.stem}", ""]
        lines += [f"      :doc:`{script.stem}`", "", f"      ``{script.name}``", ""]
    return "\n".join(lines) + "\n"


def build_gallery(app):
    runner = _load_runner(app.config.gallery_examples_dir)
    examples = sorted(runner.scripts(app.config.gallery_examples_dir), key=lambda p: (p.stem != FIRST, p.stem))
    gallery = Path(app.srcdir) / "gallery"
    outputs = gallery / "_output"
    outputs.mkdir(parents=True, exist_ok=True)
    if app.config.gallery_runs:
        def show(script):
            return _copy(runner, script, outputs / script.stem, app.config.gallery_runs)
    else:
        fingerprint = _fingerprint(Path(app.config.gallery_examples_dir).parent)

        def show(script):
            return _run(runner, script, outputs / script.stem, fingerprint, app.config.gallery_timeout)
    workers = max(1, min(len(examples), os.cpu_count() or 1))
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        runs = list(pool.map(show, examples))
    reused = sum(run[1] for run in runs)
    logger.info(f"gallery: {len(examples)} examples ({reused} reused) in {time.perf_counter() - start:.1f} s")
    entries = []
    for script, (recorded, _) in zip(examples, runs):
        if recorded is None:
            logger.warning(f"gallery: no run of examples/{script.name} in {app.config.gallery_runs}", type="gallery")
        elif not recorded.ok:
            logger.warning(f"gallery: examples/{script.name} failed:\n{recorded.printed}{recorded.stderr}",
                           type="gallery")
        printed = recorded.printed if recorded is not None else ""
        figures = recorded.figures if recorded is not None else []
        summary, body = _docstring(script)
        _write(gallery / f"{script.stem}.md", _page(script, runner.options(script), summary, body, printed, figures))
        entries.append((script, summary, figures))
    names = {script.stem for script in examples}
    for stale in gallery.glob("*.md"):
        if stale.stem not in names:
            stale.unlink()
    for stale in outputs.iterdir():
        if stale.is_dir() and stale.name not in names:
            shutil.rmtree(stale)
    _write(gallery / "index.rst", _index(entries))


def setup(app):
    app.add_config_value("gallery_examples_dir", None, "env")
    app.add_config_value("gallery_timeout", 600, "env")
    app.add_config_value("gallery_runs", None, "env", types=[str])
    app.connect("builder-inited", build_gallery)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
