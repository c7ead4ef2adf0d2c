#include "common.h"
#include "json.h"

#include <sstream>
#include <utility>
#include <boost/iostreams/device/file_descriptor.hpp>
#include <boost/iostreams/stream.hpp>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "ggufkit/error.h"
#include "ggufkit/inspect.h"
#include "ggufkit/source.h"
#include "ggufkit/shards.h"
#include "ggufkit/text.h"

namespace ggufkit::cli {

namespace {
const po::option_description* option_named(const po::options_description& desc, const std::string& word) {
  if (word.rfind("--", 0) == 0) return desc.find_nothrow(word.substr(2), false);
  if (word.size() == 2 && word[0] == '-') return desc.find_nothrow(word, false);
  return nullptr;
}

bool is_positional(const po::positional_options_description& pos, const std::string& name) {
  for (unsigned i = 0; i < std::min(pos.max_total_count(), 8u); ++i)
    if (pos.name_for_position(i) == name) return true;
  return false;
}

// An option whose value is NAME=TEXT (its help starts so: "KEY=VALUE: ...").
bool takes_pair(const po::option_description& o) {
  const std::string& d = o.description();
  size_t i = 0;
  while (i < d.size() && std::isupper(static_cast<unsigned char>(d[i]))) ++i;
  return i > 0 && i < d.size() && d[i] == '=';
}

// Words the parser had no place for, answered with the form they meant: gguf-py's
// `--special-token eos '</s>'` (two words where ours takes eos='</s>'), a required option's
// value given bare (`realign FILE 64`), gguf_set_metadata.py's `FILE KEY VALUE`. Only when
// the form is plain: `--set k My Tiny Model` gets no hint that would drop words.
std::string surplus_hint(const std::vector<std::string>& args, const po::options_description& desc,
                         const po::positional_options_description& pos) {
  auto bare = [](const std::string& w) { return w.empty() || w[0] != '-' || w == "-"; };
  std::vector<std::string> words;  // the positional words, in order
  std::optional<size_t> pair_at;   // an option of NAME=TEXT given NAME and TEXT as two words
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      words.insert(words.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (bare(a)) {
      words.push_back(a);
      continue;
    }
    const po::option_description* o = a.find('=') == std::string::npos ? option_named(desc, a) : nullptr;
    if (!o || o->semantic()->max_tokens() == 0 || i + 1 >= args.size()) continue;
    if (!pair_at && takes_pair(*o) && i + 2 < args.size() && !args[i + 1].empty() && args[i + 1].find('=') == std::string::npos &&
        bare(args[i + 1]) && bare(args[i + 2]))
      pair_at = i;
    ++i;  // its value
  }
  const size_t room = pos.max_total_count();
  if (words.size() != room + 1 && words.size() != room + 2) return "";
  const std::vector<std::string> surplus(words.begin() + room, words.end());
  if (surplus.size() == 1 && pair_at)
    return "; write it " + args[*pair_at] + " " + shell_quoted(args[*pair_at + 1]) + "=" + shell_quoted(args[*pair_at + 2]);
  auto key_like = [](const std::string& w) { return w.find('.') != std::string::npos && w.find('=') == std::string::npos && w[0] != '-'; };
  if (surplus.size() == 2 && desc.find_nothrow("set", false) && key_like(surplus[0]))
    return "; write it --set " + shell_quoted(surplus[0] + "=" + surplus[1]);
  if (surplus.size() != 1) return "";
  const std::string& w = surplus[0];
  const bool path_like = w.find('/') != std::string::npos || (w.size() > 5 && w.compare(w.size() - 5, 5, ".gguf") == 0);
  if (path_like && desc.find_nothrow("output", false)) return "; write it -o " + shell_quoted(w);
  for (const auto& o : desc.options()) {
    if (o->long_name().empty() || is_positional(pos, o->long_name()) || !o->semantic()->is_required() || o->semantic()->max_tokens() == 0)
      continue;
    const std::string flag = "--" + o->long_name();
    const bool given = std::any_of(args.begin(), args.end(), [&](const std::string& a) {
      return a == flag || a.rfind(flag + "=", 0) == 0 || option_named(desc, a) == o.get();
    });
    if (!given && !path_like) return "; write it " + flag + " " + shell_quoted(w);
  }
  return "";
}
}  // namespace

std::optional<po::variables_map> parse(const std::vector<std::string>& args, po::options_description& desc,
                                       const po::positional_options_description& pos, const std::string& help) {
  desc.add_options()("help,h", "show this help");
  po::variables_map vm;
  try {
    // An option is named in full: a prefix (--dry for --dry-run) is refused, not guessed.
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(desc).positional(pos).style(style).run(), vm);
    if (vm.count("help")) {
      std::cout << help << "\n" << desc << "\n";
      return std::nullopt;
    }
    po::notify(vm);
  } catch (po::unknown_option& e) {
    std::vector<std::string> names;
    for (const auto& o : desc.options())  // (not FILE and its kind: they are given bare)
      if (!o->long_name().empty() && !is_positional(pos, o->long_name())) names.push_back("--" + o->long_name());
    std::string typed = e.get_option_name();  // --sett=a=b: the name is --sett
    typed = typed.substr(0, typed.find('='));
    const std::string hint = did_you_mean(nearest_names(typed, names, 2));
    throw po::error(e.what() + (hint.empty() ? "" : "; " + hint));
  } catch (po::too_many_positional_options_error& e) {
    throw po::error(e.what() + surplus_hint(args, desc, pos));
  } catch (po::error_with_option_name& e) {
    // A positional argument is named as the usage line names it (FILE, N), never by the
    // internal option name the parser gives it.
    std::string name = e.get_option_name();
    while (!name.empty() && name[0] == '-') name.erase(0, 1);
    for (unsigned i = 0; i < 4; ++i)
      if (pos.max_total_count() > i && pos.name_for_position(i) == name) {
        std::string upper = name;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (dynamic_cast<po::required_option*>(&e)) throw po::error(upper + " is missing");
        std::string what = e.what();
        for (std::string quoted : {"'--" + name + "'", "'" + name + "'"})
          for (size_t at; (at = what.find(quoted)) != std::string::npos;) what.replace(at, quoted.size(), upper);
        throw po::error(what);
      }
    throw;
  }
  return vm;
}

