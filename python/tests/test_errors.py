"""Errors as Python types them: what the system refuses is the OSError subclass for its
errno (with .filename), what is wrong in a file is ggufkit.Error (with .offset, .field and
.code), and messages name the keyword arguments a caller gives, never the command's flags."""
import errno
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

import ggufkit
from conftest import SPM, TINY, cli


def test_a_missing_file_is_file_not_found_with_its_name(tmp_path):
    missing = tmp_path / "nothere.gguf"
    for call in (lambda: ggufkit.open(missing), lambda: ggufkit.validate(missing), lambda: ggufkit.dump(missing),
                 lambda: ggufkit.edit(missing, set={"general.name": "x"}, out=tmp_path / "out.gguf")):
        with pytest.raises(FileNotFoundError) as e:
            call()
        assert (e.value.errno, e.value.filename, e.value.code, e.value.exit_code) == (errno.ENOENT, str(missing), "io", 2)
        assert "cannot open for reading" in e.value.strerror
    # The command gives the same exit code for the same file: a usage error, an input not there.
    assert cli("show", missing, check=False).returncode == 2
    assert not (tmp_path / "out.gguf").exists()


def test_a_folder_given_as_a_file_is_is_a_directory(tmp_path):
    with pytest.raises(IsADirectoryError) as e:
        ggufkit.open(tmp_path)
    assert (e.value.errno, e.value.filename) == (errno.EISDIR, str(tmp_path))
    assert "is a folder, not a regular file" in str(e.value)
    assert cli("show", tmp_path, check=False).returncode == e.value.exit_code == 2


def run_as_nobody(code):
    """Runs `code` with ggufkit imported, as the unprivileged user `nobody` when the tests run
    as root (root reads a file of mode 000), else as this user."""
    prelude = "import os, sys, ggufkit\nif os.geteuid() == 0:\n    os.setgid(65534); os.setgroups([]); os.setuid(65534)\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, env=os.environ)


@pytest.fixture
def open_folder():
    """A folder everyone may reach (pytest's own are its user's alone), removed after."""
    d = tempfile.mkdtemp(prefix="ggufkit-perm-", dir="/tmp")
    os.chmod(d, 0o755)
    yield pathlib.Path(d)
    shutil.rmtree(d)


def test_no_permission_is_permission_error_for_reading_and_for_writing(open_folder):
    locked = open_folder / "locked.gguf"
    locked.write_bytes(SPM.read_bytes())
    os.chmod(locked, 0o000)  # a file no one else may read
    r = run_as_nobody(f"""
try:
    ggufkit.open({str(locked)!r})
except PermissionError as e:
    print(e.errno, e.filename, e.code, e.strerror)
""")
    assert r.stdout.split()[:6] == [str(errno.EACCES), str(locked), "io", "cannot", "open", "for"], r.stderr
    # Reading allowed, writing into the folder not (it is root's, 755): PermissionError on
    # writing, nothing written.
    os.chmod(locked, 0o644)
    out = open_folder / "out.gguf"
    r = run_as_nobody(f"""
try:
    ggufkit.edit({str(locked)!r}, set={{"general.name": "x"}}, out={str(out)!r})
except PermissionError as e:
    print(e.errno, e.code, e.filename)
""")
    if os.geteuid() != 0:
        pytest.skip("writing as another user needs root to become one")  # this user owns the folder
    assert r.stdout.split() == [str(errno.EACCES), "io", str(out)], r.stderr
    assert sorted(os.listdir(open_folder)) == ["locked.gguf"]


def test_a_broken_file_is_ggufkit_error_with_offset_field_and_code(tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(TINY.read_bytes()[:100])
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.open(cut)
    assert isinstance(e.value, ValueError) and not isinstance(e.value, OSError)
    assert (e.value.code, e.value.exit_code, e.value.file) == ("format", 1, str(cut))
    assert isinstance(e.value.offset, int) and e.value.offset <= 100 and e.value.field
    assert f"at byte {e.value.offset}" in str(e.value)


def test_messages_name_keywords_not_flags(tmp_path):
    out = tmp_path / "out.gguf"
    out.write_bytes(b"keep")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(SPM, set={"general.name": "x"}, out=out)
    assert "force=True" in str(e.value) and "--force" not in str(e.value)
    assert out.read_bytes() == b"keep"
    # A key given twice, by the patch and by set=: the arguments, not "the command line".
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(SPM, patch={"set": {"general.name": "a"}}, set={"general.name": "b"}, dry_run=True)
    assert e.value.file == "arguments" and "in the arguments" in str(e.value) and "command line" not in str(e.value)
    # A new key whose type its value does not tell: how to type it, in Python.
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(SPM, set={"zz.new": []}, dry_run=True)
    assert "set={'zz.new': {'type': 'f32', 'value': ...}}" in str(e.value) and "--set-typed" not in str(e.value)


def test_an_output_that_is_a_folder_or_in_no_folder_is_the_systems_error(tmp_path):
    with pytest.raises(IsADirectoryError) as e:
        ggufkit.merge(TINY, tmp_path)
    assert (e.value.errno, e.value.filename) == (errno.EISDIR, str(tmp_path))
    assert str(e.value).startswith(f"[Errno {errno.EISDIR}] is a folder; give a file name")
    out = tmp_path / "no-such-folder" / "out.gguf"
    with pytest.raises(FileNotFoundError) as e:
        ggufkit.edit(TINY, set={"general.name": "x"}, out=out)
    assert (e.value.errno, e.value.filename) == (errno.ENOENT, str(out))
    assert f"there is no folder {tmp_path / 'no-such-folder'}" in str(e.value)
    assert os.listdir(tmp_path) == []
