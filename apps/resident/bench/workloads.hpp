#pragma once
// The applications the benchmarks run: an emulated I/O pair (8-byte token in, 8 bytes out)
// around a workload, and the stamping operators of the overhead benchmark.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "resident/resident.hpp"

namespace resident::bench {

/// A workload name: "empty", "matmul6" (six dependent 512 x 512 matmuls) or "matmulNxK" (K
/// dependent N x N matmuls, e.g. matmul256x2, for loops sized to small partitions).
struct workload_shape {
  std::int64_t n{0};  // 0: empty
  int chain{0};
};
/// Throws std::invalid_argument naming the accepted forms.
[[nodiscard]] workload_shape parse_workload(const std::string& name);

/// rx -> [workload] -> tx between a mailbox's sensor and actuator ends.
///   empty:   rx -> tx (the token comes straight back)
///   matmul6: a fixed 512 x 512 input -> six dependent cuBLAS fp32 matmuls -> probe -> tx,
///            released by rx (the probe sends back out[0][0..1]); matmulNxK likewise
class io_app final : public Application {
 public:
  /// Throws std::invalid_argument for other workload names.
  /// `device`: the GPU its loop runs on (its mailbox's commit counter lives there).
  explicit io_app(std::string workload, io::mailbox_format format = io::mailbox_format::automatic,
                  int device = 0);
  void compose() override;

  [[nodiscard]] const std::string& workload() const noexcept { return _workload; }
  /// The workload's name in results: with the mailbox format where one was asked for
  /// ("empty/lines"), the name alone for automatic.
  [[nodiscard]] const std::string& label() const noexcept { return _label; }
  [[nodiscard]] io::mailbox& mailbox() const noexcept { return *_mailbox; }
  /// The token the sensor sends for sample `seq` (never 0, differs per sample).
  [[nodiscard]] static std::uint64_t token(std::uint64_t seq) noexcept;
  /// Whether the 8 bytes the actuator received are right for a sample carrying `token`: the
  /// token itself (empty), or out[0][0..1] within 1e-4 of the fp64 reference (matmul6).
  [[nodiscard]] bool output_matches(std::uint64_t token, std::span<const std::byte> out) const;

 private:
  std::string _workload;
  std::string _label;
  workload_shape _shape;
  std::shared_ptr<io::mailbox> _mailbox;
  std::array<float, 2> _matmul_probe{};  // fp64 CPU reference, rounded to fp32
};

/// Overhead benchmark: a handler that releases sample last + 1 every iteration and stamps its
/// own start and its decision, and a body that stamps its start; nothing else runs.
class stamp_handler final : public Operator {
 public:
  void setup(OperatorSpec&) override {}
  void compute(CaptureContext& ctx) override;
};

class stamp_body final : public Operator {
 public:
  void setup(OperatorSpec&) override {}
  void compute(CaptureContext& ctx) override;
};

class overhead_app final : public Application {
 public:
  overhead_app() : Application("overhead") {}
  void compose() override;
};

/// The fixed n x n input of the matmul workloads (row-major, uniform in [-1, 1), fixed seed).
[[nodiscard]] std::vector<float> matmul_input(std::int64_t n);

/// Row 0 of in x W1 x ... x Wk in fp64 (what matmul6's probe reports, first two values).
[[nodiscard]] std::vector<double> chained_row0(const std::vector<float>& in,
                                               const std::vector<std::vector<float>>& weights,
                                               std::size_t n);

}  // namespace resident::bench
