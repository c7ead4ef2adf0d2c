"""Shared by the module's tests: the corpus, the program (the command line the module must
agree with) and files written for a test into its own temporary folder."""
import hashlib
import json
import os
import pathlib
import subprocess

import pytest

import ggufkit

CORPUS = pathlib.Path(os.environ.get("GGUFKIT_CORPUS", pathlib.Path(__file__).parents[3] / "shared" / "corpus"))
BIN = os.environ.get("GGUFKIT_BIN", "ggufkit")
SPM = CORPUS / "vocab" / "ggml-vocab-llama-spm.gguf"
TINY = CORPUS / "splits" / "tiny-llama.gguf"


def corpus_files():
    files = sorted(CORPUS.rglob("*.gguf"))
    assert len(files) >= 19, f"the corpus at {CORPUS} is missing files"
    return files


def cli(*args, check=True):
    """The program's standard output; a failure shows its standard error."""
    r = subprocess.run([BIN, *map(str, args)], capture_output=True)
    if check and r.returncode != 0:
        raise AssertionError(f"ggufkit {' '.join(map(str, args))} exited {r.returncode}: {r.stderr.decode()}")
    return r


def sigint_at_first_progress():
    """A progress callable that raises SIGINT the first time it is called, as a terminal's
    Ctrl-C would in the middle of a write."""
    import signal
    seen = []

    def interrupt(written, total):
        seen.append(written)
        if len(seen) == 1:
            signal.raise_signal(signal.SIGINT)

    return interrupt


def cli_json(*args):
    return json.loads(cli(*args).stdout)


def digest(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.fixture
def spm_copy(tmp_path):
    """A copy of llama.cpp's SentencePiece vocabulary file to edit (the corpus is read-only)."""
    p = tmp_path / "spm.gguf"
    p.write_bytes(SPM.read_bytes())
    return p
