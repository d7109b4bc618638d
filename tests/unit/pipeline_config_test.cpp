// A pipeline described in YAML: parsed into operators (by catalog kind), flows and a mailbox;
// checked without a GPU (stand-ins for the mailbox ends); every mistake a config_error naming
// the file, line and column.

#include "resident/ops/pipeline_config.hpp"

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "resident/app/error.hpp"

namespace resident::ops {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string lab = R"(mailbox: {input_bytes: 400, output_bytes: 4, depth: 8}
operators:
  rx:     {kind: io.mailbox_rx}
  affine: {kind: ops.affine, elements: 100, scale: 0.5}
  square: {kind: ops.square, elements: 100}
  sum:    {kind: ops.sum_reduce, elements: 100}
  tx:     {kind: io.mailbox_tx}
flows:
  - rx.sample -> affine.in
  - affine -> square
  - square.out -> sum
  - sum -> tx.in
loop: {deadline_us: 500}
)";

std::string error_of(const std::string& yaml) {
  try {
    check_pipeline(parse_pipeline_text(yaml, "p.yaml"));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(pipeline_config, the_lab_pipeline_parses_in_file_order_and_checks_without_a_gpu) {
  const pipeline_description d = parse_pipeline_text(lab, "p.yaml");
  ASSERT_EQ(d.operators.size(), 5U);
  EXPECT_EQ(d.operators[1].name, "affine");
  EXPECT_EQ(d.operators[1].kind, "ops.affine");
  ASSERT_EQ(d.operators[1].params.size(), 2U);
  EXPECT_EQ(d.operators[1].params[0].name, "elements");
  EXPECT_EQ(d.operators[1].where, "p.yaml:4:3");
  ASSERT_EQ(d.flows.size(), 4U);
  EXPECT_EQ(d.flows[0].from, "rx");
  EXPECT_EQ(d.flows[0].from_port, "sample");
  EXPECT_EQ(d.flows[1].from_port, "");  // the only output
  EXPECT_EQ(d.flows[2].to, "sum");
  EXPECT_EQ(d.flows[2].to_port, "");
  ASSERT_TRUE(d.mailbox.has_value());
  EXPECT_EQ(d.mailbox->input_bytes, 400U);
  EXPECT_EQ(d.mailbox->depth, 8U);
  EXPECT_EQ(d.handler, "rx") << "the only io.mailbox_rx";
  EXPECT_NO_THROW(check_pipeline(d));
}

TEST(pipeline_config, kinds_come_from_the_catalog_and_unknown_ones_are_listed) {
  EXPECT_THAT(error_of(replaced(lab, "ops.square", "ops.sqaure")),
              AllOf(HasSubstr("p.yaml:5:18"), HasSubstr("operator 'square'"),
                    HasSubstr("unknown operator kind 'ops.sqaure'"), HasSubstr("ops.square")));
  EXPECT_THAT(error_of(replaced(lab, "ops.square", "io.display_tx")),
              AllOf(HasSubstr("kind 'io.display_tx' needs a display"), HasSubstr("cannot give")));
  EXPECT_THAT(error_of(replaced(lab, "{kind: ops.square, elements: 100}", "{elements: 100}")),
              HasSubstr("operator 'square' must be a map with its kind"));
}

TEST(pipeline_config, parameters_are_checked_against_what_the_kind_declares) {
  EXPECT_THAT(error_of(replaced(lab, "scale: 0.5", "scael: 0.5")),
              AllOf(HasSubstr("scael"), HasSubstr("p.yaml:4")));
  EXPECT_THAT(error_of(replaced(lab, "scale: 0.5", "scale: half")),
              AllOf(HasSubstr("scale"), HasSubstr("half")));
  EXPECT_THAT(error_of(replaced(lab, "scale: 0.5", "scale: ")), HasSubstr("has no value"));
}

TEST(pipeline_config, flows_name_operators_and_ports_of_matching_size) {
  EXPECT_THAT(error_of(replaced(lab, "affine -> square", "affine -> sqaure")),
              AllOf(HasSubstr("p.yaml:10:5"), HasSubstr("operator 'sqaure'"),
                    HasSubstr("operators: rx, affine, square, sum, tx")));
  EXPECT_THAT(error_of(replaced(lab, "rx.sample -> affine.in", "rx.sampel -> affine.in")),
              AllOf(HasSubstr("p.yaml:9:5"), HasSubstr("sampel")));
  EXPECT_THAT(error_of(replaced(lab, "rx.sample -> affine.in", "rx.sample => affine.in")),
              HasSubstr("must read 'from.port -> to.port'"));
  EXPECT_THAT(error_of(replaced(lab, "input_bytes: 400", "input_bytes: 404")),
              AllOf(HasSubstr("p.yaml:9:5"), HasSubstr("404")));
  EXPECT_THAT(error_of(replaced(lab, "sum -> tx.in", "sum -> affine.in")),
              HasSubstr("p.yaml:12:5"));
}

TEST(pipeline_config, the_mailbox_section_and_the_handler_are_checked) {
  EXPECT_THAT(
      error_of(replaced(lab, "mailbox: {input_bytes: 400, output_bytes: 4, depth: 8}\n", "")),
      HasSubstr("need a 'mailbox' section"));
  EXPECT_THAT(error_of(replaced(lab, "depth: 8", "depth: 1")),
              AllOf(HasSubstr("mailbox.depth must be a whole number from 2"), HasSubstr("'1'")));
  EXPECT_THAT(error_of(replaced(lab, "input_bytes: 400", "input_bytes: -5")),
              HasSubstr("mailbox.input_bytes must be a whole number"));
  EXPECT_THAT(error_of(replaced(lab, "input_bytes: 400", "input_bytes: 99999999999999999999")),
              HasSubstr("mailbox.input_bytes must be a whole number"));
  EXPECT_THAT(error_of(replaced(lab, "depth: 8", "depht: 8")),
              HasSubstr("mailbox has no setting 'depht'"));
  EXPECT_THAT(error_of(replaced(lab, "  tx:     {kind: io.mailbox_tx}",
                                "  tx:     {kind: io.mailbox_tx}\n  rx2: {kind: io.mailbox_rx}")),
              HasSubstr("say which is the data-ready handler"));
  EXPECT_THAT(error_of(lab + "handler: affine\n"),
              HasSubstr("handler 'affine' must name an io.mailbox_rx operator"));
}

TEST(pipeline_config, the_file_shape_is_checked) {
  EXPECT_THAT(error_of("a: [1, 2"), HasSubstr("not valid YAML"));
  EXPECT_THAT(error_of("affine: {scale: 1}\n"), HasSubstr("a map with 'operators'"));
  EXPECT_THAT(error_of(lab + "flow:\n  - a -> b\n"),
              AllOf(HasSubstr("p.yaml:14:1"), HasSubstr("unknown section 'flow'")));
  EXPECT_THAT(error_of(lab + "operators: {}\n"), HasSubstr("given twice"));
  EXPECT_THAT(error_of("operators: []\n"), HasSubstr("operators must map names"));
  EXPECT_THAT(error_of(replaced(lab, "  square:", "  sq.uare:")),
              HasSubstr("must be a plain name"));
  EXPECT_THAT(error_of("operators:\n  a: {kind: ops.copy}\nflows: a -> a\n"),
              HasSubstr("flows must be a list"));
}

TEST(pipeline_config, files_are_told_apart_by_their_operators_section) {
  const auto dir = std::filesystem::temp_directory_path() / "resident-pipeline-config-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "p.yaml") << lab;
  std::ofstream(dir / "ops.yaml") << "affine:\n  scale: 2\n";
  std::ofstream(dir / "bad.yaml") << "a: [1, 2";
  EXPECT_TRUE(is_pipeline_config(dir / "p.yaml"));
  EXPECT_FALSE(is_pipeline_config(dir / "ops.yaml"));
  EXPECT_FALSE(is_pipeline_config(dir / "bad.yaml"));
  EXPECT_FALSE(is_pipeline_config(dir / "missing.yaml"));
  EXPECT_EQ(parse_pipeline_file(dir / "p.yaml").operators.size(), 5U);
  EXPECT_THROW((void)parse_pipeline_file(dir / "missing.yaml"), config_error);
  std::filesystem::remove_all(dir);
}

TEST(pipeline_config, the_example_file_checks) {
  const auto file = std::filesystem::path(RESIDENT_SOURCE_DIR) / "examples/config/pipeline.yaml";
  const pipeline_description d = parse_pipeline_file(file);
  EXPECT_EQ(d.handler, "rx");
  EXPECT_NO_THROW(check_pipeline(d));
}

}  // namespace
}  // namespace resident::ops
