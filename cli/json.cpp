#include "json.h"

#include <string>
#include <utility>

#include "ggufkit/text.h"

namespace ggufkit::cli {

void JsonOut::before_value() {
  if (std::exchange(after_key_, false) || levels_.empty()) return;
  Level& l = levels_.back();
  out_ << (std::exchange(l.any, true) ? l.items.between : l.items.first);
}

void JsonOut::done() {
  if (levels_.empty() && newline_) out_ << '\n';
}

JsonOut& JsonOut::open(char bracket, Items items) {
  before_value();
  out_ << bracket;
  levels_.push_back({items});
  return *this;
}

JsonOut& JsonOut::close(char bracket) {
  out_ << levels_.back().items.close << bracket;
  levels_.pop_back();
  done();
  return *this;
}

JsonOut& JsonOut::key(std::string_view k) {
  before_value();
  out_ << json_string(k) << ": ";
  after_key_ = true;
  return *this;
}

JsonOut& JsonOut::raw(std::string_view json) {
  before_value();
  out_ << json;
  done();
  return *this;
}

JsonOut& JsonOut::str(std::string_view s) { return raw(json_string(s)); }
JsonOut& JsonOut::null() { return raw("null"); }
JsonOut& JsonOut::boolean(bool b) { return raw(b ? "true" : "false"); }

JsonOut& JsonOut::value(const Value& v) {
  switch (v.type) {
    case ValueType::string:
      if (is_valid_utf8(v.str)) return str(v.str);
      return object([&] { key("hex").str(hex_text(v.str)); });
    case ValueType::array:
      return array([&] {
        v.each([&](const Value& item) {
          value(item);
          return true;
        });
      });
    default: {
      // JSON has no nan or inf: they are written as strings.
      const std::string t = number_text(v);
      return t == "nan" || t == "inf" || t == "-inf" ? str(t) : raw(t);
    }
  }
}

}  // namespace ggufkit::cli
