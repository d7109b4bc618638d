#pragma once
#include "resident/exec/executor.hpp"
#include "resident/exec/mode.hpp"
#include "resident/exec/run_handle.hpp"
#include "resident/exec/run_options.hpp"
#include "resident/exec/graph_pool.hpp"
#include "resident/exec/submission.hpp"
