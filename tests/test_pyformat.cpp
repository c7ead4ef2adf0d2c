// Python's string formatting in templates (`'%5d' % x`, the format filter, str.format),
// jinja2's cycler, joiner and lipsum, Undefined in a printed list, and strftime_now under
// SOURCE_DATE_EPOCH: what jinja2 renders, byte for byte (every case here is also a line of
// tests/template/snippets.txt, which Render.EverySnippetAgreesWithJinja2 checks against
// jinja2 itself), and the errors it raises, kind and message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>

#include "ggufkit/jinja.h"
#include "ggufkit/jinja_render.h"
#include "helpers.h"

using namespace testing_helpers;
namespace jinja = ggufkit::jinja;

namespace {

const char* kContext = R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
  {"role": "assistant", "content": "A"}], "n": 3, "f": 2.5})";

std::string render(const std::string& src, const jinja::RenderOptions& opt = {}) {
  return jinja::render(jinja::parse(src), jinja::from_json(kContext), opt);
}

// "Kind: message" of the error the template raises, or "renders: TEXT".
std::string error_of(const std::string& src, const jinja::RenderOptions& opt = {}) {
  try {
    return "renders: " + render(src, opt);
  } catch (const jinja::RenderError& e) {
    return e.kind + ": " + e.message;
  }
}

// Sets an environment variable for one test and puts the old value back.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    if (const char* o = std::getenv(n.c_str())) old = o;
    if (value) setenv(n.c_str(), value, 1);
    else unsetenv(n.c_str());
    tzset();  // localtime_r reads TZ only through tzset
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
    tzset();
  }
};

}  // namespace

TEST(PyFormat, PercentFormattingTakesPythonsFlagsWidthsPrecisionsAndConversions) {
  EXPECT_EQ(render("[{{ '%5d' % 3 }}|{{ '%-5s' % 'ab' }}|{{ '%05.2f' % 3.14159 }}|{{ '%x' % 255 }}|{{ '%c' % 65 }}|"
                   "{{ '%+d' % 3 }}|{{ '%.3s' % 'abcdef' }}|{{ '%(name)s' % {'name': 'Ada'} }}]"),
            "[    3|ab   |03.14|ff|A|+3|abc|Ada]");
  EXPECT_EQ(render("{{ '%5s|%-5d|%05d|%+05d|% d|%-+6d' % ('x', 7, -42, 42, 5, 9) }}"), "    x|7    |-0042|+0042| 5|+9    ");
  EXPECT_EQ(render("{{ '%#x %#X %#o %o %x|%0#8x|%.3d|%8.3d|%d %i %u' % (255, 255, 8, -8, -255, 255, 5, -5, 3.9, -3.9, true) }}"),
            "0xff 0XFF 0o10 -10 -ff|0x0000ff|005|    -005|3 -3 1");
  EXPECT_EQ(render("{{ '%e|%E|%.0e|%g|%G|%#g|%.3g|%F|%10.3f|%-10.1f|' % (12345.678, 0.000123, 5, 1e-5, 1e-10, 1.0, 3.14159, 2, "
                   "-3.14159, 2.25) }}"),
            "1.234568e+04|1.230000E-04|5e+00|1e-05|1E-10|1.00000|3.14|2.000000|    -3.142|2.2       |");
  // Widths and precisions count code points; %c takes a code point or a one-character str.
  EXPECT_EQ(render("{{ '%c%c%c|%3c|%r %a|%10.3s|' % ('é', 233, 0x1F600, 'a', 'é', 'é', 'héllo') }}"), "éé😀|  a|'é' '\\xe9'|       hél|");
  // `*` takes the width or precision from the arguments; a negative width aligns left.
  EXPECT_EQ(render("{{ '%*d|%-*d|%.*f|%*.*f|%*d|%ld' % (5, 1, 4, 2, 2, 3.14159, 8, 1, 2.25, -3, 1, 7) }}"), "    1|2   |3.14|     2.2|1  |7");
}

