#pragma once
// Shared pieces of the GPU tests: the skip rule, small test operators, CPU references and a
// lock-step sensor/actuator driver.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resident/resident.hpp"

/// GPU tests skip cleanly where there is no device (CI, the build machine), and fail where one is
/// expected: RESIDENT_REQUIRE_GPU=1 in the environment (scripts/gpu-check sets it). There any
/// other skip fails too, except in the MPS suites, which skip when no MPS daemon runs
/// (support.cu).
#define RESIDENT_REQUIRE_GPU()                                                     \
  do {                                                                             \
    if (::resident::device_count() == 0) {                                         \
      if (::resident::testing::gpu_expected()) {                                   \
        GTEST_FAIL() << "no usable CUDA GPU or driver was found ("                 \
                     << ::resident::no_device_reason()                             \
                     << "), but RESIDENT_REQUIRE_GPU=1 says this machine has one"; \
      }                                                                            \
      GTEST_SKIP() << "no usable CUDA GPU or driver was found: "                   \
                   << ::resident::no_device_reason();                              \
    }                                                                              \
  } while (false)

namespace resident::testing {

using namespace std::chrono_literals;

/// True when RESIDENT_REQUIRE_GPU is set to anything but empty or "0": a GPU is expected here,
/// and a GPU test that skips is a failure (MPS suites excepted).
[[nodiscard]] bool gpu_expected();

/// Whether a test of `suite` may skip where a GPU is expected: the MPS suites (mps, */mps_loop),
/// which need an MPS daemon that a GPU machine need not run.
[[nodiscard]] bool may_skip_on_gpu_machine(std::string_view suite);

/// Fresh random floats in [-1, 1) for every call (seeded from the test's random device).
std::vector<float> random_floats(std::size_t n);

/// A test name for a mode parameter: "host_graph", "while", ... (gtest names take no '-').
std::string mode_test_name(const ::testing::TestParamInfo<execution_mode>& info);

std::span<const std::byte> as_bytes(const std::vector<float>& v);

// ---- CPU references ----------------------------------------------------------------------------

/// sum((a*x + b)^2) in fp64: the lab pipeline affine -> square -> sum.
double lab_reference(std::span<const float> x, double scale = 2.0, double offset = 1.0);
/// Row-major out = in x W in fp64.
std::vector<double> matmul_reference(std::span<const double> in, std::span<const float> w,
                                     std::size_t n);

// ---- test operators ----------------------------------------------------------------------------

/// out = a + b (fp32 vectors of `elements`).
class add2 final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;

 private:
  std::int64_t _elements{};
};

// Sources and sinks in memory the test owns (external memory): the library's own.
using ops::external_sink;
using ops::external_source;

/// Spins on the GPU for `busy_ns` nanoseconds (param), to make the body slower than a sensor.
class busy_wait final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;

 private:
  std::int64_t _ns{};
};

/// out = in (fp32 vectors of `elements`), copied after one thread spun `ns` nanoseconds (param):
/// a deliberately slow branch of a DAG. One block, so the rest of the GPU stays free.
class slow_copy final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;

 private:
  std::int64_t _elements{};
  std::int64_t _ns{};
};

/// out = in (fp32 vectors of `elements`); on every `every`-th sample of the loop (the current
/// sample's number a multiple of it) one thread first spins `ns` nanoseconds: a body that
/// overruns a deadline on cue. Needs a loop (current_sample).
class slow_every final : public Operator {
 public:
  void setup(OperatorSpec& spec) override;
  void compute(CaptureContext& ctx) override;
  /// A device form of its own (a user's operator in persistent mode): the same spin and copy.
  [[nodiscard]] std::optional<device_form> persistent_form() const override;

 private:
  std::int64_t _elements{};
  std::int64_t _ns{};
  std::int64_t _every{};
};

/// Spins on the GPU while the host-mapped word `*hold` is non-zero: a loop that hangs on cue.
class hold_while_set final : public Operator {
 public:
  explicit hold_while_set(const std::uint32_t* device_word) : _word(device_word) {}
  void setup(OperatorSpec&) override {}
  void compute(CaptureContext& ctx) override;

 private:
  const std::uint32_t* _word;
};

/// Enqueues a host callback: a host node once captured (which graph modes may refuse).
class host_callback final : public Operator {
 public:
  void setup(OperatorSpec&) override {}
  void compute(CaptureContext& ctx) override;
};

/// Adds an empty node to the capture (allowed in a WHILE body, refused by device graphs).
class empty_node final : public Operator {
 public:
  void setup(OperatorSpec&) override {}
  void compute(CaptureContext& ctx) override;
};

/// Launches a kernel with an impossible block size: compute() fails with a CUDA error.
class bad_launch final : public Operator {
 public:
  void setup(OperatorSpec&) override {}
  void compute(CaptureContext& ctx) override;
};

// ---- the lab application: mailbox -> copy -> affine -> square -> sum -> mailbox -----------------

class lab_app final : public Application {
 public:
  /// `device`: the GPU its loop runs on (its mailbox belongs there).
  explicit lab_app(std::int64_t elements, std::size_t depth = 4, int device = 0);
  void compose() override;
  [[nodiscard]] std::shared_ptr<io::mailbox> mailbox() const { return _mailbox; }
  [[nodiscard]] std::int64_t elements() const { return _elements; }

 private:
  std::int64_t _elements;
  std::shared_ptr<io::mailbox> _mailbox;
};

/// Publishes each sample, waits for its output and returns the outputs in order. Fails the
/// test (and stops) when an output does not arrive within `timeout`.
std::vector<std::vector<std::byte>> drive_lockstep(io::mailbox& mb,
                                                   const std::vector<std::vector<float>>& samples,
                                                   std::chrono::milliseconds timeout = 5000ms);

float as_float(const std::vector<std::byte>& bytes);

/// Outputs of one run, per mode.
using outputs_by_mode = std::map<execution_mode, std::vector<std::vector<std::byte>>>;

/// Runs `app` in every mode, persistent included, driving `samples` in lockstep through `mb`
/// each time: every run stops cleanly, processes every sample and accounts exactly, and
/// `check` sees each sample's output with its index. Then every mode's outputs must be eager's,
/// bit for bit.
void expect_every_mode_gives_eagers_outputs(
    Application& app, io::mailbox& mb, const std::vector<std::vector<float>>& samples,
    const std::function<void(std::size_t, const std::vector<std::byte>&)>& check);

/// Waits until the loop has made more than `passes` controller passes (idle ones included): a
/// resident loop with no input keeps passing, so this ends unless the loop stopped. How many
/// idle passes fall between lockstep samples depends on timing (none under a slow tool such as
/// compute-sanitizer), so tests that check idle passes are counted wait for one after the last
/// sample. Returns false on timeout.
[[nodiscard]] bool wait_for_passes_beyond(const run_handle& run, std::uint64_t passes,
                                          std::chrono::milliseconds timeout = 5000ms);

}  // namespace resident::testing
