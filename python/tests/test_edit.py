"""ggufkit.edit is `ggufkit edit`: what the rule book refuses is refused before a byte is
written, a fitting edit in place writes the header alone, and Python values are typed as
the command line types --set values."""
import contextlib
import os
import pathlib

import pytest

import ggufkit
from conftest import CORPUS, SPM, TINY, cli, digest, sigint_at_first_progress


def entries(d):
    return sorted(p.name for p in pathlib.Path(d).iterdir())


def test_an_eos_id_outside_the_vocabulary_is_refused_and_the_file_stays_byte_for_byte(spm_copy):
    before, st = digest(spm_copy), os.stat(spm_copy)
    value_at = ggufkit.open(spm_copy).metadata.value_offset("tokenizer.ggml.eos_token_id")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(spm_copy, set={"tokenizer.ggml.eos_token_id": 99999}, in_place=True)
    err = e.value
    assert isinstance(err, ValueError)
    assert err.code == "token_id" and err.kind == "format" and err.exit_code == 1
    assert err.field == "tokenizer.ggml.eos_token_id" and err.offset == value_at
    assert err.file == str(spm_copy)
    assert str(err).startswith(f"{spm_copy}: at byte {value_at}, tokenizer.ggml.eos_token_id: refusing to write a model that llama.cpp would refuse or misuse:\n")
    assert "99999 is not below the vocabulary size 32000" in str(err) and "nothing was written" in str(err)
    assert [(f.code, f.severity, f.field) for f in err.findings] == [("token_id", "error", "tokenizer.ggml.eos_token_id")]
    assert digest(spm_copy) == before
    after = os.stat(spm_copy)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)
    assert entries(spm_copy.parent) == ["spm.gguf"]  # no journal, no temporary file


def test_a_fitting_eos_id_is_written_in_place_as_the_header_alone(spm_copy):
    old = spm_copy.read_bytes()
    ino = os.stat(spm_copy).st_ino
    at = ggufkit.open(spm_copy).metadata.value_offset("tokenizer.ggml.eos_token_id")
    r = ggufkit.edit(spm_copy, set={"tokenizer.ggml.eos_token_id": 1}, in_place=True)
    assert r["written"] == "header" and r["header_fits"] and not r["unchanged"]
    assert r["changes"] == [{"change": "set", "key": "tokenizer.ggml.eos_token_id", "before": 2, "after": 1}]
    new = spm_copy.read_bytes()
    assert len(new) == len(old) and os.stat(spm_copy).st_ino == ino  # the same file, not a copy renamed over it
    diff = [i for i in range(len(old)) if old[i] != new[i]]
    assert diff == [at]  # one byte of a u32: 2 -> 1
    assert (old[at:at + 4], new[at:at + 4]) == (b"\x02\0\0\0", b"\x01\0\0\0")
    f = ggufkit.open(spm_copy)
    assert f.metadata["tokenizer.ggml.eos_token_id"] == 1 and f.types["tokenizer.ggml.eos_token_id"] == "u32"
    assert entries(spm_copy.parent) == ["spm.gguf"]


def test_a_dry_run_writes_nothing_and_reports_the_plan(spm_copy):
    before = digest(spm_copy)
    r = ggufkit.edit(spm_copy, set={"general.name": "a much longer name than the one it had"}, dry_run=True)
    assert r["dry_run"] and r["written"] == "nothing"
    assert r["changes"][0]["key"] == "general.name" and r["changes"][0]["after"] == "a much longer name than the one it had"
    assert digest(spm_copy) == before


def test_out_writes_a_new_file_and_leaves_the_source(tmp_path, spm_copy):
    before = digest(spm_copy)
    out = tmp_path / "renamed.gguf"
    r = ggufkit.edit(spm_copy, set={"general.name": "Renamed"}, remove=["llama.context_length"],
                     rename={"llama.embedding_length": "llama.embedding_length_renamed"}, out=out, allow_broken=True)
    assert r["written"] == "whole_file" and r["files"][0]["path"] == str(out)
    assert r["files"][0]["file_size"] == out.stat().st_size
    f = ggufkit.open(out)
    assert f.metadata["general.name"] == "Renamed"
    assert "llama.context_length" not in f.metadata and "llama.embedding_length" not in f.metadata
    assert f.metadata["llama.embedding_length_renamed"] == 4096
    assert [c["change"] for c in r["changes"]] == ["rename", "remove", "set"]
    assert digest(spm_copy) == before


