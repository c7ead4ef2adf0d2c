"""What the install tests share: a venv, the package used from another folder (a corpus file
opened, a copy edited, `python -m ggufkit` and the `ggufkit` script pip installs run: the
same program, the same version), and a look at the source for anything written into it."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

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


def run(*args, cwd=None, env=None):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=dict(clean_env(), **(env or {})))
    assert r.returncode == 0, f"{' '.join(map(str, args))} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


def clean_copy(dst):
    """The source tree as a clone has it: no build trees, nothing built."""
    skip = shutil.ignore_patterns("build", "build-*", ".git", "dist", "*.egg-info", "__pycache__", ".pytest_cache")
    shutil.copytree(SOURCE, dst, ignore=skip, symlinks=True)
    return dst


def files_of(root):
    """Every path under root with its size and modification time, but for .git and the build
    trees (a folder holding a CMakeCache.txt) at its top: what a build must not add to or change."""
    root = pathlib.Path(root)
    seen = {}
    for top in root.iterdir():
        if top.name == ".git" or (top / "CMakeCache.txt").is_file():
            continue
        for p in [top, *top.rglob("*")] if top.is_dir() and not top.is_symlink() else [top]:
            st = p.lstat()
            seen[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return seen


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




def check_wheel(dist):
    """The one wheel in dist, at the program's version, with the package's files; its path."""
    wheels = list(pathlib.Path(dist).glob("*.whl"))
    assert [w.name.split("-")[:2] for w in wheels] == [["ggufkit", VERSION]]
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    assert {"ggufkit/__init__.py", "ggufkit/__main__.py", "ggufkit/__init__.pyi", "ggufkit/py.typed", "ggufkit/bin/ggufkit"} <= names
    assert len([n for n in names if n.startswith("ggufkit/_ggufkit.") and n.endswith(".so")]) == 1
    return wheels[0]
