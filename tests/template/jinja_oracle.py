#!/usr/bin/env python3
"""The oracle for ggufkit's Jinja parser: Python's jinja2 set up as Hugging Face transformers
sets it up (a sandbox, trim_blocks, lstrip_blocks, loop controls, the generation tag).

For each file named, prints one line: `ok`, or `error LINE MESSAGE` for a syntax error."""
import sys

from jinja2 import TemplateSyntaxError, nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """transformers' {% generation %} ... {% endgeneration %}: renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, Generation])
for path in sys.argv[1:]:
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    try:
        env.parse(text)
        print("ok")
    except TemplateSyntaxError as e:
        print("error", e.lineno, " ".join(str(e.message).split()))
