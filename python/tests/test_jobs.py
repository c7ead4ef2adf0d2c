"""The rest of the front door from Python gives what the commands give: render (template
--render), tokenize (tokenize --ids), validate (validate --json), replica, extract --vocab-only
and corrupt (its manifest); and the type stubs name what the module has."""
import ast
import json
import os
import pathlib

import pytest

import ggufkit
from conftest import CORPUS, SPM, TINY, cli, cli_json, digest

VOCABS = sorted((CORPUS / "vocab").glob("*.gguf"))
TEXTS = ["Hello world", " leading space and  two", "<s>[INST] special? [/INST]", "héllo ☃ 😀 \n\t tabs", ""]


@pytest.mark.parametrize("path", VOCABS, ids=lambda p: p.name)
def test_tokenize_gives_the_ids_the_command_gives(path):
    f = ggufkit.open(path)
    for text in TEXTS:
        for add, parse in ((True, True), (False, False)):
            args = ["tokenize", path, "--text", text, "--ids"] + (["--no-add-special"] if not add else []) + (["--no-parse-special"] if not parse else [])
            want = [int(x) for x in cli(*args).stdout.split()]
            assert ggufkit.tokenize(path, text, add_special=add, parse_special=parse) == want, (text, add, parse)
            assert f.tokenize(text, add_special=add, parse_special=parse) == want
    assert f.tokenize(TEXTS[0].encode()) == f.tokenize(TEXTS[0])  # bytes are the text's bytes


def test_a_file_without_a_vocabulary_cannot_tokenize(tmp_path):
    out = tmp_path / "novocab.gguf"
    ggufkit.write({"metadata": [{"key": "general.architecture", "type": "string", "value": "llama"}]}, out)
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.tokenize(out, "x")
    assert e.value.field == "tokenizer.ggml.model" and "no vocabulary" in str(e.value)


def test_render_gives_the_prompt_the_command_renders(tmp_path):
    conv = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"}]}
    (tmp_path / "c.json").write_text(json.dumps(conv))
    assert ggufkit.render(TINY, conv) == cli("template", TINY, "--render", tmp_path / "c.json").stdout.decode()
    with_gen = ggufkit.render(TINY, conv, add_generation_prompt=True)
    assert with_gen == cli("template", TINY, "--render", tmp_path / "c.json", "--add-generation-prompt").stdout.decode()
    assert with_gen.endswith("<|assistant|>\n") and with_gen.startswith("<|system|>\nBe brief.</s>\n")
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.render(TINY, conv, name="tool_use")
    assert e.value.field == "tokenizer.chat_template.tool_use"
    with pytest.raises(ggufkit.Error, match="is not a conversation"):
        ggufkit.render(TINY, {"messages": "not a list"})


@pytest.mark.parametrize("path", [TINY, SPM, CORPUS / "splits" / "by-count-00001-of-00003.gguf"], ids=lambda p: p.name)
def test_validate_finds_what_the_command_finds(path):
    want = cli_json("validate", "--json", path)
    got = ggufkit.validate(path)
    assert [(f.code, f.severity, f.offset, f.message) for f in got] == [
        (f["code"], f["severity"], f.get("offset"), f["message"]) for f in want["findings"]]
    assert [(f.code, f.offset) for f in ggufkit.open(path).validate()] == [(f.code, f.offset) for f in got]


def test_validate_reports_a_broken_eos_with_its_offset(tmp_path):
    out = tmp_path / "broken.gguf"
    ggufkit.edit(SPM, set={"tokenizer.ggml.eos_token_id": 99999}, out=out, allow_broken=True)
    at = ggufkit.open(out).metadata.value_offset("tokenizer.ggml.eos_token_id")
    errors = [f for f in ggufkit.validate(out) if f.severity == "error"]
    assert [(f.code, f.field) for f in errors] == [("token_id", "tokenizer.ggml.eos_token_id")]
    assert errors[0].offset == at and errors[0].file == str(out)


