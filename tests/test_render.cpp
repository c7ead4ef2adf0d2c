// Rendering chat templates: byte for byte what Python's jinja2 gives in Hugging Face's
// environment (the oracle, tests/template/render_oracle.py, run through Debian's
// python3-jinja2), for every corpus template and every conversation in
// tests/template/conversations; an error where jinja2 raises. Then the sandbox's limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "ggufkit/jinja.h"
#include "ggufkit/jinja_render.h"
#include "helpers.h"

using namespace testing_helpers;
namespace fs = std::filesystem;
namespace jinja = ggufkit::jinja;

namespace {

const int64_t kNow = 1795000000;  // strftime_now's clock in both renderers: 2026-11-18

struct Outcome {
  bool ok = false;
  std::string text;  // the prompt, or the error
};

Outcome ours(const std::string& source, const jinja::Value& conversation) {
  try {
    jinja::Template t = jinja::parse(source);
    jinja::RenderOptions opt;
    opt.now = kNow;
    return {true, jinja::render(t, jinja::chat_context(conversation, "<s>", "</s>"), opt)};
  } catch (const std::exception& e) {
    return {false, e.what()};
  }
}

// Where two texts first differ, with a little of each.
std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t from = i > 30 ? i - 30 : 0;
  return "at byte " + std::to_string(i) + ": jinja2 \"" + a.substr(from, 80) + "\" | ggufkit \"" + b.substr(from, 80) + "\"";
}

}  // namespace

TEST(Render, EveryCorpusTemplateAgreesWithJinja2ForEveryConversation) {
  const std::vector<std::string> templates = sorted_files(corpus("templates"), ".jinja");
  const std::vector<std::string> convs = sorted_files(std::string(GGUFKIT_SOURCE) + "/tests/template/conversations", ".json");
  ASSERT_EQ(templates.size(), 42u);
  ASSERT_GE(convs.size(), 8u);
  // One run of the oracle for all pairs.
  std::string job = "{\"templates\": [";
  for (size_t i = 0; i < templates.size(); ++i) job += (i ? ", " : "") + jinja::to_json(jinja::Value::string(templates[i]));
  job += "], \"conversations\": [";
  for (size_t i = 0; i < convs.size(); ++i) job += (i ? ", " : "") + jinja::to_json(jinja::Value::string(convs[i]));
  job += "], \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"now\": " + std::to_string(kNow) + "}";
  const std::string job_path = temp_path("render-job.json"), out_path = temp_path("render-oracle.json");
  write_file_bytes(job_path, std::vector<uint8_t>(job.begin(), job.end()));
  ASSERT_EQ(std::system(("python3 " + std::string(GGUFKIT_SOURCE) + "/tests/template/render_oracle.py < " + job_path + " > " +
                         out_path)
                            .c_str()),
            0);
  jinja::Value oracle = jinja::from_json(slurp(out_path));
  ASSERT_EQ(oracle.list->size(), templates.size() * convs.size());

  std::vector<jinja::Value> conversations;
  for (const std::string& c : convs) conversations.push_back(jinja::from_json(slurp(c)));
  size_t agree = 0, raised = 0;
  std::vector<std::string> differ;
  std::string errors;
  std::string table = "templates x conversations (= same prompt, e both raise, X differ)\n";
  for (size_t t = 0; t < templates.size(); ++t) {
    const std::string source = slurp(templates[t]);
    std::string row;
    for (size_t c = 0; c < convs.size(); ++c) {
      const jinja::Value& want = (*oracle.list)[t * convs.size() + c];
      const bool want_ok = want.dict->find("ok")->i != 0;
      Outcome got = ours(source, conversations[c]);
      std::string name = fs::path(templates[t]).stem().string() + " x " + fs::path(convs[c]).stem().string();
      if (want_ok && got.ok && got.text == want.dict->find("text")->s) {
        ++agree;
        row += " =";
      } else if (!want_ok && !got.ok) {
        ++raised;
        row += " e";
        // The same kind of error with the same message (ggufkit adds the line).
        const std::string& why = want.dict->find("error")->s;
        const size_t colon = why.find(": ");
        EXPECT_EQ(got.text.substr(0, got.text.find(" (line")), why.substr(0, colon)) << name;
        EXPECT_EQ(got.text.substr(got.text.find("): ") + 3), why.substr(colon + 2)) << name;
        errors += "  " + name + ": jinja2 " + why + " | ggufkit " + got.text + "\n";
      } else {
        row += " X";
        differ.push_back(name + ": " +
                         (want_ok && got.ok ? first_difference(want.dict->find("text")->s, got.text)
                          : want_ok         ? "jinja2 renders, ggufkit raises: " + got.text
                                            : "jinja2 raises (" + want.dict->find("error")->s + "), ggufkit renders"));
      }
    }
    char name[48];
    std::snprintf(name, sizeof name, "%-46.46s", fs::path(templates[t]).stem().string().c_str());
    table += name + row + "\n";
  }
  std::printf("%s%zu pairs: %zu the same prompt, %zu raise in both, %zu differ\nwhere both raise:\n%s", table.c_str(),
              templates.size() * convs.size(), agree, raised, differ.size(), errors.c_str());
  for (const std::string& d : differ) ADD_FAILURE() << d;
  // Most pairs render: a table of errors would prove little.
  EXPECT_GE(agree, templates.size() * convs.size() * 3 / 4);
}

namespace {

// What rendering `source` (no variables) throws: "KIND: message".
std::string failure(const std::string& source, const jinja::RenderOptions& opt = {}) {
  try {
    jinja::render(jinja::parse(source), jinja::Value::new_dict(), opt);
  } catch (const jinja::RenderError& e) {
    return e.kind + ": " + e.message;
  }
  return "rendered";
}

}  // namespace

