// The BE kernel library on the device: each kernel against its fp64 CPU reference, the
// preemptible-kernel contract (a raised word writes nothing; a resume finishes the launch and
// never runs a block of a non-idempotent kernel twice) and the two models end to end.

#include <gmock/gmock.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/support.hpp"
#include "resident/sched/be_kernels.hpp"
#include "resident/sched/be_layers.hpp"
#include "resident/sched/be_models.hpp"

namespace resident::sched {
namespace {

using resident::testing::random_floats;
using ::testing::ElementsAre;

constexpr float sentinel = 7.5F;  // what an output holds before a launch that must not write it

/// The host-mapped words of one launch, shared by all of its attempts.
class launch_record {
 public:
  explicit launch_record(std::int32_t blocks)
      : _blocks(blocks),
        _done(words(blocks)),
        _runs(words(blocks)),
        _exits(words(1)),
        _preempt(words(1)) {}

  [[nodiscard]] be_launch_view view(std::uint32_t attempt = 1, std::int32_t first_block = 0,
                                    bool skip_done = false) const {
    be_launch_view v;
    v.preempt = _preempt.device_as<const std::uint32_t>();
    v.done = _done.device_as<std::uint32_t>();
    v.runs = _runs.device_as<std::uint32_t>();
    v.exits = _exits.device_as<std::uint32_t>();
    v.attempt = attempt;
    v.first_block = first_block;
    v.blocks = _blocks;
    v.skip_done = skip_done ? 1U : 0U;
    return v;
  }

  [[nodiscard]] std::int32_t blocks() const noexcept { return _blocks; }
  void raise(bool on) const { word(_preempt, 0).store(on ? 1U : 0U); }
  /// While a launch runs: the device writes these words concurrently.
  [[nodiscard]] std::uint32_t done_now(std::int32_t block) const {
    return word(_done, block).load(std::memory_order_relaxed);
  }
  // After the stream drained.
  [[nodiscard]] std::vector<std::uint32_t> done() const { return all(_done); }
  [[nodiscard]] std::vector<std::uint32_t> runs() const { return all(_runs); }
  [[nodiscard]] std::uint32_t exits() const { return word(_exits, 0).load(); }

 private:
  static std::size_t words(std::int32_t n) {
    return static_cast<std::size_t>(n) * sizeof(std::uint32_t);
  }
  static std::atomic_ref<std::uint32_t> word(const host_mapped_buffer& b, std::int32_t i) {
    return std::atomic_ref<std::uint32_t>(b.host_as<std::uint32_t>()[i]);
  }
  [[nodiscard]] std::vector<std::uint32_t> all(const host_mapped_buffer& b) const {
    std::vector<std::uint32_t> out(static_cast<std::size_t>(_blocks));
    for (std::int32_t i = 0; i < _blocks; ++i) out[static_cast<std::size_t>(i)] = word(b, i).load();
    return out;
  }

  std::int32_t _blocks;
  host_mapped_buffer _done;
  host_mapped_buffer _runs;
  host_mapped_buffer _exits;
  host_mapped_buffer _preempt;
};

device_buffer upload(const std::vector<float>& x) {
  device_buffer b(x.size() * sizeof(float));
  RESIDENT_CUDA_TRY(cudaMemcpy(b.data(), x.data(), b.size(), cudaMemcpyHostToDevice));
  return b;
}

std::vector<float> download(const device_buffer& b) {
  std::vector<float> x(b.size() / sizeof(float));
  RESIDENT_CUDA_TRY(cudaMemcpy(x.data(), b.data(), b.size(), cudaMemcpyDeviceToHost));
  return x;
}

/// Integers in [-8, 8]: fp32 sums of a few thousand of them are exact in any order, so a block
/// that ran twice shows as a wrong sum, never as rounding.
std::vector<float> random_integers(std::size_t n) {
  static std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<int> dist(-8, 8);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(dist(rng));
  return v;
}

/// One launch of one kernel on fresh inputs, with the output an exact run must leave.
struct kernel_case {
  be_call call;
  std::vector<device_buffer> buffers;
  std::size_t output{};          // index in buffers
  std::vector<double> expected;  // the output after one exact run
  bool exact{false};             // compare bit for bit (copies, integer sums)

  [[nodiscard]] const device_buffer& out() const { return buffers[output]; }
};

void expect_values(const std::string& what, const std::vector<float>& got,
                   const std::vector<double>& want, bool exact) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tolerance = exact ? 0.0 : 1e-4 + 1e-4 * std::abs(want[i]);
    // Written so that NaN fails.
    if (!(std::abs(static_cast<double>(got[i]) - want[i]) <= tolerance) && ++bad <= 5) {
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected " << want[i];
    }
  }
  EXPECT_EQ(bad, 0U) << what << ": values out of tolerance";
}

void expect_output(const kernel_case& c) {
  expect_values(c.call.name, download(c.out()), c.expected, c.exact);
}

void expect_every(const std::vector<std::uint32_t>& words, std::uint32_t value,
                  const std::string& what) {
  const auto wrong =
      std::count_if(words.begin(), words.end(), [value](std::uint32_t w) { return w != value; });
  EXPECT_EQ(wrong, 0) << wrong << " of " << words.size() << " " << what << " words are not "
                      << value;
}

// ---- one case per kernel -----------------------------------------------------------------------

kernel_case gemm_case(std::int32_t m, std::int32_t n, std::int32_t k) {
  const auto a = random_floats(static_cast<std::size_t>(m) * k);
  const auto b = random_floats(static_cast<std::size_t>(k) * n);
  kernel_case c;
  c.buffers.push_back(upload(a));
  c.buffers.push_back(upload(b));
  c.buffers.push_back(upload(std::vector<float>(static_cast<std::size_t>(m) * n, sentinel)));
  c.output = 2;
  c.call = make_call("gemm", gemm_args{c.buffers[0].data_as<float>(), c.buffers[1].data_as<float>(),
                                       c.buffers[2].data_as<float>(), m, n, k});
  c.expected = gemm_reference(to_double(a), to_double(b), m, n, k);
  return c;
}

kernel_case gemm_bias_act_case(std::int32_t m, std::int32_t n, std::int32_t k, activation act) {
  const auto a = random_floats(static_cast<std::size_t>(m) * k);
  const auto b = random_floats(static_cast<std::size_t>(k) * n);
  const auto bias = random_floats(static_cast<std::size_t>(n));
  kernel_case c;
  c.buffers.push_back(upload(a));
  c.buffers.push_back(upload(b));
  c.buffers.push_back(upload(bias));
  c.buffers.push_back(upload(std::vector<float>(static_cast<std::size_t>(m) * n, sentinel)));
  c.output = 3;
  c.call = make_call("gemm_bias_act", gemm_bias_act_args{{c.buffers[0].data_as<float>(),
                                                          c.buffers[1].data_as<float>(),
                                                          c.buffers[3].data_as<float>(), m, n, k},
                                                         c.buffers[2].data_as<float>(),
                                                         act});
  c.expected = gemm_reference(to_double(a), to_double(b), m, n, k);
  bias_act_reference(c.expected, to_double(bias), 1, act);  // bias by column
  return c;
}

