#!/usr/bin/env python3
"""The oracle for ggufkit's template renderer: Python's jinja2 set up as Hugging Face
transformers' apply_chat_template sets it up (an immutable sandbox, trim_blocks,
lstrip_blocks, loop controls, the generation tag, its tojson, raise_exception and
strftime_now), rendering every template given with every conversation given.

Reads a job as JSON on standard input:
  {"templates": [PATH...], "conversations": [PATH...], "bos_token": S, "eos_token": S,
   "now": SECONDS}
and prints a JSON list, one entry per template and conversation, in that order:
  {"ok": true, "text": PROMPT} or {"ok": false, "error": "KIND: MESSAGE"}."""
import datetime
import json
import sys

from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """transformers' {% generation %} ... {% endgeneration %}: renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def main():
    job = json.load(sys.stdin)
    now = datetime.datetime.fromtimestamp(job["now"])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise TemplateError(message)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    out = []
    for path in job["templates"]:
        with open(path, encoding="utf-8", newline="") as f:
            source = f.read()
        try:
            template = env.from_string(source)
        except Exception as e:  # noqa: BLE001 - every failure is an answer
            template, error = None, f"{type(e).__name__}: {e}"
        for conv_path in job["conversations"]:
            if template is None:
                out.append({"ok": False, "error": error})
                continue
            with open(conv_path, encoding="utf-8") as f:
                conv = json.load(f)
            kwargs = {k: v for k, v in conv.items() if k not in ("messages", "tools", "documents", "add_generation_prompt")}
            kwargs.setdefault("bos_token", job["bos_token"])
            kwargs.setdefault("eos_token", job["eos_token"])
            try:
                text = template.render(messages=conv["messages"], tools=conv.get("tools"), documents=conv.get("documents"),
                                       add_generation_prompt=conv.get("add_generation_prompt", False), **kwargs)
                out.append({"ok": True, "text": text})
            except Exception as e:  # noqa: BLE001
                out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    json.dump(out, sys.stdout, ensure_ascii=False)


main()
