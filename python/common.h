#pragma once
// What the module's files share: the call into the library (GIL and locale), ggufkit.Error
// and its translation, Ctrl-C and progress for long jobs, and the dicts the jobs return.
#include <pybind11/pybind11.h>

#include <locale.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ggufkit/check.h"
#include "ggufkit/context.h"
#include "ggufkit/error.h"
#include "ggufkit/edit.h"
#include "ggufkit/tokenizer.h"

namespace ggufkit::python {

namespace py = pybind11;

extern PyObject* g_error;  // ggufkit.Error, a ValueError

// The thread in locale `l` (uselocale) while it lives, then back in the one it had.
class UseLocale {
 public:
  explicit UseLocale(locale_t l) : old_(::uselocale(l)) {}
  ~UseLocale() { ::uselocale(old_); }
  UseLocale(const UseLocale&) = delete;
  UseLocale& operator=(const UseLocale&) = delete;

 private:
  locale_t old_;
};

// The library reads and prints numbers with the C library (strtod, snprintf), which follows
// LC_NUMERIC: after a program's locale.setlocale(LC_ALL, "de_DE.UTF-8") it would read a
// template's 0.1 as 0. While it works, its thread is in the C locale; the library's
// background threads take their caller's locale (in_background).
struct CLocale : UseLocale {
  CLocale() : UseLocale(c_locale()) {}
  static locale_t c_locale() {
    static const locale_t c = ::newlocale(LC_ALL_MASK, "C", nullptr);
    return c;
  }
};

// A call into the library: the GIL let go, then the C locale (undone in the reverse order).
struct InLibrary {
  py::gil_scoped_release nogil;
  CLocale c;
};

struct FindingRecord {
  std::string file, code, severity, field, item, message, fix;
  std::optional<uint64_t> offset;
  std::vector<int32_t> ids;
};

// Ctrl-C during a long write: the progress callback, which the writer calls as it goes,
// and the context's poll, which a job calls before its last steps (after the final re-read,
// where no progress is told), ask Python for its signals and cancel the job (nothing is
// changed: a write is put in place only after its last check) when one is raised; so does
// an exception from the caller's own progress callable, which is then raised as it was. A
// Ctrl-C that comes once the job is done is raised with a note saying so.
struct Interrupts {
  explicit Interrupts(py::object progress) : user(std::move(progress)), caller(::uselocale(nullptr)) {
    if (!user.is_none() && !PyCallable_Check(user.ptr())) throw_usage("progress: expected a callable progress(written, total), or None");
  }
  std::atomic<bool> cancel{false};
  std::shared_ptr<py::error_already_set> raised;  // KeyboardInterrupt, or the callable's
  py::object user;                                // the caller's progress(written, total), or None
  locale_t caller;                                // the caller's code runs in the caller's locale
  void attach(Context& ctx) {
    ctx.cancel = &cancel;
    ctx.progress = [this](uint64_t written, uint64_t total) { ask([&] { if (!user.is_none()) user(written, total); }); };
    ctx.poll = [this] {
      ask([] {});
      return cancel.load();
    };
  }
  // Runs the job without the GIL; what the callback caught is raised after it.
  template <typename F>
  auto run(F f) {
    try {
      std::optional<InLibrary> nogil(std::in_place);
      auto r = f();
      nogil.reset();
      if (!raised) {
        done_before_the_stop();
        return r;
      }
    } catch (...) {
      if (!raised) throw;
    }
    raised->restore();
    throw py::error_already_set();
  }

 private:
  // Python's signals, then `then` (the caller's code); what either raises is kept and cancels.
  template <typename F>
  void ask(F then) {
    py::gil_scoped_acquire gil;
    if (raised) return;
    UseLocale theirs(caller);
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      then();
    } catch (py::error_already_set& e) {
      raised = std::make_shared<py::error_already_set>(std::move(e));
      cancel = true;
    }
  }
  // A Ctrl-C noted after the job's last look: the job's work stands, and the exception says so.
  static void done_before_the_stop() {
    if (PyErr_CheckSignals() == 0) return;
    py::error_already_set e;
    if (py::hasattr(e.value(), "add_note"))
      e.value().attr("add_note")("ggufkit: the stop came after the job was done: what it wrote is in place");
    throw e;
  }
};

// The library's error raised as Python's: ggufkit.Error with .file, .offset, .field, .code.
void raise_error(const Error& library);
// A library message in Python's words: request fields (force) as keywords (force=True).
std::string py_words(std::string_view text);
py::object finding_object(const Finding& f, const std::string& file);
py::list findings_list(const std::vector<Finding>& fs, const std::string& file);
py::dict file_dict(const WrittenFile& f);
// A Mapping that is not a dict (a MappingProxyType, a KeyMap) as a dict; anything else as it is.
py::object as_dict(const py::object& o);
// The model's vocabulary, or a format Error naming the file when it has none.
std::shared_ptr<const tokenizer::Vocab> vocab_of(const std::string& file, const Model& m);
// Token ids for `text`, a tokenizer's error as a format Error naming the file.
std::vector<int32_t> tokenize_with(const std::string& file, const tokenizer::Vocab& v, const std::string& text, bool add_special,
                                   bool parse_special);
// A text argument: a str (as UTF-8) or bytes; a usage Error otherwise.
std::string text_arg(const py::handle& text);

// The jobs of python/jobs.cpp (split, merge, convert, ...), added to the module.
void def_jobs(py::module_& m);

}  // namespace ggufkit::python
