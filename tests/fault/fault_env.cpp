// Linked only into ggufkit_faulty, the test build of the program: GGUFKIT_FAULT=POINT:ACTION
// (several separated by commas) makes the program act at a named fault point
// (ggufkit/fault.h). Each time the point is reached it prints "ggufkit: fault point POINT reached" on standard error first, so a
// test can tell that the point was reached before what it did there. Actions:
//   kill      die by SIGKILL, as kill -9 would do
//   int       send itself SIGINT, as a user's Ctrl-C would
//   flip:N    flip every bit of byte N of the output file, once: at a point with a
//             descriptor, and at `copied` when the piece just written holds byte N
//   fail:E    make the step at this point fail with errno E; once
//   fail:E@N  the same, the Nth time the point is reached (counted from 1) and only then
//   fail:E@*  the same, every time (a file system that never can, e.g. set-exchange:fail:22@*)
//   run:CMD   run the shell command CMD (another program acting at that instant); once
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ggufkit/fault.h"

namespace {

struct Spec {
  std::string point, action;
  bool spent = false;
  unsigned long reached = 0;
};

std::vector<Spec> read_specs() {
  std::vector<Spec> out;
  const char* env = std::getenv("GGUFKIT_FAULT");
  std::string s = env ? env : "";
  for (size_t at = 0; at < s.size();) {
    size_t comma = s.find(',', at);
    std::string one = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t colon = one.find(':');
    out.push_back({one.substr(0, colon), colon == std::string::npos ? "" : one.substr(colon + 1)});
    at = comma == std::string::npos ? s.size() : comma + 1;
  }
  return out;
}

int act(Spec& spec, const ggufkit::FaultSite& site) {
  std::string line = "ggufkit: fault point " + spec.point + " reached\n";
  if (::write(2, line.data(), line.size()) < 0) std::abort();
  const std::string& a = spec.action;
  ++spec.reached;
  if (a == "kill") ::raise(SIGKILL);
  if (a == "int") ::raise(SIGINT);
  if (spec.spent) return 0;
  if (a.rfind("flip:", 0) == 0) {
    unsigned long long at = std::strtoull(a.c_str() + 5, nullptr, 10);
    if (site.fd < 0 || (site.size > 0 && (at < site.offset || at - site.offset >= site.size))) return 0;
    spec.spent = true;
    unsigned char b = 0;
    if (::pread(site.fd, &b, 1, static_cast<off_t>(at)) != 1) std::abort();
    b ^= 0xFF;
    if (::pwrite(site.fd, &b, 1, static_cast<off_t>(at)) != 1) std::abort();
  } else if (a.rfind("run:", 0) == 0) {
    spec.spent = true;
    if (std::system(a.c_str() + 4) != 0) std::abort();
  } else if (a.rfind("fail:", 0) == 0) {
    const size_t at = a.find('@');
    if (at == std::string::npos) spec.spent = true;
    else if (a.compare(at + 1, std::string::npos, "*") != 0 && std::strtoul(a.c_str() + at + 1, nullptr, 10) != spec.reached)
      return 0;
    return std::atoi(a.c_str() + 5);
  }
  return 0;
}

int on_fault(const char* point, const ggufkit::FaultSite& site) {
  static std::vector<Spec> specs = read_specs();
  for (Spec& s : specs)
    if (s.point == point) return act(s, site);
  return 0;
}

const bool installed = (ggufkit::set_fault_hook(on_fault), true);

}  // namespace
