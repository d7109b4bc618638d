#pragma once
#include "resident/cuda/buffers.hpp"
#include "resident/cuda/device.hpp"
#include "resident/cuda/error.hpp"
#include "resident/cuda/event.hpp"
#include "resident/cuda/graph.hpp"
#include "resident/cuda/l2_persistence.hpp"
#include "resident/cuda/stream.hpp"