kernel_case conv2d_case(const conv2d_shape& sh) {
  const auto x = random_floats(static_cast<std::size_t>(sh.n) * sh.c * sh.h * sh.w);
  const auto f = random_floats(static_cast<std::size_t>(sh.k) * sh.c * sh.r * sh.s);
  kernel_case c;
  c.buffers.push_back(upload(x));
  c.buffers.push_back(upload(f));
  c.buffers.push_back(upload(
      std::vector<float>(static_cast<std::size_t>(sh.n) * sh.k * sh.p() * sh.q(), sentinel)));
  c.output = 2;
  c.call =
      make_call("conv2d", conv2d_args{c.buffers[0].data_as<float>(), c.buffers[1].data_as<float>(),
                                      c.buffers[2].data_as<float>(), sh});
  c.expected = conv2d_reference(to_double(x), to_double(f), sh);
  return c;
}

kernel_case bias_act_case(std::int64_t elements, std::int32_t inner, std::int32_t channels,
                          activation act) {
  const auto x = random_floats(static_cast<std::size_t>(elements));
  const auto bias = random_floats(static_cast<std::size_t>(channels));
  kernel_case c;
  c.buffers.push_back(upload(x));
  c.buffers.push_back(upload(bias));
  c.output = 0;  // in place
  c.call = make_call("bias_act",
                     bias_act_args{c.buffers[0].data_as<float>(), c.buffers[1].data_as<float>(),
                                   elements, inner, channels, act});
  c.expected = to_double(x);
  bias_act_reference(c.expected, to_double(bias), inner, act);
  return c;
}

kernel_case maxpool2d_case(std::int32_t n, std::int32_t ch, std::int32_t h, std::int32_t w) {
  const auto x = random_floats(static_cast<std::size_t>(n) * ch * h * w);
  kernel_case c;
  c.buffers.push_back(upload(x));
  c.buffers.push_back(
      upload(std::vector<float>(static_cast<std::size_t>(n) * ch * (h / 2) * (w / 2), sentinel)));
  c.output = 1;
  c.call = make_call("maxpool2d", maxpool2d_args{c.buffers[0].data_as<float>(),
                                                 c.buffers[1].data_as<float>(), n, ch, h, w});
  c.expected = maxpool2d_reference(to_double(x), n, ch, h, w);
  c.exact = true;
  return c;
}

/// out starts at r for row r, so the case also checks that the kernel adds.
kernel_case row_sum_case(std::int32_t rows, std::int32_t cols) {
  const auto x = random_integers(static_cast<std::size_t>(rows) * cols);
  std::vector<float> out(static_cast<std::size_t>(rows));
  for (std::size_t r = 0; r < out.size(); ++r) out[r] = static_cast<float>(r);
  kernel_case c;
  c.buffers.push_back(upload(x));
  c.buffers.push_back(upload(out));
  c.output = 1;
  c.call = make_call("row_sum", row_sum_args{c.buffers[0].data_as<float>(),
                                             c.buffers[1].data_as<float>(), rows, cols});
  c.expected = row_sum_reference(to_double(x), rows, cols);
  for (std::size_t r = 0; r < out.size(); ++r) c.expected[r] += out[r];
  c.exact = true;
  return c;
}

kernel_case fill_case(std::int64_t elements, float value) {
  kernel_case c;
  c.buffers.push_back(upload(std::vector<float>(static_cast<std::size_t>(elements), sentinel)));
  c.call = make_call("fill", fill_args{c.buffers[0].data_as<float>(), elements, value});
  c.expected.assign(static_cast<std::size_t>(elements), value);
  c.exact = true;
  return c;
}

/// Every kernel, odd sizes, at least two blocks each.
std::vector<kernel_case> every_kernel() {
  std::vector<kernel_case> cases;
  cases.push_back(gemm_case(70, 130, 45));
  cases.push_back(gemm_bias_act_case(70, 130, 45, activation::relu));
  cases.push_back(conv2d_case({2, 3, 11, 9, 70, 3, 3, 2, 1}));
  cases.push_back(bias_act_case(2 * 7 * 150, 150, 7, activation::relu));
  cases.push_back(maxpool2d_case(2, 3, 45, 47));
  cases.push_back(row_sum_case(5, 2500));
  cases.push_back(fill_case(2500, 3.25F));
  return cases;
}

/// One uninterrupted launch: correct output, every block committed once by attempt 1.
void expect_single_attempt(const kernel_case& c) {
  SCOPED_TRACE(c.call.name);
  launch_record rec(c.call.blocks);
  stream s;
  c.call.launch(s.get(), rec.view());
  s.synchronize();
  expect_output(c);
  expect_every(rec.done(), 1, "done");
  expect_every(rec.runs(), 1, "runs");
  EXPECT_EQ(rec.exits(), 0U);
}

// ---- each kernel against its reference ---------------------------------------------------------

TEST(be_kernels, gemm_matches_the_reference_on_odd_sizes) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(gemm_case(70, 130, 45));
  expect_single_attempt(gemm_case(1, 1, 1));
  expect_single_attempt(gemm_case(129, 65, 17));
  expect_single_attempt(gemm_case(64, 64, 16));
}

TEST(be_kernels, gemm_bias_act_matches_the_reference_with_and_without_relu) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(gemm_bias_act_case(70, 130, 45, activation::relu));
  expect_single_attempt(gemm_bias_act_case(129, 65, 17, activation::none));
  expect_single_attempt(gemm_bias_act_case(1, 1, 1, activation::relu));
  // Random signs in [-8, 8]: relu must have zeroed some outputs, or the case tests nothing.
  const kernel_case c = gemm_bias_act_case(64, 64, 16, activation::relu);
  expect_single_attempt(c);
  const auto zeros = std::count(c.expected.begin(), c.expected.end(), 0.0);
  EXPECT_GT(zeros, 64 * 64 / 8);
}

TEST(be_kernels, conv2d_matches_the_reference_with_stride_padding_and_odd_filters) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(conv2d_case({2, 3, 11, 9, 70, 3, 3, 2, 1}));
  expect_single_attempt(conv2d_case({1, 5, 9, 7, 7, 3, 2, 1, 0}));
  expect_single_attempt(conv2d_case({3, 16, 16, 16, 32, 3, 3, 1, 1}));
  expect_single_attempt(conv2d_case({1, 2, 5, 5, 3, 1, 1, 3, 2}));  // pad beyond a 1x1 filter
}

TEST(be_kernels, bias_act_matches_the_reference_with_and_without_relu) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(bias_act_case(2 * 7 * 150, 150, 7, activation::relu));
  expect_single_attempt(bias_act_case(3001, 1, 10, activation::none));
}

TEST(be_kernels, maxpool2d_matches_the_reference_on_odd_planes) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(maxpool2d_case(2, 3, 13, 11));
  expect_single_attempt(maxpool2d_case(2, 3, 45, 47));
}

TEST(be_kernels, row_sum_adds_each_row_exactly) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(row_sum_case(5, 2500));
  expect_single_attempt(row_sum_case(3, 10));
}

TEST(be_kernels, fill_sets_every_element) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(fill_case(2500, 3.25F));
  expect_single_attempt(fill_case(1, -1.0F));
}

