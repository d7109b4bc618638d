// Host-noise bookkeeping: /proc/interrupts parsing and the stall log's summary, on hand-made
// input with hand-computed answers.

#include <gtest/gtest.h>

#include "resident/measure/host_noise.hpp"

namespace resident::measure {
namespace {

constexpr const char* k_interrupts =
    "            CPU0       CPU1       CPU2       \n"
    "   0:         35          0          0   IO-APIC   2-edge      timer\n"
    "  24:          0        100        200  PCI-MSI 524288-edge      nvidia\n"
    " NMI:          0          0          0   Non-maskable interrupts\n"
    " LOC:     123456     234567     345678   Local timer interrupts\n"
    " CAL:       1000       2000       3000   Function call interrupts\n"
    " TLB:          5          6          7   TLB shootdowns\n"
    " ERR:          0\n"
    " MIS:          0\n";

TEST(host_noise, parses_one_cpus_column_by_source) {
  const auto cpu1 = parse_interrupts(k_interrupts, 1);
  EXPECT_EQ(cpu1.size(), 6U);  // ERR and MIS have no per-cpu columns
  EXPECT_EQ(cpu1.at("0 timer"), 0U);
  EXPECT_EQ(cpu1.at("24 nvidia"), 100U);
  EXPECT_EQ(cpu1.at("LOC Local timer interrupts"), 234567U);
  EXPECT_EQ(cpu1.at("CAL Function call interrupts"), 2000U);
  EXPECT_EQ(cpu1.at("TLB TLB shootdowns"), 6U);
  EXPECT_EQ(parse_interrupts(k_interrupts, 2).at("24 nvidia"), 200U);
  EXPECT_TRUE(parse_interrupts(k_interrupts, 5).empty());  // no such column
  EXPECT_TRUE(parse_interrupts("", 0).empty());
}

TEST(host_noise, delta_keeps_the_sources_that_went_up) {
  const std::map<std::string, std::uint64_t> before{{"LOC x", 10}, {"CAL y", 4}, {"TLB z", 1}};
  const std::map<std::string, std::uint64_t> after{
      {"LOC x", 1010}, {"CAL y", 4}, {"TLB z", 3}, {"24 nvidia", 2}};
  const auto d = interrupt_delta(before, after);
  EXPECT_EQ(d.size(), 3U);
  EXPECT_EQ(d["LOC x"].get<std::uint64_t>(), 1000U);
  EXPECT_EQ(d["TLB z"].get<std::uint64_t>(), 2U);
  EXPECT_EQ(d["24 nvidia"].get<std::uint64_t>(), 2U);  // new since `before`
  EXPECT_FALSE(d.contains("CAL y"));
}

TEST(host_noise, stall_log_counts_lengths_phases_and_what_did_not_fit) {
  stall_log log(3);
  // Period 1 ms from origin 1'000'000: phases 50 us, 320 us and 950 us (bins 0, 3, 9).
  log.record(1'050'000, 15'000);   // < 20 us
  log.record(2'320'000, 60'000);   // 50-100
  log.record(3'950'000, 700'000);  // >= 500
  log.record(5'000'000, 1'000);    // over capacity: counted as lost
  EXPECT_EQ(log.size(), 3U);
  EXPECT_EQ(log.lost(), 1U);
  const auto s = log.summary(10'000'000, 1'000'000, 1'000'000);  // a 10 ms run
  EXPECT_EQ(s["count"].get<std::size_t>(), 3U);
  EXPECT_EQ(s["lost"].get<std::uint64_t>(), 1U);
  EXPECT_DOUBLE_EQ(s["per_second"].get<double>(), 300.0);
  EXPECT_DOUBLE_EQ(s["total_us"].get<double>(), 775.0);
  EXPECT_DOUBLE_EQ(s["fraction_of_time"].get<double>(), 0.0775);
  EXPECT_DOUBLE_EQ(s["max_us"].get<double>(), 700.0);
  EXPECT_EQ(s["lengths_us"]["<20"].get<int>(), 1);
  EXPECT_EQ(s["lengths_us"]["20-50"].get<int>(), 0);
  EXPECT_EQ(s["lengths_us"]["50-100"].get<int>(), 1);
  EXPECT_EQ(s["lengths_us"][">=500"].get<int>(), 1);
  const std::vector<int> phase = s["phase"].get<std::vector<int>>();
  EXPECT_EQ(phase, (std::vector<int>{1, 0, 0, 1, 0, 0, 0, 0, 0, 1}));
  // A stall before the origin still lands in [0, period).
  stall_log early(1);
  early.record(900'000, 30'000);  // 100 us before the origin: phase 900 us
  EXPECT_EQ(early.summary(1'000'000, 1'000'000, 1'000'000)["phase"][9].get<int>(), 1);
}

}  // namespace
}  // namespace resident::measure
