"""The build step pyproject.toml's setuptools runs: CMake builds the extension and the
program (GGUFKIT_TESTS=OFF: no test suite, only the targets the package needs, on every
core) and they are put into the package: ggufkit/_ggufkit*.so and ggufkit/bin/ggufkit. The
version is the program's, read from CMakeLists.txt's project().

Nothing is written into the source, so a read-only checkout installs: setuptools' and
CMake's folders go to a temporary folder, removed afterwards, or to GGUFKIT_BUILD_DIR when
it is set (kept: a second install compiles only what changed). GGUFKIT_PREBUILT=TREE
packages a tree `make build` already built from this source instead (make wheel): no
compiling at all."""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    m = re.search(r"project\(ggufkit VERSION ([0-9][0-9.]*)", text)
    if not m:
        sys.exit("setup.py: no project(ggufkit VERSION ...) in CMakeLists.txt")
    return m.group(1)


def work_folder() -> Path:
    named = os.environ.get("GGUFKIT_BUILD_DIR")
    if named:
        path = Path(named).resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path
    path = Path(tempfile.mkdtemp(prefix="ggufkit-build-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def prebuilt_tree() -> Path:
    """GGUFKIT_PREBUILT's tree, checked to be a build of this source with the package built."""
    tree = Path(os.environ["GGUFKIT_PREBUILT"]).resolve()
    cache = tree / "CMakeCache.txt"
    if not cache.is_file():
        sys.exit(f"setup.py: GGUFKIT_PREBUILT={tree} is not a CMake build tree (no CMakeCache.txt); run make build first")
    home = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache.read_text(encoding="utf-8", errors="replace"), re.M)
    if not home or Path(home.group(1)).resolve() != ROOT:
        sys.exit(f"setup.py: {tree} was configured from {home.group(1) if home else 'an unknown source'}, not from {ROOT}")
    return tree


def configure_and_build(tree: Path) -> None:
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    configure = [
        "cmake", "-S", str(ROOT), "-B", str(tree),
        # -O2, not Release's -O3: a sixth less compiling (here, 2 cores: 166 s against 200 s).
        "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG", "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG",
        f"-DPython_EXECUTABLE={sys.executable}",
        "-DGGUFKIT_TESTS=OFF",
        "-DGGUFKIT_PYTHON=ON",
    ]
    try:
        subprocess.run(configure, check=True)
        # The module's target builds the libraries and the program it carries, nothing more.
        subprocess.run(["cmake", "--build", str(tree), "-j", jobs, "--target", "ggufkit_python"], check=True)
    except FileNotFoundError:
        sys.exit("setup.py: cmake is not installed; the package is built with CMake (apt-get install cmake)")


def copy_binary(src: Path, dst: Path) -> None:
    """A built file into the package, without its debug sections (make build's tree is
    RelWithDebInfo: tens of MB of DWARF nobody installing a wheel asks for)."""
    shutil.copyfile(src, dst)
    strip = shutil.which("strip")
    if strip:
        subprocess.run([strip, "--strip-debug", str(dst)], check=True)


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        target = Path(self.get_ext_fullpath(ext.name)).resolve()  # .../ggufkit/_ggufkit.<abi>.so
        if os.environ.get("GGUFKIT_PREBUILT"):
            tree = prebuilt_tree()
        else:
            tree = Path(self.build_temp).resolve() / "cmake"
            configure_and_build(tree)
        built = tree / "python" / "ggufkit"
        modules = sorted(built.glob("_ggufkit*.so"))
        if len(modules) != 1:
            sys.exit(f"setup.py: expected one _ggufkit*.so in {built}, found {[m.name for m in modules]}")
        if modules[0].name != target.name:
            sys.exit(f"setup.py: {modules[0]} was built for another Python than {sys.executable} ({target.name})")
        target.parent.mkdir(parents=True, exist_ok=True)
        copy_binary(modules[0], target)
        # The program, copied (bin/ggufkit in the build tree is a link to it), executable.
        bin_dir = target.parent / "bin"
        bin_dir.mkdir(exist_ok=True)
        copy_binary((built / "bin" / "ggufkit").resolve(), bin_dir / "ggufkit")
        os.chmod(bin_dir / "ggufkit", 0o755)


WORK = work_folder()
setup(
    version=version(),
    packages=["ggufkit"],
    package_dir={"ggufkit": "python/ggufkit"},
    package_data={"ggufkit": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("ggufkit._ggufkit", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own folders outside the source (which may be read-only).
    options={"build": {"build_base": str(WORK / "setuptools")}, "egg_info": {"egg_base": str(WORK)}},
    zip_safe=False,
)
