// The hand-written peers of bench/peers: each serves a mailbox with the mailbox's own protocol,
// every output checked against its sample (empty body) or the matmul6 reference, and each
// stops when asked.

#include <gmock/gmock.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "bench/workloads.hpp"
#include "gpu/support.hpp"
#include "peers/peers.hpp"

namespace resident::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::ThrowsMessage;

/// Publishes `count` tokens one at a time, each waited for at the actuator end; returns how
/// many came back right (the output of that sample, with the expected payload).
int serve(io::mailbox& mb, const bench::io_app& app, int count) {
  int right = 0;
  io::output_stamp last = mb.latest_output();
  for (int i = 0; i < count; ++i) {
    const std::uint64_t token = bench::io_app::token(mb.published() + 1);
    const std::uint64_t seq = mb.publish(std::as_bytes(std::span(&token, 1)));
    std::array<std::byte, 8> out{};
    const io::output_stamp got = mb.wait_output(last, out, 2s);
    if (got.empty()) break;  // nothing within 2 s: the peer stopped serving
    last = got;
    if (got.seq == seq && app.output_matches(token, out)) ++right;
  }
  return right;
}

class peer_kinds : public ::testing::TestWithParam<peers::peer_kind> {};

TEST_P(peer_kinds, serve_every_sample_with_its_own_output_and_stop) {
  RESIDENT_REQUIRE_GPU();
  const bench::io_app app("empty");
  peers::peer_loop peer(app.mailbox(), {GetParam(), peers::peer_body::empty, 1'000'000, {}});
  peer.start();
  EXPECT_EQ(serve(app.mailbox(), app, 200), 200);
  EXPECT_TRUE(peer.stop(2000ms));
  // The peer counts a sample after committing its output, so the counts are read once stopped.
  EXPECT_EQ(peer.processed(), 200U);
  EXPECT_EQ(peer.last_seq(), app.mailbox().published());
  EXPECT_TRUE(peer.stop(2000ms)) << "stopping a stopped peer is a no-op";
}

TEST_P(peer_kinds, run_the_matmul6_body_against_the_fp64_reference) {
  RESIDENT_REQUIRE_GPU();
  if (GetParam() == peers::peer_kind::persistent) {
    const bench::io_app app("matmul6");
    EXPECT_THAT(
        [&] {
          peers::peer_loop p(app.mailbox(), {GetParam(), peers::peer_body::matmul6, 1000000, {}});
        },
        ThrowsMessage<std::invalid_argument>(
            ::testing::HasSubstr("cuBLAS cannot run inside a kernel")));
    return;
  }
  const bench::io_app app("matmul6");
  peers::peer_loop peer(app.mailbox(), {GetParam(), peers::peer_body::matmul6, 1'000'000, {}});
  peer.start();
  EXPECT_EQ(serve(app.mailbox(), app, 50), 50);
  EXPECT_TRUE(peer.stop(2000ms));
}

TEST_P(peer_kinds, a_peer_destroyed_while_running_stops_first) {
  RESIDENT_REQUIRE_GPU();
  const bench::io_app app("empty");
  {
    peers::peer_loop peer(app.mailbox(), {GetParam(), peers::peer_body::empty, 1'000'000, {}});
    peer.start();
    EXPECT_EQ(serve(app.mailbox(), app, 10), 10);
  }
  // The mailbox is free again: a second peer serves it.
  peers::peer_loop again(app.mailbox(), {GetParam(), peers::peer_body::empty, 1'000'000, {}});
  again.start();
  EXPECT_EQ(serve(app.mailbox(), app, 10), 10);
  EXPECT_TRUE(again.stop(2000ms));
}

INSTANTIATE_TEST_SUITE_P(peers, peer_kinds,
                         ::testing::Values(peers::peer_kind::while_loop, peers::peer_kind::tail,
                                           peers::peer_kind::host_graph,
                                           peers::peer_kind::persistent),
                         [](const auto& info) {
                           std::string name(peers::to_string(info.param));
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(peers, unknown_names_are_refused_with_the_list) {
  EXPECT_THAT([] { (void)peers::parse_peer("warp"); },
              ThrowsMessage<std::invalid_argument>(
                  ::testing::StrEq("unknown peer 'warp'; peers: while, tail, host-graph, "
                                   "persistent")));
  EXPECT_EQ(peers::parse_peer("host-graph"), peers::peer_kind::host_graph);
}

}  // namespace
}  // namespace resident::testing