Scanned load(const std::string& path) {
  if (path != "-") return scan_file(path, {}, cli_context());
  namespace io = boost::iostreams;
  io::stream<io::file_descriptor_source> in(io::file_descriptor_source(0, io::never_close_handle));
  return scan_stream(in, "<stdin>");
}

ModelView load_model(const std::string& path, bool shard_only) {
  if (path != "-") return open_model(path, shard_only, nullptr, cli_context());
  namespace io = boost::iostreams;
  io::stream<io::file_descriptor_source> in(io::file_descriptor_source(0, io::never_close_handle));
  return open_model(path, shard_only, &in);
}

std::string string_value(const Model& m, const char* key) {
  const Value* v = m.find(key);
  return v && v->type == ValueType::string ? v->str : "";
}

std::optional<ReadArgs> read_args(const std::vector<std::string>& args, const std::string& help,
                                  const char* json_help) {
  po::options_description desc("options");
  shard_only_option(desc.add_options()("file", po::value<std::string>()->required(), "the GGUF file ('-' for stdin), or any shard of a set")(
      "json", po::bool_switch(), json_help));
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = parse(args, desc, pos, help);
  if (!vm) return std::nullopt;
  return ReadArgs{(*vm)["file"].as<std::string>(), (*vm)["json"].as<bool>(), shard_only(*vm)};
}

void value_json(std::ostream& out, const Value& v) { JsonOut(out, false).value(v); }

std::string value_json(const Value& v) {
  std::ostringstream out;
  value_json(out, v);
  return out.str();
}

namespace {
std::atomic<bool> g_cancel{false};
extern "C" void on_signal(int) { g_cancel = true; }
}  // namespace