// Item 4: the sandbox. Each limit stops a template built to exceed it, with an error that
// names the limit, long before the time limit would.
TEST(RenderSandbox, LoopIterationsAreCounted) {
  jinja::RenderOptions opt;  // the time limit out of the way (a sanitized build is slower)
  opt.limits.max_time = std::chrono::seconds(600);
  EXPECT_EQ(failure("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", opt),
            "LimitError: more than 200000 loop iterations (the sandbox's limit)");
  // jinja2's own sandbox refuses a range past 100,000 items, and so does ggufkit.
  EXPECT_EQ(failure("{% for i in range(10**9) %}{% endfor %}"),
            "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  // A loop that recurses through itself counts too.
  EXPECT_EQ(failure("{% for x in range(100000) recursive %}{% if loop.depth < 3 %}{{ loop(range(100000)) }}{% endif %}{% endfor %}",
                    opt),
            "LimitError: more than 200000 loop iterations (the sandbox's limit)");
  // So does a loop's filter.
  EXPECT_EQ(failure("{% for i in range(100000) %}{% for j in range(100000) if j > 1 %}{% endfor %}{% endfor %}", opt),
            "LimitError: more than 200000 loop iterations (the sandbox's limit)");
}

TEST(RenderSandbox, RecursionIsBounded) {
  EXPECT_EQ(failure("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
            "LimitError: calls nest deeper than 100 (the sandbox's recursion limit)");
  EXPECT_EQ(failure("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}"),
            "LimitError: calls nest deeper than 100 (the sandbox's recursion limit)");
  // A macro that is called 100 deep is fine.
  EXPECT_EQ(jinja::render(jinja::parse("{% macro f(n) %}{% if n < 99 %}{{ f(n + 1) }}{% else %}{{ n }}{% endif %}{% endmacro %}{{ f(0) }}"),
                          jinja::Value::new_dict()),
            "99");
}

TEST(RenderSandbox, OutputAndStringsAreBounded) {
  // Refused before a byte is built: 10**12 bytes.
  EXPECT_EQ(failure("{{ 'x' * 10**12 }}"),
            "LimitError: a string of 16777217 bytes is longer than the sandbox's output limit of 16777216 bytes");
  jinja::RenderOptions untimed;  // the time limit out of the way (a sanitized build is slower)
  untimed.limits.max_time = std::chrono::seconds(600);
  EXPECT_EQ(failure("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", untimed),
            "LimitError: a string of 16778000 bytes is longer than the sandbox's output limit of 16777216 bytes");
  jinja::RenderOptions small;
  small.limits.max_output = 10;
  EXPECT_EQ(failure("{{ 'abcdef' ~ 'ghijkl' }}", small),
            "LimitError: a string of 12 bytes is longer than the sandbox's output limit of 10 bytes");
  EXPECT_EQ(failure("{{ [1, 2] | join('0123456789') }}", small),
            "LimitError: a string of 12 bytes is longer than the sandbox's output limit of 10 bytes");
  EXPECT_EQ(failure("{{ 'abcde' ~ 'fghij' }}", small), "rendered");
}

TEST(RenderSandbox, TimeIsBounded) {
  // Under every other limit, but slow: 100,000 strings of 100 kB built one after another.
  jinja::RenderOptions opt;
  opt.limits.max_time = std::chrono::milliseconds(100);
  EXPECT_EQ(failure("{% for i in range(100000) %}{% set s = 'y' * 100000 %}{% endfor %}", opt),
            "LimitError: the render took longer than 100 ms (the sandbox's time limit)");
  // The default: half a second, which no real template comes near.
  EXPECT_EQ(jinja::RenderLimits{}.max_time, std::chrono::milliseconds(500));
}

namespace {

// What rendering `source` with the variable s (a 16 MB string, as a message's content
// could be) throws: "KIND: message".
std::string failure_on(const std::string& source, const std::string& s, const jinja::RenderOptions& opt = {}) {
  jinja::Value ctx = jinja::Value::new_dict();
  ctx.dict->set(jinja::Value::string("s"), jinja::Value::string(s));
  try {
    jinja::render(jinja::parse(source), ctx, opt);
  } catch (const jinja::RenderError& e) {
    return e.kind + ": " + e.message;
  }
  return "rendered";
}

const char* const kMemory = "LimitError: more than 67108864 bytes of values held at once (the sandbox's memory limit)";
std::string too_long(uint64_t n) {
  return "LimitError: a string of " + std::to_string(n) + " bytes is longer than the sandbox's output limit of 16777216 bytes";
}

}  // namespace

// Item 9: values copied from a 16 MB string held the render's memory, not its output: each
// copy is charged to a budget of 64 MiB of values before it is made, and long strings are
// refused as they grow, not once they are built.
TEST(RenderSandbox, TheNineBombsOnASixteenMegabyteStringStopWithTheLimitTheyMeet) {
  jinja::RenderOptions untimed;  // the limit met is the memory or the output, not the clock
  untimed.limits.max_time = std::chrono::seconds(600);
  const std::string s(16'000'000, 'x'), words = [] {
    std::string w;
    for (int i = 0; i < 8'000'000; ++i) w += "x ";
    return w;
  }();
  EXPECT_EQ(failure_on("{{ s|list }}", s, untimed), kMemory);
  EXPECT_EQ(failure_on("{{ s|sort }}", s, untimed), kMemory);
  EXPECT_EQ(failure_on("{{ s.split() }}", words, untimed), kMemory);
  EXPECT_EQ(failure_on("{{ [s] * 1000000 }}", s, untimed), kMemory);
  EXPECT_EQ(failure_on("{{ (s,) * 300 }}", s, untimed), too_long(32'000'007));  // the tuple's text, refused as it grows
  EXPECT_EQ(failure_on("{{ (['x' * 15000000] * 1000) | join }}", s, untimed), too_long(30'000'000));
  EXPECT_EQ(failure_on("{% set ns = namespace(l=[s]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}", s, untimed),
            kMemory);
  EXPECT_EQ(failure_on("{{ [s] | tojson(indent=10**9) }}", s, untimed), too_long(1'000'000'000));  // the indent itself
  EXPECT_EQ(failure_on("{{ s | indent(10**9) }}", s, untimed), too_long(1'000'000'000));
}

TEST(RenderSandbox, TheBombsKinStopToo) {
  jinja::RenderOptions untimed;
  untimed.limits.max_time = std::chrono::seconds(600);
  const std::string s(16'000'000, 'x');
  // Strings the render holds at once count, however they were made: 5 x 16 MB.
  EXPECT_EQ(failure_on("{% set a = s ~ '1' %}{% set b = s ~ '2' %}{% set c = s ~ '3' %}{% set d = s ~ '4' %}{% set e = s ~ '5' %}", "",
                       untimed),
            "rendered");  // s is empty here
  EXPECT_EQ(failure_on("{% set a = s ~ '1' %}{% set b = s ~ '2' %}{% set c = s ~ '3' %}{% set d = s ~ '4' %}{% set e = s ~ '5' %}", s,
                       untimed),
            kMemory);
  // A list of every code point, sliced, or as a tuple's items.
  EXPECT_EQ(failure_on("{{ s[1:] | length }}{{ s[0] }}{{ s[-1] }}", s, untimed), "rendered");
  EXPECT_EQ(failure_on("{% set l = s|list %}", s.substr(0, 300'000), untimed), "rendered");
  EXPECT_EQ(failure_on("{% set a, b = s %}", s, untimed), kMemory);
  // An indent under the output limit, repeated by a list's items or a string's lines.
  EXPECT_EQ(failure_on("{{ [1, 2, 3] | tojson(indent=10**7) }}", s, untimed), too_long(20'000'005));
  EXPECT_EQ(failure_on("{{ ('a\\n' * 1000) | indent(10**7) }}", s, untimed), too_long(20'000'005));
  EXPECT_EQ(failure_on("{{ ('\\n' * 16000000) | indent }}", s, untimed), "rendered");
  // Stripped by code point from each end, with no list of them; a batch filled a billion times.
  jinja::Value ctx = jinja::Value::new_dict();
  ctx.dict->set(jinja::Value::string("s"), jinja::Value::string(s));
  EXPECT_EQ(jinja::render(jinja::parse("{{ (s ~ 'ab').strip('xb') }}|{{ ('\u00e9a' ~ s).lstrip('\u00e9') | length }}|"
                                       "{{ '\u00e9a\u20ac\u00e9'.strip('\u00e9\u20ac') }}|{{ 'xax'.rstrip('x') }}"),
                          ctx, untimed),
            "a|16000001|a|xa");
  EXPECT_EQ(failure_on("{{ [1] | batch(10**9, 0) | list }}", s, untimed), kMemory);
  // A replacement that grows the string, and a repr of a dict holding it twice.
  EXPECT_EQ(failure_on("{{ s.replace('x', 'yy') | length }}", s, untimed), too_long(16'777'218));
  EXPECT_EQ(failure_on("{{ {'a': s, 'b': s} }}", s, untimed), too_long(32'000'017));
  EXPECT_EQ(failure_on("{{ [s, s] | tojson }}", s, untimed), too_long(32'000'007));
}

// The time limit is checked inside a filter's own loop, not only between expressions: with
// no time at all, each stops inside its loop.
TEST(RenderSandbox, TheTimeLimitIsCheckedInsideTheFiltersLoops) {
  jinja::RenderOptions none;
  none.limits.max_time = std::chrono::milliseconds(0);
  const std::string late = "LimitError: the render took longer than 0 ms (the sandbox's time limit)";
  const std::string s(200'000, 'x');
  std::string words;
  for (int i = 0; i < 100'000; ++i) words += "x ";
  EXPECT_EQ(failure_on("{{ s|list|length }}", s, none), late);
  EXPECT_EQ(failure_on("{{ s|sort|length }}", s, none), late);
  EXPECT_EQ(failure_on("{{ s|unique|list|length }}", s, none), late);
  EXPECT_EQ(failure_on("{{ s.split()|length }}", words, none), late);
  EXPECT_EQ(failure_on("{{ s.split(' ')|length }}", words, none), late);
  EXPECT_EQ(failure_on("{{ s|length }}", s, none), "rendered");  // no loop of its own: no check on the way
  EXPECT_EQ(failure_on("{{ s.split()|join(',')|length }}", words, none), late);
  EXPECT_EQ(failure_on("{{ s.split()|tojson|length }}", words, none), late);
  EXPECT_EQ(failure_on("{{ s.replace(' ', '\\n')|indent|length }}", words, none), late);
}

// Item 10: a value's string is held once, however often it is read: 60 reads of a 10 MB
// string, read from the conversation or made by the template, cost no more than one.
TEST(RenderSandbox, AStringReadManyTimesIsHeldOnce) {
  jinja::RenderOptions untimed;
  untimed.limits.max_time = std::chrono::seconds(600);
  jinja::Value msg = jinja::Value::new_dict();
  msg.dict->set(jinja::Value::string("content"), jinja::Value::string(std::string(10'000'000, 'y')));
  jinja::Value ctx = jinja::Value::new_dict();
  ctx.dict->set(jinja::Value::string("m"), msg);
  for (const std::string first : {"{% set c = m.content %}", "{% set c = 'y' * 10000000 %}"}) {
    std::string many = first + "{% set ns = namespace(l=[]) %}";
    for (int i = 0; i < 30; ++i) many += "{% set ns.l = ns.l + [c, m['content'] | string] %}";
    many += "{{ ns.l | length }} {{ ns.l[59] | length }} {{ ns.l[58] == c }}";
    EXPECT_EQ(jinja::render(jinja::parse(many), ctx, untimed), "60 10000000 True") << first;
  }
  // A copy the template makes is charged: seven of them pass the budget.
  std::string copies = "{% set ns = namespace(l=[]) %}";
  for (int i = 0; i < 7; ++i) copies += "{% set ns.l = ns.l + [m.content ~ ''] %}";
  try {
    jinja::render(jinja::parse(copies), ctx, untimed);
    ADD_FAILURE() << "rendered";
  } catch (const jinja::RenderError& e) {
    EXPECT_EQ(e.kind + ": " + e.message, kMemory);
  }
  EXPECT_EQ(jinja::RenderLimits{}.max_memory, 64u << 20);
}

namespace {

std::string json_error(const std::string& text, uint64_t max_bytes = 256u << 20) {
  try {
    jinja::from_json(text, max_bytes);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "read";
}

}  // namespace

// Item 13: conversations as Python's json.dump writes them: every emoji as a surrogate pair.
TEST(RenderJson, ASurrogatePairIsOneCodePointAndALoneSurrogateIsRefusedWhereItStands) {
  EXPECT_EQ(jinja::from_json(R"("\ud83d\ude00")").s, "\xF0\x9F\x98\x80");
  EXPECT_EQ(jinja::from_json(R"("a\uD83D\uDE00b\u00e9\u20ac")").s, "a\xF0\x9F\x98\x80" "b\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(jinja::from_json(R"("\udbff\udfff")").s, "\xF4\x8F\xBF\xBF");  // the last code point
  // Python's json.loads keeps a lone half, but no UTF-8 text can hold it: refused, at its
  // backslash, rather than written as the invalid bytes ED A0 BD.
  EXPECT_EQ(json_error(R"(["ok", "x\ud83d"])"), "JSON at byte 9: \\ud83d is half a surrogate pair, without its other half");
  EXPECT_EQ(json_error(R"("\ud83d\u0041")"), "JSON at byte 1: \\ud83d is half a surrogate pair, without its other half");
  EXPECT_EQ(json_error(R"("\ud83dx")"), "JSON at byte 1: \\ud83d is half a surrogate pair, without its other half");
  EXPECT_EQ(json_error(R"("ab\uDE00")"), "JSON at byte 3: \\uDE00 is half a surrogate pair, without its other half");
}

TEST(RenderJson, ARepeatedKeyKeepsItsFirstPlaceAndTakesItsLastValue) {
  jinja::Value v = jinja::from_json(R"({"a": 1, "b": {"c": 2, "c": [3]}, "a": "last"})");
  ASSERT_EQ(v.dict->items.size(), 2u);
  EXPECT_EQ(v.dict->items[0].first.s, "a");
  EXPECT_EQ(v.dict->items[0].second.s, "last");
  EXPECT_EQ(jinja::to_json(v), R"({"a": "last", "b": {"c": [3]}})");  // as Python's json.dumps(json.loads(...))
}

// Item 10: a conversation of 60 MB of small numbers took 3.7 GB (each value is 88 bytes):
// what a JSON text makes is counted as it is read, and refused past 256 MiB.
TEST(RenderJson, AJsonTextWhoseValuesWouldTakeTooMuchIsRefusedWhereTheyWould) {
  ASSERT_EQ(sizeof(jinja::Value), 88u);
  std::string ones = "[";
  for (int i = 0; i < 20; ++i) ones += "1,";
  ones += "1]";
  // The list and ten items are 968 bytes; the eleventh, at byte 21, would pass 1000.
  EXPECT_EQ(json_error(ones, 1000), "JSON at byte 21: the values take more than 1000 bytes (ggufkit's limit for a JSON text)");
  EXPECT_EQ(json_error(ones, 22 * 88), "read");
  // Strings count by their bytes, keys too: 3 x 88 + 3 + 10 bytes, the last 10 found at byte 20.
  EXPECT_EQ(json_error(R"({"key": "0123456789"})", 270), "JSON at byte 20: the values take more than 270 bytes (ggufkit's limit for a JSON text)");
  EXPECT_EQ(json_error(R"({"key": "0123456789"})", 277), "read");
}

TEST(RenderSandbox, NoAttributeOfPythonItselfNorAnyFileIsReachable) {
  // As jinja2's sandbox: an unsafe attribute prints as nothing and fails when used.
  EXPECT_EQ(failure("{{ ''.__class__.__mro__ }}"), "SecurityError: access to attribute '__class__' of 'str' object is unsafe.");
  EXPECT_EQ(failure("{{ ''.__class__ }}"), "rendered");
  EXPECT_EQ(failure("{{ messages.__init__ }}"), "UndefinedError: 'messages' is undefined");
  EXPECT_EQ(failure("{% set m = {} %}{{ m._private() }}"), "SecurityError: access to attribute '_private' of 'dict' object is unsafe.");
  EXPECT_EQ(failure("{% set xs = [] %}{{ xs.append(1) }}"), "SecurityError: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(failure("{% include '/etc/passwd' %}"),
            "TypeError: no loader for this environment specified (a chat template cannot load others)");
  EXPECT_EQ(failure("{{ environ }}{{ os }}{{ config }}{{ self }}"), "rendered");  // nothing by those names: undefined, printed as nothing
}

// Item 2: `ggufkit template FILE --render CONV.json` prints the prompt, with the file's
// own bos and eos tokens, as jinja2 renders it.
TEST(RenderCli, TheTemplateCommandPrintsThePromptWithTheFilesOwnTokens) {
  const std::string conv = std::string(GGUFKIT_SOURCE) + "/tests/template/conversations/";
  CliRun r = run_cli("template " + tiny_llama() + " --render " + conv + "02-system-and-user.json");
  ASSERT_EQ(r.code, 0) << r.err;
  // The tiny llama's eos is "</s>", which its template ends each turn with.
  EXPECT_EQ(r.out, "<|system|>\nYou are a terse assistant. Answer in one sentence.</s>\n<|user|>\nWhy is the sky blue?</s>\n<|assistant|>\n");
  // The same as jinja2 gives for the template the file stores.
  const std::string tmpl = temp_path("tiny-template.jinja"), job = temp_path("tiny-job.json"), out = temp_path("tiny-oracle.json");
  const std::string stored = run_cli("template " + tiny_llama()).out;
  write_file_bytes(tmpl, std::vector<uint8_t>(stored.begin(), stored.end()));
  const std::string j = "{\"templates\": [\"" + tmpl + "\"], \"conversations\": [\"" + conv +
                        "02-system-and-user.json\"], \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"now\": 0}";
  write_file_bytes(job, std::vector<uint8_t>(j.begin(), j.end()));
  ASSERT_EQ(std::system(("python3 " + std::string(GGUFKIT_SOURCE) + "/tests/template/render_oracle.py < " + job + " > " + out).c_str()), 0);
  EXPECT_EQ((*jinja::from_json(slurp(out)).list)[0].dict->find("text")->s, r.out);

  // --json, and --add-generation-prompt over a conversation that says false; standard input.
  CliRun js = run_cli("template " + tiny_llama() + " --render - --json --add-generation-prompt < " + conv + "08-ends-with-assistant.json");
  ASSERT_EQ(js.code, 0) << js.err;
  EXPECT_EQ(js.out,
            "{\"prompt\": \"<|system|>\\nYou are a poet.</s>\\n<|user|>\\nA haiku about rain, please.</s>\\n<|assistant|>\\n"
            "Soft rain on the roof\\nthe gutters hum their one note\\nnight drinks slowly in</s>\\n<|assistant|>\\n\"}\n");
  CliRun no = run_cli("template " + tiny_llama() + " --render " + conv + "08-ends-with-assistant.json");
  EXPECT_EQ(no.out.find("<|assistant|>\n", no.out.size() - 14), std::string::npos) << no.out;
}

TEST(RenderCli, ATemplateThatRaisesOrAConversationThatIsNoneExitsWithTheReason) {
  const std::string dir = temp_path("render-cli");
  fs::create_directories(dir);
  const std::string raising = dir + "/raise.jinja", model = dir + "/m.gguf";
  const std::string text = "{% for m in messages %}\n{% if m.role == 'system' %}{{ raise_exception('no system role here') }}{% endif %}\n{% endfor %}";
  write_file_bytes(raising, std::vector<uint8_t>(text.begin(), text.end()));
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " --chat-template-file " + raising + " -o " + model).code, 0);
  const std::string conv = std::string(GGUFKIT_SOURCE) + "/tests/template/conversations/";
  CliRun r = run_cli("template " + model + " --render " + conv + "02-system-and-user.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("tokenizer.chat_template: the template raised an error at line 2: no system role here"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(run_cli("template " + model + " --render " + conv + "01-one-user-turn.json").code, 0);

  const std::string bad = dir + "/bad.json";
  write_file_bytes(bad, {'{', '"', 'm', '"', ':', ' ', '[', '}'});
  CliRun b = run_cli("template " + model + " --render " + bad);
  EXPECT_EQ(b.code, 1);  // a bad input file's content
  EXPECT_NE(b.err.find(bad + ": is not a conversation: JSON at byte 7: unexpected '}'"), std::string::npos) << b.err;
  write_file_bytes(bad, {'[', ']'});
  CliRun shape = run_cli("template " + model + " --render " + bad);
  EXPECT_EQ(shape.code, 1);
  EXPECT_NE(shape.err.find("is not a conversation: a conversation is a JSON object with \"messages\""), std::string::npos) << shape.err;
}

// Items 9 and 10 through the command, under ulimit -v: each bomb on a conversation's 16 MB
// message stops with its LimitError within 200 MB of address space (before: out of memory
// under 2 GB), and a conversation of 60 MB of small numbers is refused within 800 MB (it
// took 3.7 GB).
TEST(RenderCli, BombsOnALongMessageAndAConversationOfNumbersStopWithinTheirMemory) {
#ifdef GGUFKIT_SANITIZED
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space; ulimit -v cannot apply";
#endif
  const std::string dir = temp_path("render-bombs");
  fs::create_directories(dir);
  auto write = [](const std::string& path, const std::string& text) {
    write_file_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
  };
  std::string words;
  for (int i = 0; i < 8'000'000; ++i) words += "x ";
  write(dir + "/long.json", "{\"messages\": [{\"role\": \"user\", \"content\": \"" + std::string(16'000'000, 'x') + "\"}]}");
  write(dir + "/words.json", "{\"messages\": [{\"role\": \"user\", \"content\": \"" + words + "\"}]}");
  const std::string memory = "more than 67108864 bytes of values held at once (the sandbox's memory limit)";
  auto longer = [](const char* n) { return std::string("a string of ") + n + " bytes is longer than the sandbox's output limit of 16777216 bytes"; };
  const std::vector<std::pair<std::string, std::string>> bombs = {
    {"{{ s|list }}", memory},
    {"{{ s|sort }}", memory},
    {"{{ s.split() }}", memory},
    {"{{ [s] * 1000000 }}", memory},
    {"{{ (s,) * 300 }}", longer("32000007")},
    {"{{ (['x' * 15000000] * 1000) | join }}", longer("30000000")},
    {"{% set ns = namespace(l=[s]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}", memory},
    {"{{ [s] | tojson(indent=10**9) }}", longer("1000000000")},
    {"{{ s | indent(10**9) }}", longer("1000000000")},
  };
  for (size_t i = 0; i < bombs.size(); ++i) {
    const std::string tmpl = dir + "/" + std::to_string(i) + ".jinja", model = dir + "/" + std::to_string(i) + ".gguf";
    write(tmpl, "{% set s = messages[0].content %}" + bombs[i].first);
    ASSERT_EQ(run_cli("edit " + tiny_llama() + " --chat-template-file " + tmpl + " -o " + model).code, 0);
    // The time limit set far out: these bombs are about memory and output, on any machine.
    CliRun r = run_cli("template " + model + " --render " + dir + (i == 2 ? "/words.json" : "/long.json"),
                       "export GGUFKIT_RENDER_TIME_LIMIT=600000; ulimit -v 200000; ");
    EXPECT_EQ(r.code, 1) << bombs[i].first << ": " << r.err;
    EXPECT_NE(r.err.find("the template failed at line 1: LimitError: " + bombs[i].second), std::string::npos) << bombs[i].first << ": " << r.err;
  }
  // 909 bytes of values before "data"'s items, 88 for each: the 3,050,393rd passes 256 MiB.
  std::string numbers = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"data\": [1";
  for (int i = 1; i < 30'000'000; ++i) numbers += ",1";
  write(dir + "/numbers.json", numbers + "]}");
  CliRun n = run_cli("template " + tiny_llama() + " --render " + dir + "/numbers.json", "ulimit -v 800000; ");
  EXPECT_EQ(n.code, 1) << n.err;  // the content of an input: 1, by the exit-code rule
  EXPECT_NE(n.err.find("numbers.json: is not a conversation: JSON at byte 6100843: the values take more than 268435456 bytes"),
            std::string::npos)
      << n.err;
}

namespace {

// The text between two marker lines of a dry run's output (to the end without `to`).
std::string section(const std::string& out, const std::string& from, const std::string& to) {
  size_t a = out.find(from);
  if (a == std::string::npos) return "";
  a += from.size();
  size_t b = to.empty() ? out.size() : out.find(to, a);
  return out.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

}  // namespace

// Item 3: an edit's dry run shows the prompt under the old template and tokens and under
// the new, and a unified diff of them that GNU diff agrees with; nothing is written.
TEST(RenderCli, AnEditsDryRunShowsThePromptBeforeAndAfterAndTheirDiff) {
  const std::string conv = std::string(GGUFKIT_SOURCE) + "/tests/template/conversations/03-several-turns.json";
  // The tiny llama with a template that ends turns with eos_token.
  const std::string with_eos = temp_path("render-eos.gguf"), eos_tmpl = temp_path("render-eos.jinja");
  const std::string text = "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}{{ eos_token }}\n{% endfor %}"
                           "{% if add_generation_prompt %}<|assistant|>\n{% endif %}";
  write_file_bytes(eos_tmpl, std::vector<uint8_t>(text.begin(), text.end()));
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " --chat-template-file " + eos_tmpl + " -o " + with_eos).code, 0);
  const auto model = read_file_bytes(with_eos);
  // eos becomes "<s>" (id 1): every turn's end in the prompt changes with it.
  CliRun r = run_cli("edit " + with_eos + " --eos-token-id 1 --dry-run --render " + conv);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string before = section(r.out, "== the prompt before the edit ==\n", "== the prompt after the edit ==\n");
  const std::string after = section(r.out, "== the prompt after the edit ==\n", "== diff ==\n");
  EXPECT_EQ(before,
            "<|system|>\nYou are a helpful assistant.</s>\n<|user|>\nHello!</s>\n<|assistant|>\nHi! How can I help you today?</s>\n"
            "<|user|>\nTell me a joke about compilers.</s>\n<|assistant|>\n");
  EXPECT_EQ(after,
            "<|system|>\nYou are a helpful assistant.<s>\n<|user|>\nHello!<s>\n<|assistant|>\nHi! How can I help you today?<s>\n"
            "<|user|>\nTell me a joke about compilers.<s>\n<|assistant|>\n");
  const std::string diff = section(r.out, "== diff ==\n", "");
  EXPECT_EQ(diff.substr(0, diff.find("@@")), "--- prompt before\n+++ prompt after\n");
  // GNU diff -u of the same two texts gives the same hunks.
  const std::string a = temp_path("prompt-a.txt"), b = temp_path("prompt-b.txt"), d = temp_path("prompt.diff");
  write_file_bytes(a, std::vector<uint8_t>(before.begin(), before.end()));
  write_file_bytes(b, std::vector<uint8_t>(after.begin(), after.end()));
  std::system(("diff -u " + a + " " + b + " > " + d).c_str());
  const std::string gnu = slurp(d);
  EXPECT_EQ(diff.substr(diff.find("@@")), gnu.substr(gnu.find("@@")));
  EXPECT_TRUE(read_file_bytes(with_eos) == model);  // a dry run writes nothing

  // A new template: one line differs, the rest is context; --json carries all three.
  const std::string tmpl = temp_path("render-new.jinja");
  const std::string stored = run_cli("template " + tiny_llama()).out;
  std::string changed = stored;
  changed.replace(changed.find("</s>"), 4, "<|end|>");
  write_file_bytes(tmpl, std::vector<uint8_t>(changed.begin(), changed.end()));
  CliRun t = run_cli("edit " + tiny_llama() + " --chat-template-file " + tmpl + " --dry-run --render " + conv);
  ASSERT_EQ(t.code, 0) << t.err;
  const std::string tdiff = section(t.out, "== diff ==\n", "");
  EXPECT_NE(tdiff.find("-Hello!</s>\n+Hello!<|end|>\n"), std::string::npos) << tdiff;
  const std::string ta = section(t.out, "== the prompt before the edit ==\n", "== the prompt after the edit ==\n"),
                    tb = section(t.out, "== the prompt after the edit ==\n", "== diff ==\n");
  write_file_bytes(a, std::vector<uint8_t>(ta.begin(), ta.end()));
  write_file_bytes(b, std::vector<uint8_t>(tb.begin(), tb.end()));
  std::system(("diff -u " + a + " " + b + " > " + d).c_str());
  const std::string tgnu = slurp(d);
  EXPECT_EQ(tdiff.substr(tdiff.find("@@")), tgnu.substr(tgnu.find("@@")));
  CliRun js = run_cli("edit " + with_eos + " --eos-token-id 1 --dry-run --json --render " + conv);
  ASSERT_EQ(js.code, 0) << js.err;
  jinja::Value j = jinja::from_json(js.out);
  EXPECT_EQ(j.dict->find("prompt")->dict->find("before")->s, before);
  EXPECT_EQ(j.dict->find("prompt")->dict->find("after")->s, after);
  EXPECT_EQ(j.dict->find("prompt")->dict->find("diff")->s, diff);
  // The same prompt both ways is said; --render without --dry-run is refused.
  CliRun same = run_cli("edit " + tiny_llama() + " --set general.name=x --dry-run --render " + conv);
  EXPECT_NE(same.out.find("== diff ==\nthe prompt is the same, byte for byte\n"), std::string::npos) << same.out;
  CliRun wet = run_cli("edit " + tiny_llama() + " --eos-token-id 1 -o " + temp_path("wet.gguf") + " --render " + conv);
  EXPECT_EQ(wet.code, 2);
  EXPECT_NE(wet.err.find("--render shows the prompts of a dry run: add --dry-run"), std::string::npos) << wet.err;
}

// jinja2's semantics one construct at a time (tests/template/snippets.txt: scoping, tuples,
// Markup, generators, undefined, numbers, string methods, JSON, errors), each line a
// template rendered by both with tests/template/snippets-context.json.
TEST(Render, EverySnippetAgreesWithJinja2) {
  const std::string dir = temp_path("snippets");
  fs::create_directories(dir);
  std::vector<std::string> lines, paths;
  {
    std::ifstream in(std::string(GGUFKIT_SOURCE) + "/tests/template/snippets.txt");
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_GE(lines.size(), 60u);
  std::string job = "{\"templates\": [";
  for (size_t i = 0; i < lines.size(); ++i) {
    paths.push_back(dir + "/" + std::to_string(i) + ".jinja");
    write_file_bytes(paths.back(), std::vector<uint8_t>(lines[i].begin(), lines[i].end()));
    job += (i ? ", " : "") + jinja::to_json(jinja::Value::string(paths.back()));
  }
  const std::string ctx = std::string(GGUFKIT_SOURCE) + "/tests/template/snippets-context.json";
  job += "], \"conversations\": [" + jinja::to_json(jinja::Value::string(ctx)) +
         "], \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"now\": " + std::to_string(kNow) + "}";
  write_file_bytes(dir + "/job.json", std::vector<uint8_t>(job.begin(), job.end()));
  ASSERT_EQ(std::system(("python3 " + std::string(GGUFKIT_SOURCE) + "/tests/template/render_oracle.py < " + dir + "/job.json > " +
                         dir + "/out.json")
                            .c_str()),
            0);
  jinja::Value oracle = jinja::from_json(slurp(dir + "/out.json"));
  ASSERT_EQ(oracle.list->size(), lines.size());
  const jinja::Value conv = jinja::from_json(slurp(ctx));
  size_t same = 0, raised = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const jinja::Value& want = (*oracle.list)[i];
    Outcome got = ours(lines[i], conv);
    if (want.dict->find("ok")->i) {
      EXPECT_TRUE(got.ok) << "line " << i + 1 << ": " << lines[i] << "\n  ggufkit raises: " << got.text;
      if (got.ok) {
        EXPECT_EQ(got.text, want.dict->find("text")->s) << "line " << i + 1 << ": " << lines[i];
      }
      same += got.ok && got.text == want.dict->find("text")->s;
    } else {
      EXPECT_FALSE(got.ok) << "line " << i + 1 << ": " << lines[i] << "\n  jinja2 raises " << want.dict->find("error")->s;
      raised += !got.ok;
    }
  }
  std::printf("%zu snippets: %zu the same text, %zu raise in both\n", lines.size(), same, raised);
}

// The name tables: filters and tests are looked up by name, as jinja2's environment.filters
// and environment.tests; what the tables list is what a template can use.
namespace {

struct Use {
  const char* name;
  const char* source;
  const char* output;  // what jinja2 3.1 renders (tests/template/hf_env.py's environment)
};

// One use of every filter and every test ggufkit has, with jinja2's output.
const Use kFilterUses[] = {
    {"abs", "{{ -3 | abs }}", "3"},
    {"attr", "{{ 'ab' | attr('upper') is callable }}", "True"},
    {"batch", "{{ [1, 2, 3] | batch(2, 0) | list }}", "[[1, 2], [3, 0]]"},
    {"capitalize", "{{ 'hello World' | capitalize }}", "Hello world"},
    {"count", "{{ 'héllo' | count }}", "5"},
    {"d", "{{ nothing | d('x') }}", "x"},
    {"default", "{{ '' | default('y', true) }}", "y"},
    {"dictsort", "{{ {'b': 1, 'a': 2} | dictsort }}", "[('a', 2), ('b', 1)]"},
    {"e", "{{ '<a>' | e }}", "&lt;a&gt;"},
    {"escape", "{{ '\"&\"' | escape }}", "&#34;&amp;&#34;"},
    {"first", "{{ [4, 5] | first }}", "4"},
    {"float", "{{ '2.5' | float }}", "2.5"},
    {"forceescape", "{{ '<b>' | safe | forceescape }}", "&lt;b&gt;"},
    {"format", "{{ '%s-%d' | format('a', 7) }}", "a-7"},
    {"indent", "{{ 'a\nb' | indent(2) }}", "a\n  b"},
    {"int", "{{ '42' | int + 1 }}", "43"},
    {"items", "{{ {'k': 1} | items | list }}", "[('k', 1)]"},
    {"join", "{{ [1, 2, 3] | join('+') }}", "1+2+3"},
    {"last", "{{ 'xyz' | last }}", "z"},
    {"length", "{{ [1, 2, 3] | length }}", "3"},
    {"list", "{{ 'ab' | list }}", "['a', 'b']"},
    {"lower", "{{ 'ABC' | lower }}", "abc"},
    {"map", "{{ ['a', 'b'] | map('upper') | join }}", "AB"},
    {"max", "{{ [3, 9, 2] | max }}", "9"},
    {"min", "{{ ['b', 'A', 'c'] | min }}", "A"},
    {"reject", "{{ [1, 2, 3, 4] | reject('odd') | list }}", "[2, 4]"},
    {"rejectattr", "{{ [{'x': 1}, {'x': 0}] | rejectattr('x') | list }}", "[{'x': 0}]"},
    {"replace", "{{ 'aaa' | replace('a', 'b', 2) }}", "bba"},
    {"reverse", "{{ [1, 2, 3] | reverse | list }}", "[3, 2, 1]"},
    {"round", "{{ 2.675 | round(1, 'floor') }}", "2.6"},
    {"safe", "{{ '<i>' | safe }}", "<i>"},
    {"select", "{{ [1, 2, 3, 4] | select('even') | list }}", "[2, 4]"},
    {"selectattr", "{{ [{'x': 1}, {'x': 0}] | selectattr('x', 'eq', 1) | list }}", "[{'x': 1}]"},
    {"sort", "{{ [3, 1, 2] | sort(reverse=true) }}", "[3, 2, 1]"},
    {"string", "{{ 12 | string ~ 3 }}", "123"},
    {"sum", "{{ [1, 2, 3] | sum(start=10) }}", "16"},
    {"title", "{{ 'hello world' | title }}", "Hello World"},
    {"tojson", "{{ {'a': [1, 'é']} | tojson }}", "{\"a\": [1, \"é\"]}"},
    {"trim", "{{ '  x  ' | trim ~ '|' }}", "x|"},
    {"unique", "{{ ['a', 'A', 'b'] | unique | list }}", "['a', 'b']"},
    {"upper", "{{ 'abc' | upper }}", "ABC"},
    {"wordcount", "{{ 'one two  three' | wordcount }}", "3"},
};
const Use kTestUses[] = {
    {"!=", "{{ [1, 2, 3] | select('!=', 2) | list }}", "[1, 3]"},
    {"<", "{{ [1, 2, 3] | select('<', 2) | list }}", "[1]"},
    {"<=", "{{ [1, 2, 3] | select('<=', 2) | list }}", "[1, 2]"},
    {"==", "{{ [1, 2, 3] | select('==', 2) | list }}", "[2]"},
    {">", "{{ [1, 2, 3] | select('>', 2) | list }}", "[3]"},
    {">=", "{{ [1, 2, 3] | select('>=', 2) | list }}", "[2, 3]"},
    {"boolean", "{{ true is boolean }}", "True"},
    {"callable", "{{ range is callable }}", "True"},
    {"defined", "{{ nothing is defined }}", "False"},
    {"divisibleby", "{{ 9 is divisibleby 3 }}", "True"},
    {"eq", "{{ 'a' is eq 'a' }}", "True"},
    {"equalto", "{{ 1 is equalto 2 }}", "False"},
    {"escaped", "{{ 'x' is escaped }}", "False"},
    {"even", "{{ 3 is even }}", "False"},
    {"false", "{{ false is false }}", "True"},
    {"float", "{{ 1.0 is float }}", "True"},
    {"ge", "{{ 3 is ge 2 }}", "True"},
    {"greaterthan", "{{ 3 is greaterthan 2 }}", "True"},
    {"gt", "{{ 2 is gt 3 }}", "False"},
    {"in", "{{ 2 is in [1, 2] }}", "True"},
    {"integer", "{{ 1.0 is integer }}", "False"},
    {"iterable", "{{ 5 is iterable }}", "False"},
    {"le", "{{ 2 is le 3 }}", "True"},
    {"lessthan", "{{ 2 is lessthan 3 }}", "True"},
    {"lower", "{{ 'abc' is lower }}", "True"},
    {"lt", "{{ 3 is lt 2 }}", "False"},
    {"mapping", "{{ {} is mapping }}", "True"},
    {"ne", "{{ 1 is ne 1 }}", "False"},
    {"none", "{{ none is none }}", "True"},
    {"number", "{{ 'x' is number }}", "False"},
    {"odd", "{{ 3 is odd }}", "True"},
    {"sameas", "{{ none is sameas none }}", "True"},
    {"sequence", "{{ [1] is sequence }}", "True"},
    {"string", "{{ 'x' is string }}", "True"},
    {"true", "{{ 1 is true }}", "False"},
    {"undefined", "{{ nothing is undefined }}", "True"},
    {"upper", "{{ 'aBC' is upper }}", "False"},
};

// Every name of `names` has exactly one use in `uses`, and each renders as jinja2 renders it.
void every_name_dispatches(const std::vector<std::string_view>& names, const Use* uses, size_t n) {
  std::vector<std::string_view> used;
  for (size_t i = 0; i < n; ++i) used.push_back(uses[i].name);
  EXPECT_EQ(used, names);  // the same names, in the same (sorted) order
  for (size_t i = 0; i < n; ++i) {
    std::string got;
    try {
      got = jinja::render(jinja::parse(uses[i].source), jinja::Value::new_dict());
    } catch (const std::exception& e) {
      got = std::string("raised: ") + e.what();
    }
    EXPECT_EQ(got, uses[i].output) << uses[i].name << ": " << uses[i].source;
  }
}

}  // namespace

TEST(RenderTables, TheFilterAndTestNamesAreSortedWithoutDuplicates) {
  for (const auto& names : {jinja::filter_names(), jinja::test_names()}) {
    for (size_t i = 1; i < names.size(); ++i) EXPECT_LT(names[i - 1], names[i]) << names[i];
  }
  EXPECT_EQ(jinja::filter_names().size(), 42u);
  EXPECT_EQ(jinja::test_names().size(), 37u);
  // Names jinja2 has and ggufkit does not are left out.
  for (const auto& names : {jinja::filter_names(), jinja::test_names()})
    for (const char* absent : {"center", "truncate", "wordwrap", "filter", "test"})
      EXPECT_EQ(std::count(names.begin(), names.end(), absent), 0) << absent;
}

TEST(RenderTables, EveryFilterNameDispatches) {
  every_name_dispatches(jinja::filter_names(), kFilterUses, std::size(kFilterUses));
}

TEST(RenderTables, EveryTestNameDispatches) {
  every_name_dispatches(jinja::test_names(), kTestUses, std::size(kTestUses));
}

TEST(RenderTables, AnUnknownFilterOrTestFailsAsItAlwaysHas) {
  EXPECT_EQ(failure("{{ 1 | nosuch }}"), "TemplateAssertionError: No filter named 'nosuch'.");
  EXPECT_EQ(failure("{{ 1 is nosuch }}"), "TemplateAssertionError: No test named 'nosuch'.");
  // One jinja2 has but ggufkit does not: the template compiles, and fails where it is reached.
  EXPECT_EQ(failure("{{ 'a' | center(9) }}"), "TemplateAssertionError: No filter named 'center'.");
  EXPECT_EQ(failure("{{ [1] | select('test') | list }}"), "TemplateAssertionError: No test named 'test'.");
  // Inside an if, an unknown name fails only when reached, with the same words.
  EXPECT_EQ(failure("{% if false %}{{ 1 | nosuch }}{% endif %}"), "rendered");
  EXPECT_EQ(failure("{% if true %}{{ 1 | nosuch }}{% endif %}"), "TemplateAssertionError: No filter named 'nosuch'.");
  EXPECT_EQ(failure("{{ [1] | map('nosuch') | list }}"), "TemplateAssertionError: No filter named 'nosuch'.");
  try {
    jinja::render(jinja::parse("{{ 1 | nosuch }}"), jinja::Value::new_dict());
    ADD_FAILURE() << "rendered";
  } catch (const jinja::RenderError& e) {
    EXPECT_EQ(e.code, jinja::RenderErrorKind::unknown_name);
    EXPECT_STREQ(e.what(), "TemplateAssertionError (line 1): No filter named 'nosuch'.");
  }
}

namespace {

// The kind of error rendering `source` throws, with its jinja2 name and message.
struct Caught {
  jinja::RenderErrorKind code;
  std::string text;
};
Caught caught(const std::string& source, const jinja::RenderOptions& opt = {}) {
  try {
    jinja::render(jinja::parse(source), jinja::Value::new_dict(), opt);
  } catch (const jinja::RenderError& e) {
    return {e.code, e.kind + ": " + e.message};
  }
  ADD_FAILURE() << source << " rendered";
  return {};
}

}  // namespace

TEST(RenderErrors, EachErrorSaysItsKind) {
  using K = jinja::RenderErrorKind;
  Caught c = caught("line one\n{{ raise_exception('no tools here') }}");
  EXPECT_EQ(c.code, K::raise_exception);
  EXPECT_EQ(c.text, "TemplateError: no tools here");
  c = caught("{{ foo() }}");
  EXPECT_EQ(c.code, K::undefined);
  EXPECT_EQ(c.text, "UndefinedError: 'foo' is undefined");
  c = caught("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_EQ(c.code, K::limit_depth);
  EXPECT_EQ(c.text, "LimitError: calls nest deeper than 100 (the sandbox's recursion limit)");
  jinja::RenderOptions small;
  small.limits.max_iterations = 10;
  small.limits.max_output = 10;
  c = caught("{% for i in range(11) %}{% endfor %}", small);
  EXPECT_EQ(c.code, K::limit_iterations);
  EXPECT_EQ(c.text, "LimitError: more than 10 loop iterations (the sandbox's limit)");
  c = caught("{{ 'abcdef' ~ 'ghijkl' }}", small);
  EXPECT_EQ(c.code, K::limit_output);
  EXPECT_EQ(c.text, "LimitError: a string of 12 bytes is longer than the sandbox's output limit of 10 bytes");
  c = caught("{{ 9223372036854775807 + 1 }}");
  EXPECT_EQ(c.code, K::limit_integer);
  EXPECT_EQ(c.text, "LimitError: integer overflow (ggufkit's integers are 64-bit)");
  c = caught("{{ [].append(1) }}");
  EXPECT_EQ(c.code, K::security);
  EXPECT_EQ(c.text, "SecurityError: access to attribute 'append' of 'list' object is unsafe.");
  c = caught("{{ 1 / 0 }}");
  EXPECT_EQ(c.code, K::zero_division);
  EXPECT_EQ(c.text, "ZeroDivisionError: division by zero");
  // A TemplateError of ggufkit's own, not the template's raise_exception.
  c = caught("{{ 'abc'[1:2, 0] }}");
  EXPECT_EQ(c.code, K::template_error);
  EXPECT_EQ(c.text, "TemplateError: a slice outside of brackets");
  EXPECT_STREQ(jinja::render_error_name(K::limit_memory), "LimitError");
  EXPECT_STREQ(jinja::render_error_name(K::unknown_name), "TemplateAssertionError");
}
