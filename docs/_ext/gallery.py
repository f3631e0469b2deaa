"""A small Sphinx extension: a gallery page for every example script.

At ``builder-inited`` every ``examples/*.py`` whose name does not start with
``_`` runs as ``python <script> --quick --output <folder>`` (``quickstart.py``
without ``--quick``, as in ``tests/test_examples.py``), two at a time on a
two-core machine.  Each example gets a Markdown page, ``gallery/<name>.md``,
with its docstring, the command, what it printed, every figure it saved and
its source; ``gallery/index.rst`` shows them as a grid of thumbnails.

The pages and figures are generated into ``docs/gallery/`` (ignored by git).
A run is reused while no Python file of the library or the examples has
changed since (a fingerprint of their contents is kept beside the output).
An example that fails is a Sphinx warning, so ``sphinx-build -W`` fails.
"""

import ast
import hashlib
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

FIRST = "quickstart"
NOT_QUICK = {"quickstart"}


def _examples(folder):
    scripts = sorted(p for p in Path(folder).glob("*.py") if not p.name.startswith("_"))
    return sorted(scripts, key=lambda p: (p.stem != FIRST, p.stem))


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


def _run(script, output, fingerprint, timeout):
    """Run one example into ``output`` (reusing an earlier run with the same fingerprint)."""
    stamp = output / ".fingerprint"
    log = output / "stdout.txt"
    if stamp.is_file() and log.is_file() and stamp.read_text() == fingerprint:
        return True, log.read_text(), 0.0, True
    shutil.rmtree(output, ignore_errors=True)
    output.mkdir(parents=True)
    args = [sys.executable, str(script), "--output", str(output)]
    if script.stem not in NOT_QUICK:
        args.append("--quick")
    env = dict(os.environ, MPLBACKEND="Agg")
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, "1")
    start = time.perf_counter()
    try:
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout, cwd=script.parent)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout} s", time.perf_counter() - start, False
    seconds = time.perf_counter() - start
    printed = done.stdout.replace(str(output) + os.sep, "").replace(str(output), ".")
    if done.returncode != 0:
        return False, printed + done.stderr[-3000:], seconds, False
    log.write_text(printed)
    stamp.write_text(fingerprint)
    return True, printed, seconds, False


def _docstring(script):
    text = ast.get_docstring(ast.parse(script.read_text()), clean=True) or script.stem
    summary, _, body = text.partition("\n")
    return summary.strip().rstrip("."), body.strip()


def _write(path, text):
    """Write only when the content changes, so Sphinx rereads only what changed."""
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def _page(script, summary, body, printed, figures):
    fence = "`" * max(3, max((len(run) for run in printed.split("\n") if set(run) == {"`"}), default=0) + 1)
    command = f"python examples/{script.name}" + ("" if script.stem in NOT_QUICK else " --quick")
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
    examples = _examples(app.config.gallery_examples_dir)
    gallery = Path(app.srcdir) / "gallery"
    outputs = gallery / "_output"
    outputs.mkdir(parents=True, exist_ok=True)
    fingerprint = _fingerprint(Path(app.config.gallery_examples_dir).parent)
    workers = max(1, min(len(examples), os.cpu_count() or 1))
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        runs = list(pool.map(lambda s: _run(s, outputs / s.stem, fingerprint, app.config.gallery_timeout),
                             examples))
    reused = sum(run[3] for run in runs)
    logger.info(f"gallery: {len(examples)} examples ({reused} reused) in {time.perf_counter() - start:.1f} s")
    entries = []
    for script, (ok, printed, seconds, _) in zip(examples, runs):
        if not ok:
            logger.warning(f"gallery: examples/{script.name} failed:\n{printed}", type="gallery")
        summary, body = _docstring(script)
        figures = sorted((outputs / script.stem).glob("*.png"))
        _write(gallery / f"{script.stem}.md", _page(script, summary, body, printed, figures))
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
    app.connect("builder-inited", build_gallery)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