def test_an_existing_output_is_kept_unless_force(tmp_path, spm_copy):
    out = tmp_path / "out.gguf"
    out.write_bytes(b"mine")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(spm_copy, set={"general.name": "x"}, out=out)
    assert e.value.kind == "usage" and e.value.exit_code == 2
    # The remedy in Python's words: the keyword argument, not the command's flag.
    assert e.value.message.startswith("exists; give force=True to replace it; nothing was changed"), e.value.message
    assert "--" not in str(e.value)
    assert out.read_bytes() == b"mine"
    ggufkit.edit(spm_copy, set={"general.name": "x"}, out=out, force=True)
    assert ggufkit.open(out).metadata["general.name"] == "x"


@pytest.mark.parametrize("value, cli_text, want_type", [
    (7, "7", "i32"), (-3, "-3", "i32"), (2**40, str(2**40), "i64"), (2.5, "2.5", "f32"), (True, "true", "bool"),
    ("text", "text", "string"),
    ("5", '"5"', "string"), ([1, 2, 3], "[1, 2, 3]", "array[i32]"), (["a", "b"], "[a, b]", "array[string]"),
])
def test_python_values_are_typed_as_the_command_line_types_set_values(tmp_path, spm_copy, value, cli_text, want_type):
    py_out, cli_out = tmp_path / "py.gguf", tmp_path / "cli.gguf"
    ggufkit.edit(spm_copy, set={"my.new_key": value}, out=py_out)
    cli("edit", spm_copy, "--set", f"my.new_key={cli_text}", "-o", cli_out)
    assert py_out.read_bytes() == cli_out.read_bytes()
    f = ggufkit.open(py_out)
    assert f.types["my.new_key"] == want_type and f.metadata["my.new_key"] == value


def test_a_new_key_s_type_is_noted_and_a_typed_value_chooses_another(tmp_path, spm_copy):
    r = ggufkit.edit(spm_copy, set={"my.float": 2.5}, dry_run=True)
    assert r["notes"] == [("arguments:1:1", "set my.float: a new key, stored as f32 as its value reads "
                                            "(set={'my.float': {'type': ..., 'value': ...}} chooses another)")]
    out = tmp_path / "f.gguf"
    ggufkit.edit(spm_copy, set={"my.float": {"type": "f64", "value": 2.5}, "my.f32s": {"type": "array", "items": "f32", "value": [0.5, 1e-5]}},
                 out=out)
    f = ggufkit.open(out)
    assert (f.types["my.float"], f.metadata["my.float"]) == ("f64", 2.5)
    assert (f.types["my.f32s"], f.metadata["my.f32s"]) == ("array[f32]", [0.5, 1e-5])


def test_bytes_set_a_string_that_is_not_utf8_with_the_warning_the_command_gives(tmp_path, spm_copy):
    out = tmp_path / "b.gguf"
    r = ggufkit.edit(spm_copy, set={"general.name": b"\xff\x00"}, out=out)
    assert [(f.code, f.severity, f.field) for f in r["findings"]] == [("invalid_utf8", "warning", "general.name")]
    assert ggufkit.open(out).metadata["general.name"] == b"\xff\x00"
    cli_out = tmp_path / "c.gguf"
    cli("edit", spm_copy, "--set-yaml", 'general.name={hex: "ff00"}', "-o", cli_out)
    assert out.read_bytes() == cli_out.read_bytes()


def test_a_registry_key_takes_the_registry_type_as_on_the_command_line(tmp_path, spm_copy):
    out = tmp_path / "o.gguf"
    ggufkit.edit(spm_copy, set={"llama.rope.freq_base": 10000, "tokenizer.ggml.add_bos_token": False}, out=out)
    f = ggufkit.open(out)
    assert (f.types["llama.rope.freq_base"], f.metadata["llama.rope.freq_base"]) == ("f32", 10000.0)
    assert (f.types["tokenizer.ggml.add_bos_token"], f.metadata["tokenizer.ggml.add_bos_token"]) == ("bool", False)


