// The receipts `resident report` reads: receipt::read (of the input, written to a file in a
// private temporary folder), then what report does with them: the text table, the HTML page,
// and a merge of the receipt with itself (--merge).

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>

#include "fuzz_support.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/measure/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace measure = resident::measure;
  const auto path = resident::fuzz::scratch_dir() / "receipt.json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const std::vector<measure::receipt> parts = {measure::receipt::read(path)};
    (void)measure::render_text(parts);
    (void)measure::render_html(parts);
    (void)measure::merge({parts.front(), parts.front()}).to_json().dump();
  } catch (const nlohmann::json::exception& e) {
    resident::fuzz::unexpected("nlohmann::json::exception", e.what());
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return 0;
}
