// Operator parameters: declared with a default in setup(), supplied with resident::arg in
// make_operator() or as text from a configuration file, converted and checked per declared type.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::HasSubstr;

/// Plans an application holding one params_op "p" made with `args`; returns the operator.
template <class... A>
std::shared_ptr<params_op> params_with(A... args) {
  std::shared_ptr<params_op> op;
  test_app app([&](test_app& a) { op = a.make_operator<params_op>("p", args...); });
  (void)app.plan();
  return op;
}

/// The composition_error planning such an application fails with.
template <class... A>
std::string params_error(A... args) {
  test_app app([&](test_app& a) { (void)a.make_operator<params_op>("p", args...); });
  return plan_error(app);
}

TEST(parameters, default_is_used_when_nothing_is_supplied) {
  const auto op = params_with();
  EXPECT_EQ(op->i64, 1);
  EXPECT_EQ(op->i32, 2);
  EXPECT_EQ(op->i8, 3);
  EXPECT_EQ(op->u8, 4);
  EXPECT_EQ(op->u64, 5U);
  EXPECT_FLOAT_EQ(op->f32, 0.5F);
  EXPECT_DOUBLE_EQ(op->f64, 1.5);
  EXPECT_FALSE(op->flag);
  EXPECT_EQ(op->label, "none");
}

TEST(parameters, supplied_value_replaces_the_default) {
  const auto op = params_with(arg("i64", 10), arg("flag", true), arg("label", "hello"));
  EXPECT_EQ(op->i64, 10);
  EXPECT_TRUE(op->flag);
  EXPECT_EQ(op->label, "hello");
  EXPECT_EQ(op->i32, 2) << "parameters not supplied keep their defaults";
}

TEST(parameters, integer_is_accepted_by_every_integer_and_floating_point_type) {
  const auto op = params_with(arg("i64", 3), arg("i32", 3), arg("i8", 3), arg("u8", 3),
                              arg("u64", 3), arg("f32", 3), arg("f64", 3));
  EXPECT_EQ(op->i64, 3);
  EXPECT_EQ(op->i32, 3);
  EXPECT_EQ(op->i8, 3);
  EXPECT_EQ(op->u8, 3);
  EXPECT_EQ(op->u64, 3U);
  EXPECT_FLOAT_EQ(op->f32, 3.0F);
  EXPECT_DOUBLE_EQ(op->f64, 3.0);
}

TEST(parameters, floating_point_value_is_kept_exactly_for_a_double) {
  EXPECT_DOUBLE_EQ(params_with(arg("f64", 2.25))->f64, 2.25);
  EXPECT_FLOAT_EQ(params_with(arg("f32", 2.25))->f32, 2.25F);
}

TEST(parameters, double_supplied_to_an_integer_names_operator_parameter_and_origin) {
  EXPECT_EQ(params_error(arg("i64", 2.5)),
            "operator 'p': parameter 'i64' expects an integer, got 2.5 (from code)");
}

TEST(parameters, bool_supplied_to_an_integer_is_rejected) {
  EXPECT_THAT(params_error(arg("i32", true)),
              HasSubstr("parameter 'i32' expects an integer, got true"));
}

TEST(parameters, integer_supplied_to_a_bool_is_rejected) {
  EXPECT_THAT(params_error(arg("flag", 1)),
              HasSubstr("parameter 'flag' expects a boolean (true or false), got 1 (from code)"));
}

TEST(parameters, string_supplied_to_a_bool_in_code_is_rejected) {
  EXPECT_THAT(params_error(arg("flag", "true")),
              HasSubstr("parameter 'flag' expects a boolean (true or false), got \"true\""));
}

TEST(parameters, string_supplied_in_code_is_not_parsed_as_a_number) {
  // Only configuration text is converted; a string in code is a type mistake.
  EXPECT_THAT(params_error(arg("f64", "1.5")),
              HasSubstr("parameter 'f64' expects a number, got \"1.5\" (from code)"));
  EXPECT_THAT(params_error(arg("i64", "7")), HasSubstr("parameter 'i64' expects an integer"));
}

TEST(parameters, number_supplied_to_a_string_is_rejected) {
  EXPECT_THAT(params_error(arg("label", 5)),
              HasSubstr("parameter 'label' expects a string, got 5 (from code)"));
}

TEST(parameters, std_string_value_is_accepted_for_a_string) {
  EXPECT_EQ(params_with(arg("label", std::string("from std::string")))->label, "from std::string");
}

TEST(parameters, value_above_a_narrow_signed_type_is_out_of_range) {
  EXPECT_EQ(params_error(arg("i8", 200)),
            "operator 'p': parameter 'i8' = 200 is out of range [-128, 127] (from code)");
}

