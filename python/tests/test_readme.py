"""The README's two Python examples run as written: the test-suite one passes, the
publishing one fixes a template in place as the header alone."""
import os
import pathlib
import re

import ggufkit
from conftest import TINY

README = pathlib.Path(__file__).parents[2] / "README.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_test_suite_example_passes(tmp_path):
    code = next(b for b in blocks() if "def test_reader_sees_the_vocabulary" in b)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    scope["test_reader_sees_the_vocabulary"](tmp_path)
    assert ggufkit.open(tmp_path / "tiny.gguf").metadata["tokenizer.ggml.eos_token_id"] == 2


def test_the_numpy_example_passes(tmp_path):
    code = next(b for b in blocks() if "def test_reader_decodes_a_matrix" in b)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    scope["test_reader_decodes_a_matrix"](tmp_path)
    assert ggufkit.open(tmp_path / "m.gguf").tensor("w").nbytes == 48


def test_the_publishing_example_fixes_the_template_in_place(tmp_path, capsys, monkeypatch):
    code = next(b for b in blocks() if "chat_template=fixed" in b)
    (tmp_path / "model.gguf").write_bytes(TINY.read_bytes())
    fixed = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}"
    old = ggufkit.open(TINY).metadata["tokenizer.chat_template"]
    fixed += "{#" + "-" * (len(old) - len(fixed) - 4) + "#}"  # as long as the old one: the header keeps its size
    (tmp_path / "chat_template.jinja").write_text(fixed)
    size, data_offset = (tmp_path / "model.gguf").stat().st_size, ggufkit.open(tmp_path / "model.gguf").data_offset
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out == "<|user|>\nHello!</s>\n<|assistant|>\n\nheader [user] Hello!\n[assistant]\n"
    f = ggufkit.open(tmp_path / "model.gguf")
    assert (f.file_size, f.data_offset) == (size, data_offset)
    assert sorted(os.listdir(tmp_path)) == ["chat_template.jinja", "model.gguf"]
