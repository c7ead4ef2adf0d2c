"""The package built from a clean, read-only copy of the source, offline, with Debian's own
tools: a wheel by `python3 -m build --no-isolation --wheel`, then `pip install
--no-build-isolation .` into a fresh venv. Neither writes into the source (setup.py builds
in a temporary folder). Each compiles the libraries: make test-full runs these (label full)."""
import stat
import sys

import pytest

from installing import check_installed, check_wheel, clean_copy, files_of, run, venv


@pytest.fixture
def source(tmp_path_factory):
    """A clean copy of the source, its files and folders read-only (root writes them anyway:
    files_of, compared before and after, shows whatever was written)."""
    dst = clean_copy(tmp_path_factory.mktemp("src") / "ggufkit")
    for p in [*dst.rglob("*"), dst]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    yield dst
    for p in [dst, *dst.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_a_wheel_built_offline_from_a_read_only_source_installs_into_a_fresh_venv(source, tmp_path):
    before = files_of(source)
    run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", tmp_path / "dist", source, cwd=tmp_path)
    assert files_of(source) == before
    wheel = check_wheel(tmp_path / "dist")
    python = venv(tmp_path / "v")
    run(python, "-m", "pip", "install", "--no-index", "--no-deps", wheel)
    check_installed(python, tmp_path / "v", tmp_path)


def test_pip_install_of_a_read_only_source_folder_builds_without_a_network_or_a_write_into_it(source, tmp_path):
    before = files_of(source)
    python = venv(tmp_path / "v")
    run(python, "-m", "pip", "install", "--no-index", "--no-build-isolation", source, cwd=tmp_path)
    assert files_of(source) == before
    check_installed(python, tmp_path / "v", tmp_path)
