// The emulated sensor bridge and its frame handler: frames land in the ring intact and in
// order, faults show in the bytes, and a loop in every mode takes frames with exact accounting.

#include <gmock/gmock.h>

#include <cuda/atomic>
#include <thread>

#include "gpu/support.hpp"
#include "resident/app/loop_device.cuh"
#include "resident/io/sensor_bridge.hpp"

namespace resident::testing {
namespace {

io::rgb8_image gradient_photo(std::uint32_t w, std::uint32_t h) {
  io::rgb8_image p{w, h, std::vector<std::uint8_t>(std::size_t{w} * h * 3)};
  for (std::uint32_t y = 0; y < h; ++y) {
    for (std::uint32_t x = 0; x < w; ++x) {
      auto* px = &p.rgb[(std::size_t{y} * w + x) * 3];
      px[0] = static_cast<std::uint8_t>(x * 255 / w);
      px[1] = static_cast<std::uint8_t>(y * 255 / h);
      px[2] = static_cast<std::uint8_t>((x + y) % 256);
    }
  }
  return p;
}

io::sensor_config small_sensor(double rate_hz, io::frame_delivery delivery) {
  io::sensor_config c;
  c.width = 128;
  c.height = 64;
  c.format = io::csi2::raw_format::raw10;
  c.rate_hz = rate_hz;
  c.delivery = delivery;
  c.distinct_frames = 4;
  return c;
}

void wait_for_frames(const io::sensor_bridge& b, std::uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (b.produced() < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GE(b.produced(), n) << "the bridge did not deliver within 5 s: " << b.failure();
}

struct slot_copy {
  io::frame_record record;
  std::vector<std::uint8_t> packets;
};

slot_copy read_slot(const io::sensor_bridge& b, std::uint64_t frame) {
  const io::frame_ring_view v = b.device_view();
  const std::uint32_t slot = static_cast<std::uint32_t>(frame % v.depth);
  slot_copy out{{}, std::vector<std::uint8_t>(b.frame_bytes())};
  RESIDENT_CUDA_TRY(
      cudaMemcpy(&out.record, v.records + slot, sizeof(io::frame_record), cudaMemcpyDefault));
  RESIDENT_CUDA_TRY(cudaMemcpy(out.packets.data(), v.slots + slot * v.slot_stride, b.frame_bytes(),
                               cudaMemcpyDefault));
  return out;
}

class sensor_bridge_delivery : public ::testing::TestWithParam<io::frame_delivery> {};

TEST_P(sensor_bridge_delivery, lands_frames_the_host_receiver_accepts_with_their_numbers) {
  RESIDENT_REQUIRE_GPU();
  const auto photo = gradient_photo(200, 150);
  io::sensor_bridge bridge(small_sensor(500.0, GetParam()), photo);
  bridge.start();
  wait_for_frames(bridge, 6);
  bridge.stop();
  ASSERT_EQ(bridge.failure(), "");
  const std::uint64_t newest = bridge.produced();
  const slot_copy s = read_slot(bridge, newest);
  EXPECT_EQ(s.record.frame, newest);
  EXPECT_EQ(s.record.status, 0U);
  EXPECT_EQ(s.record.bytes, bridge.frame_bytes());
  EXPECT_GE(s.record.arrival_ns, s.record.frame_start_ns) << "a frame arrives after it starts";
  const auto& c = bridge.config();
  std::vector<std::uint16_t> pixels(std::size_t{c.width} * c.height);
  const auto check = io::csi2::parse_frame(s.packets, c.format, c.width, c.height, pixels);
  EXPECT_TRUE(check.complete(c.height));
  EXPECT_EQ(check.frame_number, io::csi2_frame_number(newest));
  const auto want = bridge.pixels(bridge.distinct_of(newest));
  EXPECT_TRUE(std::equal(pixels.begin(), pixels.end(), want.begin()));
  // The log holds every frame once, in order, one period apart.
  const auto log = bridge.log();
  ASSERT_EQ(log.size(), newest);
  for (std::size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].frame, i + 1);
    EXPECT_EQ(log[i].led_lit, i % c.distinct_frames == 0);
    if (i > 0) EXPECT_NEAR(double(log[i].frame_start_ns - log[i - 1].frame_start_ns), 2e6, 1e3);
  }
}

TEST_P(sensor_bridge_delivery, a_bounded_log_keeps_the_newest_frames_in_order) {
  RESIDENT_REQUIRE_GPU();
  io::sensor_config c = small_sensor(1000.0, GetParam());
  c.log_frames = 8;
  io::sensor_bridge bridge(c, gradient_photo(200, 150));
  bridge.start();
  wait_for_frames(bridge, 21);
  bridge.stop();
  ASSERT_EQ(bridge.failure(), "");
  const std::uint64_t newest = bridge.produced();
  const auto log = bridge.log();
  ASSERT_EQ(log.size(), 8U);
  for (std::size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(log[i].frame, newest - 7 + i);
    EXPECT_EQ(log[i].led_lit, (log[i].frame - 1) % c.distinct_frames == 0);
  }
  c.log_frames = 0;  // no log at all, for runs of any length
  io::sensor_bridge silent(c, gradient_photo(200, 150));
  silent.start();
  wait_for_frames(silent, 3);
  silent.stop();
  EXPECT_TRUE(silent.log().empty());
  c.log_frames = (1U << 24) + 1;
  try {
    io::sensor_bridge refused(c, gradient_photo(200, 150));
    ADD_FAILURE() << "a log of 2^24 + 1 frames was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("log_frames must be 0 to 16777216, got 16777217"));
  }
}

TEST_P(sensor_bridge_delivery, applies_an_injected_bit_flip_to_exactly_one_frame) {
  RESIDENT_REQUIRE_GPU();
  io::sensor_bridge bridge(small_sensor(200.0, GetParam()), gradient_photo(64, 64));
  const auto& c = bridge.config();
  const std::size_t line = io::csi2::line_bytes(c.format, c.width);
  // A payload bit of line 3: past the frame start (4), three line packets and line 3's header.
  bridge.inject({io::bridge_fault::kind::flip_bits, 4 + 3 * (line + 6) + 4 + 10, 0x10});
  bridge.start();
  wait_for_frames(bridge, 1);
  const std::uint64_t faulty = bridge.produced();
  const slot_copy s = read_slot(bridge, faulty);
  wait_for_frames(bridge, faulty + 1);
  bridge.stop();
  std::vector<std::uint16_t> pixels(std::size_t{c.width} * c.height);
  const auto check = io::csi2::parse_frame(s.packets, c.format, c.width, c.height, pixels);
  EXPECT_EQ(check.crc_errors, 1U);
  EXPECT_EQ(check.lines, c.height - 1);
  const slot_copy next = read_slot(bridge, faulty + 1);
  EXPECT_TRUE(
      io::csi2::parse_frame(next.packets, c.format, c.width, c.height, pixels).complete(c.height));
}

INSTANTIATE_TEST_SUITE_P(both, sensor_bridge_delivery,
                         ::testing::Values(io::frame_delivery::device, io::frame_delivery::host),
                         [](const auto& info) {
                           return info.param == io::frame_delivery::device ? "device" : "host";
                         });

// The first word of frame `f`'s packet stream: its frame start short packet.
__device__ std::uint32_t frame_start_word(std::uint64_t f) {
  const std::uint16_t n = io::csi2_frame_number(f);
  const std::uint32_t header24 = static_cast<std::uint32_t>(io::csi2::data_type::frame_start) |
                                 (std::uint32_t{n} & 0xFFU) << 8 | (std::uint32_t{n} >> 8U) << 16;
  return header24 | std::uint32_t{io::csi2::header_ecc(header24)} << 24;
}

struct watch_counts {
  unsigned long long reads;  // record, payload word, record again, with the record set
  unsigned long long stale;  // the record named the same frame both times, the word was not its
  unsigned long long rewritings;  // reads that saw the record invalidated (0)
};

// Reads slot 0 as a consumer does (the record, then the payload, then the record again) for
// `ns` of device time, counting the reads a consumer would have accepted although the payload
// was no longer the record's frame.
__global__ void watch_slot(io::frame_ring_view ring, std::uint64_t ns, watch_counts* out) {
  using device::load_acquire_system;
  const std::uint64_t end = device::globaltimer_ns() + ns;
  watch_counts c{0, 0, 0};
  const auto* word = reinterpret_cast<const std::uint32_t*>(ring.slots);
  while (device::globaltimer_ns() < end) {
    const std::uint64_t before = load_acquire_system(ring.records[0].frame);
    const std::uint32_t w =
        cuda::atomic_ref<const std::uint32_t, cuda::thread_scope_system>(*word).load(
            cuda::memory_order_relaxed);
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system);
    const std::uint64_t after = load_acquire_system(ring.records[0].frame);
    if (before == 0 || after == 0) {
      ++c.rewritings;
      continue;
    }
    ++c.reads;
    if (before == after && w != frame_start_word(before)) ++c.stale;
  }
  *out = c;
}