TEST(PyFormat, PercentFormattingReadsADictByKeyAndTakesAListOrADictAsOneValue) {
  EXPECT_EQ(render("{{ '%(a)s %(b)d %(b)05.1f %(c)r %%' % {'a': 'x', 'b': 2, 'c': none} }}"), "x 2 002.0 None %");
  EXPECT_EQ(render("{{ '%((x))s' % {'(x)': 1} }}"), "1");
  // Only a tuple holds several arguments; a list or a dict is one (and nothing is left over).
  EXPECT_EQ(render("{{ '%s' % [1, 2] }}|{{ '%s' % {'a': 1} }}|{{ '%s' % ((1, 2),) }}|{{ 'abc' % [] }}|{{ 'abc' % {'a': 1} }}"),
            "[1, 2]|{'a': 1}|(1, 2)|abc|abc");
  // Undefined prints as nothing, reprs as Undefined, and fails as a number.
  EXPECT_EQ(render("[{{ '%s' % x }}|{{ '%r' % x }}|{{ 'a' % x }}|{{ '%5s|' % x }}]"), "[|Undefined|a|     |]");
  EXPECT_EQ(error_of("{{ '%d' % x }}"), "UndefinedError: 'x' is undefined");
}

TEST(PyFormat, PercentFormattingRaisesPythonsErrors) {
  EXPECT_EQ(error_of("{{ '%s %s' % ('x',) }}"), "TypeError: not enough arguments for format string");
  EXPECT_EQ(error_of("{{ '%s' % ('x', 'y') }}"), "TypeError: not all arguments converted during string formatting");
  EXPECT_EQ(error_of("{{ 'abc' % 3 }}"), "TypeError: not all arguments converted during string formatting");
  EXPECT_EQ(error_of("{{ '%d' % 'x' }}"), "TypeError: %d format: a real number is required, not str");
  EXPECT_EQ(error_of("{{ '%i' % none }}"), "TypeError: %i format: a real number is required, not NoneType");
  EXPECT_EQ(error_of("{{ '%x' % 3.0 }}"), "TypeError: %x format: an integer is required, not float");
  EXPECT_EQ(error_of("{{ '%f' % 'x' }}"), "TypeError: must be real number, not str");
  EXPECT_EQ(error_of("{{ '%c' % 'ab' }}"), "TypeError: %c requires int or char");
  EXPECT_EQ(error_of("{{ '%c' % 1114112 }}"), "OverflowError: %c arg not in range(0x110000)");
  EXPECT_EQ(error_of("{{ 'é%q' % 1 }}"), "ValueError: unsupported format character 'q' (0x71) at index 2");
  EXPECT_EQ(error_of("{{ '%5%' % (1,) }}"), "ValueError: unsupported format character '%' (0x25) at index 2");
  EXPECT_EQ(error_of("{{ '%' % () }}"), "ValueError: incomplete format");
  EXPECT_EQ(error_of("{{ '%(a' % {'a': 1} }}"), "ValueError: incomplete format key");
  EXPECT_EQ(error_of("{{ '%(a)s' % 3 }}"), "TypeError: format requires a mapping");
  EXPECT_EQ(error_of("{{ '%(a)s' % ('x',) }}"), "TypeError: format requires a mapping");
  EXPECT_EQ(error_of("{{ '%(a)s' % {'b': 1} }}"), "KeyError: 'a'");
  EXPECT_EQ(error_of("{{ '%*d' % ('x', 1) }}"), "TypeError: * wants int");
  EXPECT_EQ(error_of("{{ '%s'|format(1, a=2) }}"), "FilterArgumentError: can't handle positional and keyword arguments at the same time");
}

TEST(PyFormat, TheFormatFilterIsPercentFormattingWithItsArgumentsAsATupleOrItsKeywordsAsADict) {
  EXPECT_EQ(render("[{{ '%s-%s'|format(1, 2) }}|{{ '%(a)s=%(b)s'|format(a=1, b='two') }}|{{ 3|format }}|{{ '%.2f'|format(n) }}|"
                   "{{ '%s'|format([1]) }}|{{ '%5.1f%%'|format(99.44) }}]"),
            "[1-2|1=two|3|3.00|[1]| 99.4%]");
}

TEST(PyFormat, AMarkupFormatEscapesWhatItTakesInAndAPlainOneDoesNot) {
  EXPECT_EQ(render("[{{ ('<%s>'|safe) % '<b>' }}|{{ ('<%s>'|safe) % ('<b>'|safe) }}|{{ ('%s|%r|%d'|safe) % ('&', \"'\", 3) }}|"
                   "{{ ('%(a)s'|safe) % {'a': '<'} }}|{{ '%s'|format('<b>'|safe) }}|{{ ('%s'|safe)|format('<') }}]"),
            "[<&lt;b&gt;>|<<b>>|&amp;|&#34;&#39;&#34;|3|&lt;|<b>|&lt;]");
  EXPECT_EQ(render("[{{ ('<{}>'|safe).format('<b>') }}|{{ ('{}'|safe).format('<b>'|safe) }}|{{ ('{!r}'|safe).format('&') }}]"),
            "[<&lt;b&gt;>|<b>|&#39;&amp;&#39;]");
}

