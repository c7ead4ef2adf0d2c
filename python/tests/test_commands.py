"""The command's other jobs from Python (split, merge, realign, convert, hash, diff,
detokenize, recover) give what the command gives: each result equals the command's --json
output on the corpus, each file written equals the command's byte for byte, and each refusal
raises with the command's kind and exit code."""
import json
import os
import pathlib
import shutil
import signal
import subprocess

import pytest

import ggufkit
from conftest import BIN, CORPUS, SPM, TINY, cli, cli_json, digest, sigint_at_first_progress

SPLITS = CORPUS / "splits"
BY_COUNT = SPLITS / "by-count-00001-of-00003.gguf"
VOCABS = sorted((CORPUS / "vocab").glob("*.gguf"))


def cli_refusal(*args):
    """The command's exit code and its --json error."""
    r = cli(*args, "--json", check=False)
    assert r.returncode != 0, f"ggufkit {args} did not refuse"
    return r.returncode, json.loads(r.stdout)["error"]


def assert_same_refusal(raised, rc, error):
    """A Python refusal is the command's: its kind, exit code and field (an option named as its keyword)."""
    assert (raised.kind, raised.exit_code) == (error["kind"], rc)
    field = error["field"] or ""
    assert raised.field == (field[2:].replace("-", "_") if field.startswith("--") else field)


def named(report, *paths):
    """A report with the paths it names cut to their base names (the two runs write into different folders)."""
    text = json.dumps(report)
    for p in paths:
        text = text.replace(str(p) + "/", "")
    return json.loads(text)