def test_chat_template_and_special_tokens(tmp_path, spm_copy):
    out = tmp_path / "chat.gguf"
    tpl = "{% for m in messages %}<s>{{ m.role }}: {{ m.content }}</s>{% endfor %}"
    r = ggufkit.edit(spm_copy, chat_template=tpl, special_tokens={"eos": "</s>", "bos": 1}, out=out)
    f = ggufkit.open(out)
    assert f.metadata["tokenizer.chat_template"] == tpl
    assert (f.metadata["tokenizer.ggml.eos_token_id"], f.metadata["tokenizer.ggml.bos_token_id"]) == (2, 1)
    assert {c["key"] for c in r["changes"]} >= {"tokenizer.chat_template"}
    conv = {"messages": [{"role": "user", "content": "Hi"}]}
    assert ggufkit.render(out, conv) == "<s>user: Hi</s>"


def test_a_template_that_does_not_parse_is_refused(spm_copy):
    before = digest(spm_copy)
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(spm_copy, chat_template="{% for m in messages %}", in_place=True)
    assert e.value.code == "template_syntax" and e.value.findings[0].code == "template_syntax"
    assert digest(spm_copy) == before


def test_a_patch_dict_is_a_patch_document(tmp_path, spm_copy):
    out = tmp_path / "p.gguf"
    r = ggufkit.edit(spm_copy, patch={"set": {"general.name": "Patched"}, "alignment": 64}, out=out)
    f = ggufkit.open(out)
    assert f.metadata["general.name"] == "Patched" and f.alignment == 64 and f.data_offset % 64 == 0
    assert any(c["change"] == "alignment" for c in r["changes"])


def test_where_the_result_goes_must_be_said_once(spm_copy, tmp_path):
    for kwargs in ({}, {"out": tmp_path / "x.gguf", "in_place": True}):
        with pytest.raises(ggufkit.Error) as e:
            ggufkit.edit(spm_copy, set={"general.name": "x"}, **kwargs)
        assert e.value.kind == "usage"
    with pytest.raises(ggufkit.Error, match="set\\[my.key\\]: cannot be given a object"):
        ggufkit.edit(spm_copy, set={"my.key": object()}, dry_run=True)
    assert not (tmp_path / "x.gguf").exists()


def test_a_value_nested_too_deep_is_refused_not_recursed_into(spm_copy):
    v = []
    for _ in range(100):
        v = [v]
    with pytest.raises(ggufkit.Error, match="nested deeper than 64"):
        ggufkit.edit(spm_copy, set={"my.key": v}, dry_run=True)


def test_a_shard_edits_its_whole_set(tmp_path):
    from conftest import CORPUS
    for i in (1, 2, 3):
        src = CORPUS / "splits" / f"by-count-0000{i}-of-00003.gguf"
        (tmp_path / src.name).write_bytes(src.read_bytes())
    shard2 = tmp_path / "by-count-00002-of-00003.gguf"
    r = ggufkit.edit(shard2, set={"general.name": "Set renamed"}, in_place=True)
    assert r["written"] in ("header", "whole_file")
    assert ggufkit.open(shard2).metadata["general.name"] == "Set renamed"
    assert ggufkit.open(tmp_path / "by-count-00001-of-00003.gguf", shard_only=True).metadata["general.name"] == "Set renamed"


def test_an_edit_of_a_set_reports_shard_ones_real_data_start_and_size(tmp_path):
    # One pipeline fills the report: a set's is shard 1's, before and after, as a file's
    # (it was (0, 0) for a set), and each file written says its own.
    from conftest import CORPUS
    for i in (1, 2, 3):
        src = CORPUS / "splits" / f"by-count-0000{i}-of-00003.gguf"
        (tmp_path / src.name).write_bytes(src.read_bytes())
    first = ggufkit.open(tmp_path / "by-count-00001-of-00003.gguf", shard_only=True)
    r = ggufkit.edit(tmp_path / "by-count-00003-of-00003.gguf", set={"general.name": "x" * 100}, out=tmp_path / "new")
    assert r["data_offset"][0] == first.data_offset == 724704
    assert r["file_size"][0] == (tmp_path / "by-count-00001-of-00003.gguf").stat().st_size
    written = [tmp_path / f"new-0000{k}-of-00003.gguf" for k in (1, 2, 3)]
    assert [f["path"] for f in r["files"]] == [str(w) for w in written]
    one = ggufkit.open(written[0], shard_only=True)
    assert r["data_offset"][1] == one.data_offset == r["files"][0]["data_offset"]
    assert r["file_size"][1] == written[0].stat().st_size == r["files"][0]["file_size"]
    assert r["data_offset"][1] > r["data_offset"][0]
    for f, w in zip(r["files"], written):
        assert f["file_size"] == w.stat().st_size
        assert f["data_offset"] == ggufkit.open(w, shard_only=True).data_offset