// markupsafe wraps each argument of a Markup format in a helper: %d and %f take int() and
// float() of it (a str that reads as a number too), %x, %c and * refuse it.
TEST(PyFormat, AMarkupFormatTakesNumbersAsMarkupsafesHelperGivesThem) {
  EXPECT_EQ(render("{{ ('%d|%.1f|%s|%i'|safe) % ('12', ' 2.5 ', '<', 3.9) }}|{{ '%r|%.4r' % ('<b>'|safe, '<b>'|safe) }}"),
            "12|2.5|&lt;|3|Markup('<b>')|Mark");
  EXPECT_EQ(error_of("{{ ('%x'|safe) % 255 }}"), "TypeError: %x format: an integer is required, not _MarkupEscapeHelper");
  EXPECT_EQ(error_of("{{ ('%*d'|safe) % (3, 1) }}"), "TypeError: * wants int");
  EXPECT_EQ(error_of("{{ ('%d'|safe) % 'ab' }}"), "ValueError: invalid literal for int() with base 10: 'ab'");
  EXPECT_EQ(error_of("{{ ('%f'|safe) % ('<b>'|safe) }}"), "ValueError: could not convert string to float: Markup('<b>')");
  EXPECT_EQ(error_of("{{ ('%f'|safe) % (none,) }}"), "TypeError: float() argument must be a string or a real number, not 'NoneType'");
  EXPECT_EQ(error_of("{{ ('{:>5}'|safe).format('<b>'|safe) }}"), "ValueError: Unsupported format specification for Markup.");
  EXPECT_EQ(error_of("{{ '%u' % ('a'|safe) }}"), "TypeError: %u format: a real number is required, not Markup");
}

// As CPython: after %(key), that key's value is the one argument left (for a '*' too).
TEST(PyFormat, AKeyedSpecLeavesItsValueAsTheOnlyArgument) {
  EXPECT_EQ(render("{{ '%s|%(a)s' % {'a': 1} }}|{{ '%(a)s|%(b)s' % {'a': 1, 'b': 2} }}"), "{'a': 1}|1|1|2");
  EXPECT_EQ(error_of("{{ '%(a)s|%s' % {'a': 1} }}"), "TypeError: not enough arguments for format string");
  EXPECT_EQ(error_of("{{ '%(a)*d' % {'a': 3} }}"), "TypeError: not enough arguments for format string");
}

TEST(PyFormat, StrFormatFollowsTheFormatSpecMiniLanguage) {
  EXPECT_EQ(render("{{ '{:>10}'.format('x') }}|"), "         x|");
  EXPECT_EQ(render("{{ '{:<6}|{:^7}|{:*^9}|{:->5}|{:.3}|{:10.2}|{:010}|{:é>4}'.format('ab', 'ab', 'ab', 'ab', 'abcdef', 'héllo', "
                   "'ab', 'a') }}"),
            "ab    |  ab   |***ab****|---ab|abc|hé        |ab00000000|éééa");
  EXPECT_EQ(render("{{ '{:d}|{:5d}|{:^5d}|{:05d}|{:+d}|{: d}|{:=+6d}|{:*=6d}'.format(42, 42, 42, -42, 42, 42, 42, -42) }}"),
            "42|   42| 42  |-0042|+42| 42|+   42|-***42");
  EXPECT_EQ(render("{{ '{:#b}|{:#o}|{:#X}|{:+#x}|{:#010x}|{:c}|{:n}'.format(5, 8, 255, 255, 255, 65, 1234) }}"),
            "0b101|0o10|0XFF|+0xff|0x000000ff|A|1234");
  // Grouping, with the zeros of '0' padding grouped too (a width of 8 gives 9 characters).
  EXPECT_EQ(render("{{ '{:,}|{:_}|{:_x}|{:_b}|{:08,}|{:08,}|{:010,}|{:*>10,}'.format(1234567, 1234567, 1048575, 255, 1234, -12345, "
                   "-12345, 12345) }}"),
            "1,234,567|1_234_567|f_ffff|1111_1111|0,001,234|-012,345|-0,012,345|****12,345");
  EXPECT_EQ(render("{{ '{:.2f}|{:8.3f}|{:e}|{:.2E}|{:g}|{:.3g}|{:%}|{:.0%}|{:,.2f}|{:010.2f}|{:z.1f}|{:=+8.2f}'.format(3.14159, 2.5, "
                   "12345.678, 0.000123, 1e-5, 0.0001234, 0.5, 0.125, 1234567.891, -3.14159, -0.04, 3.14159) }}"),
            "3.14|   2.500|1.234568e+04|1.23E-04|1e-05|0.000123|50.000000%|12%|1,234,567.89|-000003.14|0.0|+   3.14");
  // No type: repr, or with a precision 'g' keeping a digit after the point.
  EXPECT_EQ(render("{{ '{}|{:}|{:5}|{:.2}|{:.3}|{:.0}|{:.20}|{:#.0}'.format(1.0, 1e16, 1.0, 1.0, 123456.0, 1.5, 0.1, 1.0) }}"),
            "1.0|1e+16|  1.0|1.0|1.23e+05|2e+00|0.10000000000000000555|1.e+00");
  // A bool with an empty spec is True; with a spec it is the int 1.
  EXPECT_EQ(render("{{ '{:>5}|{}|{:d}|{:.1f}'.format(true, true, false, true) }}"), "    1|True|0|1.0");
}

