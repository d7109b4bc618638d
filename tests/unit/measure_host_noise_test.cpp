// Host-noise bookkeeping: /proc/interrupts parsing and the stall log's summary, on hand-made
// input with hand-computed answers.

#include <gtest/gtest.h>

#include <ctime>

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

constexpr const char* k_stat =
    "cpu  900 10 300 50000 20 0 5 70 0 0\n"
    "cpu0 100 1 30 5000 2 0 1 7 0 0\n"
    "cpu1 200 2 60 6000 4 3 2 40 0 0\n"
    "cpu12 5 0 1 100 0 0 0 0\n"
    "intr 123 0 0\n"
    "ctxt 456\n";

TEST(host_noise, parses_one_cpus_time_fields_from_proc_stat) {
  const auto cpu1 = parse_cpu_times(k_stat, 1);
  ASSERT_EQ(cpu1.size(), 8U);
  EXPECT_EQ(cpu1.at("user"), 200U);
  EXPECT_EQ(cpu1.at("irq"), 3U);
  EXPECT_EQ(cpu1.at("steal"), 40U);
  EXPECT_EQ(parse_cpu_times(k_stat, 12).at("steal"), 0U);   // "cpu1" is not a prefix match
  EXPECT_EQ(parse_cpu_times(k_stat, 0).at("idle"), 5000U);  // nor is the "cpu " total line
  EXPECT_TRUE(parse_cpu_times(k_stat, 3).empty());
  EXPECT_TRUE(parse_cpu_times("", 0).empty());
}

TEST(host_noise, cpu_time_delta_is_in_milliseconds_per_field) {
  const std::map<std::string, std::uint64_t> before{{"steal", 40}, {"irq", 3}, {"user", 9}};
  const std::map<std::string, std::uint64_t> after{{"steal", 43}, {"irq", 3}, {"user", 5}};
  const auto d = cpu_time_delta_ms(before, after, 100);  // 100 ticks per second: 10 ms each
  EXPECT_DOUBLE_EQ(d["steal"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(d["irq"].get<double>(), 0.0);
  EXPECT_FALSE(d.contains("user"));  // went backwards: not a delta
  EXPECT_TRUE(cpu_time_delta_ms(before, after, 0).empty());
}

TEST(host_noise, schedstat_run_delay_and_the_delta_of_two_readings) {
  EXPECT_EQ(parse_schedstat_run_delay("123456 7890 42\n"), 7890);
  EXPECT_EQ(parse_schedstat_run_delay("123456"), -1);
  EXPECT_EQ(parse_schedstat_run_delay(""), -1);
  const thread_sched a{10, 2, 1000};
  const thread_sched b{15, 5, 4500};
  const auto d = sched_delta(a, b);
  EXPECT_EQ(d["voluntary_switches"].get<std::int64_t>(), 5);
  EXPECT_EQ(d["involuntary_switches"].get<std::int64_t>(), 3);
  EXPECT_DOUBLE_EQ(d["run_delay_us"].get<double>(), 3.5);
  EXPECT_FALSE(sched_delta(a, thread_sched{15, 5, -1}).contains("run_delay_us"));
}

TEST(host_noise, this_thread_reads_its_own_scheduling) {
  const thread_sched before = read_thread_sched();
  timespec nap{0, 1'000'000};
  nanosleep(&nap, nullptr);  // a sleep is a voluntary switch
  const thread_sched after = read_thread_sched();
  EXPECT_GE(after.voluntary_switches, before.voluntary_switches + 1);
  EXPECT_GE(after.involuntary_switches, before.involuntary_switches);
  if (before.run_delay_ns >= 0) {
    EXPECT_GE(after.run_delay_ns, before.run_delay_ns);
  }
}

TEST(host_noise, shared_stalls_are_long_ones_that_overlap_in_time) {
  stall_log a(8);
  stall_log b(8);
  // a's long stalls (>= 20 us): [100, 150), [300, 330), [500, 560), [900, 925) us; one short.
  a.record(100'000, 50'000);
  a.record(200'000, 5'000);  // short: not counted
  a.record(300'000, 30'000);
  a.record(500'000, 60'000);
  a.record(900'000, 25'000);
  // b: one long stall inside a's first, a short one during a's second (does not count), a long
  // one that begins just as a's third ends (no overlap) and one straddling a's fourth's start.
  b.record(120'000, 20'000);
  b.record(310'000, 10'000);
  b.record(560'000, 40'000);
  b.record(880'000, 30'000);
  const auto ab = a.shared_with(b, 20'000);
  EXPECT_DOUBLE_EQ(ab["min_us"].get<double>(), 20.0);
  EXPECT_EQ(ab["stalls"].get<std::int64_t>(), 4);
  EXPECT_EQ(ab["shared"].get<std::int64_t>(), 2);  // [100, 150) and [900, 925)
  const auto ba = b.shared_with(a, 20'000);
  EXPECT_EQ(ba["stalls"].get<std::int64_t>(), 3);
  EXPECT_EQ(ba["shared"].get<std::int64_t>(), 2);
  EXPECT_EQ(a.shared_with(stall_log(1), 20'000)["shared"].get<std::int64_t>(), 0);
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