TEST(parameters, value_below_a_narrow_signed_type_is_out_of_range) {
  EXPECT_THAT(params_error(arg("i8", -129)), HasSubstr("'i8' = -129 is out of range [-128, 127]"));
}

TEST(parameters, narrow_type_limits_themselves_are_in_range) {
  const auto op = params_with(arg("i8", -128), arg("u8", 255));
  EXPECT_EQ(op->i8, -128);
  EXPECT_EQ(op->u8, 255);
}

TEST(parameters, value_above_an_unsigned_narrow_type_is_out_of_range) {
  EXPECT_THAT(params_error(arg("u8", 256)), HasSubstr("'u8' = 256 is out of range [0, 255]"));
}

TEST(parameters, negative_value_for_an_unsigned_type_is_out_of_range) {
  EXPECT_THAT(params_error(arg("u64", -1)), HasSubstr("'u64' = -1 is out of range [0, "));
  EXPECT_THAT(params_error(arg("u8", -1)), HasSubstr("'u8' = -1 is out of range [0, 255]"));
}

TEST(parameters, value_above_int_is_out_of_range_for_int) {
  EXPECT_THAT(params_error(arg("i32", std::int64_t{1} << 31)),
              HasSubstr("'i32' = 2147483648 is out of range [-2147483648, 2147483647]"));
}

TEST(parameters, text_is_converted_to_the_declared_type) {
  const auto op = params_with(arg::text("i64", "3", "cfg"), arg::text("u8", "255", "cfg"),
                              arg::text("f64", "2.5", "cfg"), arg::text("f32", "-4", "cfg"),
                              arg::text("flag", "true", "cfg"), arg::text("label", "42", "cfg"));
  EXPECT_EQ(op->i64, 3);
  EXPECT_EQ(op->u8, 255);
  EXPECT_DOUBLE_EQ(op->f64, 2.5);
  EXPECT_FLOAT_EQ(op->f32, -4.0F);
  EXPECT_TRUE(op->flag);
  EXPECT_EQ(op->label, "42") << "text stays text for a string parameter";
}

TEST(parameters, text_booleans_accept_the_yaml_spellings_of_true_and_false) {
  for (const char* yes : {"true", "True", "TRUE"}) {
    EXPECT_TRUE(params_with(arg::text("flag", yes, "cfg"))->flag) << yes;
  }
  for (const char* no : {"false", "False", "FALSE"}) {
    EXPECT_FALSE(params_with(arg("flag", true), arg::text("flag", no, "cfg"))->flag) << no;
  }
}

TEST(parameters, text_that_is_not_an_integer_names_the_value_and_its_origin) {
  EXPECT_EQ(params_error(arg::text("i64", "abc", "app.yaml:2:8")),
            "operator 'p': parameter 'i64' expects an integer, got \"abc\" (from app.yaml:2:8)");
}

TEST(parameters, text_with_a_fraction_is_not_an_integer) {
  EXPECT_THAT(params_error(arg::text("i32", "2.5", "cfg")),
              HasSubstr("parameter 'i32' expects an integer, got \"2.5\" (from cfg)"));
}

TEST(parameters, text_integer_is_range_checked) {
  EXPECT_THAT(params_error(arg::text("u8", "300", "cfg")),
              HasSubstr("'u8' = 300 is out of range [0, 255] (from cfg)"));
}

TEST(parameters, text_that_is_not_a_number_is_rejected) {
  EXPECT_THAT(params_error(arg::text("f64", "fast", "cfg")),
              HasSubstr("parameter 'f64' expects a number, got \"fast\" (from cfg)"));
  EXPECT_THAT(params_error(arg::text("f64", "", "cfg")), HasSubstr("expects a number"));
  EXPECT_THAT(params_error(arg::text("f64", "2.5x", "cfg")), HasSubstr("expects a number"));
}

TEST(parameters, text_that_is_not_finite_is_not_a_number) {
  EXPECT_THAT(params_error(arg::text("f64", "inf", "cfg")), HasSubstr("expects a number"));
  EXPECT_THAT(params_error(arg::text("f64", "nan", "cfg")), HasSubstr("expects a number"));
}

TEST(parameters, text_that_is_not_a_boolean_is_rejected) {
  EXPECT_THAT(params_error(arg::text("flag", "1", "cfg")),
              HasSubstr("parameter 'flag' expects a boolean (true or false), got \"1\""));
}

TEST(parameters, undeclared_parameter_is_a_typo_listing_the_known_parameters) {
  EXPECT_EQ(params_error(arg("i46", 3)),
            "operator 'p' has no parameter 'i46' (from code); its parameters: i64, i32, i8, u8, "
            "u64, f32, f64, flag, label");
}