def files_in(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def py_dir(tmp_path):
    (tmp_path / "py").mkdir()
    return tmp_path / "py"


@pytest.fixture
def cli_dir(tmp_path):
    (tmp_path / "cli").mkdir()
    return tmp_path / "cli"


# ---- split and merge -------------------------------------------------------------------

SPLIT_CASES = [
    ("by-count", {"max_tensors": 8}, ["--max-tensors", "8"], 3),
    ("by-size", {"max_size": 3_000_000}, ["--max-size", "3M"], 2),
    ("metadata-first", {"max_tensors": 8, "metadata_only_first": True}, ["--max-tensors", "8", "--metadata-only-first"], 4),
]


@pytest.mark.parametrize("name,kwargs,flags,n", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_split_reports_and_writes_what_the_command_does_and_what_gguf_split_wrote(py_dir, cli_dir, name, kwargs, flags, n):
    got = ggufkit.split(TINY, py_dir / name, **kwargs)
    want = cli_json("split", TINY, "-o", cli_dir / name, *flags, "--json")
    assert named(got, py_dir) == named(want, cli_dir)
    shards = [f"{name}-{k:05d}-of-{n:05d}.gguf" for k in range(1, n + 1)]
    assert [f["file"] for f in got["files"]] == [str(py_dir / s) for s in shards]
    for s in shards:  # the command's bytes, and llama-gguf-split's (alignment 32)
        assert digest(py_dir / s) == digest(cli_dir / s) == digest(SPLITS / s), s


def test_split_of_a_shard_splits_its_whole_set_again(py_dir, cli_dir):
    got = ggufkit.split(SPLITS / "by-size-00001-of-00002.gguf", py_dir / "again", max_tensors=8)
    want = cli_json("split", SPLITS / "by-size-00001-of-00002.gguf", "-o", cli_dir / "again", "--max-tensors", "8", "--json")
    assert named(got, py_dir) == named(want, cli_dir)
    assert [digest(py_dir / f"again-0000{k}-of-00003.gguf") for k in (1, 2, 3)] == [
        digest(SPLITS / f"by-count-0000{k}-of-00003.gguf") for k in (1, 2, 3)]


@pytest.mark.parametrize("shard", [BY_COUNT, SPLITS / "metadata-first-00003-of-00004.gguf", SPLITS / "by-size-00002-of-00002.gguf"],
                         ids=lambda p: p.name)
def test_merge_gives_back_the_file_the_set_was_split_from(py_dir, cli_dir, shard):
    got = ggufkit.merge(shard, py_dir / "merged.gguf")
    want = cli_json("merge", shard, "-o", cli_dir / "merged.gguf", "--json")
    assert named(got, py_dir) == named(want, cli_dir)
    assert got["files"][0]["tensors"] == got["files"][0]["tensors_verified"] == 21
    assert digest(py_dir / "merged.gguf") == digest(cli_dir / "merged.gguf") == digest(TINY)


def test_split_refuses_what_the_command_refuses_with_its_codes(py_dir, cli_dir):
    # A limit smaller than the first tensor: no shard could hold it.
    rc, err = cli_refusal("split", TINY, "-o", cli_dir / "s", "--max-size", "1000")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.split(TINY, py_dir / "s", max_size=1000)
    assert (e.value.kind, e.value.exit_code, rc) == ("usage", 2, 2)
    assert "token_embd.weight alone" in e.value.message and "token_embd.weight alone" in err["message"]
    # Neither limit, or both, as the command's "give one of".
    for kwargs in ({}, {"max_tensors": 8, "max_size": 3_000_000}):
        with pytest.raises(ggufkit.Error, match="give one of max_tensors=N and max_size=BYTES") as e:
            ggufkit.split(TINY, py_dir / "s", **kwargs)
        assert e.value.exit_code == cli_refusal("split", TINY, "-o", cli_dir / "s")[0] == 2
    with pytest.raises(ggufkit.Error, match="max_tensors: expected a number of tensors, at least 1"):
        ggufkit.split(TINY, py_dir / "s", max_tensors=0)
    assert files_in(py_dir) == []


def test_an_existing_output_is_refused_without_force_naming_the_keyword_and_replaced_with_it(py_dir, cli_dir):
    for d in (py_dir, cli_dir):
        (d / "out.gguf").write_bytes(b"keep me")
        (d / "s-00001-of-00003.gguf").write_bytes(b"keep me")
    jobs = [
        (lambda **kw: ggufkit.merge(BY_COUNT, py_dir / "out.gguf", **kw), ["merge", BY_COUNT, "-o", cli_dir / "out.gguf"]),
        (lambda **kw: ggufkit.split(TINY, py_dir / "s", max_tensors=8, **kw), ["split", TINY, "-o", cli_dir / "s", "--max-tensors", "8"]),
        (lambda **kw: ggufkit.realign(TINY, 64, py_dir / "out.gguf", **kw), ["realign", TINY, "-a", "64", "-o", cli_dir / "out.gguf"]),
        (lambda **kw: ggufkit.convert(TINY, "big", py_dir / "out.gguf", **kw), ["convert", TINY, "--byte-order", "big", "-o", cli_dir / "out.gguf"]),
    ]
    for job, args in jobs:
        rc, err = cli_refusal(*args)
        with pytest.raises(ggufkit.Error) as e:
            job()
        assert_same_refusal(e.value, rc, err)
        assert "force=True" in str(e.value) and "--force" not in str(e.value) and "--force" in err["message"]
        assert (py_dir / "out.gguf").read_bytes() == (py_dir / "s-00001-of-00003.gguf").read_bytes() == b"keep me"
    for job, args in jobs:
        got, want = job(force=True), cli_json(*args, "--force", "--json")
        assert named(got, py_dir) == named(want, cli_dir)


# ---- realign and convert ---------------------------------------------------------------

@pytest.mark.parametrize("path", [TINY, BY_COUNT, SPM], ids=lambda p: p.name)
def test_realign_reports_and_writes_what_the_command_does_and_comes_back_to_the_original(py_dir, cli_dir, path):
    got = ggufkit.realign(path, 64, py_dir / "a64.gguf")
    want = cli_json("realign", path, "-a", "64", "-o", cli_dir / "a64.gguf", "--json")
    assert named(got, py_dir) == named(want, cli_dir)
    assert got["changes"] == [{"change": "alignment", "key": "general.alignment", "before": "32", "after": "64"}]
    for a in sorted(py_dir.glob("a64*")):
        assert digest(a) == digest(cli_dir / a.name), a.name
    if path != BY_COUNT:  # one file: -a default takes the key away again, byte for byte
        back = ggufkit.realign(py_dir / "a64.gguf", "default", py_dir / "back.gguf")
        assert named(back, py_dir) == named(cli_json("realign", cli_dir / "a64.gguf", "-a", "default", "-o", cli_dir / "back.gguf", "--json"), cli_dir)
        assert digest(py_dir / "back.gguf") == digest(path)


def test_a_dry_run_realign_plans_what_the_command_plans_and_writes_nothing(py_dir):
    got = ggufkit.realign(TINY, 4096, dry_run=True)
    assert got == cli_json("realign", TINY, "-a", "4096", "--dry-run", "--json")
    assert got["dry_run"] and got["files"] == [] and got["data_offset"]["after"] % 4096 == 0
    assert ggufkit.realign(TINY, 32, dry_run=True) == cli_json("realign", TINY, "-a", "32", "--dry-run", "--json")


def test_realign_refuses_what_the_command_refuses(py_dir, cli_dir):
    for value, code in (("48", 2), ("16", 1)):  # not a power of two; below llama.cpp's 32
        rc, err = cli_refusal("realign", TINY, "-a", value, "-o", cli_dir / "x.gguf")
        with pytest.raises(ggufkit.Error) as e:
            ggufkit.realign(TINY, int(value), py_dir / "x.gguf")
        assert rc == code
        assert_same_refusal(e.value, rc, err)
    assert ggufkit.realign(TINY, 16, py_dir / "x.gguf", allow_broken=True)["changes"][0]["after"] == "16"
    with pytest.raises(ggufkit.Error, match="give exactly one of out=PATH and in_place=True") as e:
        ggufkit.realign(TINY, 64)
    assert e.value.exit_code == 2
    with pytest.raises(ggufkit.Error, match="alignment: expected a power of two"):
        ggufkit.realign(TINY, 64.0, py_dir / "y.gguf")


@pytest.mark.parametrize("path", [TINY, SPLITS / "merged-by-llama.gguf", SPM], ids=lambda p: p.name)
def test_convert_writes_the_commands_bytes_and_converting_back_gives_the_original(py_dir, cli_dir, path):
    got = ggufkit.convert(path, "big", py_dir / "be.gguf")
    want = cli_json("convert", path, "--byte-order", "big", "-o", cli_dir / "be.gguf", "--json")
    assert named(got, py_dir) == named(want, cli_dir)
    for b in sorted(py_dir.glob("be*")):
        assert digest(b) == digest(cli_dir / b.name), b.name
    assert ggufkit.open(py_dir / "be.gguf").byte_order == "big"
    back = ggufkit.convert(py_dir / "be.gguf", "little", py_dir / "le.gguf")
    assert named(back, py_dir) == named(cli_json("convert", cli_dir / "be.gguf", "--byte-order", "little", "-o", cli_dir / "le.gguf", "--json"), cli_dir)
    assert digest(py_dir / "le.gguf") == digest(path)


def test_converting_to_the_order_it_has_changes_nothing_as_the_command_says(py_dir):
    got = ggufkit.convert(TINY, "little", py_dir / "same.gguf")
    assert got == cli_json("convert", TINY, "--byte-order", "little", "-o", py_dir / "same.gguf", "--json")
    assert got["written"] is False and files_in(py_dir) == []


def test_convert_refuses_what_the_command_refuses(py_dir, cli_dir):
    v1 = CORPUS / "history" / "ggml-vocab-llama.v1.gguf"
    rc, err = cli_refusal("convert", v1, "--byte-order", "big", "-o", cli_dir / "x.gguf")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.convert(v1, "big", py_dir / "x.gguf")
    assert_same_refusal(e.value, rc, err)
    assert (e.value.offset, e.value.code) == (err["offset"], "format") and rc == 1
    # A shard set: merge it first, as the command says.
    rc, err = cli_refusal("convert", BY_COUNT, "--byte-order", "big", "-o", cli_dir / "x.gguf")
    with pytest.raises(ggufkit.Error, match="convert works on one file") as e:
        ggufkit.convert(BY_COUNT, "big", py_dir / "x.gguf")
    assert_same_refusal(e.value, rc, err)
    rc, _ = cli_refusal("convert", TINY, "--byte-order", "middle", "-o", cli_dir / "x.gguf")
    with pytest.raises(ggufkit.Error, match="byte_order must be 'big' or 'little'") as e:
        ggufkit.convert(TINY, "middle", py_dir / "x.gguf")
    assert e.value.exit_code == rc == 2
    assert files_in(py_dir) == []


def test_an_in_place_realign_replaces_the_file_as_the_command_does(py_dir, cli_dir):
    a, b = py_dir / "t.gguf", cli_dir / "t.gguf"
    shutil.copyfile(TINY, a)
    shutil.copyfile(TINY, b)
    got = ggufkit.realign(a, 128, in_place=True)
    assert named(got, py_dir) == named(cli_json("realign", b, "-a", "128", "--in-place", "--json"), cli_dir)
    assert digest(a) == digest(b) != digest(TINY) and ggufkit.open(a).alignment == 128


# ---- progress and cancel -------------------------------------------------------------------

@pytest.mark.parametrize("job", ["split", "merge", "realign", "convert"])
def test_an_exception_from_progress_cancels_the_write_and_nothing_is_left(py_dir, job):
    calls = []

    def stop(written, total):
        calls.append((written, total))
        raise RuntimeError("stop here")

    run = {"split": lambda: ggufkit.split(TINY, py_dir / "s", max_tensors=8, progress=stop),
           "merge": lambda: ggufkit.merge(BY_COUNT, py_dir / "m.gguf", progress=stop),
           "realign": lambda: ggufkit.realign(TINY, 64, py_dir / "r.gguf", progress=stop),
           "convert": lambda: ggufkit.convert(TINY, "big", py_dir / "c.gguf", progress=stop)}[job]
    with pytest.raises(RuntimeError, match="stop here"):
        run()
    assert len(calls) == 1 and calls[0][1] > calls[0][0] >= 0
    assert files_in(py_dir) == []  # no shard, no output, no temporary file


def test_ctrl_c_during_a_merge_cancels_it_and_raises_keyboard_interrupt(py_dir):
    with pytest.raises(KeyboardInterrupt):
        ggufkit.merge(BY_COUNT, py_dir / "m.gguf", progress=sigint_at_first_progress())
    assert files_in(py_dir) == []


def test_progress_is_told_the_bytes_written_of_the_total(py_dir):
    seen = []
    r = ggufkit.merge(BY_COUNT, py_dir / "m.gguf", progress=lambda w, t: seen.append((w, t)))
    size = r["files"][0]["file_size"]
    assert seen and all(t == size for _, t in seen) and seen[-1][0] == size
    seen.clear()
    ggufkit.hash(TINY, progress=lambda d, t: seen.append((d, t)))
    data = sum(t.nbytes for t in ggufkit.open(TINY).tensors)
    assert seen and seen[-1] == (data, data)
    with pytest.raises(RuntimeError, match="not now"):
        ggufkit.hash(TINY, progress=lambda d, t: (_ for _ in ()).throw(RuntimeError("not now")))
    with pytest.raises(ggufkit.Error, match="progress: expected a callable"):
        ggufkit.merge(BY_COUNT, py_dir / "m2.gguf", progress=5)


# ---- hash ------------------------------------------------------------------------------

@pytest.mark.parametrize("path", [TINY, BY_COUNT], ids=lambda p: p.name)
@pytest.mark.parametrize("kwargs,flags", [
    ({}, []), ({"algo": "sha256"}, ["--algo", "sha256"]), ({"algo": "sha1"}, ["--algo", "sha1"]),
    ({"file": True}, ["--file"]), ({"file": True, "tensors": True, "algo": "sha256"}, ["--file", "--tensors", "--algo", "sha256"]),
    ({"manifest": True}, ["--manifest"]), ({"manifest": True, "algo": ["sha256", "uuid"]}, ["--manifest", "--algo", "sha256,uuid"]),
    ({"shard_only": True}, ["--shard-only"]),
], ids=["xxh64", "sha256", "sha1", "file", "file+tensors", "manifest", "manifest-sha256-uuid", "shard-only"])
def test_hash_gives_what_the_command_gives(path, kwargs, flags):
    assert ggufkit.hash(path, **kwargs) == cli_json("hash", path, *flags, "--json")


def test_hash_of_a_set_is_the_hash_of_the_file_it_was_split_from():
    whole, split = ggufkit.hash(TINY, algo="sha256"), ggufkit.hash(BY_COUNT, algo="sha256")
    assert whole["all"] == split["all"] and whole["tensors"] == split["tensors"]
    assert ggufkit.hash(TINY, file=True)["files"][0]["sha256"] == digest(TINY)


def test_a_manifest_check_passes_and_fails_as_the_commands_does(tmp_path):
    manifest = tmp_path / "tiny.manifest"
    manifest.write_bytes(cli("hash", TINY, "--manifest").stdout)
    got = ggufkit.hash(TINY, check=manifest)
    assert got == cli_json("hash", TINY, "--check", manifest, "--json")
    assert got["ok"] and got["present"] == ["sha256", "sha1", "xxh64"] and {l["status"] for l in got["lines"]} == {"ok"}
    assert ggufkit.hash(TINY, check=manifest, algo="xxh64") == cli_json("hash", TINY, "--check", manifest, "--algo", "xxh64", "--json")
    # One tensor's sha256 changed: that line fails, as llama-gguf-hash says it.
    lines = manifest.read_text().splitlines(keepends=True)
    at = next(i for i, l in enumerate(lines) if l.startswith("sha256") and ":blk.0.attn_q.weight" in l)
    h = lines[at].split()[1]
    lines[at] = lines[at].replace(h, ("0" if h[0] != "0" else "1") + h[1:])
    manifest.write_text("".join(lines))
    got = ggufkit.hash(TINY, check=manifest)
    r = cli("hash", TINY, "--check", manifest, "--json", check=False)
    assert r.returncode == 1 and got == json.loads(r.stdout)
    assert not got["ok"] and [l["tensor"] for l in got["lines"] if l["status"] == "mismatch"] == ["blk.0.attn_q.weight"]


def test_hash_refuses_what_the_command_refuses(tmp_path):
    (tmp_path / "bad.manifest").write_text("sha256  nothex  x.gguf\n")
    rc, err = cli_refusal("hash", TINY, "--check", tmp_path / "bad.manifest")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.hash(TINY, check=tmp_path / "bad.manifest")
    assert (e.value.kind, e.value.exit_code, e.value.message) == (err["kind"], rc, err["message"])
    for kwargs, flags in (({"algo": "md5"}, ["--algo", "md5"]), ({"algo": "uuid"}, ["--algo", "uuid"]),
                          ({"manifest": True, "check": tmp_path / "bad.manifest"}, ["--manifest", "--check", tmp_path / "bad.manifest"]),
                          ({"file": True, "manifest": True}, ["--file", "--manifest"]), ({"file": True, "algo": "sha1"}, ["--file", "--algo", "sha1"])):
        rc, err = cli_refusal("hash", TINY, *flags)
        with pytest.raises(ggufkit.Error) as e:
            ggufkit.hash(TINY, **kwargs)
        assert (e.value.kind, e.value.exit_code) == (err["kind"], rc) == ("usage", 2), kwargs
        assert "--" not in e.value.message, e.value.message
    with pytest.raises(FileNotFoundError) as e:
        ggufkit.hash(TINY, check=tmp_path / "none.manifest")
    assert e.value.filename == str(tmp_path / "none.manifest")


# ---- diff ------------------------------------------------------------------------------

@pytest.mark.parametrize("a,b,kwargs,flags", [
    (TINY, TINY, {}, []),
    (TINY, SPLITS / "merged-by-llama.gguf", {}, []),
    (TINY, BY_COUNT, {}, []),
    (BY_COUNT, SPLITS / "metadata-first-00001-of-00004.gguf", {"shard_only": True}, ["--shard-only"]),
    (SPM, CORPUS / "vocab" / "ggml-vocab-phi-3.gguf", {}, []),
], ids=["same", "llama-merge", "set", "shards", "vocabs"])
def test_diff_gives_what_the_command_gives(a, b, kwargs, flags):
    got = ggufkit.diff(a, b, **kwargs)
    assert got == cli_json("diff", a, b, *flags, "--json")
    assert got["same"] == (got["differences"] == [])


def test_diff_sees_an_edit_and_a_realign(tmp_path):
    ggufkit.realign(TINY, 64, tmp_path / "a64.gguf")
    got = ggufkit.diff(TINY, tmp_path / "a64.gguf")
    assert got == cli_json("diff", TINY, tmp_path / "a64.gguf", "--json")
    assert got["differences"][-1] == {"change": "added", "key": "general.alignment", "type": "u32", "b": 64}
    ggufkit.edit(TINY, set={"general.name": "other"}, out=tmp_path / "named.gguf")
    got = ggufkit.diff(TINY, tmp_path / "named.gguf")
    assert got == cli_json("diff", TINY, tmp_path / "named.gguf", "--json")
    assert [(d["change"], d["key"], d["b"]) for d in got["differences"]] == [("changed", "general.name", "other")]


def test_diff_with_exit_code_raises_as_the_command_exits_1(tmp_path):
    other = SPLITS / "merged-by-llama.gguf"
    r = cli("diff", TINY, other, "--exit-code", "--json", check=False)
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.diff(TINY, other, exit_code=True)
    assert r.returncode == e.value.exit_code == 1 and e.value.code == "differ"
    assert e.value.differences == json.loads(r.stdout)["differences"]
    assert cli("diff", TINY, TINY, "--exit-code", check=False).returncode == 0
    assert ggufkit.diff(TINY, TINY, exit_code=True)["same"]


def test_diff_of_a_missing_file_raises_file_not_found(tmp_path):
    assert cli("diff", TINY, tmp_path / "nothere.gguf", check=False).returncode != 0
    with pytest.raises(FileNotFoundError) as e:
        ggufkit.diff(TINY, tmp_path / "nothere.gguf")
    assert e.value.filename == str(tmp_path / "nothere.gguf")
    rc, err = cli_refusal("diff", TINY, CORPUS / "history" / "ggml-vocab-llama.v1.gguf")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.diff(TINY, CORPUS / "history" / "ggml-vocab-llama.v1.gguf")
    assert (e.value.exit_code, e.value.offset, e.value.message) == (rc, err["offset"], err["message"])


# ---- detokenize --------------------------------------------------------------------------

def cli_text(value):
    """detokenize --json's text: a str, or {"hex": ...} for bytes that are not UTF-8."""
    return bytes.fromhex(value["hex"]) if isinstance(value, dict) else value.encode()


@pytest.mark.parametrize("path", VOCABS, ids=lambda p: p.name)
def test_detokenize_gives_the_text_the_command_gives(path):
    f = ggufkit.open(path)
    for text in ["Hello world", " leading space and  two", "<s>[INST] special? [/INST]", "héllo ☃ 😀 \n\t tabs"]:
        ids = f.tokenize(text)
        for remove, unparse in ((False, True), (True, False)):
            flags = (["--remove-special"] if remove else []) + (["--no-unparse-special"] if not unparse else [])
            want = cli_json("detokenize", path, *map(str, ids), *flags, "--json")
            got = ggufkit.detokenize(path, ids, remove_special=remove, unparse_special=unparse)
            assert got.keys() == want.keys() == {"text"}
            assert got["text"].encode("utf-8", "surrogateescape") == cli_text(want["text"]), (text, remove, unparse)


def test_detokenize_of_a_partial_character_keeps_its_bytes():
    ids = ggufkit.tokenize(SPM, "☃", add_special=False)
    want = cli_json("detokenize", SPM, *map(str, ids[-1:]), "--json")
    got = ggufkit.detokenize(SPM, ids[-1:])
    assert got["text"].encode("utf-8", "surrogateescape") == cli_text(want["text"])
    assert ggufkit.detokenize(SPM, ids)["text"] == "☃" and ggufkit.detokenize(SPM, [])["text"] == ""


def test_numpy_integers_are_ids_counts_and_alignments_as_ints_are(py_dir):
    np = pytest.importorskip("numpy")
    ids = ggufkit.tokenize(SPM, "Hello world")
    assert ggufkit.detokenize(SPM, np.array(ids, dtype=np.int32)) == ggufkit.detokenize(SPM, tuple(ids)) == {"text": "<s> Hello world"}
    assert ggufkit.realign(TINY, np.int64(64), dry_run=True) == ggufkit.realign(TINY, 64, dry_run=True)
    got = ggufkit.split(TINY, py_dir / "n", max_tensors=np.uint8(8))
    assert [f["tensors"] for f in got["files"]] == [8, 8, 5]


def test_detokenize_refuses_what_the_command_refuses():
    rc, err = cli_refusal("detokenize", SPM, "32000")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.detokenize(SPM, [1, 32000])
    assert_same_refusal(e.value, rc, err)
    assert (rc, e.value.message) == (1, err["message"])  # token id 32000 is not in the vocabulary (... ids 0 to 31999)
    for ids, code in (([-1], 1), ([2**70], 2)):  # outside the vocabulary; not an id at all (past int64)
        r = subprocess.run([BIN, "detokenize", SPM, "-", "--json"], input=str(ids[0]).encode(), capture_output=True)
        with pytest.raises(ggufkit.Error) as e:
            ggufkit.detokenize(SPM, ids)
        assert (e.value.kind, e.value.exit_code) == (json.loads(r.stdout)["error"]["kind"], r.returncode) and r.returncode == code
    for bad in ("1 2", [1, "2"], [True], 5):
        with pytest.raises(ggufkit.Error, match="ids: expected a list of token ids") as e:
            ggufkit.detokenize(SPM, bad)
        assert e.value.kind == "usage"
    out = TINY.parent / "nothere.gguf"
    with pytest.raises(FileNotFoundError):
        ggufkit.detokenize(out, [1])


# ---- recover -----------------------------------------------------------------------------

FAULTY = pathlib.Path(os.environ.get("GGUFKIT_FAULTY_BIN", pathlib.Path(BIN).parent / "tests" / "ggufkit_faulty"))


def crashed(path, point):
    """A copy of TINY whose in-place edit was killed at a fault point (ggufkit_faulty), its journal left beside it."""
    shutil.copyfile(TINY, path)
    os.chmod(path, 0o644)
    r = subprocess.run([FAULTY, "edit", path, "--set", "general.name=crashed", "--in-place"],
                       env=dict(os.environ, GGUFKIT_FAULT=f"{point}:kill"), capture_output=True)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert pathlib.Path(str(path) + ".ggufkit-journal").exists()
    return path


def test_recover_of_a_file_without_a_journal_says_so_as_the_command_does(tmp_path):
    shutil.copyfile(TINY, tmp_path / "t.gguf")
    assert ggufkit.recover(tmp_path / "t.gguf") == cli_json("recover", tmp_path / "t.gguf", "--json") == {
        "file": str(tmp_path / "t.gguf"), "recovery": "none"}
    assert digest(tmp_path / "t.gguf") == digest(TINY)


def test_recover_refuses_a_journal_that_is_not_one_and_changes_nothing(tmp_path):
    for name in ("py.gguf", "cli.gguf"):
        shutil.copyfile(TINY, tmp_path / name)
        (tmp_path / (name + ".ggufkit-journal")).write_bytes(b"not a journal\n")
    rc, err = cli_refusal("recover", tmp_path / "cli.gguf")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.recover(tmp_path / "py.gguf")
    assert_same_refusal(e.value, rc, err)
    assert (rc, e.value.code, e.value.file) == (1, "format", str(tmp_path / "py.gguf.ggufkit-journal"))
    assert digest(tmp_path / "py.gguf") == digest(TINY) and (tmp_path / "py.gguf.ggufkit-journal").exists()


@pytest.mark.skipif(not FAULTY.exists(), reason="needs ggufkit_faulty, the test build of the program (build/tests/)")
def test_recover_finishes_a_crashed_in_place_edit_as_the_command_does(tmp_path):
    for point in ("journal-written", "header-half"):
        py, cl = crashed(tmp_path / f"py-{point}.gguf", point), crashed(tmp_path / f"cli-{point}.gguf", point)
        with pytest.raises(ggufkit.Error, match="run 'ggufkit recover"):  # every reader refuses it until then
            ggufkit.open(py)
        got, want = ggufkit.recover(py), cli_json("recover", cl, "--json")
        assert got == {"file": str(py), "recovery": "rolled_back"} and want == {"file": str(cl), "recovery": "rolled_back"}
        assert digest(py) == digest(cl) == digest(TINY), point
        assert not pathlib.Path(str(py) + ".ggufkit-journal").exists()
    # discard=True: only a file that reads clean without its journal.
    py, cl = crashed(tmp_path / "py-d.gguf", "journal-written"), crashed(tmp_path / "cli-d.gguf", "journal-written")
    assert ggufkit.recover(py, discard=True) == {"file": str(py), "recovery": "discarded"}
    assert cli_json("recover", cl, "--discard", "--json")["recovery"] == "discarded" and digest(py) == digest(TINY)
    py, cl = crashed(tmp_path / "py-h.gguf", "header-half"), crashed(tmp_path / "cli-h.gguf", "header-half")
    rc, err = cli_refusal("recover", cl, "--discard")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.recover(py, discard=True)
    assert (e.value.kind, e.value.exit_code, rc) == (err["kind"], rc, 1) and "does not read clean" in e.value.message
    assert e.value.message.startswith("discard=True: ") and err["message"].startswith("--discard: ")
    assert ggufkit.recover(py)["recovery"] == "rolled_back" and digest(py) == digest(TINY)
