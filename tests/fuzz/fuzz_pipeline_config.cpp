// A pipeline file (examples/config/pipeline.yaml, resident run PIPELINE.yaml):
// ops::parse_pipeline_text with the catalog's kinds as the harness knows them (the catalog
// itself makes operators whose code is in .cu files): the vector kinds, the mailbox ends, and
// kinds a file cannot build.

#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.hpp"
#include "resident/app/error.hpp"
#include "resident/ops/pipeline_config.hpp"

namespace {

using resident::ops::kind_input;

kind_input kind_of(std::string_view kind) {
  if (kind == "ops.affine" || kind == "ops.square" || kind == "ops.sum_reduce" ||
      kind == "ops.copy" || kind == "ops.matmul") {
    return kind_input::none;
  }
  if (kind == "io.mailbox_rx" || kind == "io.mailbox_tx") return kind_input::mailbox;
  if (kind == "io.display_tx" || kind == "imaging.camera_isp") return kind_input::display;
  if (kind == "ops.external_source") return kind_input::memory;
  throw resident::composition_error("unknown operator kind '" + std::string(kind) + "'");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  resident::fuzz::expect_named_errors([&] {
    (void)resident::ops::parse_pipeline_text(resident::fuzz::text_of(data, size), "fuzz.yaml",
                                             kind_of);
  });
  return 0;
}
