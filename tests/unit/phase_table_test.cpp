// persistent mode's phase times: the summary of the kernel's stamp table keeps the latest passes
// of its ring of rows, never the row the stopping pass overwrote.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "resident/detail/phase_table.hpp"

namespace resident::detail {
namespace {

// Two intervals per pass; pass p takes 10 + p ns in the first and 100 ns in the second.
constexpr std::uint32_t stride = 3;
const std::vector<phase_time> names{{"a", "copy", 0}, {"(end marker)", "", 0}};

std::vector<std::uint64_t> table_of(std::uint64_t passes, std::uint32_t rows) {
  std::vector<std::uint64_t> t(1 + std::size_t{rows} * stride, 0);
  t[0] = passes;
  for (std::uint64_t p = 0; p < passes; ++p) {
    std::uint64_t* row = t.data() + 1 + (p % rows) * stride;
    row[0] = 1000 * (p + 1);
    row[1] = row[0] + 10 + p;
    row[2] = row[1] + 100;
  }
  return t;
}

TEST(phase_table, a_table_that_wrapped_keeps_the_latest_rows_minus_one_passes) {
  // 4 rows, 10 passes: passes 7, 8 and 9 are kept (row 9 % 4 = 1 is the newest; row 2, the
  // oldest, is where a stopping pass would have written).
  const auto out = summarize_phases(table_of(10, 4), names, 4);
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[0].op, "a");
  EXPECT_EQ(out[0].form, "copy");
  EXPECT_EQ(out[0].passes, 3U);
  EXPECT_DOUBLE_EQ(out[0].mean_ns, 18.0);  // 17, 18, 19
  EXPECT_DOUBLE_EQ(out[0].p50_ns, 18.0);
  EXPECT_DOUBLE_EQ(out[0].max_ns, 19.0);
  EXPECT_DOUBLE_EQ(out[1].mean_ns, 100.0);
  EXPECT_DOUBLE_EQ(out[1].max_ns, 100.0);
}

TEST(phase_table, a_stopping_pass_that_overwrote_the_oldest_row_is_left_out) {
  auto t = table_of(4, 4);               // rows 0..3 hold passes 0..3
  std::uint64_t* oldest = t.data() + 1;  // the stopping pass 4 wrote row 0 in part
  oldest[0] = 9'000'000;
  oldest[1] = 9'000'005;
  const auto out = summarize_phases(t, names, 4);
  EXPECT_EQ(out[0].passes, 3U);
  EXPECT_DOUBLE_EQ(out[0].mean_ns, 12.0);  // passes 1, 2, 3
  EXPECT_DOUBLE_EQ(out[1].max_ns, 100.0);
}

TEST(phase_table, fewer_passes_than_rows_and_none_at_all) {
  const auto two = summarize_phases(table_of(2, 8), names, 8);
  EXPECT_EQ(two[0].passes, 2U);
  EXPECT_DOUBLE_EQ(two[0].mean_ns, 10.5);
  const auto none = summarize_phases(table_of(0, 8), names, 8);
  ASSERT_EQ(none.size(), 2U);
  EXPECT_EQ(none[0].passes, 0U);
  EXPECT_DOUBLE_EQ(none[0].mean_ns, 0.0);
}

}  // namespace
}  // namespace resident::detail
