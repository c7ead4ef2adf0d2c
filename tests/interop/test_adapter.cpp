// llama.cpp's own adapter loader (llama_adapter_lora_init, through libllama) against the
// rule book: of adapters of the tiny llama with one defect each (tests/role_cases.h), it
// refuses exactly those `validate --base` finds an error in, for the reason the finding
// quotes; an adapter without alpha it loads, and validate warns.
#include <gtest/gtest.h>

#include "ggufkit/check.h"
#include "../helpers.h"
#include "../role_cases.h"
#include "llama_api.h"

using namespace testing_helpers;
using namespace role_cases;

TEST(LlamaCppAdapters, RefusesExactlyTheAdaptersValidateBaseFindsAnErrorInAndForItsReason) {
  std::string why;
  ASSERT_TRUE(llama_api::available(why)) << why;
  size_t refused = 0;
  for (const AdapterCase& c : adapter_cases()) {
    SCOPED_TRACE(c.name);
    const std::string a = write_by_gguf_py(c.spec, "llama-adapter-" + c.name);
    const ggufkit::Verdict v = ggufkit::validate(a, false, nullptr, tiny_llama());
    std::string log;
    const bool loads = llama_api::adapter_loads(tiny_llama(), a, log);
    EXPECT_EQ(loads, v.errors == 0) << log;
    EXPECT_EQ(v.errors, c.errors.size());
    refused += !loads;
    for (const auto& [file, f] : v.findings) {
      if (f.severity != ggufkit::Severity::error) continue;
      // The finding quotes llama.cpp's own words: the log of its refusal has them.
      const size_t open = f.message.find("(\""), close = f.message.rfind("\")");
      ASSERT_NE(open, std::string::npos) << f.message;
      const std::string quoted = f.message.substr(open + 2, close - open - 2);
      EXPECT_NE(log.find(quoted), std::string::npos) << "llama.cpp said: " << log << "\nggufkit quotes: " << quoted;
    }
  }
  EXPECT_EQ(refused, 10u);  // of 13 cases: the valid one, the u32 aLoRA tokens and the missing alpha load
}
