"""Fixtures shared across the suite."""

import pytest

from ._example_runs import ExampleRuns


@pytest.fixture(scope="session")
def example_runs(tmp_path_factory):
    return ExampleRuns(tmp_path_factory.mktemp("example_runs"))
