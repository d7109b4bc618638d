// The lab pipeline's YAML (resident run CONFIG.yaml): parse_config_text, then the operators'
// parameters as the pipeline's operators declare them (setup()), and the plan. The operators
// here are host-only stand-ins with the lab pipeline's names, ports and parameters (the real
// ones live in .cu files): rx -> affine -> square -> sum -> tx.

#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_support.hpp"
#include "resident/app/application.hpp"
#include "resident/app/error.hpp"

namespace {

using namespace resident;

/// An operator with the lab pipeline's shape: an optional "in" and "out" of `elements` floats
/// (or of one float), and the parameters of ops::affine when `affine`.
class lab_op final : public Operator {
 public:
  lab_op(bool in, bool out, bool reduce, bool affine)
      : _in(in), _out(out), _reduce(reduce), _affine(affine) {}
  void setup(OperatorSpec& spec) override {
    const auto elements =
        spec.param<std::int64_t>("elements", 4096, "number of fp32 values per sample");
    if (elements <= 0 || elements > (std::int64_t{1} << 28)) {
      throw composition_error("operator '" + spec.operator_name() +
                              "': parameter 'elements' out of range");
    }
    if (_affine) {
      (void)spec.param<float>("scale", 2.0F, "multiplier a in a*x + b");
      (void)spec.param<float>("offset", 1.0F, "offset b in a*x + b");
    }
    const auto bytes = static_cast<std::size_t>(elements) * sizeof(float);
    if (_in) spec.device_input("in", bytes);
    if (_out) spec.device_output(_in ? "out" : "sample", _reduce ? sizeof(float) : bytes);
  }
  void compute(CaptureContext&) override {}

 private:
  bool _in, _out, _reduce, _affine;
};

class lab_pipeline final : public Application {
 public:
  lab_pipeline() : Application("lab") {}
  void compose() override {
    auto rx = make_operator<lab_op>("rx", false, true, false, false);
    auto affine = make_operator<lab_op>("affine", true, true, false, true);
    auto square = make_operator<lab_op>("square", true, true, false, false);
    auto sum = make_operator<lab_op>("sum", true, true, true, false);
    auto tx = make_operator<lab_op>("tx", true, false, false, false);
    add_flow(rx, affine, {{"sample", "in"}});
    add_flow(affine, square);
    add_flow(square, sum);
    add_flow(sum, tx);
    data_ready_handler handler;
    handler.operators = {rx};
    register_data_ready_handler(std::move(handler));
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
