"""Python's jinja2 set up as Hugging Face transformers' apply_chat_template sets it up: an
immutable sandbox, trim_blocks, lstrip_blocks, loop controls, the {% generation %} tag,
a tojson that keeps non-ASCII, raise_exception and strftime_now. The oracles and the
bench share it."""
import datetime
import json

from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """transformers' {% generation %} ... {% endgeneration %}: renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def environment(now=None):
    """The environment; strftime_now reads `now` (seconds since the epoch) when given."""

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise TemplateError(message)

    def strftime_now(fmt):
        when = datetime.datetime.fromtimestamp(now) if now is not None else datetime.datetime.now()
        return when.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_kwargs(conv, bos_token, eos_token):
    """What apply_chat_template renders a conversation (as the tests keep it) with: tools and
    documents none when absent, the tokens unless the conversation sets them."""
    kwargs = {k: v for k, v in conv.items() if k not in ("messages", "tools", "documents", "add_generation_prompt")}
    kwargs.setdefault("bos_token", bos_token)
    kwargs.setdefault("eos_token", eos_token)
    return dict(messages=conv["messages"], tools=conv.get("tools"), documents=conv.get("documents"),
                add_generation_prompt=conv.get("add_generation_prompt", False), **kwargs)
