#!/usr/bin/env python3
"""The oracle for ggufkit's Jinja parser: Python's jinja2 set up as Hugging Face transformers
sets it up (a sandbox, trim_blocks, lstrip_blocks, loop controls, the generation tag).

For each file named, prints one line: `ok`, or `error LINE MESSAGE` for a syntax error."""
import os
import sys

from jinja2 import TemplateSyntaxError

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_env import environment  # noqa: E402

env = environment()
for path in sys.argv[1:]:
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    try:
        env.parse(text)
        print("ok")
    except TemplateSyntaxError as e:
        print("error", e.lineno, " ".join(str(e.message).split()))
