#pragma once
// The camera pipeline's GPU imaging operators (resident::ops::imaging): CSI-2 reconstruction,
// raw ISP, demosaic (own bilinear and Malvar-He-Cutler; NPP's where built with NPP) and
// conversion with resize. Each is an Operator usable on its own; detail::launch_* enqueue the
// same kernels for fused pipelines and benchmarks.

#include "resident/ops/imaging/common.hpp"
#include "resident/ops/imaging/camera_isp.hpp"
#include "resident/ops/imaging/convert_resize.hpp"
#include "resident/ops/imaging/csi2_math.hpp"
#include "resident/ops/imaging/csi2_reconstruct.hpp"
#include "resident/ops/imaging/demosaic.hpp"
#include "resident/ops/imaging/demosaic_math.hpp"
#include "resident/ops/imaging/isp_math.hpp"
#include "resident/ops/imaging/npp_demosaic.hpp"
#include "resident/ops/imaging/raw_isp.hpp"
