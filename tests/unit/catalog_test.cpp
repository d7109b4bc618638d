// The operator catalog: every kind once, in order, with a factory that makes it; unknown kinds
// named with the list; each kind's device_form flag true exactly when the operator offers a
// device form (checked where no endpoint is needed: an operator with a form asks for its bound
// port memory, one without says it has none).

#include "resident/ops/catalog.hpp"

#include <gmock/gmock.h>

#include <set>

#include "resident/app/application.hpp"
#include "resident/app/error.hpp"

namespace resident::ops {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;

TEST(catalog, holds_each_kind_once_in_order_with_a_summary) {
  const auto& c = operator_catalog();
  ASSERT_GE(c.size(), 15U);
  std::set<std::string> names;
  for (std::size_t i = 0; i < c.size(); ++i) {
    EXPECT_TRUE(names.insert(c[i].name).second) << c[i].name << " twice";
    EXPECT_FALSE(c[i].summary.empty()) << c[i].name;
    EXPECT_TRUE(c[i].make) << c[i].name;
    if (i > 0) {
      EXPECT_LT(c[i - 1].name, c[i].name);
    }
  }
  for (const char* k :
       {"io.mailbox_rx", "io.mailbox_tx", "io.frame_rx", "io.display_tx", "ops.copy", "ops.affine",
        "ops.square", "ops.sum_reduce", "ops.matmul", "ops.captured_graph", "ops.external_source",
        "ops.external_sink", "imaging.csi2_reconstruct", "imaging.raw_isp", "imaging.demosaic",
        "imaging.convert_resize"}) {
    EXPECT_EQ(operator_kind_named(k).name, k);
  }
}

TEST(catalog, an_unknown_kind_is_named_with_the_list) {
  EXPECT_THAT([] { (void)operator_kind_named("ops.afine"); },
              ::testing::ThrowsMessage<composition_error>(
                  AllOf(HasSubstr("unknown operator kind 'ops.afine'"), HasSubstr("ops.affine"),
                        HasSubstr("io.mailbox_rx"))));
}

// An application of one operator, made from the catalog.
class one_operator final : public Application {
 public:
  explicit one_operator(std::shared_ptr<Operator> op) : _op(std::move(op)) {}
  void compose() override { (void)add_operator(_op, "op", {}); }

 private:
  std::shared_ptr<Operator> _op;
};

TEST(catalog, the_device_form_flag_says_whether_the_operator_offers_a_form) {
  int checked = 0;
  for (const operator_kind& k : operator_catalog()) {
    if (k.input != kind_input::none) continue;
    const auto op = k.make({});
    one_operator app(op);
    try {
      (void)app.plan();  // composes (setup runs); its unconnected ports may fail validation
    } catch (const composition_error&) {
    }
    ASSERT_TRUE(op->composed()) << k.name;
    bool offers = false;
    try {
      offers = op->persistent_form().has_value();
    } catch (const composition_error& e) {
      offers = true;  // it asked for the memory or the workspace its form would run on
      EXPECT_THAT(e.what(), AnyOf(HasSubstr("device memory"), HasSubstr("not initialized")))
          << k.name;
    }
    EXPECT_EQ(offers, k.device_form) << k.name;
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

TEST(catalog, kinds_that_need_an_endpoint_say_so) {
  for (const char* k : {"io.mailbox_rx", "io.mailbox_tx", "io.frame_rx", "io.display_tx",
                        "io.link_rx", "io.link_tx"}) {
    EXPECT_THROW((void)operator_kind_named(k).make({}), std::invalid_argument) << k;
    EXPECT_NE(operator_kind_named(k).input, kind_input::none) << k;
  }
  EXPECT_EQ(operator_kind_named("ops.captured_graph").input, kind_input::captured_graph);
  EXPECT_EQ(operator_kind_named("io.link_tx").input, kind_input::device_link);
  try {
    (void)operator_kind_named("io.link_rx").make({});
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a device link"), std::string::npos) << e.what();
  }
}

TEST(catalog, lists_the_parameters_a_kind_declares) {
  const auto params = kind_parameters(operator_kind_named("ops.affine"));
  std::set<std::string> names;
  for (const auto& p : params) names.insert(p.name);
  for (const char* p : {"elements", "scale", "offset"}) EXPECT_EQ(names.count(p), 1U) << p;
  EXPECT_TRUE(kind_parameters(operator_kind_named("io.mailbox_rx")).empty());
  for (const operator_kind& k : operator_catalog()) {
    EXPECT_NO_THROW((void)kind_parameters(k)) << k.name;
  }
}

}  // namespace
}  // namespace resident::ops
