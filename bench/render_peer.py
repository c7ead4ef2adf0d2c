#!/usr/bin/env python3
"""Times Python's jinja2, set up as transformers sets it up, on the renders bench_render
times: per template, the median of 21 compiles (env.from_string) and, over the
conversations, the worst median of 21 renders. Prints TSV: template, compile ms,
render ms, both ms.   render_peer.py TEMPLATES_DIR CONVERSATIONS_DIR"""
import datetime
import json
import os
import statistics
import sys
import time

from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def raise_exception(message):
    raise TemplateError(message)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
    x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
env.globals["raise_exception"] = raise_exception
now = datetime.datetime.fromtimestamp(1795000000)
env.globals["strftime_now"] = lambda fmt: now.strftime(fmt)


def median_ms(f):
    t = []
    for _ in range(21):
        a = time.perf_counter()
        f()
        t.append((time.perf_counter() - a) * 1000)
    return statistics.median(t)


def main():
    tdir, cdir = sys.argv[1], sys.argv[2]
    convs = []
    for name in sorted(os.listdir(cdir)):
        if name.endswith(".json"):
            with open(os.path.join(cdir, name), encoding="utf-8") as f:
                c = json.load(f)
            kw = {k: v for k, v in c.items() if k not in ("messages", "tools", "documents", "add_generation_prompt")}
            kw.setdefault("bos_token", "<s>")
            kw.setdefault("eos_token", "</s>")
            convs.append(dict(messages=c["messages"], tools=c.get("tools"), documents=c.get("documents"),
                              add_generation_prompt=c.get("add_generation_prompt", False), **kw))
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".jinja"):
            continue
        with open(os.path.join(tdir, name), encoding="utf-8", newline="") as f:
            source = f.read()
        compile_ms = median_ms(lambda: env.from_string(source))
        template = env.from_string(source)

        def render(c):
            try:
                template.render(**c)
            except Exception:  # noqa: BLE001 - a template that refuses: timed to its refusal
                pass

        worst = max(median_ms(lambda: render(c)) for c in convs)
        print(f"{name[:-6]}\t{compile_ms:.3f}\t{worst:.3f}\t{compile_ms + worst:.3f}")


main()
