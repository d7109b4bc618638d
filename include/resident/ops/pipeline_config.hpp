#pragma once
// A pipeline described in YAML: operators by kind from the operator catalog, the flows between
// their ports, and the mailbox its sensor and actuator share.
//
//   mailbox: {input_bytes: 16384, output_bytes: 4, depth: 8}
//   operators:
//     rx:     {kind: io.mailbox_rx}
//     affine: {kind: ops.affine, elements: 4096, scale: 0.5, offset: -1.0}
//     sum:    {kind: ops.sum_reduce, elements: 4096}
//     tx:     {kind: io.mailbox_tx}
//   flows:
//     - rx.sample -> affine.in
//     - affine -> sum            # the one output to the one input
//     - sum.out -> tx.in
//   handler: rx                  # optional: the only io.mailbox_rx is the default
//   loop: {deadline_us: 500}     # the runner's (resident run), as in an operator configuration
//
// Every key but `kind` of an operator is a parameter it declares (checked when the pipeline is
// planned, with the file's line and column). Kinds whose factory needs something a file cannot
// give (a sensor bridge, a display, caller memory, a CUDA graph) are refused by name.

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resident/app/application.hpp"
#include "resident/app/parameters.hpp"
#include "resident/io/mailbox.hpp"
#include "resident/ops/catalog.hpp"

namespace resident::ops {

struct pipeline_operator {
  std::string name;
  std::string kind;
  std::vector<arg> params;  // text until the operator declares their types
  std::string where;        // "file:line:col" of its name
};

struct pipeline_flow {
  std::string from;       // operator
  std::string from_port;  // empty: its only output
  std::string to;
  std::string to_port;  // empty: its only input
  std::string where;
};

struct pipeline_description {
  std::string origin;
  std::optional<io::mailbox::config> mailbox;
  std::vector<pipeline_operator> operators;  // in file order
  std::vector<pipeline_flow> flows;
  std::string handler;  // the io.mailbox_rx operator that is the data-ready handler

  [[nodiscard]] const pipeline_operator* find(std::string_view name) const;
};

/// What a kind's factory needs (the catalog's operator_kind::input); throws composition_error
/// naming an unknown kind and the known ones.
using kind_input_lookup = std::function<kind_input(std::string_view kind)>;

/// Parses and checks a pipeline file: every kind known and buildable from a file, every flow
/// between operators the file names, one handler, a mailbox section where a mailbox kind is
/// used. Throws config_error "file:line:col: ..." naming what is wrong. Kinds are looked up in
/// the operator catalog, or with `lookup` (the fuzz harness's, which has no catalog).
[[nodiscard]] pipeline_description parse_pipeline_text(std::string_view yaml, std::string origin);
[[nodiscard]] pipeline_description parse_pipeline_text(std::string_view yaml, std::string origin,
                                                       const kind_input_lookup& lookup);
[[nodiscard]] pipeline_description parse_pipeline_file(const std::filesystem::path& file);

/// Composes and plans the pipeline with stand-ins for the mailbox ends (no GPU): every
/// parameter declared and of its type, every port of every flow there and of matching size,
/// the graph acyclic. Throws config_error or composition_error naming the file's line.
void check_pipeline(const pipeline_description& description);

/// Whether `file` is a pipeline description (a map with an `operators` key); false for
/// anything unreadable, which the operator-configuration path then reports.
[[nodiscard]] bool is_pipeline_config(const std::filesystem::path& file);

/// The application a description gives. Its mailbox is made with the application (host-mapped
/// memory: a GPU is needed); compose() makes each operator through the catalog.
class yaml_pipeline final : public Application {
 public:
  explicit yaml_pipeline(pipeline_description description);
  void compose() override;

  [[nodiscard]] const pipeline_description& description() const noexcept { return _description; }
  /// The pipeline's mailbox (null where no operator uses one).
  [[nodiscard]] const std::shared_ptr<io::mailbox>& mailbox() const noexcept { return _mailbox; }

 private:
  pipeline_description _description;
  std::shared_ptr<io::mailbox> _mailbox;
};

}  // namespace resident::ops