TEST(PyFormat, StrFormatNumbersArgumentsReachesFieldsThroughTheSandboxAndFormatsSpecsInTurn) {
  EXPECT_EQ(render("{{ '{} {}|{{}} {{{}}}|{!r} {!s} {!a}|{!r:>6}'.format(1, 'b', 2, 'é', 'é', 'é', 'a') }}|"
                   "{{ '{0}{1}{0}|{name}!'.format('a', 'b', name='Ada') }}"),
            "1 b|{} {2}|'é' é '\\xe9'|   'a'|aba|Ada!");
  EXPECT_EQ(render("{{ '{0[1]}|{0[a]}|{m.role}|{m[content]}|{0.a}|{1[0][1]}'.format({'a': 'A', 1: 'one'}, [[1, 2]], m=messages[0]) }}"),
            "one|A|system|S|A|2");
  // What the sandbox refuses or lacks is Undefined: nothing when printed, an error when used.
  EXPECT_EQ(render("[{{ '{0[5]}|{0.missing}|{0.__class__}'.format([1], {}, 'a') }}]"), "[||]");
  EXPECT_EQ(error_of("{{ '{0.__class__.__name__}'.format('a') }}"), "SecurityError: access to attribute '__class__' of 'str' object is unsafe.");
  EXPECT_EQ(error_of("{{ '{0.__class__:5}'.format('a') }}"), "TypeError: unsupported format string passed to Undefined.__format__");
  EXPECT_EQ(render("{{ '{:{}}|{:{w}}|{:>{w}.{p}f}|'.format('a', 5, 'b', 1.23456, w=4, p=2) }}|{{ '{m}'.format_map({'m': 1}) }}"),
            "a    |b   |1.23||1");
}

TEST(PyFormat, StrFormatRaisesPythonsErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"'{'.format(1)", "ValueError: Single '{' encountered in format string"},
      {"'}'.format(1)", "ValueError: Single '}' encountered in format string"},
      {"'{0'.format(1)", "ValueError: expected '}' before end of string"},
      {"'{0!x}'.format(1)", "ValueError: Unknown conversion specifier x"},
      {"'{0!rr}'.format(1)", "ValueError: expected ':' after conversion specifier"},
      {"'{1}'.format(1)", "IndexError: tuple index out of range"},
      {"'{}{0}'.format(1, 2)", "ValueError: cannot switch from manual field specification to automatic field numbering"},
      {"'{a}'.format(1)", "KeyError: 'a'"},
      {"'{0.}'.format([1])", "ValueError: Empty attribute in format string"},
      {"'{0[0]x}'.format([1])", "ValueError: Only '.' or '[' may follow ']' in format field specifier"},
      {"'{:{:{}}}'.format('a', 5, 1)", "ValueError: Max string recursion exceeded"},
      {"'{:5}'.format(none)", "TypeError: unsupported format string passed to NoneType.__format__"},
      {"'{:d}'.format('a')", "ValueError: Unknown format code 'd' for object of type 'str'"},
      {"'{:x}'.format(1.5)", "ValueError: Unknown format code 'x' for object of type 'float'"},
      {"'{:abc}'.format(1)", "ValueError: Invalid format specifier 'abc' for object of type 'int'"},
      {"'{:+}'.format('a')", "ValueError: Sign not allowed in string format specifier"},
      {"'{:=5}'.format('a')", "ValueError: '=' alignment not allowed in string format specifier"},
      {"'{:,}'.format('a')", "ValueError: Cannot specify ',' with 's'."},
      {"'{:.2d}'.format(5)", "ValueError: Precision not allowed in integer format specifier"},
      {"'{:,x}'.format(65)", "ValueError: Cannot specify ',' with 'x'."},
      {"'{:,_}'.format(65)", "ValueError: Cannot specify both ',' and '_'."},
      {"'{:.}'.format(1.5)", "ValueError: Format specifier missing precision"},
      {"'{:+c}'.format(65)", "ValueError: Sign not allowed with integer format specifier 'c'"},
      {"'{a}'.format_map()", "TypeError: format_map() takes exactly one argument (0 given)"},
  };
  for (const auto& [expr, want] : cases) EXPECT_EQ(error_of("{{ " + expr + " }}"), want) << expr;
}