// ---- the preemption contract -------------------------------------------------------------------

TEST(be_kernels, a_raised_word_stops_every_block_before_it_writes) {
  RESIDENT_REQUIRE_GPU();
  for (const kernel_case& c : every_kernel()) {
    SCOPED_TRACE(c.call.name);
    const std::vector<float> before = download(c.out());
    launch_record rec(c.call.blocks);
    rec.raise(true);
    stream s;
    c.call.launch(s.get(), rec.view());
    s.synchronize();
    EXPECT_EQ(download(c.out()), before);
    expect_every(rec.done(), 0, "done");
    expect_every(rec.runs(), 0, "runs");
    EXPECT_EQ(rec.exits(), static_cast<std::uint32_t>(c.call.blocks));
  }
}

// The diagnostics trace: every block that ran is counted in and out, with its clock; a block
// the word stopped never enters it.
TEST(be_kernels, a_traced_launch_counts_every_running_block_in_and_out) {
  RESIDENT_REQUIRE_GPU();
  device_buffer trace_mem(sizeof(be_trace));
  const auto read = [&] {
    be_trace t;
    RESIDENT_CUDA_TRY(cudaMemcpy(&t, trace_mem.data(), sizeof(t), cudaMemcpyDeviceToHost));
    return t;
  };
  stream s;
  for (const kernel_case& c : every_kernel()) {
    SCOPED_TRACE(c.call.name);
    RESIDENT_CUDA_TRY(cudaMemset(trace_mem.data(), 0, sizeof(be_trace)));
    launch_record rec(c.call.blocks);
    rec.raise(true);
    be_launch_view v = rec.view();
    v.trace = trace_mem.data_as<be_trace>();
    c.call.launch(s.get(), v);
    s.synchronize();
    be_trace t = read();
    EXPECT_EQ(t.running, 0U);
    EXPECT_EQ(t.last_begin_ns, 0U);  // every block stopped at begin(): none ran
    EXPECT_EQ(t.last_end_ns, 0U);
    EXPECT_EQ(t.stops, static_cast<std::uint32_t>(c.call.blocks));  // ... each turned away
    EXPECT_GT(t.last_stop_ns, 0U);
    rec.raise(false);
    v = rec.view(2, 0, true);
    v.trace = trace_mem.data_as<be_trace>();
    c.call.launch(s.get(), v);
    s.synchronize();
    expect_output(c);
    t = read();
    EXPECT_EQ(t.running, 0U);  // every block that began also ended
    EXPECT_GT(t.last_begin_ns, 0U);
    EXPECT_GE(t.last_end_ns, t.last_begin_ns);
    EXPECT_EQ(t.stops, static_cast<std::uint32_t>(c.call.blocks));  // none more on the resume
  }
}

/// A first attempt under a raised word writes nothing (the output keeps its initial values)
/// and every block leaves; the resume computes the whole result, each block once.
void expect_resume_after_a_raised_word(const kernel_case& c) {
  SCOPED_TRACE(c.call.name);
  const auto before = download(c.out());
  launch_record rec(c.call.blocks);
  rec.raise(true);
  stream s;
  c.call.launch(s.get(), rec.view(1));
  s.synchronize();
  EXPECT_TRUE(download(c.out()) == before) << "written while the word was up";
  rec.raise(false);
  c.call.launch(s.get(), rec.view(2, 0, true));
  s.synchronize();
  expect_output(c);
  expect_every(rec.done(), 2, "done");
  expect_every(rec.runs(), 1, "runs");
  EXPECT_EQ(rec.exits(), static_cast<std::uint32_t>(c.call.blocks));
}

TEST(be_kernels, a_resume_after_a_raised_word_computes_the_result) {
  RESIDENT_REQUIRE_GPU();
  for (const kernel_case& c : every_kernel()) expect_resume_after_a_raised_word(c);
}

TEST(be_kernels, a_resume_that_skips_done_blocks_runs_every_block_exactly_once) {
  RESIDENT_REQUIRE_GPU();
  for (const kernel_case& c : every_kernel()) {
    SCOPED_TRACE(c.call.name);
    ASSERT_GE(c.call.blocks, 2);
    const std::int32_t half = c.call.blocks / 2;
    launch_record rec(c.call.blocks);
    stream s;
    // Attempt 1 commits the upper blocks; attempt 2 covers the whole grid and must skip them.
    c.call.launch(s.get(), rec.view(1, half));
    c.call.launch(s.get(), rec.view(2, 0, true));
    s.synchronize();
    expect_output(c);
    const auto done = rec.done();
    for (std::int32_t b = 0; b < c.call.blocks; ++b) {
      EXPECT_EQ(done[static_cast<std::size_t>(b)], b < half ? 2U : 1U) << "block " << b;
    }
    expect_every(rec.runs(), 1, "runs");
    EXPECT_EQ(rec.exits(), 0U);
  }
}

// ---- bounded grids (be_launch_view::next, next_left, max_grid) ---------------------------------

/// A (next, next_left) pair in device memory, shared by the launches of one test.
class work_counter {
 public:
  work_counter() { RESIDENT_CUDA_TRY(cudaMemset(_words.data(), 0, _words.size())); }
  [[nodiscard]] be_launch_view bound(be_launch_view v, std::int32_t grid) const {
    v.next = _words.data_as<std::uint32_t>();
    v.next_left = v.next + 1;
    v.max_grid = grid;
    return v;
  }
  [[nodiscard]] std::vector<std::uint32_t> read() const {
    std::vector<std::uint32_t> w(2);
    RESIDENT_CUDA_TRY(cudaMemcpy(w.data(), _words.data(), _words.size(), cudaMemcpyDeviceToHost));
    return w;
  }

 private:
  device_buffer _words{2 * sizeof(std::uint32_t)};
};

TEST(be_kernels, a_bounded_grid_runs_every_block_once_and_leaves_its_counter_zero) {
  RESIDENT_REQUIRE_GPU();
  const work_counter counter;  // every launch below reuses it, with no reset in between
  stream s;
  for (const kernel_case& c : every_kernel()) {
    SCOPED_TRACE(c.call.name);
    launch_record rec(c.call.blocks);
    c.call.launch(s.get(), counter.bound(rec.view(), 2));  // two blocks take every logical one
    s.synchronize();
    expect_output(c);
    expect_every(rec.done(), 1, "done");
    expect_every(rec.runs(), 1, "runs");
    EXPECT_THAT(counter.read(), ElementsAre(0U, 0U));
  }
  // Stopped by a raised word, then resumed exactly, on the same counter.
  for (const kernel_case& c : every_kernel()) {
    SCOPED_TRACE(c.call.name + " (resumed)");
    launch_record rec(c.call.blocks);
    rec.raise(true);
    c.call.launch(s.get(), counter.bound(rec.view(1), 3));
    s.synchronize();
    expect_every(rec.done(), 0, "done");
    EXPECT_THAT(counter.read(), ElementsAre(0U, 0U));
    rec.raise(false);
    c.call.launch(s.get(), counter.bound(rec.view(2, 0, true), 3));
    s.synchronize();
    expect_output(c);
    expect_every(rec.done(), 2, "done");
    expect_every(rec.runs(), 1, "runs");
    EXPECT_THAT(counter.read(), ElementsAre(0U, 0U));
  }
}

