// A soak's health lines as `resident report` reads them (bench soak --health): the input, written
// to a file in a private temporary folder, is taken for health lines where its first line says
// so, then read, summarized and drawn (text and HTML).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <stdexcept>

#include "bench/soak/soak_health.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace bench = resident::bench;
  const auto path = (resident::fuzz::scratch_dir() / "health.jsonl").string();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    if (!bench::is_health_log(path)) return 0;
    const bench::health_log log = bench::read_health_log(path);
    (void)bench::health_summary(log).dump();
    (void)bench::health_report_text(log);
    (void)bench::health_report_html(log);
  } catch (const nlohmann::json::exception& e) {
    resident::fuzz::unexpected("nlohmann::json::exception", e.what());
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