TEST(parameters, undeclared_parameter_of_an_operator_without_parameters_lists_none) {
  test_app app([](test_app& a) { (void)a.make_operator<ports_op>("plain", arg("gain", 2)); });
  EXPECT_EQ(plan_error(app),
            "operator 'plain' has no parameter 'gain' (from code); its parameters: (none)");
}

TEST(parameters, first_undeclared_parameter_in_written_order_is_reported) {
  EXPECT_THAT(params_error(arg("typo_1", 1), arg("i64", 2), arg("typo_2", 3)),
              HasSubstr("has no parameter 'typo_1'"));
}

TEST(parameters, mistakes_in_code_values_are_composition_errors_not_config_errors) {
  test_app app([](test_app& a) { (void)a.make_operator<params_op>("p", arg("i64", 2.5)); });
  try {
    (void)app.plan();
    ADD_FAILURE() << "plan() accepted 2.5 for an integer";
  } catch (const config_error& e) {
    ADD_FAILURE() << "a value written in code is not a configuration mistake: " << e.what();
  } catch (const composition_error&) {
  }
}

TEST(parameters, mistakes_in_text_values_are_config_errors) {
  EXPECT_THAT(error_of<config_error>([] { (void)params_with(arg::text("i64", "x", "f:1:1")); }),
              HasSubstr("expects an integer"));
  EXPECT_THAT(error_of<config_error>([] { (void)params_with(arg::text("u8", "999", "f:1:1")); }),
              HasSubstr("out of range"));
  EXPECT_THAT(error_of<config_error>([] { (void)params_with(arg::text("flag", "no", "f:1:1")); }),
              HasSubstr("expects a boolean"));
  EXPECT_THAT(error_of<config_error>([] { (void)params_with(arg::text("i46", "1", "f:1:1")); }),
              HasSubstr("has no parameter 'i46'"));
}

TEST(parameters, same_parameter_supplied_twice_in_code_is_rejected) {
  EXPECT_EQ(params_error(arg("i64", 1), arg("i64", 2)),
            "operator 'p': parameter 'i64' is given twice (from code)");
}

TEST(parameters, later_source_wins_when_the_same_parameter_comes_from_two_origins) {
  // This is how a configuration file overrides code: its values are supplied after code's.
  EXPECT_EQ(params_with(arg("i64", 1), arg::text("i64", "9", "cfg"))->i64, 9);
}

TEST(parameters, same_parameter_declared_twice_in_setup_is_rejected) {
  test_app app([](test_app& a) { (void)a.make_operator<twice_declared_op>("dup"); });
  EXPECT_EQ(plan_error(app), "operator 'dup': parameter 'x' is declared twice in setup()");
}

TEST(parameters, declarations_are_listed_with_type_default_and_description) {
  const auto op = params_with();
  const auto& params = op->spec().parameters();
  ASSERT_EQ(params.size(), 9U);
  EXPECT_EQ(params[0].name, "i64");
  EXPECT_EQ(params[0].type, "integer");
  EXPECT_EQ(params[0].default_value, "1");
  EXPECT_EQ(params[0].description, "a 64-bit integer");
  EXPECT_EQ(params[2].name, "i8");
  EXPECT_EQ(params[2].default_value, "3") << "a narrow integer default is shown as a number";
  EXPECT_EQ(params[5].type, "number");
  EXPECT_EQ(params[7].type, "boolean");
  EXPECT_EQ(params[7].default_value, "false");
  EXPECT_EQ(params[8].type, "string");
  EXPECT_EQ(params[8].default_value, "none");
}

TEST(arg, stores_values_by_kind) {
  EXPECT_EQ(std::get<std::int64_t>(arg("a", 7U).value), 7);
  EXPECT_EQ(std::get<std::int64_t>(arg("a", std::int8_t{-3}).value), -3);
  EXPECT_DOUBLE_EQ(std::get<double>(arg("a", 1.5F).value), 1.5);
  EXPECT_TRUE(std::get<bool>(arg("a", true).value));
  EXPECT_EQ(std::get<std::string>(arg("a", "s").value), "s");
  EXPECT_EQ(arg("a", 1).origin, "code");
  EXPECT_FALSE(arg("a", "s").from_text);
}

TEST(arg, text_keeps_the_text_and_its_origin) {
  const arg a = arg::text("gain", "2.5", "app.yaml:3:9");
  EXPECT_EQ(a.name, "gain");
  EXPECT_EQ(std::get<std::string>(a.value), "2.5");
  EXPECT_TRUE(a.from_text);
  EXPECT_EQ(a.origin, "app.yaml:3:9");
}

}  // namespace
}  // namespace resident::test
