// libFuzzer: the renderer on any template and any conversation. The input is template
// text, then optionally a NUL byte and the conversation as JSON (without one, a
// conversation with a system message, tools, a tool call and its result). A syntax
// error, a render error (the template's own, or a sandbox limit) and JSON that is no
// conversation are answers; anything else (a crash, a sanitizer report, an escaped
// exception, a stack overflow, a hang past libFuzzer's timeout) is a finding.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "ggufkit/jinja.h"
#include "ggufkit/jinja_render.h"

namespace {

const char* kConversation = R"({"messages": [
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Weather in Paris?\n«ok» 日本"},
  {"role": "assistant", "content": "", "tool_calls": [{"id": "abc123def", "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
  {"role": "tool", "tool_call_id": "abc123def", "name": "get_weather", "content": "18 C"},
  {"role": "assistant", "content": "18 °C."}],
 "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
 "add_generation_prompt": true})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace jinja = ggufkit::jinja;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nul = in.find('\0');
  std::string_view text = in.substr(0, nul), conv = nul == std::string_view::npos ? kConversation : in.substr(nul + 1);
  jinja::RenderOptions opt;  // small limits: a render is a few milliseconds, not libFuzzer's timeout
  opt.limits.max_iterations = 20000;
  opt.limits.max_output = 1 << 20;
  opt.limits.max_time = std::chrono::milliseconds(250);
  opt.now = 0;
  try {
    jinja::Value context = jinja::chat_context(jinja::from_json(conv), "<s>", "</s>");
    std::string out = jinja::render(jinja::parse(text), context, opt);
    if (out.size() > opt.limits.max_output) __builtin_trap();  // the output limit held
  } catch (const jinja::SyntaxError&) {
  } catch (const jinja::RenderError&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
