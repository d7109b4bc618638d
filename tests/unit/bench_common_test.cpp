// The benches' shared result pieces, on hand-made samples.

#include <gtest/gtest.h>

#include "bench/common.hpp"

namespace resident::bench {
namespace {

TEST(add_undisturbed, counts_the_disturbed_and_summarizes_the_rest) {
  nlohmann::json r;
  add_undisturbed(r, 6, {10.0, 12.0, 11.0, 13.0});
  EXPECT_EQ(r["disturbed"].get<std::int64_t>(), 2);
  EXPECT_EQ(r["undisturbed_n"].get<std::int64_t>(), 4);
  EXPECT_DOUBLE_EQ(r["undisturbed_max_us"].get<double>(), 13.0);
  EXPECT_DOUBLE_EQ(r["undisturbed_jitter_us"].get<double>(), 3.0);
  // Population stddev of 10, 11, 12, 13: sqrt(1.25).
  EXPECT_NEAR(r["undisturbed_stddev_us"].get<double>(), 1.118033988749895, 1e-12);
  EXPECT_GT(r["undisturbed_p999_us"].get<double>(), 12.9);
  EXPECT_LE(r["undisturbed_p999_us"].get<double>(), 13.0);
}

TEST(add_undisturbed, all_disturbed_leaves_no_undisturbed_fields) {
  nlohmann::json r;
  add_undisturbed(r, 3, {});
  EXPECT_EQ(r["disturbed"].get<std::int64_t>(), 3);
  EXPECT_FALSE(r.contains("undisturbed_n"));
  EXPECT_FALSE(r.contains("undisturbed_jitter_us"));
}

}  // namespace
}  // namespace resident::bench
