// YAML configuration: Application::load_config / load_config_text, a map of operator name ->
// {parameter: value}. Values override code and are converted per the declared type; every
// mistake names the file and, where there is one, the line and column.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "test_operators.hpp"

namespace resident::test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

/// An application with a params_op "p" (given i64 = 3 in code) and a parameterless "s".
struct configured {
  std::shared_ptr<params_op> p;
  test_app app{[this](test_app& t) {
    p = t.make_operator<params_op>("p", arg("i64", 3));
    (void)t.make_operator<ports_op>("s");
  }};

  /// Loads `yaml` (origin "test.yaml") and plans.
  configured& with(const std::string& yaml) {
    app.load_config_text(yaml, "test.yaml");
    (void)app.plan();
    return *this;
  }
  /// The error loading `yaml` and planning fails with.
  template <class E = config_error>
  std::string error(const std::string& yaml) {
    return error_of<E>([&] {
      app.load_config_text(yaml, "test.yaml");
      (void)app.plan();
    });
  }
};

TEST(config, value_overrides_the_value_given_in_code) {
  configured c;
  c.with("p:\n  i64: 7\n");
  EXPECT_EQ(c.p->i64, 7);
}

TEST(config, leaves_parameters_it_does_not_name_alone) {
  configured c;
  c.with("p:\n  f64: 9.5\n");
  EXPECT_EQ(c.p->i64, 3) << "the code value";
  EXPECT_EQ(c.p->i32, 2) << "the default";
  EXPECT_DOUBLE_EQ(c.p->f64, 9.5);
}

TEST(config, text_values_are_converted_to_the_declared_types) {
  configured c;
  c.with(
      "p:\n"
      "  i32: 3\n"
      "  u8: 255\n"
      "  f64: 2.5\n"
      "  f32: -1\n"
      "  flag: true\n"
      "  label: hello world\n");
  EXPECT_EQ(c.p->i32, 3);
  EXPECT_EQ(c.p->u8, 255);
  EXPECT_DOUBLE_EQ(c.p->f64, 2.5);
  EXPECT_FLOAT_EQ(c.p->f32, -1.0F);
  EXPECT_TRUE(c.p->flag);
  EXPECT_EQ(c.p->label, "hello world");
}

TEST(config, number_for_a_string_parameter_stays_text) {
  configured c;
  c.with("p:\n  label: 007\n");
  EXPECT_EQ(c.p->label, "007");
}

TEST(config, flow_style_maps_are_accepted) {
  configured c;
  c.with("{p: {i64: 11, flag: false}, s: {}}");
  EXPECT_EQ(c.p->i64, 11);
  EXPECT_FALSE(c.p->flag);
}

TEST(config, empty_text_configures_nothing) {
  configured c;
  c.with("");
  EXPECT_EQ(c.p->i64, 3);
}

TEST(config, comment_only_text_configures_nothing) {
  configured c;
  c.with("# nothing to tune yet\n");
  EXPECT_EQ(c.p->i64, 3);
}

TEST(config, operator_without_values_is_accepted) {
  configured c;
  c.with("p:\ns:\n");
  EXPECT_EQ(c.p->i64, 3);
}

TEST(config, value_of_the_wrong_type_names_the_parameter_and_its_line_and_column) {
  EXPECT_EQ(configured{}.error("p:\n  i32: abc\n"),
            "operator 'p': parameter 'i32' expects an integer, got \"abc\" (from test.yaml:2:8)");
}

TEST(config, value_out_of_range_names_its_line_and_column) {
  EXPECT_THAT(configured{}.error("p:\n  flag: true\n  u8: 256\n"),
              HasSubstr("parameter 'u8' = 256 is out of range [0, 255] (from test.yaml:3:7)"));
}

TEST(config, misspelled_parameter_names_it_its_origin_and_the_known_parameters) {
  EXPECT_EQ(configured{}.error("p:\n  i46: 3\n"),
            "operator 'p' has no parameter 'i46' (from test.yaml:2:8); its parameters: i64, i32, "
            "i8, u8, u64, f32, f64, flag, label");
}

TEST(config, unknown_operator_names_its_line_and_column_and_lists_the_operators) {
  EXPECT_EQ(configured{}.error("q:\n  x: 1\n"),
            "test.yaml:1:1: names operator 'q', which application 'app' does not create; its "
            "operators: p, s");
}

TEST(config, invalid_yaml_names_the_line_and_column) {
  EXPECT_EQ(configured{}.error("p:\n  i64: 1\nq: b: c\n"),
            "test.yaml:3:5: not valid YAML: illegal map value");
}

TEST(config, unterminated_flow_sequence_is_invalid_yaml) {
  EXPECT_THAT(configured{}.error("p: [1, 2\n"), StartsWith("test.yaml:"));
  EXPECT_THAT(configured{}.error("p: [1, 2\n"), HasSubstr(": not valid YAML: "));
}

