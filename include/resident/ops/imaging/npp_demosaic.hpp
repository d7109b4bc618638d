#pragma once
// npp_demosaic: NPP's bilinear demosaic (nppiCFAToRGBA_16u_C1AC4R) as a peer of demosaic, for
// side-by-side timing and quality. Built only where CMake finds NPP (RESIDENT_HAVE_NPP).
//
//   input  "bayer"  width x height, bayer_<order>16
//   output "rgb"    width x height, rgba16 (NPP keeps the samples' scale; alpha 65535)
//
// Parameters: width (1920), height (1080), order (rggb). NPP's stream context is filled in
// initialize() for the current device and bound to ctx.stream() in compute().

#if defined(RESIDENT_HAVE_NPP) && RESIDENT_HAVE_NPP

#include <cstdint>
#include <memory>

#include "resident/app/operator.hpp"
#include "resident/io/bayer.hpp"

namespace resident::ops::imaging {

class npp_demosaic final : public Operator {
 public:
  npp_demosaic();
  ~npp_demosaic() override;
  void setup(OperatorSpec& spec) override;
  void initialize() override;
  void compute(CaptureContext& ctx) override;

 private:
  struct npp_state;  // NPP's types stay out of this header
  std::uint32_t _width{};
  std::uint32_t _height{};
  io::bayer_order _order{io::bayer_order::rggb};
  std::unique_ptr<npp_state> _npp;
};

}  // namespace resident::ops::imaging

#endif
