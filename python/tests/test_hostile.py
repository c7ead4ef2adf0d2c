"""What a careless or hostile caller can hand the module: threads sharing one File and
closing it under each other, names and paths that are not UTF-8, a NUL in a path, a
comma-decimal locale, numbers whose subclasses print what they like, keys that are not
str. Each gets the right answer or a ggufkit.Error naming what was wrong, never a crash,
a silently different value or a file written where it was not asked for."""
import enum
import json
import locale
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import threading

import pytest

import ggufkit
from conftest import CORPUS, SPM, TINY, cli, cli_json, digest

TEXT = "The quick brown fox jumps over the lazy dog. " * 2000


def test_threads_tokenizing_with_one_file_each_get_the_ids_one_thread_gets():
    want = ggufkit.open(SPM).tokenize(TEXT)
    assert len(want) > 20000
    f = ggufkit.open(SPM)  # its vocabulary not loaded yet: the threads race to load it
    got = [None] * 4

    def work(i):
        got[i] = f.tokenize(TEXT)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [want] * 4


def test_a_file_closed_while_other_threads_use_it_lets_their_calls_finish():
    want = ggufkit.open(SPM).tokenize(TEXT)
    f = ggufkit.open(SPM)
    f.tokenize("warm")  # the vocabulary loaded: close() now drops it under running calls
    first_done = threading.Event()
    results = []

    def work():
        while True:
            try:
                ids = f.tokenize(TEXT)
            except ValueError as e:  # a call that started after close()
                results.append(str(e))
                return
            results.append(ids)
            first_done.set()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    first_done.wait()  # one call has finished: the others are in the middle of theirs
    f.close()
    for t in threads:
        t.join()
    assert f.closed
    assert all(r == want or r == "I/O operation on a closed ggufkit.File" for r in results)
    assert results.count("I/O operation on a closed ggufkit.File") == 3
    with pytest.raises(ValueError, match="closed"):
        f.metadata["general.architecture"]


def test_reading_metadata_while_another_thread_loads_the_vocabulary_reads_it_right():
    # Loading a vocabulary reads the model's keys the way the library reads a changed model;
    # KeyMap reads the same keys from the main thread meanwhile, on a new File each round.
    want = ggufkit.open(SPM)
    want = [(k, want.metadata.offset(k), want.metadata.value_offset(k)) for k in want.metadata]
    wrong = []
    for _ in range(60):
        f = ggufkit.open(SPM)
        md = f.metadata
        t = threading.Thread(target=f.tokenize, args=("x",))
        t.start()
        while t.is_alive():
            got = [(k, md.offset(k), md.value_offset(k)) for k in md.keys()]
            if got != want:
                wrong.append(got)
        t.join()
    assert wrong == []