def test_an_exception_from_progress_cancels_the_write_and_is_raised(tmp_path):
    out = tmp_path / "out.gguf"
    calls = []

    def stop(written, total):
        calls.append((written, total))
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        ggufkit.edit(TINY, set={"general.name": "never written"}, out=out, progress=stop)
    assert len(calls) == 1 and calls[0][1] > calls[0][0] >= 0
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file


def test_ctrl_c_during_a_write_cancels_it_and_raises_keyboard_interrupt(tmp_path):
    out = tmp_path / "out.gguf"
    with pytest.raises(KeyboardInterrupt):
        ggufkit.edit(TINY, set={"general.name": "never written"}, out=out, progress=sigint_at_first_progress())
    assert list(tmp_path.iterdir()) == []


@contextlib.contextmanager
def interrupted_at(point):
    """A Ctrl-C noted (as Python's handler notes one) at the library's fault point `point`,
    once, and the KeyboardInterrupt it must raise (yielded: pytest's ExceptionInfo)."""
    from ggufkit import _ggufkit

    _ggufkit._interrupt_at(point)
    try:
        with pytest.raises(KeyboardInterrupt) as e:
            yield e
    finally:
        _ggufkit._interrupt_at(None)


def test_ctrl_c_after_the_last_progress_still_stops_the_write_before_its_rename(tmp_path):
    # The final re-read tells no progress: the job's last look for a stop (at `verified`,
    # just before the rename) asks Python itself, so nothing is put in place.
    out = tmp_path / "out.gguf"
    before = digest(TINY)
    with interrupted_at("verified") as e:
        ggufkit.edit(TINY, set={"general.name": "never written"}, out=out)
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file
    assert digest(TINY) == before
    assert not getattr(e.value, "__notes__", None)  # nothing is said to have been written


def test_ctrl_c_once_the_file_is_renamed_says_the_edit_was_made(tmp_path):
    out = tmp_path / "out.gguf"
    with interrupted_at("renamed") as e:
        ggufkit.edit(TINY, set={"general.name": "written"}, out=out)
    assert e.value.__notes__ == ["ggufkit: the stop came after the job was done: what it wrote is in place"]
    assert [p.name for p in tmp_path.iterdir()] == ["out.gguf"]
    assert ggufkit.open(out).metadata["general.name"] == "written"


def test_progress_is_told_the_bytes_written_of_the_total(tmp_path):
    seen = []
    r = ggufkit.edit(TINY, set={"general.name": "progress"}, out=tmp_path / "p.gguf", progress=lambda w, t: seen.append((w, t)))
    size = r["files"][0]["file_size"]
    assert seen and all(t == size for _, t in seen) and seen[-1][0] == size
    assert [w for w, _ in seen] == sorted(w for w, _ in seen)


def test_an_edit_that_changes_nothing_writes_nothing_and_reports_the_sizes_as_they_stay(spm_copy):
    before, size = digest(spm_copy), spm_copy.stat().st_size
    f = ggufkit.open(spm_copy)
    r = ggufkit.edit(spm_copy, patch={}, in_place=True)
    assert r["unchanged"] and r["written"] == "nothing" and r["files"] == []
    assert r["file_size"] == (size, size) and r["data_offset"] == (f.data_offset, f.data_offset)
    assert digest(spm_copy) == before


