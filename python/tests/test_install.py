"""The package as `make wheel` makes it: a wheel of the module and program the build tree
already holds (setup.py's GGUFKIT_PREBUILT, no compiling), written without a byte into the
source, installed into a fresh venv offline and used from another folder. The package
built from a clean source is test_install_source's (make test-full)."""
import os
import pathlib
import subprocess
import sys
import sysconfig

from installing import BIN, SOURCE, VERSION, check_installed, check_wheel, clean_env, files_of, run, venv

# The build tree whose module these tests import (PYTHONPATH=BUILD/python).
TREE = pathlib.Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).parent


def test_a_wheel_of_the_built_tree_compiles_nothing_writes_nothing_into_the_source_and_installs(tmp_path):
    before = files_of(SOURCE)
    out = run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", tmp_path / "dist", SOURCE,
              cwd=tmp_path, env={"GGUFKIT_PREBUILT": str(TREE)})
    assert "Building CXX" not in out and "-- Configuring" not in out  # CMake never ran
    assert files_of(SOURCE) == before
    wheel = check_wheel(tmp_path / "dist")
    python = venv(tmp_path / "v")
    run(python, "-m", "pip", "install", "--no-index", "--no-deps", wheel)
    check_installed(python, tmp_path / "v", tmp_path)


def test_a_tree_built_from_another_source_is_not_packaged(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "CMakeCache.txt").write_text("CMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere/ggufkit\n")
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(tmp_path / "dist"), str(SOURCE)],
                       capture_output=True, text=True, cwd=tmp_path, env=dict(clean_env(), GGUFKIT_PREBUILT=str(tree)))
    assert r.returncode != 0
    assert f"setup.py: {tree} was configured from /elsewhere/ggufkit, not from {SOURCE}" in r.stdout + r.stderr
    assert not (tmp_path / "dist").exists() or list((tmp_path / "dist").iterdir()) == []


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
