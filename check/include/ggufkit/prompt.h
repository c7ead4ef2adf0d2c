#pragma once
// The prompt a model's chat template gives a conversation, as transformers'
// apply_chat_template renders it with the model's bos and eos tokens.
#include <string>

#include "ggufkit/context.h"
#include "ggufkit/jinja.h"
#include "ggufkit/jinja_render.h"
#include "ggufkit/model.h"

namespace ggufkit {

// A conversation to render a template with, from a JSON file (or - for standard input):
// messages, optionally tools, documents, add_generation_prompt and other variables. A
// format Error names the file and the byte when it is not one.
jinja::Value read_conversation(const std::string& path);

// The prompt the template `text` (stored under `key` of `file`) gives for `conversation`.
// A template that does not parse, that raises or that hits a sandbox limit is a format
// Error naming the file, the key and the template's line.
std::string render_prompt(const std::string& file, const std::string& key, const std::string& text, const Model& m,
                          const jinja::Value& conversation, const Context& ctx = {});

// The same of a parsed template, its RenderError as it is.
std::string render_parsed(const jinja::Template& t, const Model& m, const jinja::Value& conversation, const Context& ctx = {});

// The sandbox's limits, its time limit and clock the call's (ctx).
jinja::RenderOptions render_options(const Context& ctx);

// The prompt the model's default template (tokenizer.chat_template) gives, or what stops
// it, in brackets: a preview shows it; it is no reason to refuse an edit.
// `rendered`, where given, says whether it is the prompt.
std::string preview_prompt(const std::string& file, const Model& m, const jinja::Value& conversation, bool* rendered = nullptr,
                           const Context& ctx = {});

// A unified diff of two texts by lines (3 lines of context), as `diff -u` writes it;
// empty when they are the same.
std::string unified_diff(const std::string& a, const std::string& b, const std::string& name_a, const std::string& name_b);

}  // namespace ggufkit
