#include "ggufkit/fault.h"

namespace ggufkit {

namespace {
FaultHook g_hook = nullptr;
}

void set_fault_hook(FaultHook hook) { g_hook = hook; }

int fault_point(const char* point, const FaultSite& site) { return g_hook ? g_hook(point, site) : 0; }

}  // namespace ggufkit
