#pragma once
// The one JSON writer of the command line: every --json printer writes through it, so
// commas, escaping and spacing are decided here alone. Streaming: a large array (a
// vocabulary) is written as it is made, never held.
#include <concepts>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

#include "ggufkit/model.h"

namespace ggufkit::cli {

class JsonOut {
 public:
  // How a container's items are set apart: before the first, between two, before the
  // closing bracket (written even when empty). The spacing of today's output, kept.
  struct Items {
    const char *first, *between, *close;
  };
  static constexpr Items flat{"", ", ", ""};              // [1, 2]
  static constexpr Items lines{"\n  ", ",\n  ", "\n"};    // one item a line, "]" on its own line
  static constexpr Items lines_open{"\n  ", ",\n  ", ""};  // one item a line, "]" after the last (diff)

  // With `newline`, a line end follows the outermost value: a document of its own.
  explicit JsonOut(std::ostream& out, bool newline = true) : out_(out), newline_(newline) {}

  JsonOut& begin_object(Items items = flat) { return open('{', items); }
  JsonOut& end_object() { return close('}'); }
  JsonOut& begin_array(Items items = flat) { return open('[', items); }
  JsonOut& end_array() { return close(']'); }
  template <class F>
  JsonOut& object(F&& body, Items items = flat) {
    begin_object(items);
    body();
    return end_object();
  }
  template <class F>
  JsonOut& array(F&& body, Items items = flat) {
    begin_array(items);
    body();
    return end_array();
  }

  JsonOut& key(std::string_view k);  // the next value is this key's
  JsonOut& str(std::string_view s);
  JsonOut& null();
  JsonOut& boolean(bool b);
  template <std::integral T>
  JsonOut& num(T n) {
    if constexpr (std::same_as<T, bool>) return boolean(n);
    else if constexpr (std::signed_integral<T>) return raw(std::to_string(static_cast<long long>(n)));
    else return raw(std::to_string(static_cast<unsigned long long>(n)));
  }
  // A metadata value in full: numbers as numbers (nan and inf as strings), strings that
  // are not UTF-8 as {"hex": ...}, arrays as lists.
  JsonOut& value(const Value& v);
  // Text that is JSON already (a number printed to fixed digits).
  JsonOut& raw(std::string_view json);

 private:
  struct Level {
    Items items;
    bool any = false;
  };
  void before_value();
  JsonOut& open(char bracket, Items items);
  JsonOut& close(char bracket);
  void done();

  std::ostream& out_;
  bool newline_;
  bool after_key_ = false;
  std::vector<Level> levels_;
};

}  // namespace ggufkit::cli