// While the bridge copies a frame into a slot, the slot's record must not still name the frame
// it held: a consumer re-reading the record after its reads (reconstruction's overwrite check)
// would accept a frame half-rewritten.
TEST(sensor_bridge, a_slot_being_rewritten_never_names_its_old_frame) {
  RESIDENT_REQUIRE_GPU();
  auto c = small_sensor(4000.0, io::frame_delivery::device);
  c.ring_slots = 2;
  io::sensor_bridge bridge(c, gradient_photo(128, 64));
  stream watcher_stream;
  device_buffer counts(sizeof(watch_counts));
  bridge.start();
  wait_for_frames(bridge, 4);
  watch_slot<<<1, 1, 0, watcher_stream.get()>>>(bridge.device_view(), 300'000'000ULL,
                                                counts.data_as<watch_counts>());
  RESIDENT_CUDA_TRY(cudaGetLastError());
  RESIDENT_CUDA_TRY(cudaStreamSynchronize(watcher_stream.get()));
  bridge.stop();
  ASSERT_EQ(bridge.failure(), "");
  watch_counts got{};
  RESIDENT_CUDA_TRY(cudaMemcpy(&got, counts.data(), sizeof(got), cudaMemcpyDeviceToHost));
  EXPECT_GT(bridge.produced(), 400U) << "slot 0 was rewritten a few hundred times";
  EXPECT_GT(got.reads, 10'000U);
  EXPECT_GT(got.rewritings, 0U) << "the watcher saw slot 0 being rewritten";
  EXPECT_EQ(got.stale, 0U) << "reads accepted while the slot held another frame's bytes";
}

TEST(sensor_bridge, refuses_a_ring_of_one_slot_and_an_odd_frame) {
  RESIDENT_REQUIRE_GPU();
  auto c = small_sensor(60.0, io::frame_delivery::device);
  c.ring_slots = 1;
  EXPECT_THROW(io::sensor_bridge(c, gradient_photo(8, 8)), std::invalid_argument);
  c = small_sensor(60.0, io::frame_delivery::device);
  c.width = 130;
  EXPECT_THROW(io::sensor_bridge(c, gradient_photo(8, 8)), std::invalid_argument);
}

TEST(sensor_bridge, maps_the_host_clock_onto_the_device_clock_within_a_millisecond) {
  RESIDENT_REQUIRE_GPU();
  const io::clock_sync s = io::measure_clock_offset();
  EXPECT_LT(s.uncertainty_ns, 1'000'000U);
}

// ---- in a loop ---------------------------------------------------------------------------------

// Appends the frame number it is given to a device log: which frames the DAG ran on, in order.
__global__ void record_frame_kernel(const io::frame_ref* ref, std::uint64_t* log,
                                    std::uint64_t capacity) {
  const std::uint64_t n = log[0];
  if (n < capacity) log[1 + n] = ref->frame;
  log[0] = n + 1;
}

class record_frames final : public Operator {
 public:
  explicit record_frames(std::uint64_t* log, std::uint64_t capacity)
      : _log(log), _capacity(capacity) {}
  void setup(OperatorSpec& spec) override { spec.device_input("frame", sizeof(io::frame_ref)); }
  void compute(CaptureContext& ctx) override {
    record_frame_kernel<<<1, 1, 0, ctx.stream()>>>(ctx.device_memory<io::frame_ref>("frame"), _log,
                                                   _capacity);
    RESIDENT_CUDA_CHECK_LAUNCH("record_frame_kernel");
  }

 private:
  std::uint64_t* _log;
  std::uint64_t _capacity;
};

class frame_app final : public Application {
 public:
  frame_app(std::shared_ptr<io::sensor_bridge> b, std::uint64_t* log, std::uint64_t capacity)
      : _bridge(std::move(b)), _log(log), _capacity(capacity) {}
  void compose() override {
    auto rx = make_operator<io::frame_rx>("rx", _bridge);
    auto rec = make_operator<record_frames>("record", _log, _capacity);
    register_data_ready_handler(_bridge->make_handler(rx));
    add_flow(rx, rec, {{"frame", "frame"}});
  }

 private:
  std::shared_ptr<io::sensor_bridge> _bridge;
  std::uint64_t* _log;
  std::uint64_t _capacity;
};

struct loop_case {
  execution_mode mode;
  io::frame_delivery delivery;
};

class frame_rx_loop : public ::testing::TestWithParam<loop_case> {};

// Every frame the bridge delivers after the loop starts is processed exactly once, in order, or
// counted as dropped; nothing else runs.
TEST_P(frame_rx_loop, takes_every_frame_once_in_order_or_counts_it_dropped) {
  RESIDENT_REQUIRE_GPU();
  const loop_case lc = GetParam();
  constexpr std::uint64_t capacity = 1 << 14;
  device_buffer log((capacity + 1) * sizeof(std::uint64_t));
  RESIDENT_CUDA_TRY(cudaMemset(log.data(), 0, log.size()));
  auto bridge = std::make_shared<io::sensor_bridge>(small_sensor(2000.0, lc.delivery),
                                                    gradient_photo(64, 64));
  frame_app app(bridge, log.data_as<std::uint64_t>(), capacity);
  bridge->start();
  wait_for_frames(*bridge, 3);
  run_options o;
  o.policy = sample_policy::every;
  o.poll_ns = 200'000;
  loop_counters counters;
  std::uint64_t produced_at_stop = 0;
  {
    run_handle run(app, lc.mode, o);
    std::this_thread::sleep_for(300ms);
    bridge->stop();
    produced_at_stop = bridge->produced();
    std::this_thread::sleep_for(50ms);  // let the loop catch up with the last frames
    const tear_down_report r = run.tear_down();
    ASSERT_TRUE(r.stopped) << r.error;
    counters = r.counters;
  }
  std::vector<std::uint64_t> got(capacity + 1);
  RESIDENT_CUDA_TRY(cudaMemcpy(got.data(), log.data(), log.size(), cudaMemcpyDeviceToHost));
  const std::uint64_t runs = got[0];
  ASSERT_GT(runs, 100U) << "at 2 kHz for 300 ms the loop should take hundreds of frames";
  ASSERT_LE(runs, capacity);
  EXPECT_EQ(runs, counters.processed);
  EXPECT_EQ(counters.repeated, 0U);
  EXPECT_EQ(counters.last_seq, produced_at_stop) << "the loop caught up with the last frame";
  EXPECT_EQ(counters.processed + counters.dropped, produced_at_stop - counters.start_seq);
  // Dropped frames are exactly the gaps: before the first frame taken and between the others.
  std::uint64_t gaps = got[1] - counters.start_seq - 1;
  for (std::uint64_t i = 1; i < runs; ++i) {
    ASSERT_GT(got[1 + i], got[i]) << "frames in order, each once (run " << i << ")";
    gaps += got[1 + i] - got[i] - 1;
  }
  EXPECT_EQ(counters.dropped, gaps);
  EXPECT_EQ(got[runs], produced_at_stop);
}

std::vector<loop_case> loop_cases() {
  std::vector<loop_case> cases;
  for (const auto m : all_execution_modes) cases.push_back({m, io::frame_delivery::device});
  cases.push_back({execution_mode::eager, io::frame_delivery::host});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    modes, frame_rx_loop, ::testing::ValuesIn(loop_cases()), [](const auto& info) {
      std::string name(to_string(info.param.mode));
      for (auto& ch : name) ch = ch == '-' ? '_' : ch;
      return name + (info.param.delivery == io::frame_delivery::host ? "_host_delivery" : "");
    });

TEST(frame_rx_loop, host_delivery_in_a_graph_mode_is_refused_by_name) {
  RESIDENT_REQUIRE_GPU();
  device_buffer log(2 * sizeof(std::uint64_t));
  auto bridge = std::make_shared<io::sensor_bridge>(small_sensor(100.0, io::frame_delivery::host),
                                                    gradient_photo(64, 64));
  frame_app app(bridge, log.data_as<std::uint64_t>(), 1);
  try {
    run_handle run(app, execution_mode::while_loop, run_options{});
    FAIL() << "expected the launch to fail";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'rx' (frame_rx): host delivery"));
  }
}

}  // namespace
}  // namespace resident::testing
