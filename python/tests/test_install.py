"""The package as a user gets it, offline, with Debian's own tools: a wheel built by
`python3 -m build --no-isolation --wheel` from a clean copy of the source, installed into a
fresh venv and used from another folder; then `pip install --no-build-isolation .` into a
second venv. Each opens a corpus file, edits a copy, and runs `python -m ggufkit` and the
`ggufkit` script pip installs: the same program, the same version."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from conftest import BIN, TINY, digest

SOURCE = pathlib.Path(__file__).resolve().parents[2]
VERSION = subprocess.run([BIN, "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]

# What the venv's Python runs from a folder outside the source: where ggufkit comes from, a
# corpus file opened, a copy edited, the result read back.
USE = """
import json, sys, ggufkit
src, out = sys.argv[1], sys.argv[2]
f = ggufkit.open(src)
r = ggufkit.edit(src, set={"general.name": "installed"}, out=out)
g = ggufkit.open(out)
print(json.dumps({"module": ggufkit.__file__, "version": ggufkit.__version__, "arch": f.metadata["general.architecture"],
                  "tensors": len(f.tensors), "written": r["written"], "name": g.metadata["general.name"],
                  "same_tensors": [t.name for t in g.tensors] == [t.name for t in f.tensors]}))
"""


def clean_env():
    """The environment without the build tree's module on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = env.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    return env


def run(*args, cwd=None):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=clean_env())
    assert r.returncode == 0, f"{' '.join(map(str, args))} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture
def source(tmp_path_factory):
    """The source tree as a clone has it: no build trees, nothing built (a copy for each test,
    so that pip's build does not reuse the wheel's)."""
    dst = tmp_path_factory.mktemp("src") / "ggufkit"
    skip = shutil.ignore_patterns("build", "build-*", ".git", "dist", "*.egg-info", "__pycache__", ".pytest_cache")
    shutil.copytree(SOURCE, dst, ignore=skip, symlinks=True)
    return dst


def venv(path):
    """A fresh venv that sees Debian's packages (numpy; setuptools for an offline build)."""
    run(sys.executable, "-m", "venv", "--system-site-packages", path)
    return path / "bin" / "python"


def check_installed(python, where, tmp_path):
    away = tmp_path / "elsewhere"
    away.mkdir(exist_ok=True)
    shutil.copyfile(TINY, away / "tiny.gguf")
    got = json.loads(run(python, "-c", USE, "tiny.gguf", "edited.gguf", cwd=away))
    assert got["module"].startswith(str(where)), got["module"]
    assert (got["version"], got["arch"], got["tensors"], got["written"], got["name"], got["same_tensors"]) == (
        VERSION, "llama", 21, "whole_file", "installed", True)
    assert digest(away / "tiny.gguf") == digest(TINY)
    # python -m ggufkit and the script: the program itself, its output the build's.
    assert run(python, "-m", "ggufkit", "--version", cwd=away) == run(BIN, "--version")
    script = python.parent / "ggufkit"
    assert run(script, "show", "--json", "edited.gguf", cwd=away) == run(BIN, "show", "--json", "edited.gguf", cwd=away)
    # The stubs and the typed marker came with it.
    pkg = pathlib.Path(got["module"]).parent
    assert (pkg / "__init__.pyi").is_file() and (pkg / "py.typed").is_file()


def test_a_wheel_built_offline_installs_into_a_fresh_venv_and_works_from_anywhere(source, tmp_path):
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", dist, source, cwd=source)
    wheels = list(dist.glob("*.whl"))
    assert [w.name.split("-")[:2] for w in wheels] == [["ggufkit", VERSION]]
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    assert {"ggufkit/__init__.py", "ggufkit/__main__.py", "ggufkit/__init__.pyi", "ggufkit/py.typed", "ggufkit/bin/ggufkit"} <= names
    assert any(n.startswith("ggufkit/_ggufkit.") and n.endswith(".so") for n in names)
    python = venv(tmp_path / "v")
    run(python, "-m", "pip", "install", "--no-index", "--no-deps", wheels[0])
    check_installed(python, tmp_path / "v", tmp_path)


def test_pip_install_of_the_source_folder_builds_without_a_network(source, tmp_path):
    python = venv(tmp_path / "v")
    run(python, "-m", "pip", "install", "--no-index", "--no-build-isolation", source, cwd=tmp_path)
    check_installed(python, tmp_path / "v", tmp_path)


def test_cmake_install_puts_the_package_into_the_prefixs_site_packages(tmp_path):
    # The build tree whose module these tests import (PYTHONPATH=BUILD/python), installed to
    # a prefix given only then: the package goes to that prefix's site-packages.
    tree = pathlib.Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).parent
    prefix = tmp_path / "prefix"
    run("cmake", "--install", tree, "--prefix", prefix)
    # The prefix's site folder by the interpreter's scheme (Debian's says dist-packages).
    site = pathlib.Path(sysconfig.get_path("platlib", "posix_prefix", vars={"base": str(prefix), "platbase": str(prefix)}))
    assert site.parent.parent == prefix / "lib"
    assert (site / "ggufkit" / "bin" / "ggufkit").is_file() and os.access(site / "ggufkit" / "bin" / "ggufkit", os.X_OK)
    assert len(list((site / "ggufkit").glob("_ggufkit*.so"))) == 1
    assert sorted(p.name for p in (site / "ggufkit").iterdir() if not p.name.startswith("_ggufkit")) == [
        "__init__.py", "__init__.pyi", "__main__.py", "bin", "py.typed"]
    env = dict(clean_env(), PYTHONPATH=str(site))
    r = subprocess.run([sys.executable, "-c", "import ggufkit, sys; print(ggufkit.__file__, ggufkit.__version__)"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.stdout.split() == [str(site / "ggufkit" / "__init__.py"), VERSION], r.stderr
    r = subprocess.run([sys.executable, "-m", "ggufkit", "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.stdout == run(BIN, "--version")
