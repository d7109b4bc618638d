#pragma once
// resident bench link: a producer loop on one GPU hands each sample to a consumer loop on
// another (or the same) GPU through io::device_link, with no host between them. Per payload
// size and mode: the handoff (the producer's egress start -> the consumer's handler sighting,
// the two device clocks compared through an offset calibrated by ping-pong over peer memory),
// the producer's publish time, the peer bandwidth measured in the same run and the bound
// bytes / bandwidth + 5 us; every sample's payload checked at the consumer's output.

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "resident/app/loop.hpp"
#include "resident/measure/receipt.hpp"

namespace resident::bench {

struct link_settings {
  int producer{0};
  int consumer{-1};  // -1: device 1 where there are two GPUs, else 0 (one GPU, one clock)
  /// Payload bytes: a 1080p RGBA frame and a 224x224 planar fp32 tensor.
  std::vector<std::size_t> sizes{1920 * 1080 * 4, 224 * 224 * 3 * 4};
  std::vector<std::string> modes{"while", "tail", "persistent"};
  std::size_t samples{1000};
  std::size_t warmup{50};
  double rate_hz{100.0};  // the host publishes each payload into the producer's mailbox
  std::size_t depth{4};
  std::size_t clock_rounds{1000};
  double slack_us{5.0};  // the target: p99 handoff <= bytes / peer bandwidth + slack
  std::string command;

  void make_quick();
  /// Throws std::invalid_argument naming the setting and its allowed range.
  void validate() const;
};

[[nodiscard]] measure::receipt run_link_bench(const link_settings& settings, std::ostream& log);
[[nodiscard]] std::string link_table(const measure::receipt& receipt);

// ---- pieces with no GPU (unit-tested) --------------------------------------------------------

/// Per sample the consumer processed (repeats and idle passes skipped), in µs: the handoff,
/// its handler sighting (consumer clock) minus its arrival stamp (the producer's egress start,
/// producer clock) put on the consumer's clock by `b_minus_a_ns`. Entries without an arrival
/// stamp are skipped.
[[nodiscard]] std::vector<double> handoff_us(std::span<const telemetry_entry> consumer,
                                             double b_minus_a_ns);

/// Per sample, in µs: the producer's publish, from its egress start (the consumer's arrival
/// stamp of the same link sample) to its commit stamp (both on the producer's clock). The k-th
/// sample the producer processed is the link's k-th (the bench runs in lockstep, nothing
/// dropped): matched by order, from the first processed entry of each.
[[nodiscard]] std::vector<double> publish_us(std::span<const telemetry_entry> producer,
                                             std::span<const telemetry_entry> consumer);

}  // namespace resident::bench