// Without a counter: grid block i runs logical blocks i, i + grid, ...
TEST(be_kernels, a_strided_bounded_grid_runs_every_block_once_and_resumes_exactly) {
  RESIDENT_REQUIRE_GPU();
  stream s;
  for (const kernel_case& c : every_kernel()) {
    SCOPED_TRACE(c.call.name);
    launch_record rec(c.call.blocks);
    be_launch_view v = rec.view();
    v.max_grid = 2;
    c.call.launch(s.get(), v);
    s.synchronize();
    expect_output(c);
    expect_every(rec.done(), 1, "done");
    expect_every(rec.runs(), 1, "runs");
  }
  for (const kernel_case& c : every_kernel()) {
    SCOPED_TRACE(c.call.name + " (resumed)");
    launch_record rec(c.call.blocks);
    rec.raise(true);
    be_launch_view first = rec.view(1);
    first.max_grid = 3;
    c.call.launch(s.get(), first);
    s.synchronize();
    expect_every(rec.done(), 0, "done");
    rec.raise(false);
    be_launch_view second = rec.view(2, 0, true);
    second.max_grid = 3;
    c.call.launch(s.get(), second);
    s.synchronize();
    expect_output(c);
    expect_every(rec.done(), 2, "done");
    expect_every(rec.runs(), 1, "runs");
  }
}

TEST(be_kernels, a_bounded_grid_view_is_checked) {
  RESIDENT_REQUIRE_GPU();
  const kernel_case c = fill_case(2500, 1.0F);
  launch_record rec(c.call.blocks);
  stream s;
  const work_counter counter;
  be_launch_view negative = counter.bound(rec.view(), -1);
  EXPECT_THROW(c.call.launch(s.get(), negative), std::invalid_argument);
  be_launch_view left_only = counter.bound(rec.view(), 0);
  left_only.next = nullptr;
  EXPECT_THROW(c.call.launch(s.get(), left_only), std::invalid_argument);
}

/// Raises the word once the launch has committed its first block (or after a second, if it
/// has not started by then): the launch is cut short somewhere in its grid.
void raise_while_running(const launch_record& rec) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (rec.done_now(0) == 0 && std::chrono::steady_clock::now() < deadline) {
  }
  rec.raise(true);
}

/// After a cut-short attempt 1: every block either committed or stopped, once.
std::int32_t expect_committed_or_stopped(const launch_record& rec) {
  const auto done = rec.done();
  const auto runs = rec.runs();
  std::int32_t committed = 0;
  for (std::size_t b = 0; b < done.size(); ++b) {
    EXPECT_TRUE(done[b] == 0U || done[b] == 1U) << "block " << b;
    EXPECT_EQ(runs[b], done[b] == 1U ? 1U : 0U) << "block " << b;
    if (done[b] == 1U) ++committed;
  }
  EXPECT_EQ(rec.exits(), static_cast<std::uint32_t>(rec.blocks() - committed));
  return committed;
}

TEST(be_kernels, a_row_sum_preempted_mid_flight_resumes_without_running_a_block_twice) {
  RESIDENT_REQUIRE_GPU();
  const kernel_case c = row_sum_case(4096, 8192);  // 32768 short blocks
  launch_record rec(c.call.blocks);
  stream s;
  c.call.launch(s.get(), rec.view(1));
  raise_while_running(rec);
  s.synchronize();
  const std::int32_t committed = expect_committed_or_stopped(rec);
  ::testing::Test::RecordProperty("committed_before_preemption", committed);
  const auto first = rec.done();

  rec.raise(false);
  c.call.launch(s.get(), rec.view(2, 0, true));
  s.synchronize();
  expect_output(c);
  const auto done = rec.done();
  for (std::size_t b = 0; b < done.size(); ++b) {
    EXPECT_EQ(done[b], first[b] == 1U ? 1U : 2U) << "block " << b;
  }
  expect_every(rec.runs(), 1, "runs");
}

TEST(be_kernels, a_gemm_preempted_mid_flight_resumes_from_its_completed_prefix) {
  RESIDENT_REQUIRE_GPU();
  constexpr std::int32_t m = 4096;
  constexpr std::int32_t n = 4096;
  constexpr std::int32_t k = 128;  // 4096 blocks of 8 K-steps: several waves
  const device_buffer a = upload(random_floats(static_cast<std::size_t>(m) * k));
  const device_buffer b = upload(random_floats(static_cast<std::size_t>(k) * n));
  const device_buffer whole(static_cast<std::size_t>(m) * n * sizeof(float));
  const device_buffer resumed(static_cast<std::size_t>(m) * n * sizeof(float));
  const gemm_args uninterrupted{
      a.data_as<float>(), b.data_as<float>(), whole.data_as<float>(), m, n, k};
  const gemm_args cut{a.data_as<float>(), b.data_as<float>(), resumed.data_as<float>(), m, n, k};
  stream s;
  launch_record reference(gemm_blocks(uninterrupted));
  launch_gemm(s.get(), reference.view(), uninterrupted);

  launch_record rec(gemm_blocks(cut));
  launch_gemm(s.get(), rec.view(1), cut);
  raise_while_running(rec);
  s.synchronize();
  const std::int32_t committed = expect_committed_or_stopped(rec);
  ::testing::Test::RecordProperty("committed_before_preemption", committed);
  // An idempotent launch resumes from its first uncommitted block and may re-run later ones.
  const auto first = rec.done();
  const auto prefix =
      static_cast<std::int32_t>(std::find(first.begin(), first.end(), 0U) - first.begin());

  rec.raise(false);
  launch_gemm(s.get(), rec.view(2, prefix, false), cut);
  s.synchronize();
  expect_every(reference.done(), 1, "uninterrupted done");
  const auto done = rec.done();
  EXPECT_EQ(std::count(done.begin(), done.end(), 0U), 0);
  // Each tile is computed by the same code in the same order: the bits match.
  EXPECT_TRUE(download(resumed) == download(whole));
}

// ---- checkpoints
// ----------------------------------------------------------------------------------

/// A checkpoint area for one launch: the partial sums in device memory, the progress words and
/// the save count host-mapped so the test can read them.
class checkpoint_area {
 public:
  explicit checkpoint_area(std::int32_t blocks)
      : _blocks(blocks),
        _saved(static_cast<std::size_t>(blocks) * be_tile_state_floats * sizeof(float)),
        _progress(static_cast<std::size_t>(blocks) * sizeof(std::uint32_t)),
        _saves(sizeof(std::uint32_t)) {}