TEST(PyFormat, AHugeWidthOrPrecisionIsRefusedBeforeItIsBuilt) {
  for (const char* src : {"{{ '%999999999d' % 1 }}", "{{ '%.999999999d' % 1 }}", "{{ '%.999999999f' % 1.5 }}", "{{ '{:999999999}'.format('a') }}",
                          "{{ '{:0999999999,}'.format(1) }}"}) {
    EXPECT_EQ(error_of(src).substr(0, 42), "LimitError: a string of 999999999 bytes is") << src;
  }
  EXPECT_EQ(error_of("{{ '%99999999999999999999d' % 1 }}"), "ValueError: width too big");
}

TEST(PyFormat, CyclerGoesRoundItsItemsAndResets) {
  EXPECT_EQ(render("{% set c = cycler('a', 'b', 'c') %}{{ c.current }}{{ c.next() }}{{ c.next() }}{{ c.current }}{{ c.next() }}{{ c.next() }}|"
                   "{{ c.reset() }}|{{ c.current }}{{ c.next() }}|{{ c.items }}"),
            "aabcca|None|aa|('a', 'b', 'c')");
  EXPECT_EQ(render("{% set row = cycler('odd', 'even') %}{% for m in messages %}<{{ row.next() }}:{{ m.role }}>{% endfor %}{{ cycler(1).next() }}"),
            "<odd:system><even:user><odd:assistant>1");
  EXPECT_EQ(render("{% set c = cycler(1) %}{{ c.nope }}|{{ c.nope is defined }}|{{ c.items|length }}"), "|False|1");
  EXPECT_EQ(error_of("{{ cycler() }}"), "RuntimeError: at least one item has to be provided");
  EXPECT_EQ(error_of("{% set c = cycler(1) %}{{ c() }}"), "TypeError: 'Cycler' object is not callable");
}

TEST(PyFormat, JoinerGivesNothingTheFirstTimeAndItsSeparatorAfter) {
  EXPECT_EQ(render("{% set pipe = joiner(' | ') %}{% for m in messages %}{{ pipe() }}{{ m.role }}{% endfor %}|{% set j = joiner() %}"
                   "{{ j() }}a{{ j() }}b{{ j() }}c|{{ joiner('x')() }}|{% set k = joiner(sep='; ') %}{{ k() }}1{{ k() }}2"),
            "system | user | assistant|a, b, c||1; 2");
}