def test_threads_reading_tensors_of_one_file_get_the_bytes_of_one_thread():
    f = ggufkit.open(TINY)
    want = {t.name: bytes(f.tensor_bytes(t.name)) for t in f.tensors}
    g = ggufkit.open(TINY)  # a new File: its name index is used by every thread at once
    bad = []

    def work(names):
        for n in names:
            if bytes(g.tensor_bytes(n)) != want[n] or g.tensor(n).nbytes != len(want[n]):
                bad.append(n)

    names = list(want)
    threads = [threading.Thread(target=work, args=(names[i::3] * 5,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == [] and len(names) == len(g.tensors)


def non_utf8_file(tmp_path, key=b"general.z\xff", tensor=b"w\xfe"):
    """A file whose second key and whose tensor's name are not UTF-8 (the bytes swapped in
    after the writer wrote them, at the same lengths)."""
    p = tmp_path / "k.gguf"
    ggufkit.write({"metadata": [{"key": "general.architecture", "type": "string", "value": "llama"},
                                {"key": "general.zz", "type": "u32", "value": 7}],
                   "tensors": [{"name": "wq", "type": "f32", "dims": [2], "values": [1.5, -2]}]}, p)
    p.write_bytes(p.read_bytes().replace(b"general.zz", key).replace(b"wq", tensor))
    return p


def test_a_key_and_a_tensor_name_that_are_not_utf8_read_as_surrogate_escapes_and_look_up_back(tmp_path):
    p = non_utf8_file(tmp_path)
    f = ggufkit.open(p)
    keys = list(f.metadata)
    assert keys == ["general.architecture", "general.z\udcff"]
    assert keys[1].encode("utf-8", "surrogateescape") == b"general.z\xff"
    assert f.metadata["general.z\udcff"] == 7 and f.types["general.z\udcff"] == "u32"
    at = 24 + (8 + 20 + 4 + 8 + 5)  # the first pair, then the second's key length
    assert f.metadata.offset("general.z\udcff") == at and f.metadata.value_offset("general.z\udcff") == at + 8 + 10 + 4
    assert dict(f.metadata.items()) == {"general.architecture": "llama", "general.z\udcff": 7}
    name = f.tensors[0].name
    assert name == "w\udcfe" and f.tensor(name).nbytes == 8 and bytes(f.tensor_bytes(name)) == struct.pack("<2f", 1.5, -2)
    # the command shows the same names with U+FFFD, which cannot be given back
    assert [e["key"] for e in cli_json("meta", "--json", p)["metadata"]] == ["general.architecture", "general.z\ufffd"]
    assert [t["name"] for t in cli_json("tensors", "--json", p)["tensors"]] == ["w\ufffd"]
    assert [s.field for s in f.map() if s.kind == "kv_key"] == ["kv[0] general.architecture", "kv[1] general.z\udcff"]


def test_a_duplicated_key_that_is_not_utf8_is_a_ggufkit_error_with_its_offset(tmp_path):
    p = tmp_path / "dup.gguf"
    ggufkit.write({"metadata": [{"key": "general.za", "type": "u32", "value": 1},
                                {"key": "general.zb", "type": "u32", "value": 2}]}, p)
    p.write_bytes(p.read_bytes().replace(b"general.za", b"general.z\xff").replace(b"general.zb", b"general.z\xff"))
    second = 24 + (8 + 10 + 4 + 4)  # where the second pair starts
    r = cli("meta", "--json", p, check=False)
    err = json.loads(r.stdout)["error"]
    assert r.returncode == 1 and (err["offset"], err["field"]) == (second, "kv[1] (key)")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.open(p)
    assert (e.value.kind, e.value.offset, e.value.field, e.value.file) == ("format", second, "kv[1] (key)", str(p))
    assert "duplicate key 'general.z\\xff', first at kv[0]" in str(e.value) and f"at byte {second}" in str(e.value)


def test_a_path_that_is_not_utf8_is_given_back_as_os_fsdecode_gives_it(tmp_path):
    p = os.fsencode(tmp_path) + b"/\xff.gguf"
    shutil.copyfile(SPM, p)
    f = ggufkit.open(p)
    assert f.path == os.fsdecode(p) and os.fsdecode(p) in repr(f)
    out = os.fsencode(tmp_path) + b"/out-\xfe.gguf"
    r = ggufkit.edit(p, set={"general.name": "x"}, out=out)  # the report, not an exception after the write
    assert r["written"] == "whole_file" and r["files"][0]["path"] == os.fsdecode(out)
    with pytest.raises(FileNotFoundError) as e:
        ggufkit.open(os.fsencode(tmp_path) + b"/missing-\xfd.gguf")
    assert e.value.kind == "io" and e.value.filename == os.fsdecode(os.fsencode(tmp_path) + b"/missing-\xfd.gguf")


@pytest.mark.parametrize("tail", [b"/a.gguf\0\xff", b"/a.gguf\0b"])
def test_a_path_with_a_nul_byte_is_refused_and_nothing_is_written(tmp_path, tail):
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.write({"metadata": []}, os.fsencode(tmp_path) + tail)
    assert e.value.kind == "usage" and "NUL" in str(e.value)
    with pytest.raises(ggufkit.Error):
        ggufkit.edit(SPM, set={"general.name": "x"}, out=os.fsencode(tmp_path) + tail)
    assert list(tmp_path.iterdir()) == []


LOCALE_CHILD = r"""
import locale, struct, sys, ggufkit
locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")
assert locale.localeconv()["decimal_point"] == ",", locale.localeconv()["decimal_point"]
out = sys.argv[1]
ggufkit.write({"metadata": [
    {"key": "general.architecture", "type": "string", "value": "llama"},
    {"key": "t.f32", "type": "f32", "value": 0.1},
    {"key": "t.f32s", "type": "array", "items": "f32", "value": [2.5, -0.75]},
    {"key": "tokenizer.chat_template", "type": "string",
     "value": "{{ 2.5 * 2 }}|{{ '%.2f' % 1.5 }}|{{ '0.25' | float }}|{{ 1e-7 }}|{{ messages[0].content }}"}]}, out)
f = ggufkit.open(out)
print(repr(f.metadata["t.f32"]), f.metadata["t.f32s"])
print(ggufkit.render(out, {"messages": [{"role": "user", "content": "hi"}]}))
r = ggufkit.edit(out, set={"t.f32": 0.5}, in_place=True)
print(r["changes"][0]["after"], ggufkit.open(out).metadata["t.f32"])
points = set()  # the caller's own code, called back from the library, is in the caller's locale
ggufkit.replica(sys.argv[2], out + ".r", data="zeros", progress=lambda w, t: points.add(locale.localeconv()["decimal_point"]))
print(sorted(points), locale.localeconv()["decimal_point"])
"""


def test_a_program_in_a_comma_decimal_locale_gets_the_numbers_of_the_c_locale(tmp_path):
    # de_DE built into the test's own folder (Debian's locales package has its source)
    loc = tmp_path / "locale"
    loc.mkdir()
    subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(loc / "de_DE.UTF-8")], check=True, capture_output=True)
    env = dict(os.environ, LOCPATH=str(loc))
    r = subprocess.run([sys.executable, "-c", LOCALE_CHILD, str(tmp_path / "f.gguf"), str(TINY)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0.1 [2.5, -0.75]", "5.0|1.50|0.25|1e-07|hi", "0.5 0.5", "[','] ,"]


def test_dump_keeps_a_float_minus_zero_so_write_gives_the_same_bytes(tmp_path):
    src = tmp_path / "z.gguf"
    ggufkit.write({"metadata": [{"key": "t.zeros", "type": "array", "items": "f32", "value": [-0.0, 0.0, -0.0]},
                                {"key": "t.z", "type": "f32", "value": -0.0}]}, src)
    d = ggufkit.dump(src)
    assert [str(x) for x in d["metadata"][0]["value"]] == ["-0.0", "0", "-0.0"]
    again = tmp_path / "again.gguf"
    ggufkit.write(d, again)
    assert again.read_bytes() == src.read_bytes()
    # and a real vocabulary with -0.0 among its scores
    baichuan = CORPUS / "vocab" / "ggml-vocab-baichuan.gguf"
    if baichuan.exists():
        ggufkit.write(ggufkit.dump(baichuan), tmp_path / "b.gguf")
        assert digest(tmp_path / "b.gguf") == digest(baichuan)


def test_dump_of_a_shard_is_the_shard_alone_as_the_command_dumps_it():
    shard = CORPUS / "splits" / "by-count-00002-of-00003.gguf"
    d = ggufkit.dump(shard)
    want = cli_json("dump", "--format", "json", shard)
    assert [t["name"] for t in d["tensors"]] == [t["name"] for t in want["tensors"]]
    assert len(d["tensors"]) == len(ggufkit.open(shard, shard_only=True).tensors) == 8


class Sneaky(int):
    def __str__(self):
        return '1, "evil": "x"'

    __repr__ = __str__


class Shouty(float):
    def __repr__(self):
        return "np.float64(0.5)"

    __str__ = __repr__


class Level(enum.IntEnum):
    HIGH = 3


def test_number_subclasses_are_written_as_their_numbers_not_their_text(spm_copy):
    r = ggufkit.edit(spm_copy, set={"t.a": Sneaky(5), "t.b": Shouty(0.5), "t.c": Level.HIGH}, dry_run=True)
    assert [(c["key"], c["after"]) for c in r["changes"]] == [("t.a", 5), ("t.b", 0.5), ("t.c", 3)]
    p = spm_copy.parent / "s.gguf"
    ggufkit.write({"metadata": [{"key": "t.n", "type": "u32", "value": Sneaky(9)}]}, p)
    assert dict(ggufkit.open(p).metadata.items()) == {"t.n": 9}


@pytest.mark.parametrize("kwargs, where", [
    ({"set": {b"general.x": 5}}, "set: a key: expected a str, got bytes"),
    ({"set": {1: 5}}, "set: a key: expected a str, got int"),
    ({"set": {"general.\ud800": 5}}, "set: a key: a str that is not UTF-8"),
    ({"remove": b"general.name"}, "remove: expected a key (str) or a list of keys"),
    ({"remove": [b"general.name"]}, "remove: a key: expected a str, got bytes"),
    ({"rename": {"general.name": None}}, "rename[general.name]: expected a str, got NoneType"),
    ({"special_tokens": {b"eos": 2}}, "special_tokens: a name: expected a str, got bytes"),
    ({"set": {"general.name": "x"}, "progress": 5}, "progress: expected a callable"),
    ({"set": {"general.name": None}}, 'set[general.name]: None is no GGUF value (remove=["general.name"] removes a key)'),
])
def test_what_is_not_a_key_is_refused_naming_the_argument_and_nothing_changes(spm_copy, kwargs, where):
    before = digest(spm_copy)
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(spm_copy, in_place=True, **kwargs)
    assert e.value.kind == "usage" and where in str(e.value)
    assert digest(spm_copy) == before


def test_defines_take_str_and_numbers_and_refuse_the_rest(tmp_path):
    sketch = {"metadata": [{"key": "t.n", "type": "u32", "value": "[[N]]"}, {"key": "t.s", "type": "string", "value": "[[S]]"}]}
    ggufkit.write(sketch, tmp_path / "d.gguf", defines={"N": 12, "S": "twelve"})
    assert dict(ggufkit.open(tmp_path / "d.gguf").metadata.items()) == {"t.n": 12, "t.s": "twelve"}
    with pytest.raises(ggufkit.Error, match=r"defines\[N\]: expected a str or a number"):
        ggufkit.write(sketch, tmp_path / "e.gguf", defines={"N": None, "S": "x"})
    with pytest.raises(ggufkit.Error, match="defines: expected a dict"):
        ggufkit.write(sketch, tmp_path / "e.gguf", defines=[("N", 1)])
    assert not (tmp_path / "e.gguf").exists()


def test_mappings_that_are_not_dicts_are_taken_as_dicts(spm_copy):
    import types
    r = ggufkit.edit(spm_copy, set=types.MappingProxyType({"general.name": "proxy"}), dry_run=True)
    assert r["changes"][0]["after"] == "proxy"
    f = ggufkit.open(TINY)
    conv = types.MappingProxyType({"messages": [{"role": "user", "content": "hi"}]})
    assert ggufkit.render(TINY, conv) == ggufkit.render(TINY, dict(conv))
    assert f.metadata == dict(f.metadata.items()) and f.metadata == f.metadata and f.metadata != {}


class BadRepr:
    def __repr__(self):
        return "\udc80"


def test_an_object_whose_repr_is_not_utf8_is_a_key_error_or_a_usage_error():
    md = ggufkit.open(TINY).metadata
    with pytest.raises(KeyError) as e:
        md[BadRepr()]
    assert isinstance(e.value.args[0], BadRepr)
    with pytest.raises(KeyError) as e:
        md["no.such.key"]
    assert e.value.args == ("no.such.key",)
    with pytest.raises(ggufkit.Error, match=r"set\[general.x\]: a dict key that is not a str: \\udc80"):
        ggufkit.edit(TINY, set={"general.x": {BadRepr(): 1}}, dry_run=True)


def test_a_bytearray_value_is_the_bytes_it_holds(spm_copy):
    a = ggufkit.edit(spm_copy, set={"general.name": bytearray(b"a\xffb")}, dry_run=True)
    b = ggufkit.edit(spm_copy, set={"general.name": b"a\xffb"}, dry_run=True)
    assert a["changes"] == b["changes"] and a["changes"][0]["after"] == b"a\xffb"


def test_membership_and_lookup_of_what_cannot_be_a_key_say_no():
    md = ggufkit.open(TINY).metadata
    assert "\udc80" not in md and "\ud800" not in md and b"general.name" not in md and 5 not in md
    for k in ("\ud800", b"general.name", 5):
        with pytest.raises(KeyError):
            md[k]
    assert md.get(b"general.name", "none") == "none"


def test_ctrl_c_or_an_error_in_progress_stops_a_replica_leaving_nothing(tmp_path):
    import signal

    def stop(written, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        ggufkit.replica(TINY, tmp_path / "r.gguf", data="zeros", progress=stop)
    with pytest.raises(KeyboardInterrupt):
        ggufkit.replica(TINY, tmp_path / "r.gguf", data="zeros", progress=lambda w, t: signal.raise_signal(signal.SIGINT))
    with pytest.raises(RuntimeError, match="stop at the end"):  # the last call: not put in place either
        ggufkit.replica(TINY, tmp_path / "r.gguf", data="none", progress=lambda w, t: (_ for _ in ()).throw(RuntimeError("stop at the end")) if w == t else None)
    assert list(tmp_path.iterdir()) == []
    seen = []
    r = ggufkit.replica(TINY, tmp_path / "r.gguf", data="zeros", progress=lambda w, t: seen.append((w, t)))
    assert seen and seen[-1] == (r["files"][0]["file_size"],) * 2


def test_validate_of_a_file_opened_as_one_shard_judges_that_shard_and_survives_a_chdir(tmp_path, monkeypatch):
    shard = CORPUS / "splits" / "by-count-00002-of-00003.gguf"
    alone = [(x.file, x.code, x.offset) for x in ggufkit.validate(shard, shard_only=True)]
    whole = [(x.file, x.code, x.offset) for x in ggufkit.validate(shard)]
    assert alone != whole
    rel = os.path.relpath(shard)
    f = ggufkit.open(rel, shard_only=True)
    monkeypatch.chdir(tmp_path)
    assert [(os.path.basename(x.file), x.code, x.offset) for x in f.validate()] == [(os.path.basename(a), b, c) for a, b, c in alone]
    assert f.map()[-1].end == shard.stat().st_size