  [[nodiscard]] be_launch_view with(be_launch_view v) const {
    v.saved = _saved.data_as<float>();
    v.progress = _progress.device_as<std::uint32_t>();
    v.saves = _saves.device_as<std::uint32_t>();
    v.saved_floats = be_tile_state_floats;
    return v;
  }
  [[nodiscard]] std::vector<std::uint32_t> progress() const {
    std::vector<std::uint32_t> out(static_cast<std::size_t>(_blocks));
    for (std::int32_t i = 0; i < _blocks; ++i) {
      out[static_cast<std::size_t>(i)] =
          std::atomic_ref<std::uint32_t>(_progress.host_as<std::uint32_t>()[i]).load();
    }
    return out;
  }
  [[nodiscard]] std::uint32_t saves() const {
    return std::atomic_ref<std::uint32_t>(*_saves.host_as<std::uint32_t>()).load();
  }

 private:
  std::int32_t _blocks;
  device_buffer _saved;
  host_mapped_buffer _progress;
  host_mapped_buffer _saves;
};

/// Cuts a launch with long reductions part-way and resumes it from its checkpoints: blocks
/// stopped mid-reduction must have saved their partial sums, and attempt 2 must go on from them
/// to the same bits as an uninterrupted launch.
void expect_checkpointed_resume(const kernel_case& whole, const kernel_case& cut,
                                std::int32_t reduction_steps) {
  stream s;
  launch_record reference(whole.call.blocks);
  whole.call.launch(s.get(), reference.view());
  s.synchronize();

  launch_record rec(cut.call.blocks);
  const checkpoint_area area(cut.call.blocks);
  cut.call.launch(s.get(), area.with(rec.view(1)));
  raise_while_running(rec);
  s.synchronize();
  const std::int32_t committed = expect_committed_or_stopped(rec);
  const auto first = rec.done();
  const auto progress = area.progress();
  std::int32_t saved = 0;
  for (std::size_t b = 0; b < first.size(); ++b) {
    // A committed block keeps no checkpoint of this attempt; a stopped one may hold one, short
    // of the whole reduction.
    if (first[b] == 1U) {
      EXPECT_EQ(progress[b], 0U) << "block " << b;
    } else if (progress[b] != 0U) {
      EXPECT_LT(progress[b], static_cast<std::uint32_t>(reduction_steps)) << "block " << b;
      ++saved;
    }
  }
  EXPECT_EQ(static_cast<std::uint32_t>(saved), area.saves());
  // Blocks were cut mid-reduction (the word rose while the second wave ran), and kept their
  // work.
  EXPECT_GT(saved, 0) << committed << " of " << rec.blocks() << " committed before the raise";
  ::testing::Test::RecordProperty("checkpointed_blocks", saved);

  rec.raise(false);
  cut.call.launch(s.get(), area.with(rec.view(2, 0, true)));
  s.synchronize();
  const auto done = rec.done();
  for (std::size_t b = 0; b < done.size(); ++b) {
    EXPECT_EQ(done[b], first[b] == 1U ? 1U : 2U) << "block " << b;
  }
  expect_every(rec.runs(), 1, "runs");
  // The restored partial sums continue the same sequence of fused multiply-adds: the bits
  // match, not just the values.
  // The two outputs started from different sentinels, so equal outputs also mean that every
  // element was written by both launches.
  EXPECT_TRUE(download(cut.out()) == download(whole.out()));
}

/// Two launches of one kernel on the same inputs, into different outputs. No CPU reference:
/// at these sizes it would take seconds, and the uninterrupted launch is the reference (the
/// kernels match their fp64 references on the cases above).
template <class Args>
std::pair<kernel_case, kernel_case> twins(std::vector<std::vector<float>> inputs,
                                          std::size_t outputs,
                                          const std::function<Args(const kernel_case&)>& args) {
  std::pair<kernel_case, kernel_case> out;
  for (kernel_case* c : {&out.first, &out.second}) {
    for (const auto& x : inputs) c->buffers.push_back(upload(x));
    // Different starting values: an element neither launch wrote cannot compare equal.
    c->buffers.push_back(
        upload(std::vector<float>(outputs, c == &out.first ? sentinel : -sentinel)));
    c->output = inputs.size();
    c->call = make_call("twin", args(*c));
  }
  return out;
}

// 1024 gemm blocks (about two waves) of 256 K-steps each, twice on the same inputs.
constexpr std::int32_t long_m = 2048;
constexpr std::int32_t long_n = 2048;
constexpr std::int32_t long_k = 4096;
std::pair<kernel_case, kernel_case> long_gemm_twins() {
  return twins<gemm_args>(
      {random_floats(std::size_t{long_m} * long_k), random_floats(std::size_t{long_k} * long_n)},
      std::size_t{long_m} * long_n, [](const kernel_case& c) {
        return gemm_args{c.buffers[0].data_as<float>(),
                         c.buffers[1].data_as<float>(),
                         c.buffers[2].data_as<float>(),
                         long_m,
                         long_n,
                         long_k};
      });
}

TEST(be_kernels, a_gemm_cut_mid_reduction_resumes_from_its_checkpoints_bit_exactly) {
  RESIDENT_REQUIRE_GPU();
  auto [whole, cut] = long_gemm_twins();
  EXPECT_EQ(cut.call.saved_floats, be_tile_state_floats);
  expect_checkpointed_resume(whole, cut, long_k / be_k_step);
}

TEST(be_kernels, a_gemm_bias_act_cut_mid_reduction_resumes_from_its_checkpoints_bit_exactly) {
  RESIDENT_REQUIRE_GPU();
  auto [whole, cut] = twins<gemm_bias_act_args>(
      {random_floats(std::size_t{long_m} * long_k), random_floats(std::size_t{long_k} * long_n),
       random_floats(std::size_t{long_n})},
      std::size_t{long_m} * long_n, [](const kernel_case& c) {
        return gemm_bias_act_args{{c.buffers[0].data_as<float>(), c.buffers[1].data_as<float>(),
                                   c.buffers[3].data_as<float>(), long_m, long_n, long_k},
                                  c.buffers[2].data_as<float>(),
                                  activation::relu};
      });
  EXPECT_EQ(cut.call.saved_floats, be_tile_state_floats);
  expect_checkpointed_resume(whole, cut, long_k / be_k_step);
}

TEST(be_kernels, blocks_that_added_fewer_steps_than_the_minimum_keep_no_checkpoint) {
  RESIDENT_REQUIRE_GPU();
  auto [whole, cut] = long_gemm_twins();
  stream s;
  launch_record reference(whole.call.blocks);
  whole.call.launch(s.get(), reference.view());
  launch_record rec(cut.call.blocks);
  const checkpoint_area area(cut.call.blocks);
  be_launch_view v = area.with(rec.view(1));
  v.min_saved_steps = long_k / be_k_step + 1;  // more than any block can add
  cut.call.launch(s.get(), v);
  raise_while_running(rec);
  s.synchronize();
  (void)expect_committed_or_stopped(rec);
  EXPECT_EQ(area.saves(), 0U);
  expect_every(area.progress(), 0, "progress");
  rec.raise(false);
  be_launch_view resume = area.with(rec.view(2, 0, true));
  resume.min_saved_steps = v.min_saved_steps;
  cut.call.launch(s.get(), resume);
  s.synchronize();
  EXPECT_TRUE(download(cut.out()) == download(whole.out()));  // started over, same bits
}

