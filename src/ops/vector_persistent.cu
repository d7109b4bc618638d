// The vector operators' device forms (persistent mode) and the kernel that runs them between
// the mailbox's endpoints.

#include "resident/io/mailbox_forms.cuh"
#include "resident/ops/vector_forms.cuh"
#include "resident/ops/vector_ops.hpp"

namespace resident::ops {

namespace {

const persistent_kernel_set& vector_kernels() {
  return persistent_kernels<copy_form, affine_form, square_form, sum_reduce_form>();
}

template <class F>
device_form vector_form(const Operator& op, std::int64_t elements, float scale = 0.0F,
                        float offset = 0.0F) {
  return device_form::of<F>(
      {op.bound<const float>("in"), op.bound<float>("out"), elements, scale, offset},
      &vector_kernels());
}

}  // namespace

std::optional<device_form> copy::persistent_form() const {
  return vector_form<copy_form>(*this, _elements);
}

std::optional<device_form> affine::persistent_form() const {
  return vector_form<affine_form>(*this, _elements, _scale, _offset);
}

std::optional<device_form> square::persistent_form() const {
  return vector_form<square_form>(*this, _elements);
}

std::optional<device_form> sum_reduce::persistent_form() const {
  return vector_form<sum_reduce_form>(*this, _elements);
}

}  // namespace resident::ops