std::string cli_words(std::string_view text) {
  return reworded(text, [](std::string_view name) {
    if (name == "max_bytes") return std::string("--max-size");
    if (name == "per_file") return std::string("--manifest");
    std::string flag = "--" + std::string(name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
  });
}

namespace {
bool g_quiet = false;  // --quiet: no progress line either (one command a process)
}  // namespace

po::options_description_easy_init quiet_option(po::options_description_easy_init options) {
  options("quiet,q", po::bool_switch(),
          "print nothing on standard output and no progress: no list of changes, no summary (notes, errors and "
          "--json's answer still print); the exit code is the same");
  return options;
}

void apply_quiet(const po::variables_map& vm) {
  if (!vm["quiet"].as<bool>()) return;
  if (vm.count("dry-run") && vm["dry-run"].as<bool>()) throw_usage("--dry-run prints what would change: give one of --dry-run and --quiet");
  if (vm.count("map") && vm["map"].as<bool>()) throw_usage("--map prints the span map: give one of --map and --quiet");
  g_quiet = true;
  if (vm.count("json") && vm["json"].as<bool>()) return;
  std::cout.flush();
  std::fflush(stdout);
  // With standard output closed, /dev/null is opened as descriptor 1 already; with standard
  // input closed, as 0, which it may stay
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0 && null != 1) {
    ::dup2(null, 1);
    if (null > 2) ::close(null);
  }
}

void print_note(const std::string& file, const std::string& message) {
  std::fprintf(stderr, "ggufkit: note: %s: %s\n", terminal_name(file).c_str(), terminal_text(cli_words(message)).c_str());
}

std::function<void(uint64_t, uint64_t)> progress_line(const char* doing, uint64_t at_least) {
  if (!::isatty(2) || g_quiet) return {};
  auto shown = std::make_shared<int>(-1);
  return [shown, doing, at_least](uint64_t done, uint64_t total) {
    if (total <= at_least) return;  // under a second or so: no line
    const int pct = static_cast<int>(100 * static_cast<double>(done) / static_cast<double>(total));
    if (pct == *shown) return;
    *shown = pct;
    // MB below a gigabyte: "0.01 GB of 0.07 GB" says little
    const bool gb = total >= 999950000;  // not "1000.0 MB"
    const double unit = gb ? 1e9 : 1e6;
    std::fprintf(stderr, gb ? "\rggufkit: %s %.2f GB of %.2f GB (%d%%)%s" : "\rggufkit: %s %.1f MB of %.1f MB (%d%%)%s", doing,
                 static_cast<double>(done) / unit, static_cast<double>(total) / unit, pct, pct == 100 ? "\n" : "");
    if (pct == 100) *shown = -1;  // the next pass or file starts its own line
  };
}

void terminal_progress(Context& ctx) {
  if (auto line = progress_line("writing")) ctx.progress = line;
}

po::options_description_easy_init shard_only_option(po::options_description_easy_init options, const char* help) {
  options("shard-only", po::bool_switch(), help);
  return options;
}

bool shard_only(const po::variables_map& vm) { return vm["shard-only"].as<bool>(); }

// The environment is read here, once a command, never inside the library.
Context cli_context() {
  Context ctx;
  ctx.cancel = &g_cancel;
  ctx.notes = print_note;
  // GGUFKIT_LOCK_TIMEOUT: seconds, a decimal (0.2); anything else leaves the 10 s.
  if (const char* env = std::getenv("GGUFKIT_LOCK_TIMEOUT"); env && *env) {
    char* end = nullptr;
    const double s = std::strtod(env, &end);
    if (end && *end == '\0' && s >= 0 && s < 1e6) ctx.lock_timeout = std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
  }
  // GGUFKIT_RENDER_TIME_LIMIT: milliseconds, for a slow or loaded machine whose tests are
  // about the sandbox's other limits.
  if (const char* ms = std::getenv("GGUFKIT_RENDER_TIME_LIMIT");
      ms && *ms && std::strlen(ms) <= 9 && std::strspn(ms, "0123456789") == std::strlen(ms))
    ctx.render_time_limit = std::chrono::milliseconds(std::strtoull(ms, nullptr, 10));
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) ctx.source_date_epoch = epoch;
  return ctx;
}

WriteOptions write_options(bool verify, bool force) {
  WriteOptions w;
  w.verify = verify;
  w.force = force;
  w.on_write_start = [] {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  };
  return w;
}

void map_json(JsonOut& j, const Layout& L, uint64_t file_size) {
  j.object([&] {
    j.key("file_size").num(file_size).key("alignment").num(L.alignment).key("data_offset").num(L.data_offset);
    j.key("spans").array(
        [&] {
          for (const auto& sp : L.spans)
            j.object([&] {
              j.key("offset").num(sp.span.offset).key("size").num(sp.span.size);
              j.key("kind").str(span_kind_name(sp.kind)).key("name").str(sp.path);
            });
        },
        JsonOut::lines);
  });
}

