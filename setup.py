"""The build step pyproject.toml's setuptools runs: CMake builds the extension and the
program (GGUFKIT_TESTS=OFF: no test suite) into setuptools' build folder, and they are put
into the package: ggufkit/_ggufkit*.so and ggufkit/bin/ggufkit. The version is the
program's, read from CMakeLists.txt's project()."""
import os
import re
import shutil
import subprocess
import sys
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


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        target = Path(self.get_ext_fullpath(ext.name)).resolve()  # .../ggufkit/_ggufkit.<abi>.so
        tree = Path(self.build_temp).resolve() / "cmake"
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(tree),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DGGUFKIT_TESTS=OFF",
            "-DGGUFKIT_PYTHON=ON",
        ]
        try:
            subprocess.run(configure, check=True)
            subprocess.run(["cmake", "--build", str(tree), "-j", jobs, "--target", "ggufkit_python"], check=True)
        except FileNotFoundError:
            sys.exit("setup.py: cmake is not installed; the package is built with CMake (apt-get install cmake)")
        built = tree / "python" / "ggufkit"
        modules = sorted(built.glob("_ggufkit*.so"))
        if len(modules) != 1:
            sys.exit(f"setup.py: expected one _ggufkit*.so in {built}, found {[m.name for m in modules]}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(modules[0], target)
        # The program, copied (bin/ggufkit in the build tree is a link to it), executable.
        program = (built / "bin" / "ggufkit").resolve()
        bin_dir = target.parent / "bin"
        bin_dir.mkdir(exist_ok=True)
        shutil.copyfile(program, bin_dir / "ggufkit")
        os.chmod(bin_dir / "ggufkit", 0o755)


Path("build-python").mkdir(exist_ok=True)  # egg_base must exist before egg_info writes there
setup(
    version=version(),
    packages=["ggufkit"],
    package_dir={"ggufkit": "python/ggufkit"},
    package_data={"ggufkit": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("ggufkit._ggufkit", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own folders beside CMake's trees, not inside build/ (make's release tree).
    options={"build": {"build_base": "build-python"}, "egg_info": {"egg_base": "build-python"}},
    zip_safe=False,
)
