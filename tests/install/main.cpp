// Composes and plans a small application against the installed headers and library (the
// runtime only: resident::resident), then says whether a GPU is there to run it.
#include <cstdio>
#include <string>

#include "resident/resident.hpp"

namespace {
class source final : public resident::Operator {
  void setup(resident::OperatorSpec& spec) override { spec.device_output("out", 64); }
  void compute(resident::CaptureContext&) override {}
};

class two_ops final : public resident::Application {
  void compose() override {
    using resident::arg;
    auto src = make_operator<source>("source");
    auto a = make_operator<resident::ops::affine>("affine", arg("elements", 16));
    auto s = make_operator<resident::ops::square>("square", arg("elements", 16));
    add_flow(src, a);
    add_flow(a, s);
  }
};
}  // namespace

int main() {
  two_ops app;
  const auto& plan = app.plan();
  std::printf("resident %s: %zu operators, %zu buffers\n",
              std::string(resident::git_commit()).c_str(), plan.body_order.size(),
              plan.buffers.size());
  if (const int gpus = resident::device_count(); gpus > 0) {
    std::printf("GPUs: %d\n", gpus);
  } else {
    std::printf("no usable CUDA GPU or driver was found (%s): composed and planned only\n",
                resident::no_device_reason().c_str());
  }
  return plan.body_order.size() == 3 ? 0 : 1;
}
