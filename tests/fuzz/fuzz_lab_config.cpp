// The lab pipeline's YAML (resident run CONFIG.yaml): parse_config_text, then the operators'
// parameters as the pipeline's operators declare them (setup()), and the plan, as
// `resident run CONFIG.yaml --check` does. The operators here are host-only stand-ins with the
// lab pipeline's names, ports and parameters (the real ones live in .cu files):
// rx -> affine -> square -> sum -> tx.

#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_support.hpp"
#include "resident/app/application.hpp"
#include "resident/app/error.hpp"
#include "resident/app/port_stand_in.hpp"

namespace {

using namespace resident;

/// ops::affine, ops::square and ops::sum_reduce as their setup() declares them
/// (src/ops/elementwise.cu, sum_reduce.cu): "elements" (positive), affine's "scale" and
/// "offset", an input "in" of `elements` floats and an output "out" of as many (one for sum).
class vector_op final : public Operator {
 public:
  enum class kind { affine, square, sum };
  explicit vector_op(kind k) : _kind(k) {}
  void setup(OperatorSpec& spec) override {
    const auto elements =
        spec.param<std::int64_t>("elements", 4096, "number of fp32 values per sample");
    if (elements <= 0) {
      throw composition_error("operator '" + spec.operator_name() +
                              "': parameter 'elements' must be positive, got " +
                              std::to_string(elements));
    }
    if (_kind == kind::affine) {
      (void)spec.param<float>("scale", 2.0F, "multiplier a in a*x + b");
      (void)spec.param<float>("offset", 1.0F, "offset b in a*x + b");
    }
    const auto bytes = static_cast<std::size_t>(elements) * sizeof(float);
    spec.device_input("in", bytes);
    spec.device_output("out", _kind == kind::sum ? sizeof(float) : bytes);
  }
  void compute(CaptureContext&) override {}

 private:
  kind _kind;
};

/// run.cpp's lab_pipeline as `resident run --check` builds it (--elements at its default).
class lab_pipeline final : public Application {
 public:
  lab_pipeline() : Application("lab") {}
  void compose() override {
    constexpr std::int64_t elements = 4096;
    auto rx = make_operator<port_stand_in>("rx", port_direction::output, "sample",
                                           static_cast<std::size_t>(elements) * sizeof(float));
    auto tx = make_operator<port_stand_in>("tx", port_direction::input, "in", sizeof(float));
    data_ready_handler handler;
    handler.operators = {rx};
    register_data_ready_handler(std::move(handler));
    auto affine =
        make_operator<vector_op>("affine", vector_op::kind::affine, arg("elements", elements));
    auto square =
        make_operator<vector_op>("square", vector_op::kind::square, arg("elements", elements));
    auto sum = make_operator<vector_op>("sum", vector_op::kind::sum, arg("elements", elements));
    add_flow(rx, affine, {{"sample", "in"}});
    add_flow(affine, square);
    add_flow(square, sum);
    add_flow(sum, tx);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  resident::fuzz::expect_named_errors([&] {
    lab_pipeline app;
    app.load_config_text(resident::fuzz::text_of(data, size), "fuzz.yaml");
    (void)app.plan();
  });
  return 0;
}