TEST(be_kernels, a_conv2d_cut_mid_reduction_resumes_from_its_checkpoints_bit_exactly) {
  RESIDENT_REQUIRE_GPU();
  // 32 images of 32 x 32 pixels (512 pixel tiles) x 128 channels: 1024 blocks; c*r*s = 1152
  // reductions, 72 K-steps each.
  const conv2d_shape sh{32, 128, 32, 32, 128, 3, 3, 1, 1};
  auto [whole, cut] = twins<conv2d_args>(
      {random_floats(std::size_t{32} * 128 * 32 * 32), random_floats(std::size_t{128} * 128 * 9)},
      std::size_t{32} * 128 * 32 * 32, [sh](const kernel_case& c) {
        return conv2d_args{c.buffers[0].data_as<float>(), c.buffers[1].data_as<float>(),
                           c.buffers[2].data_as<float>(), sh};
      });
  EXPECT_EQ(cut.call.saved_floats, be_tile_state_floats);
  expect_checkpointed_resume(whole, cut, (128 * 9 + be_k_step - 1) / be_k_step);
}

TEST(be_kernels, a_checkpoint_area_must_come_with_progress_words_and_room_for_a_tile) {
  RESIDENT_REQUIRE_GPU();
  const kernel_case c = gemm_case(64, 64, 64);
  launch_record rec(c.call.blocks);
  const checkpoint_area area(c.call.blocks);
  stream s;
  be_launch_view no_progress = area.with(rec.view());
  no_progress.progress = nullptr;
  EXPECT_THROW(c.call.launch(s.get(), no_progress), std::invalid_argument);
  be_launch_view too_small = area.with(rec.view());
  too_small.saved_floats = be_tile_state_floats - 1;
  EXPECT_THROW(c.call.launch(s.get(), too_small), std::invalid_argument);
  // Short kernels keep no checkpoint.
  EXPECT_EQ(make_call("f", fill_args{c.buffers[2].data_as<float>(), 8, 0.0F}).saved_floats, 0);
}

// ---- the models ---------------------------------------------------------------------------------

std::vector<std::string> names(const be_model& model) {
  std::vector<std::string> out;
  for (const be_call& call : model.calls()) out.push_back(call.name);
  return out;
}

/// One inference: every call in order on `s`, each with a fresh record.
std::vector<launch_record> run_inference(const be_model& model, const stream& s) {
  std::vector<launch_record> records;
  records.reserve(model.calls().size());
  for (const be_call& call : model.calls()) {
    call.launch(s.get(), records.emplace_back(call.blocks).view());
  }
  return records;
}

void expect_inferences_match_the_reference(be_model& model) {
  stream s;
  for (int run = 0; run < 2; ++run) {  // the sequence re-runs from its own start
    SCOPED_TRACE("inference " + std::to_string(run + 1));
    const auto x = random_floats(model.input_elements());
    model.set_input(x);
    const auto records = run_inference(model, s);
    s.synchronize();
    for (std::size_t i = 0; i < records.size(); ++i) {
      SCOPED_TRACE(model.calls()[i].name);
      expect_every(records[i].done(), 1, "done");
      expect_every(records[i].runs(), 1, "runs");
    }
    expect_values(model.name() + " scores", model.read_output(), model.reference(x), false);
  }
}

TEST(be_kernels, mlp_model_matches_its_reference_run_after_run) {
  RESIDENT_REQUIRE_GPU();
  mlp_model model(8, {100, 257, 64, 10}, 42);
  EXPECT_THAT(names(model), ElementsAre("mlp.scores.fill", "mlp.fc1.gemm", "mlp.fc1.bias_relu",
                                        "mlp.fc2.gemm", "mlp.fc2.bias_relu", "mlp.fc3.gemm",
                                        "mlp.fc3.bias", "mlp.scores.row_sum"));
  EXPECT_EQ(model.input_elements(), 800U);
  EXPECT_EQ(model.output_elements(), 8U);
  expect_inferences_match_the_reference(model);
}

TEST(be_kernels, a_fused_mlp_matches_the_reference_and_the_unfused_one) {
  RESIDENT_REQUIRE_GPU();
  mlp_model fused(8, {100, 257, 64, 10}, 42, mlp_bias::fused);
  EXPECT_THAT(names(fused),
              ElementsAre("mlp.scores.fill", "mlp.fc1.gemm_bias_relu", "mlp.fc2.gemm_bias_relu",
                          "mlp.fc3.gemm_bias", "mlp.scores.row_sum"));
  expect_inferences_match_the_reference(fused);
  // The same seed gives the same weights: both forms score one input alike.
  mlp_model unfused(8, {100, 257, 64, 10}, 42);
  const auto x = random_floats(unfused.input_elements());
  fused.set_input(x);
  unfused.set_input(x);
  stream s;
  (void)run_inference(fused, s);
  (void)run_inference(unfused, s);
  s.synchronize();
  std::vector<double> want;
  for (float v : unfused.read_output()) want.push_back(v);
  expect_values("fused against unfused", fused.read_output(), want, false);
}

TEST(be_kernels, cnn_model_matches_its_reference_run_after_run) {
  RESIDENT_REQUIRE_GPU();
  cnn_model model(3, 7);
  EXPECT_THAT(
      names(model),
      ElementsAre("cnn.scores.fill", "cnn.conv1.conv2d", "cnn.conv1.bias_relu",
                  "cnn.pool1.maxpool2d", "cnn.conv2.conv2d", "cnn.conv2.bias_relu",
                  "cnn.pool2.maxpool2d", "cnn.fc.gemm", "cnn.fc.bias", "cnn.scores.row_sum"));
  EXPECT_EQ(model.input_elements(), 3U * 3 * 32 * 32);
  EXPECT_EQ(model.output_elements(), 3U);
  expect_inferences_match_the_reference(model);
}

TEST(be_kernels, models_reject_an_input_of_the_wrong_size) {
  RESIDENT_REQUIRE_GPU();
  mlp_model model(2, {4, 3}, 1);
  const std::vector<float> x(7, 0.0F);
  EXPECT_THROW(model.set_input(x), std::invalid_argument);
  EXPECT_THROW((void)model.reference(x), std::invalid_argument);
}

// ---- the layer kernels of translated CNNs (be_layers.hpp) --------------------------------------

/// Grouped convolution with a bias and an activation, fp64: NCHW input, [k, c / groups, r, s]
/// filter.
std::vector<double> conv_layer_reference(const std::vector<float>& x, const std::vector<float>& f,
                                         const std::vector<float>& bias, const conv2d_shape& sh,
                                         std::int32_t groups, activation act) {
  const std::int32_t cg = sh.c / groups;
  const std::int32_t kg = sh.k / groups;
  std::vector<double> out(static_cast<std::size_t>(sh.n) * sh.k * sh.p() * sh.q());
  std::size_t o = 0;
  for (std::int32_t n = 0; n < sh.n; ++n) {
    for (std::int32_t k = 0; k < sh.k; ++k) {
      const std::int32_t g = k / kg;
      for (std::int32_t p = 0; p < sh.p(); ++p) {
        for (std::int32_t q = 0; q < sh.q(); ++q) {
          double acc = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(k)];
          for (std::int32_t c = 0; c < cg; ++c) {
            for (std::int32_t r = 0; r < sh.r; ++r) {
              const std::int32_t ih = p * sh.stride - sh.pad + r;
              if (ih < 0 || ih >= sh.h) continue;
              for (std::int32_t t = 0; t < sh.s; ++t) {
                const std::int32_t iw = q * sh.stride - sh.pad + t;
                if (iw < 0 || iw >= sh.w) continue;
                const std::size_t xi =
                    ((static_cast<std::size_t>(n) * sh.c + g * cg + c) * sh.h + ih) * sh.w + iw;
                const std::size_t fi =
                    ((static_cast<std::size_t>(k) * cg + c) * sh.r + r) * sh.s + t;
                acc += static_cast<double>(x[xi]) * f[fi];
              }
            }
          }
          out[o++] = activation_fp64(acc, act);
        }
      }
    }
  }
  return out;
}

