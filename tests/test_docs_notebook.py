"""The documentation's notebook is executed by the docs build: it runs clean, its outputs show the
guarantee, the DataFrame and the suggestion, and a failing cell fails the build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from docgen.notebook import NotebookError, execute_notebook, notebook_pages, render_notebook

DOCS = Path(__file__).resolve().parents[1] / "docs"
NOTEBOOK = DOCS / "notebooks" / "first-experiment.ipynb"


def test_the_docs_notebook_executes_and_shows_its_results() -> None:
    cells = execute_notebook(NOTEBOOK)
    outputs = "\n".join(c.stdout + c.html + c.text for c in cells)
    assert "(2)-DP [local, per user]" in outputs  # the accounted guarantee
    assert "<caption>privbandits SimulationResult</caption>" in outputs  # _repr_html_
    assert "dataframe" in outputs and "ldp-sgd" in outputs and "linucb" in outputs
    assert "did you mean 'ldp-sgd'" in outputs
    page = render_notebook(NOTEBOOK, cells)
    assert page.startswith("# A first private experiment")
    assert "[Download the notebook](first-experiment.ipynb)" in page


def test_every_notebook_is_a_page_of_the_docs_build() -> None:
    nav = (DOCS.parent / "mkdocs.yml").read_text(encoding="utf-8")
    for nb in (DOCS / "notebooks").glob("*.ipynb"):
        assert f"notebooks/{nb.stem}.md" in nav, nb.name


def test_a_failing_cell_fails_the_build(tmp_path: Path) -> None:
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# t"]},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["1 / 0"]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "broken.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(NotebookError, match=r"broken.ipynb: cell 1 raised ZeroDivisionError"):
        notebook_pages(tmp_path)
