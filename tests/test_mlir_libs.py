"""Packaging: the MLIR runtime-library locator."""
from pathlib import Path

import pytest

from workbench.common import mlir_libs


def test_finds_c_runner_utils_in_installed_package(monkeypatch):
    monkeypatch.delenv(mlir_libs.ENV_VAR, raising=False)
    path = Path(mlir_libs.find_runtime_library("mlir_c_runner_utils"))
    assert path.name == "libmlir_c_runner_utils.so"
    assert path.is_file()
    # the same library whatever spelling is used
    assert mlir_libs.find_runtime_library("libmlir_c_runner_utils.so") == str(path)
    assert mlir_libs.find_runtime_library("libmlir_c_runner_utils") == str(path)


def test_env_var_directory_wins(tmp_path, monkeypatch):
    fake = tmp_path / "libmlir_c_runner_utils.so"
    fake.write_bytes(b"\x7fELF")
    monkeypatch.setenv(mlir_libs.ENV_VAR, str(tmp_path))
    assert mlir_libs.find_runtime_library("mlir_c_runner_utils") == str(fake)
    assert mlir_libs.search_dirs()[0] == tmp_path


def test_env_var_with_several_dirs(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (b / "libfoo_runtime.so").write_bytes(b"")
    monkeypatch.setenv(mlir_libs.ENV_VAR, f"{a}:{b}")
    assert mlir_libs.find_runtime_library("foo_runtime") == str(b / "libfoo_runtime.so")


def test_missing_library_error_names_file_dirs_and_env_var(tmp_path, monkeypatch):
    monkeypatch.setenv(mlir_libs.ENV_VAR, str(tmp_path))
    with pytest.raises(mlir_libs.MissingRuntimeLibrary) as ei:
        mlir_libs.find_runtime_library("mlir_no_such_runtime")
    msg = str(ei.value)
    assert "libmlir_no_such_runtime.so" in msg
    assert str(tmp_path) in msg
    assert mlir_libs.ENV_VAR in msg
    assert "\n" not in msg


def test_no_mlir_package_is_reported(monkeypatch):
    monkeypatch.delenv(mlir_libs.ENV_VAR, raising=False)
    monkeypatch.setattr(mlir_libs, "mlir_package_dirs", lambda: [])
    with pytest.raises(mlir_libs.MissingRuntimeLibrary, match="no mlir package installed"):
        mlir_libs.find_runtime_library("mlir_c_runner_utils")


def test_locator_does_not_import_mlir():
    import subprocess
    import sys

    code = ("import sys; from workbench.common import mlir_libs; "
            "mlir_libs.find_runtime_library('mlir_c_runner_utils'); mlir_libs.mlir_version(); "
            "print('mlir' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_mlir_version_is_three_components():
    v = mlir_libs.mlir_version()
    assert v != "unknown"
    assert len(v.split(".")) == 3 and all(p.isdigit() for p in v.split("."))