std::size_t count(const conv2d_shape& sh) {
  return static_cast<std::size_t>(sh.n) * sh.k * sh.p() * sh.q();
}

kernel_case conv2d_layer_case(const conv2d_shape& sh, std::int32_t groups, activation act) {
  const auto x = random_floats(static_cast<std::size_t>(sh.n) * sh.c * sh.h * sh.w);
  const auto f = random_floats(static_cast<std::size_t>(sh.k) * (sh.c / groups) * sh.r * sh.s);
  const auto bias = random_floats(static_cast<std::size_t>(sh.k));
  kernel_case c;
  for (const auto* v : {&x, &f, &bias}) c.buffers.push_back(upload(*v));
  c.buffers.push_back(upload(std::vector<float>(count(sh), sentinel)));
  c.output = 3;
  c.call = make_call("conv2d_layer", conv2d_layer_args{{c.buffers[0].data_as<float>(),
                                                        c.buffers[1].data_as<float>(),
                                                        c.buffers[3].data_as<float>(), sh},
                                                       c.buffers[2].data_as<float>(),
                                                       act,
                                                       groups});
  c.expected = conv_layer_reference(x, f, bias, sh, groups, act);
  return c;
}

kernel_case depthwise_case(const conv2d_shape& sh, activation act, bool with_bias) {
  const auto x = random_floats(static_cast<std::size_t>(sh.n) * sh.c * sh.h * sh.w);
  const auto f = random_floats(static_cast<std::size_t>(sh.k) * sh.r * sh.s);
  const auto bias =
      with_bias ? random_floats(static_cast<std::size_t>(sh.k)) : std::vector<float>{};
  kernel_case c;
  c.buffers.push_back(upload(x));
  c.buffers.push_back(upload(f));
  c.buffers.push_back(upload(std::vector<float>(count(sh), sentinel)));
  if (with_bias) c.buffers.push_back(upload(bias));
  c.output = 2;
  c.call =
      make_call("depthwise_conv2d",
                depthwise_conv2d_args{c.buffers[0].data_as<float>(), c.buffers[1].data_as<float>(),
                                      with_bias ? c.buffers[3].data_as<float>() : nullptr,
                                      c.buffers[2].data_as<float>(), sh, act});
  c.expected = conv_layer_reference(x, f, bias, sh, sh.c, act);
  return c;
}

/// pointwise on [n, channels, inner] with the given parts (scale and shift, y, gate).
kernel_case pointwise_case(std::int32_t n, std::int32_t channels, std::int32_t inner, bool affine,
                           bool residual, bool gated, activation act) {
  const std::size_t elements = static_cast<std::size_t>(n) * channels * inner;
  const auto x = random_floats(elements);
  const auto y = random_floats(elements);
  const auto scale = random_floats(static_cast<std::size_t>(channels));
  const auto shift = random_floats(static_cast<std::size_t>(channels));
  const auto gate = random_floats(static_cast<std::size_t>(n) * channels);
  kernel_case c;
  for (const auto* v : {&x, &y, &scale, &shift, &gate}) c.buffers.push_back(upload(*v));
  c.buffers.push_back(upload(std::vector<float>(elements, sentinel)));
  c.output = 5;
  auto ptr = [&c](std::size_t i, bool on) { return on ? c.buffers[i].data_as<float>() : nullptr; };
  c.call = make_call("pointwise",
                     pointwise_args{ptr(0, true), ptr(1, residual), ptr(2, affine), ptr(3, affine),
                                    ptr(4, gated), c.buffers[5].data_as<float>(),
                                    static_cast<std::int64_t>(elements), inner, channels, act});
  for (std::size_t e = 0; e < elements; ++e) {
    const std::size_t ch = e / static_cast<std::size_t>(inner) % static_cast<std::size_t>(channels);
    const std::size_t image = e / (static_cast<std::size_t>(inner) * channels);
    double v = x[e];
    if (affine) v = v * scale[ch] + shift[ch];
    if (gated) v *= gate[image * static_cast<std::size_t>(channels) + ch];
    if (residual) v += y[e];
    c.expected.push_back(activation_fp64(v, act));
  }
  return c;
}

kernel_case pool2d_case(const pool2d_args& shape, bool integers) {
  const std::size_t in = static_cast<std::size_t>(shape.n) * shape.c * shape.h * shape.w;
  const auto x = integers ? random_integers(in) : random_floats(in);
  const std::size_t out = static_cast<std::size_t>(shape.n) * shape.c * shape.p() * shape.q();
  kernel_case c;
  c.buffers.push_back(upload(x));
  c.buffers.push_back(upload(std::vector<float>(out, sentinel)));
  c.output = 1;
  pool2d_args a = shape;
  a.input = c.buffers[0].data_as<float>();
  a.output = c.buffers[1].data_as<float>();
  c.call = make_call("pool2d", a);
  for (std::int32_t plane = 0; plane < shape.n * shape.c; ++plane) {
    for (std::int32_t p = 0; p < shape.p(); ++p) {
      for (std::int32_t q = 0; q < shape.q(); ++q) {
        double acc = shape.kind == pooling::max ? -INFINITY : 0.0;
        int inside = 0;
        for (std::int32_t i = 0; i < shape.kernel_h; ++i) {
          for (std::int32_t j = 0; j < shape.kernel_w; ++j) {
            const std::int32_t ih = p * shape.stride - shape.pad + i;
            const std::int32_t iw = q * shape.stride - shape.pad + j;
            if (ih < 0 || ih >= shape.h || iw < 0 || iw >= shape.w) continue;
            const double v = x[(static_cast<std::size_t>(plane) * shape.h + ih) * shape.w + iw];
            acc = shape.kind == pooling::max ? std::max(acc, v) : acc + v;
            ++inside;
          }
        }
        if (shape.kind == pooling::average) {
          acc /= shape.count_include_pad ? shape.kernel_h * shape.kernel_w : inside;
        }
        c.expected.push_back(acc);
      }
    }
  }
  c.exact = shape.kind == pooling::max;
  return c;
}

