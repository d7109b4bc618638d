#pragma once
#include "resident/ops/imaging.hpp"
#include "resident/ops/lab_batch.hpp"
#include "resident/ops/matmul.hpp"
#include "resident/ops/vector_ops.hpp"