void print_map(const Layout& L, uint64_t file_size, bool json, bool header_only) {
  if (json) {
    JsonOut j(std::cout);
    map_json(j, L, file_size);
    return;
  }
  std::printf("%12s %12s  %-14s %s\n", "offset", "size", "kind", "name");
  for (const auto& sp : L.spans)
    std::printf("%12llu %12llu  %-14s %s\n", static_cast<unsigned long long>(sp.span.offset),
                static_cast<unsigned long long>(sp.span.size), span_kind_name(sp.kind), terminal_name(sp.path).c_str());
  std::printf("total %llu bytes in %zu spans; file size %llu", static_cast<unsigned long long>(L.file_size),
              L.spans.size(), static_cast<unsigned long long>(file_size));
  if (file_size > L.file_size)
    std::printf(" (%llu bytes after the last span)", static_cast<unsigned long long>(file_size - L.file_size));
  if (header_only)
    std::printf(" (header only: a header exemplar, the spans from byte %llu on are the model's, not in the file)",
                static_cast<unsigned long long>(file_size));
  else if (file_size < L.file_size)
    std::printf(" (cut %llu bytes short)", static_cast<unsigned long long>(L.file_size - file_size));
  std::printf("\n");
}


std::string fix_text(const Finding& f, const std::string& file) {
  static const std::string placeholder = "ggufkit edit FILE ";
  if (!f.fix.starts_with(placeholder)) return f.fix;
  // a relative path starting with '-' would be read as an option
  const std::string path = file.starts_with("-") ? "./" + file : file;
  return "ggufkit edit " + shell_quoted(path) + " " + f.fix.substr(placeholder.size());
}

void finding_extras_json(JsonOut& j, const Finding& f, const std::string& file) {
  if (!f.ids.empty())
    j.key("ids").array([&] {
      for (int32_t id : f.ids) j.num(id);
    });
  if (!f.fix.empty()) j.key("fix").str(fix_text(f, file));
}

// A piece quoted for a terminal: JSON's escapes, and \xNN for bytes that are not UTF-8 (a
// byte token's piece is often half a character).
std::string piece_quoted(const std::string& piece) {
  if (is_valid_utf8(piece)) return json_string(piece);
  std::string r = "\"";
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : piece) {
    if (c == '"' || c == '\\') r += '\\', r += static_cast<char>(c);
    else if (c >= 0x20 && c < 0x7f) r += static_cast<char>(c);
    else r += "\\x", r += hex[c >> 4], r += hex[c & 15];
  }
  return r + "\"";
}

void piece_json(JsonOut& j, const std::string& piece) {
  if (is_valid_utf8(piece)) j.str(piece);
  else j.object([&] { j.key("hex").str(hex_text(piece)); });
}


std::string shown_quoted(const std::string& piece, bool cut) {
  return piece_quoted(piece) + (cut ? "... (cut at " + std::to_string(piece.size()) + " bytes)" : "");
}

std::string token_lines(const std::vector<ChatToken>& tokens) {
  std::string out;
  char id[16];
  for (const ChatToken& t : tokens) {
    std::snprintf(id, sizeof id, "%8d", t.id);
    out += std::string(id) + " -> " + shown_quoted(t.piece, t.cut) + (t.special.empty() ? "" : "  (" + std::string(t.special) + ")") + "\n";
  }
  return out;
}

// SIZE as llama.cpp's splitter takes it (N followed by M = 10^6 or G = 10^9 bytes), also
// MiB and GiB, or a plain number of bytes.
uint64_t parse_size(const std::string& text) {
  size_t end = 0;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  std::string unit = text.substr(end);
  uint64_t scale = unit.empty() ? 1 : unit == "M" ? 1000000ull : unit == "G" ? 1000000000ull
                 : unit == "MiB" ? 1ull << 20 : unit == "GiB" ? 1ull << 30 : 0;
  if (end == 0 || end > 12 || scale == 0)
    throw_usage("--max-size expects a number of bytes, or N followed by M, G (10^6, 10^9, as llama.cpp), MiB or GiB; found '" +
                text + "'");
  return std::stoull(text.substr(0, end)) * scale;
}

}  // namespace ggufkit::cli