TEST(config, top_level_list_is_rejected) {
  EXPECT_EQ(configured{}.error("- p\n- s\n"),
            "test.yaml:1:1: expected a map of operator names to parameter maps");
}

TEST(config, top_level_scalar_is_rejected) {
  EXPECT_THAT(configured{}.error("just text\n"),
              HasSubstr("expected a map of operator names to parameter maps"));
}

TEST(config, operator_entry_that_is_a_scalar_is_rejected) {
  EXPECT_EQ(configured{}.error("p: 3\n"),
            "test.yaml:1:4: operator 'p' must map parameter names to values");
}

TEST(config, operator_entry_that_is_a_list_is_rejected) {
  EXPECT_THAT(configured{}.error("p:\n  - i64\n"),
              HasSubstr("test.yaml:2:3: operator 'p' must map parameter names to values"));
}

TEST(config, list_value_is_rejected) {
  EXPECT_EQ(configured{}.error("p:\n  i64: [1, 2]\n"),
            "test.yaml:2:8: parameter 'p.i64' must be a single value, not a list or map");
}

TEST(config, map_value_is_rejected) {
  EXPECT_THAT(configured{}.error("p:\n  i64: {a: 1}\n"),
              HasSubstr("test.yaml:2:8: parameter 'p.i64' must be a single value"));
}

TEST(config, parameter_without_a_value_is_rejected) {
  EXPECT_THAT(configured{}.error("p:\n  i64:\n  i32: 1\n"),
              HasSubstr("test.yaml:2:3: parameter 'p.i64' has no value"));
}

TEST(config, operator_name_that_is_a_list_is_rejected) {
  EXPECT_EQ(configured{}.error("? [p, s]\n: {i64: 1}\n"),
            "test.yaml:1:3: an operator name must be a plain name, not a list or map");
}

TEST(config, parameter_name_that_is_a_list_is_rejected) {
  EXPECT_EQ(configured{}.error("p:\n  ? [i64]\n  : 1\n"),
            "test.yaml:2:5: operator 'p': a parameter name must be a plain name, not a list or "
            "map");
}

TEST(config, origin_defaults_to_config) {
  configured c;
  c.app.load_config_text("p:\n  i46: 1\n");
  EXPECT_THAT(error_of<config_error>([&] { (void)c.app.plan(); }),
              HasSubstr("(from <config>:2:8)"));
}

TEST(config, loading_again_replaces_the_previous_configuration) {
  configured c;
  c.app.load_config_text("p:\n  i64: 5\n  i32: 6\n");
  c.with("p:\n  i64: 8\n");
  EXPECT_EQ(c.p->i64, 8);
  EXPECT_EQ(c.p->i32, 2);
}

TEST(config, cannot_be_loaded_after_plan) {
  configured c;
  (void)c.app.plan();
  EXPECT_EQ(error_of<config_error>([&] { c.app.load_config_text("p:\n  i64: 1\n", "late.yaml"); }),
            "load_config(late.yaml): application 'app' is already composed; load the "
            "configuration before plan() or a run");
}

TEST(config, cannot_be_loaded_from_inside_compose) {
  test_app app([](test_app& t) { t.load_config_text("{}", "inner.yaml"); });
  EXPECT_THAT(plan_error<config_error>(app),
              HasSubstr("load_config(inner.yaml): application 'app' is already composed"));
}

TEST(config, file_cannot_be_loaded_after_plan) {
  configured c;
  (void)c.app.plan();
  EXPECT_THAT(error_of<config_error>([&] { c.app.load_config("whatever.yaml"); }),
              HasSubstr("load_config(whatever.yaml): application 'app' is already composed"));
}

TEST(config, missing_file_is_an_error_naming_it) {
  configured c;
  EXPECT_EQ(error_of<config_error>([&] { c.app.load_config("/nonexistent/resident/app.yaml"); }),
            "cannot open configuration file /nonexistent/resident/app.yaml");
}

class config_file : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path = std::filesystem::temp_directory_path() /
           (std::string("resident_config_test_") + info->name() + ".yaml");
  }
  void TearDown() override { std::filesystem::remove(path); }
  void write(const std::string& text) const { std::ofstream(path) << text; }

  std::filesystem::path path;
};

TEST_F(config_file, values_are_applied) {
  write("p:\n  i64: 12\n  label: from file\n");
  configured c;
  c.app.load_config(path);
  (void)c.app.plan();
  EXPECT_EQ(c.p->i64, 12);
  EXPECT_EQ(c.p->label, "from file");
}

TEST_F(config_file, errors_name_the_file_line_and_column) {
  write("p:\n  flag: maybe\n");
  configured c;
  c.app.load_config(path);
  EXPECT_THAT(error_of<config_error>([&] { (void)c.app.plan(); }),
              HasSubstr("(from " + path.string() + ":2:9)"));
}

}  // namespace
}  // namespace resident::test
