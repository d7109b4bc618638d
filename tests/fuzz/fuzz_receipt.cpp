// The receipts `resident report` reads: the JSON text (as receipt::read parses it),
// receipt::from_json, then what report does with them: the text table, the HTML page, and a
// merge of the receipt with itself (--merge).

#include <nlohmann/json.hpp>

#include <cstdint>

#include "fuzz_support.hpp"
#include "resident/measure/receipt.hpp"
#include "resident/measure/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace measure = resident::measure;
  const auto text = resident::fuzz::text_of(data, size);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    return 0;  // receipt::read: "not JSON", a std::runtime_error naming the file
  }
  try {
    const std::vector<measure::receipt> parts = {measure::receipt::from_json(j)};
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
