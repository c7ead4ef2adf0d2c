// The prompt of a conversation under a model's template, and the diff of two prompts.
#include "ggufkit/prompt.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ggufkit/error.h"
#include "ggufkit/inspect.h"
#include "ggufkit/source.h"
#include "ggufkit/text.h"

namespace ggufkit {

jinja::Value read_conversation(const std::string& path) {
  const std::string text = read_small_file(path == "-" ? "/dev/stdin" : path, 64u << 20);
  try {
    jinja::Value v = jinja::from_json(text);
    jinja::chat_context(v, std::nullopt, std::nullopt);  // its shape checked here, before anything else
    return v;
  } catch (const std::invalid_argument& e) {  // a bad input file's content: 1, as a bad patch
    throw Error(Error::Kind::format, path, std::nullopt, "", std::string("is not a conversation: ") + e.what());
  }
}

jinja::RenderOptions render_options(const Context& ctx) {
  jinja::RenderOptions o;
  o.limits.max_time = ctx.render_time_limit;
  o.source_date_epoch = ctx.source_date_epoch;
  return o;
}

std::string render_parsed(const jinja::Template& t, const Model& m, const jinja::Value& conversation, const Context& ctx) {
  std::optional<std::string> bos, eos;
  for (const SpecialToken& st : special_tokens(m))
    if (st.text && (st.name == "bos" || st.name == "eos")) (st.name == "bos" ? bos : eos) = std::string(*st.text);
  return jinja::render(t, jinja::chat_context(conversation, bos, eos), render_options(ctx));
}

std::string render_prompt(const std::string& file, const std::string& key, const std::string& text, const Model& m,
                          const jinja::Value& conversation, const Context& ctx) {
  try {
    return render_parsed(jinja::parse(text), m, conversation, ctx);
  } catch (const jinja::SyntaxError& e) {
    throw Error(Error::Kind::format, file, std::nullopt, key, std::string("the template does not parse: ") + e.what());
  } catch (const jinja::RenderError& e) {
    // raise_exception: the template's own refusal (a TemplateError of ggufkit's, as a slice
    // outside brackets, has always been reported the same way)
    if (e.code == jinja::RenderErrorKind::raise_exception || e.code == jinja::RenderErrorKind::template_error)
      throw Error(Error::Kind::format, file, std::nullopt, key, "the template raised an error at line " + std::to_string(e.line) + ": " + e.message);
    throw Error(Error::Kind::format, file, std::nullopt, key,
                "the template failed at line " + std::to_string(e.line) + ": " + e.kind + ": " + e.message);
  }
}

namespace {

// Lines with their newline; a last line without one is marked as diff marks it.
std::vector<std::string> diff_lines(const std::string& s) {
  std::vector<std::string> out;
  for (size_t at = 0; at < s.size();) {
    size_t nl = s.find('\n', at);
    if (nl == std::string::npos) {
      out.push_back(s.substr(at) + "\n\\ No newline at end of file\n");
      break;
    }
    out.push_back(s.substr(at, nl + 1 - at));
    at = nl + 1;
  }
  return out;
}

}  // namespace

std::string unified_diff(const std::string& a, const std::string& b, const std::string& name_a, const std::string& name_b) {
  if (a == b) return "";
  const std::vector<std::string> x = diff_lines(a), y = diff_lines(b);
  // The longest common subsequence of lines, from the end (prompts are short; past 4M cells
  // the texts are shown as one change).
  const size_t n = x.size(), m = y.size();
  std::vector<std::pair<char, size_t>> ops;  // ' ', '-', '+' with the line's index
  if (n * m <= (4u << 20)) {
    std::vector<uint32_t> L((n + 1) * (m + 1), 0);
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        L[i * (m + 1) + j] = x[i] == y[j] ? L[(i + 1) * (m + 1) + j + 1] + 1 : std::max(L[(i + 1) * (m + 1) + j], L[i * (m + 1) + j + 1]);
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] == y[j]) ops.push_back({' ', i++}), ++j;
      else if (i < n && (j == m || L[(i + 1) * (m + 1) + j] >= L[i * (m + 1) + j + 1])) ops.push_back({'-', i++});  // removals first, as diff
      else ops.push_back({'+', j++});
    }
  } else {
    for (size_t i = 0; i < n; ++i) ops.push_back({'-', i});
    for (size_t j = 0; j < m; ++j) ops.push_back({'+', j});
  }
  std::string out = "--- " + name_a + "\n+++ " + name_b + "\n";
  const size_t ctx = 3;
  for (size_t k = 0; k < ops.size();) {
    if (ops[k].first == ' ') {
      ++k;
      continue;
    }
    // A hunk: from ctx lines before this change to ctx lines after the last change that is
    // within 2 * ctx of the one before it.
    size_t start = k >= ctx ? k - ctx : 0, end = k;
    for (size_t q = k; q < ops.size(); ++q)
      if (ops[q].first != ' ') {
        if (q > end + 2 * ctx) break;
        end = q;
      }
    end = std::min(ops.size(), end + ctx + 1);
    size_t a0 = 0, b0 = 0, ac = 0, bc = 0;
    for (size_t q = 0; q < start; ++q) {
      a0 += ops[q].first != '+';
      b0 += ops[q].first != '-';
    }
    for (size_t q = start; q < end; ++q) {
      ac += ops[q].first != '+';
      bc += ops[q].first != '-';
    }
    out += "@@ -" + std::to_string(ac ? a0 + 1 : a0) + "," + std::to_string(ac) + " +" + std::to_string(bc ? b0 + 1 : b0) + "," +
           std::to_string(bc) + " @@\n";
    for (size_t q = start; q < end; ++q)
      out += ops[q].first + (ops[q].first == '+' ? y[ops[q].second] : x[ops[q].second]);
    k = end;
  }
  return out;
}

std::string preview_prompt(const std::string& file, const Model& m, const jinja::Value& conversation, bool* rendered,
                           const Context& ctx) {
  if (rendered) *rendered = false;
  const Value* t = m.find("tokenizer.chat_template");
  if (!t || t->type != ValueType::string) return "[no tokenizer.chat_template]\n";
  try {
    std::string prompt = render_prompt(file, "tokenizer.chat_template", t->str, m, conversation, ctx);
    if (rendered) *rendered = true;
    return prompt;
  } catch (const Error& e) {
    return "[" + e.message + "]\n";
  }
}

}  // namespace ggufkit
