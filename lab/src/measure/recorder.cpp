#include "resident/measure/recorder.hpp"

namespace resident::measure {

// Value-initialization writes every element, so the pages are mapped here rather than on the
// first record() that reaches them, which would add a page fault to a timed iteration.
sample_recorder::sample_recorder(std::size_t capacity)
    : _data(std::make_unique<double[]>(capacity)), _capacity(capacity) {}

}  // namespace resident::measure
