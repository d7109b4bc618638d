// NPP's bilinear demosaic as a peer operator (built only where CMake finds NPP).

#include "resident/ops/imaging/npp_demosaic.hpp"

#include <nppdefs.h>
#include <nppi_color_conversion.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "ops/imaging/params.hpp"
#include "resident/app/error.hpp"
#include "resident/cuda/error.hpp"
#include "resident/ops/imaging/common.hpp"

namespace resident::ops::imaging {

struct npp_demosaic::npp_state {
  NppStreamContext context{};
};

npp_demosaic::npp_demosaic() = default;
npp_demosaic::~npp_demosaic() = default;

namespace {

NppiBayerGridPosition grid_of(io::bayer_order order) {
  switch (order) {
    case io::bayer_order::bggr:
      return NPPI_BAYER_BGGR;
    case io::bayer_order::grbg:
      return NPPI_BAYER_GRBG;
    case io::bayer_order::gbrg:
      return NPPI_BAYER_GBRG;
    case io::bayer_order::rggb:
    default:
      return NPPI_BAYER_RGGB;
  }
}

}  // namespace

void npp_demosaic::setup(OperatorSpec& spec) {
  _width = params::side(spec, "width", 1920, true, "image width in pixels");
  _height = params::side(spec, "height", 1080, true, "image height in pixels");
  _order = params::order(spec);
  spec.image_input("bayer", bayer_image(_width, _height, _order));
  spec.image_output("rgb", image_desc{_width, _height, pixel_format::rgba16, 0});
}

void npp_demosaic::initialize() {
  // nppGetStreamContext is deprecated: the context is the current device's description, filled
  // here once; compute() binds the stream.
  _npp = std::make_unique<npp_state>();
  NppStreamContext& c = _npp->context;
  int device = 0;
  RESIDENT_CUDA_TRY(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  RESIDENT_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  c.nCudaDeviceId = device;
  c.nMultiProcessorCount = prop.multiProcessorCount;
  c.nMaxThreadsPerMultiProcessor = prop.maxThreadsPerMultiProcessor;
  c.nMaxThreadsPerBlock = prop.maxThreadsPerBlock;
  c.nSharedMemPerBlock = prop.sharedMemPerBlock;
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&c.nCudaDevAttrComputeCapabilityMajor,
                                           cudaDevAttrComputeCapabilityMajor, device));
  RESIDENT_CUDA_TRY(cudaDeviceGetAttribute(&c.nCudaDevAttrComputeCapabilityMinor,
                                           cudaDevAttrComputeCapabilityMinor, device));
}

void npp_demosaic::compute(CaptureContext& ctx) {
  NppStreamContext c = _npp->context;
  c.hStream = ctx.stream();
  unsigned flags = 0;
  RESIDENT_CUDA_TRY(cudaStreamGetFlags(ctx.stream(), &flags));
  c.nStreamFlags = flags;
  const auto w = static_cast<int>(_width);
  const auto h = static_cast<int>(_height);
  const NppStatus status = nppiCFAToRGBA_16u_C1AC4R_Ctx(
      ctx.device_memory<const Npp16u>("bayer"), w * static_cast<int>(sizeof(Npp16u)),
      NppiSize{w, h}, NppiRect{0, 0, w, h}, ctx.device_memory<Npp16u>("rgb"),
      w * 4 * static_cast<int>(sizeof(Npp16u)), grid_of(_order), NPPI_INTER_UNDEFINED,
      Npp16u{0xFFFF}, c);
  if (status != NPP_SUCCESS) {
    throw std::runtime_error("operator '" + ctx.operator_name() +
                             "': nppiCFAToRGBA_16u_C1AC4R_Ctx failed with NppStatus " +
                             std::to_string(static_cast<int>(status)));
  }
}

}  // namespace resident::ops::imaging