def test_a_hub_snapshot_is_refused_in_place_and_break_link_replaces_the_link_alone(tmp_path):
    data = SPM.read_bytes()
    name = digest(SPM)
    (tmp_path / "blobs").mkdir()
    blob = tmp_path / "blobs" / name
    blob.write_bytes(data)
    snaps = []
    for rev in ("r1", "r2"):
        (tmp_path / "snapshots" / rev).mkdir(parents=True)
        snaps.append(tmp_path / "snapshots" / rev / "model.gguf")
        snaps[-1].symlink_to(f"../../blobs/{name}")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(snaps[0], set={"general.name": "x"}, in_place=True)
    assert e.value.code == "content_store" and e.value.exit_code == 2 and e.value.file == str(snaps[0])
    assert "a blob of a Hugging Face cache" in str(e.value) and " --" not in str(e.value)
    assert digest(blob) == name
    with pytest.raises(ggufkit.Error):
        ggufkit.edit(snaps[0], set={"general.name": "x"}, out=tmp_path / "o.gguf", break_link=True)
    r = ggufkit.edit(snaps[0], set={"general.name": "x"}, in_place=True, break_link=True)
    assert r["written"] == "whole_file"
    assert not snaps[0].is_symlink() and ggufkit.open(snaps[0]).metadata["general.name"] == "x"
    assert snaps[1].is_symlink() and digest(snaps[1]) == name and digest(blob) == name
    assert entries(tmp_path / "blobs") == [name]


# Tensor surgery: the module's edit() is the command's, byte for byte.
def test_keep_layers_does_what_the_command_does(tmp_path):
    src = tmp_path / "six.gguf"
    cli("example", "--arch", "llama", "--set", "block_count=6", "-o", src)
    r = ggufkit.edit(src, keep_layers="0-3", out=tmp_path / "py.gguf")
    cli("edit", src, "--keep-layers", "0-3", "-o", tmp_path / "cli.gguf")
    assert digest(tmp_path / "py.gguf") == digest(tmp_path / "cli.gguf")
    assert ggufkit.open(tmp_path / "py.gguf").metadata["llama.block_count"] == 4
    removed = [c["tensor"] for c in r["tensor_changes"] if c["change"] == "removed"]
    assert len(removed) == 18 and all(t.startswith(("blk.4.", "blk.5.")) for t in removed)


def test_layers_as_ints_and_a_set_in_and_out(tmp_path):
    first = CORPUS / "splits" / "metadata-first-00001-of-00004.gguf"
    r = ggufkit.edit(first, keep_layers=[1], out=tmp_path / "py")
    cli("edit", first, "--keep-layers", "1", "-o", tmp_path / "cli")
    assert [f["path"].endswith(f"-0000{k}-of-00004.gguf") for k, f in enumerate(r["files"], 1)] == [True] * 4
    for k in range(1, 5):
        assert digest(tmp_path / f"py-0000{k}-of-00004.gguf") == digest(tmp_path / f"cli-0000{k}-of-00004.gguf")
    whole = ggufkit.open(tmp_path / "py-00001-of-00004.gguf")
    assert whole.metadata["llama.block_count"] == 1


def test_a_wrongly_shaped_graft_raises_naming_both_shapes_and_writes_nothing(tmp_path):
    src, donor = tmp_path / "a.gguf", tmp_path / "b.gguf"
    cli("example", "--arch", "llama", "-o", src)
    cli("example", "--arch", "llama", "--set", "feed_forward_length=96", "-o", donor)
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(src, graft=(donor, "blk.0.ffn_up.weight"), out=tmp_path / "out.gguf")
    assert "the donor's is [64, 96]" in str(e.value) and "this model's [64, 128]" in str(e.value)
    assert not (tmp_path / "out.gguf").exists()


def test_a_graft_given_as_bytes_is_a_path_and_keyword_errors_name_the_arguments(tmp_path):
    # Found by the audit: graft=b"..." was read as a list of numbers, tensor surgery's errors
    # said "command line:", and a keep that matched nothing read "tensors=True nomatch".
    src, donor = tmp_path / "a.gguf", tmp_path / "b.gguf"
    cli("example", "--arch", "llama", "-o", src)
    cli("example", "--arch", "llama", "-o", donor)
    r = ggufkit.edit(src, graft=os.fsencode(donor), out=tmp_path / "out.gguf")
    assert [(t["change"], t["from"]) for t in r["tensor_changes"]][:1] == [("replaced", str(donor))]
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(src, rename_tensors={"nomatch": "x"}, out=tmp_path / "out2.gguf")
    assert str(e.value).startswith("arguments: rename_tensors nomatch=x: there is no tensor nomatch"), str(e.value)
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.edit(src, keep_tensors="nomatch", out=tmp_path / "out3.gguf")
    assert "arguments: no tensor matches the globs of the tensors to keep: nomatch" in str(e.value), str(e.value)
    assert "=True" not in str(e.value)
    assert not (tmp_path / "out2.gguf").exists() and not (tmp_path / "out3.gguf").exists()
