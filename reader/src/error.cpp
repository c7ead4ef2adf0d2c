#include "ggufkit/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

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
    : std::runtime_error(compose(f, off, fld, msg)),
      kind(k), file(std::move(f)), offset(off), field(std::move(fld)), message(std::move(msg)) {}

void throw_usage(const std::string& message) {
  throw Error(Error::Kind::usage, "", std::nullopt, "", message);
}

void throw_io(const std::string& file, const std::string& message) {
  std::string reason = errno ? std::string(": ") + std::strerror(errno) : std::string();
  throw Error(Error::Kind::io, file, std::nullopt, "", message + reason);
}

namespace {
void print_note(const std::string& file, const std::string& message) {
  std::fprintf(stderr, "ggufkit: note: %s: %s\n", file.c_str(), message.c_str());
}
NoteHandler g_note = print_note;
}  // namespace

void set_note_handler(NoteHandler handler) { g_note = handler ? handler : print_note; }
void note(const std::string& file, const std::string& message) { g_note(file, message); }

}  // namespace ggufkit