TEST(PyFormat, LipsumHasJinja2sShapeAndIsTheSameOnEveryRender) {
  EXPECT_EQ(render("{{ lipsum(3, false).split('\\n\\n')|length }}|{{ lipsum(2).count('<p>') }}|{{ lipsum().count('</p>') }}|"
                   "{{ lipsum(1, false, 20, 21).split()|length }}|{{ lipsum(n=1, html=false, min=7, max=8).split()|length }}"),
            "3|2|5|20|7");
  EXPECT_EQ(render("{{ lipsum(1, false)[0] is upper }}|{{ lipsum(1, false)[-1] }}|{{ lipsum(1)[:3] }}|{{ lipsum(1)[-4:] }}|{{ lipsum(0) }}|"
                   "{{ lipsum(1, false, -3, 1) }}|{{ (lipsum(2) ~ '<')[-1:] }}"),
            "True|.|<p>|</p>||.|<");
  // Every paragraph has min to max - 1 words of jinja2's vocabulary.
  const std::string text = render("{{ lipsum(20, false, 5, 9) }}");
  size_t paragraphs = 0;
  for (size_t at = 0; at <= text.size();) {
    size_t end = text.find("\n\n", at);
    std::string p = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    size_t words = 1 + static_cast<size_t>(std::count(p.begin(), p.end(), ' '));
    EXPECT_GE(words, 5u) << p;
    EXPECT_LE(words, 8u) << p;
    EXPECT_TRUE(std::isupper(static_cast<unsigned char>(p[0])) && p.back() == '.') << p;
    ++paragraphs;
    if (end == std::string::npos) break;
    at = end + 2;
  }
  EXPECT_EQ(paragraphs, 20u);
  EXPECT_EQ(render("{{ lipsum(20, false, 5, 9) }}"), text);
  EXPECT_EQ(error_of("{{ lipsum(1, false, 5, 5) }}"), "ValueError: empty range for randrange() (5, 5, 0)");
  EXPECT_EQ(error_of("{{ lipsum('x') }}"), "TypeError: 'str' object cannot be interpreted as an integer");
  EXPECT_EQ(error_of("{{ lipsum(1, false, 1, 10000000000) }}").substr(0, 12), "LimitError: ");  // its size or its time
}

TEST(PyFormat, MapOfAnUnsafeOrMissingAttributeGivesUndefinedItemsThatPrintAsUndefined) {
  EXPECT_EQ(render("[{{ messages|map(attribute='__class__')|list }}|{{ messages|map(attribute='nope')|list }}|{{ [x, 1] }}|{{ {'a': x} }}]"),
            "[[Undefined, Undefined, Undefined]|[Undefined, Undefined, Undefined]|[Undefined, 1]|{'a': Undefined}]");
  EXPECT_EQ(error_of("{{ messages|map(attribute='__class__')|map(attribute='__name__')|list }}"),
            "SecurityError: access to attribute '__class__' of 'dict' object is unsafe.");
}

TEST(PyFormat, StrftimeNowFollowsSourceDateEpochInUtc) {
  const std::string src = "{{ strftime_now('%Y-%m-%d %H:%M:%S %A') }}";
  jinja::RenderOptions epoch;  // what a program read from SOURCE_DATE_EPOCH
  epoch.source_date_epoch = "1795000000";
  {
    ScopedEnv tz("TZ", "America/New_York");  // SOURCE_DATE_EPOCH is UTC whatever the zone
    EXPECT_EQ(render(src, epoch), "2026-11-18 11:06:40 Wednesday");
    // RenderOptions::now, a caller's own clock, comes first.
    jinja::RenderOptions opt = epoch;
    opt.now = 0;
    ScopedEnv utc("TZ", "UTC");
    EXPECT_EQ(render(src, opt), "1970-01-01 00:00:00 Thursday");
  }
  {
    // The renderer reads no environment variable: a bad one it is not given is no error.
    ScopedEnv env("SOURCE_DATE_EPOCH", "17 days");
    EXPECT_EQ(error_of(src).rfind("renders: ", 0), 0u) << error_of(src);
  }
  epoch.source_date_epoch = "17 days";
  EXPECT_EQ(error_of(src, epoch), "ValueError: SOURCE_DATE_EPOCH is not a count of seconds: '17 days'");
  epoch.source_date_epoch = "-5";
  EXPECT_EQ(error_of(src, epoch), "ValueError: SOURCE_DATE_EPOCH is not a count of seconds: '-5'");
}

TEST(PyFormat, TheTemplateCommandRendersStrftimeNowAtSourceDateEpoch) {
  const std::string tpl = temp_path("strftime.jinja"), conv = temp_path("strftime-conv.json"), model = temp_path("strftime.gguf");
  std::ofstream(tpl) << "{{ strftime_now('%d %b %Y') }}|{{ '%-6s|%03d' % (messages[0].role, 7) }}|{{ '{:>6}'.format('x') }}";
  std::ofstream(conv) << R"({"messages": [{"role": "user", "content": "hi"}]})";
  ASSERT_EQ(run_cli("edit " + tiny_llama() + " --chat-template-file " + tpl + " -o " + model).code, 0);
  CliRun r = run_cli("template " + model + " --render " + conv, "SOURCE_DATE_EPOCH=1795000000 ");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "18 Nov 2026|user  |007|     x");
}
