#pragma once
#include "resident/ops/captured_graph.hpp"
#include "resident/ops/imaging.hpp"
#include "resident/ops/lab_batch.hpp"
#include "resident/ops/matmul.hpp"
#include "resident/ops/vector_ops.hpp"
