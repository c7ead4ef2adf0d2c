#pragma once
// Python's string formatting as jinja2's sandbox runs it (`fmt % x`, the format filter,
// str.format and format_map), jinja2's helper globals cycler, joiner and lipsum, and the
// clock strftime_now reads.

#include <ctime>
#include <string>

#include "renderer.h"

namespace ggufkit::jinja {

// `fmt % right` as Python's str.__mod__: right is a tuple (its items are the arguments), a
// mapping (for %(key)s), or one value. A Markup fmt escapes what it takes in, as markupsafe's.
Value percent_format(Renderer& r, const Value& fmt, const Value& right, int line);
// The format filter: `value|format(*args)` or `value|format(**kwargs)`.
Value format_filter(Renderer& r, const Value& value, const CallArgs& a, int line);
// fmt.format(*args, **kwargs) (or fmt.format_map(m)) through jinja2's SandboxedFormatter.
Value str_format(Renderer& r, const Value& fmt, const CallArgs& a, bool format_map, int line);

// cycler(*items), joiner(sep=", "), lipsum(n=5, html=True, min=20, max=100).
void add_helper_globals(Frame& globals);

// What strftime_now reads: RenderOptions::now (local time), else SOURCE_DATE_EPOCH (UTC,
// the reproducible-builds convention), else the clock (local time).
std::tm strftime_clock(const RenderOptions& o, int line);

}  // namespace ggufkit::jinja