kernel_case global_avg_pool_case(std::int32_t planes, std::int32_t plane) {
  const auto x = random_floats(static_cast<std::size_t>(planes) * plane);
  kernel_case c;
  c.buffers.push_back(upload(x));
  c.buffers.push_back(upload(std::vector<float>(static_cast<std::size_t>(planes), sentinel)));
  c.output = 1;
  c.call = make_call("global_avg_pool",
                     global_avg_pool_args{c.buffers[0].data_as<float>(),
                                          c.buffers[1].data_as<float>(), planes, plane});
  for (std::int32_t i = 0; i < planes; ++i) {
    double sum = 0;
    for (std::int32_t j = 0; j < plane; ++j) sum += x[static_cast<std::size_t>(i) * plane + j];
    c.expected.push_back(sum / plane);
  }
  return c;
}

/// Copies [n, c, inner] into channels offset.. of [n, out_channels, inner]; the other channels
/// keep their sentinel.
kernel_case channel_copy_case(std::int32_t n, std::int32_t ch, std::int32_t inner,
                              std::int32_t out_channels, std::int32_t offset) {
  const auto x = random_floats(static_cast<std::size_t>(n) * ch * inner);
  kernel_case c;
  c.buffers.push_back(upload(x));
  const std::size_t out = static_cast<std::size_t>(n) * out_channels * inner;
  c.buffers.push_back(upload(std::vector<float>(out, sentinel)));
  c.output = 1;
  c.call = make_call("channel_copy",
                     channel_copy_args{c.buffers[0].data_as<float>(), c.buffers[1].data_as<float>(),
                                       n, ch, inner, out_channels, offset});
  c.expected.assign(out, sentinel);
  for (std::int32_t i = 0; i < n; ++i) {
    for (std::int32_t k = 0; k < ch; ++k) {
      for (std::int32_t j = 0; j < inner; ++j) {
        c.expected[(static_cast<std::size_t>(i) * out_channels + offset + k) * inner + j] =
            x[(static_cast<std::size_t>(i) * ch + k) * inner + j];
      }
    }
  }
  c.exact = true;
  return c;
}

std::vector<kernel_case> every_layer_kernel() {
  std::vector<kernel_case> cases;
  cases.push_back(conv2d_layer_case({2, 8, 11, 9, 12, 3, 3, 2, 1}, 4, activation::relu6));
  cases.push_back(depthwise_case({2, 6, 13, 11, 12, 3, 3, 2, 1}, activation::silu, true));
  cases.push_back(pointwise_case(2, 7, 45, true, true, true, activation::hardswish));
  cases.push_back(
      pool2d_case({nullptr, nullptr, 2, 3, 15, 13, 3, 3, 2, 1, pooling::max, true}, false));
  cases.push_back(global_avg_pool_case(19, 49));
  cases.push_back(channel_copy_case(2, 5, 37, 12, 4));
  return cases;
}

TEST(be_layers, a_grouped_convolution_with_bias_and_activation_matches_the_reference) {
  RESIDENT_REQUIRE_GPU();
  for (const activation act :
       {activation::none, activation::relu, activation::relu6, activation::silu,
        activation::sigmoid, activation::hardswish, activation::hardsigmoid}) {
    SCOPED_TRACE(static_cast<int>(act));
    expect_single_attempt(conv2d_layer_case({2, 8, 11, 9, 12, 3, 3, 2, 1}, 4, act));
  }
  expect_single_attempt(conv2d_layer_case({1, 3, 17, 17, 70, 7, 7, 2, 3}, 1, activation::relu));
  expect_single_attempt(conv2d_layer_case({2, 64, 8, 8, 130, 1, 1, 1, 0}, 2, activation::none));
}

TEST(be_layers, depthwise_convolutions_match_the_reference_with_and_without_a_multiplier) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(depthwise_case({2, 6, 13, 11, 6, 3, 3, 1, 1}, activation::relu6, true));
  expect_single_attempt(depthwise_case({1, 5, 16, 16, 5, 5, 5, 2, 2}, activation::silu, false));
  expect_single_attempt(depthwise_case({2, 4, 9, 9, 8, 3, 3, 2, 1}, activation::none, true));
}

TEST(be_layers, pointwise_is_each_of_its_uses_alone_and_together) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(pointwise_case(2, 7, 45, true, false, false, activation::relu));
  expect_single_attempt(pointwise_case(2, 7, 45, false, true, false, activation::relu));
  expect_single_attempt(pointwise_case(3, 16, 49, false, false, true, activation::none));
  expect_single_attempt(pointwise_case(1, 9, 1, false, false, false, activation::sigmoid));
  expect_single_attempt(pointwise_case(2, 7, 45, true, true, true, activation::hardswish));
}

TEST(be_layers, pooling_of_any_window_matches_the_reference) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(
      pool2d_case({nullptr, nullptr, 2, 3, 15, 13, 3, 3, 2, 1, pooling::max, true}, false));
  expect_single_attempt(
      pool2d_case({nullptr, nullptr, 2, 4, 14, 14, 2, 2, 2, 0, pooling::average, true}, false));
  expect_single_attempt(
      pool2d_case({nullptr, nullptr, 1, 3, 9, 7, 3, 3, 1, 1, pooling::average, false}, false));
  // Integers: an average over a window that includes padding divides by the whole window.
  expect_single_attempt(
      pool2d_case({nullptr, nullptr, 1, 2, 5, 5, 3, 3, 2, 1, pooling::average, true}, true));
}

TEST(be_layers, global_average_pooling_and_concatenation_match_the_reference) {
  RESIDENT_REQUIRE_GPU();
  expect_single_attempt(global_avg_pool_case(19, 49));
  expect_single_attempt(global_avg_pool_case(8, 12544));  // a 112 x 112 plane
  expect_single_attempt(global_avg_pool_case(1, 1));
  expect_single_attempt(channel_copy_case(2, 5, 37, 12, 4));
  expect_single_attempt(channel_copy_case(1, 32, 49, 32, 0));
}

TEST(be_layers, a_resume_after_a_raised_word_computes_the_result) {
  RESIDENT_REQUIRE_GPU();
  for (const kernel_case& c : every_layer_kernel()) expect_resume_after_a_raised_word(c);
}

TEST(be_layers, a_grouped_convolution_cut_mid_reduction_resumes_from_its_checkpoints_bit_exactly) {
  RESIDENT_REQUIRE_GPU();
  // 32 images of 32 x 32 pixels x 128 channels in 2 groups of 64: 1024 blocks; 64*3*3 = 576
  // reductions a group, 36 K-steps each.
  const conv2d_shape sh{32, 128, 32, 32, 128, 3, 3, 1, 1};
  auto [whole, cut] = twins<conv2d_layer_args>(
      {random_floats(std::size_t{32} * 128 * 32 * 32), random_floats(std::size_t{128} * 64 * 9),
       random_floats(128)},
      std::size_t{32} * 128 * 32 * 32, [sh](const kernel_case& c) {
        return conv2d_layer_args{{c.buffers[0].data_as<float>(), c.buffers[1].data_as<float>(),
                                  c.buffers[3].data_as<float>(), sh},
                                 c.buffers[2].data_as<float>(),
                                 activation::silu,
                                 2};
      });
  EXPECT_EQ(cut.call.saved_floats, be_tile_state_floats);
  expect_checkpointed_resume(whole, cut, (64 * 9 + be_k_step - 1) / be_k_step);
}

}  // namespace
}  // namespace resident::sched
