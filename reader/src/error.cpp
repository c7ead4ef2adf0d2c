#include "ggufkit/error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace ggufkit {

namespace {
std::string compose(const std::string& file, const std::optional<uint64_t>& offset,
                    const std::string& field, const std::string& message) {
  std::string s;
  if (!file.empty()) s += file + ": ";
  if (offset) s += "at byte " + std::to_string(*offset) + ", ";
  if (!field.empty()) s += field + ": ";
  return s + message;
}
}  // namespace

Error::Error(Kind k, std::string f, std::optional<uint64_t> off, std::string fld, std::string msg)
    : std::runtime_error(msg), kind(k), file(std::move(f)), offset(off), field(std::move(fld)), message(std::move(msg)) {}

const char* Error::what() const noexcept {
  try {
    what_ = compose(file, offset, field, message);
    return what_.c_str();
  } catch (...) {  // no memory for the whole of it: the message alone
    return std::runtime_error::what();
  }
}

void throw_usage(const std::string& message) {
  throw Error(Error::Kind::usage, "", std::nullopt, "", message);
}

Error Error::with_note(const std::string& note, const std::string& in_file) const {
  Error e(kind, file.empty() ? in_file : file, offset, field, message + note);
  e.not_gguf = not_gguf;
  e.sys_errno = sys_errno;
  return e;
}

void throw_io(const std::string& file, const std::string& message) {
  const int err = errno;
  std::string reason = err ? std::string(": ") + std::strerror(err) : std::string();
  Error e(Error::Kind::io, file, std::nullopt, "", message + reason);
  e.sys_errno = err;
  throw e;
}

std::string reworded(std::string_view text, const std::function<std::string(std::string_view name)>& word) {
  std::string out;
  size_t at = 0;
  for (size_t open; (open = text.find('`', at)) != std::string_view::npos;) {
    const size_t close = text.find('`', open + 1);
    if (close == std::string_view::npos) break;
    const std::string_view name = text.substr(open + 1, close - open - 1);
    const bool field = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
    out.append(text.substr(at, open - at));
    if (field) out += word(name);
    else out.append(text.substr(open, close - open + 1));
    at = close + 1;
  }
  out.append(text.substr(at));
  return out;
}

std::string clipped(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  auto inside = [&](size_t i) { return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  size_t head = max * 2 / 3, tail = text.size() - max / 3;
  while (head > 0 && inside(head)) --head;  // never half a character
  while (inside(tail)) ++tail;
  return std::string(text.substr(0, head)) + "..." + std::string(text.substr(tail)) + " (" + std::to_string(text.size()) +
         " bytes)";
}

}  // namespace ggufkit
