"""`python -m ggufkit ARGS`: the ggufkit command line, the same program `make` builds,
installed inside this package (bin/ggufkit) by pip and by cmake --install."""
import os
import sys


def program() -> str:
    """The path of the ggufkit program installed with this module."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ggufkit")


def main(argv=None) -> None:
    """Runs the program with argv (sys.argv[1:] by default) in place of this process."""
    args = sys.argv[1:] if argv is None else list(argv)
    prog = program()
    if not os.access(prog, os.X_OK):
        sys.exit(f"ggufkit: the command line program is not installed beside the module (looked for {prog})")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(prog, ["ggufkit", *args])


if __name__ == "__main__":
    main()
