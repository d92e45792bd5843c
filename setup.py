"""Package list for setuptools (the rest of the metadata is in pyproject.toml).

The schedule/pipeline library stays at the repository's top level (`pipelines/`: users, scripts
and saved sessions name it so) and travels in the wheel as `workbench/pipelines/`, so that an
installed workbench finds it from any directory (workbench/paths.py looks for both).
"""
from pathlib import Path

from setuptools import find_packages, setup

LIBRARY = Path("pipelines")
library_packages = ["workbench.pipelines"] + sorted(
    "workbench.pipelines." + ".".join(d.relative_to(LIBRARY).parts)
    for d in LIBRARY.rglob("*") if d.is_dir() and not any(part.startswith(("_", ".")) for part in d.parts))

setup(packages=find_packages(include=["workbench", "workbench.*"]) + library_packages,
      package_dir={"workbench.pipelines": "pipelines"})