def test_replica_extract_and_corrupt_write_what_the_commands_write(tmp_path):
    r = ggufkit.replica(TINY, tmp_path / "rep.gguf")
    cli("replica", TINY, "-o", tmp_path / "rep-cli.gguf")
    assert digest(tmp_path / "rep.gguf") == digest(tmp_path / "rep-cli.gguf")
    f = r["files"][0]
    assert f["file_size"] == TINY.stat().st_size and f["header_bytes"] == ggufkit.open(TINY).data_offset
    assert set(ggufkit.open(tmp_path / "rep.gguf").tensor_bytes("output_norm.weight").tobytes()) == {0}

    e = ggufkit.extract_vocab(TINY, tmp_path / "vocab.gguf")
    cli("extract", TINY, "--vocab-only", "-o", tmp_path / "vocab-cli.gguf")
    assert digest(tmp_path / "vocab.gguf") == digest(tmp_path / "vocab-cli.gguf")
    assert e["tensors_dropped"] == 21 and e["keys_kept"] == len(ggufkit.open(tmp_path / "vocab.gguf").metadata)

    entries = ggufkit.corrupt(SPM, tmp_path / "py", count=5)
    cli("corrupt", SPM, "-o", tmp_path / "cli", "--count", "5")
    manifest = json.loads((tmp_path / "cli" / "manifest.json").read_text())
    assert [x["file"] for x in entries] == ["0001.gguf", "0002.gguf", "0003.gguf", "0004.gguf", "0005.gguf"]
    for x in entries:
        assert digest(tmp_path / "py" / x["file"]) == digest(tmp_path / "cli" / x["file"])
    assert entries == manifest["files"]  # each entry as the manifest lists it


def test_the_stubs_name_every_public_name_of_the_module():
    stub = pathlib.Path(ggufkit.__file__).with_name("__init__.pyi")
    tree = ast.parse(stub.read_text())
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    public = {n for n in dir(ggufkit) if not n.startswith("_")}
    assert public - names == set()
    for cls in ("File", "Tensor", "Span", "Finding", "Error"):
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
        declared = {t.target.id for t in node.body if isinstance(t, ast.AnnAssign)} | {t.name for t in node.body if isinstance(t, ast.FunctionDef)}
        have = {n for n in dir(getattr(ggufkit, cls)) if not n.startswith("_")}
        if cls == "Error":
            have = {"file", "offset", "field", "code", "kind", "exit_code", "message", "findings"}
        assert have - declared == set(), cls
    assert ggufkit.open.__doc__ and ggufkit.edit.__doc__ and ggufkit.File.tensor_bytes.__doc__


def test_validate_takes_the_dialect_whose_loader_judges_as_the_command_does(tmp_path):
    # iq4_ks is ik_llama.cpp's: an error for mainline, a warning under dialect ik_llama.
    out = tmp_path / "ik.gguf"
    ggufkit.write({"version": 3, "metadata": [{"key": "general.architecture", "type": "string", "value": "llama"}],
                   "tensors": [{"name": "a.weight", "type": "iq4_ks", "dims": [256, 2], "fill": "zeros"}]}, out)
    def ik(findings):
        return [(f.code, f.severity, f.offset) for f in findings if f.code == "tensor_type_ik"]
    main = ik(ggufkit.validate(out))
    assert [(c, s) for c, s, _ in main] == [("tensor_type_ik", "error")]
    assert ik(ggufkit.validate(out, dialect="ik_llama")) == [("tensor_type_ik", "warning", main[0][2])]
    assert ik(ggufkit.open(out).validate(dialect="ik_llama")) == [("tensor_type_ik", "warning", main[0][2])]
    want = [(f["code"], f["severity"], f.get("offset")) for f in json.loads(cli("validate", "--json", "--dialect", "ik_llama", out, check=False).stdout)["findings"]
            if f["code"] == "tensor_type_ik"]
    assert want == [("tensor_type_ik", "warning", main[0][2])]
    with pytest.raises(ggufkit.Error) as e:
        ggufkit.validate(out, dialect="ollama")
    assert "'ollama' is not one: give llama.cpp (mainline, the default) or ik_llama" in str(e.value)
