// Public entries of the normalisation ops: validation, allocation, and the kernels of the
// operands' device (ops/cpu/norm.cc, ops/cuda/norm_kernels.cu).
#include "flexgraph/ops/norm_ops.h"

#include "flexgraph/base/logging.h"
#include "flexgraph/ops/kernels.h"
#include "flexgraph/ops/norm_kernels.h"
#include "flexgraph/ops/placement.h"

namespace fg::ops {

LayerNormed LayerNormRows(const Tensor& x, const Tensor& gain, const Tensor& bias, float eps) {
  CheckFloat(x, "LayerNormRows", "x");
  CheckFloat(gain, "LayerNormRows", "gain");
  CheckFloat(bias, "LayerNormRows", "bias");
  CheckSameDevice(gain, x, "LayerNormRows", "gain");
  CheckSameDevice(bias, x, "LayerNormRows", "bias");
  FG_CHECK(x.rank() == 2 && gain.numel() == x.dim(1) && bias.numel() == x.dim(1))
      << "LayerNormRows: " << x.ShapeString() << " with gain " << gain.ShapeString() << " and bias "
      << bias.ShapeString();
  const int64_t n = x.dim(0), d = x.dim(1);
  const Device dev = x.device();
  LayerNormed f{Tensor::Empty({n, d}, DType::kFloat32, dev), Tensor::Empty({n, d}, DType::kFloat32, dev),
                Tensor::Empty({n}, DType::kFloat32, dev)};
  FG_DISPATCH(dev, LayerNormRows, x.f32(), gain.f32(), bias.f32(), n, d, eps, f.xhat.f32(), f.rstd.f32(),
              f.y.f32());
  return f;
}

void LayerNormRowsBackward(const Tensor& gy, const Tensor& gain, const LayerNormed& forward, Tensor* gx,
                           Tensor* ggain, Tensor* gbias) {
  CheckFloat(gy, "LayerNormRowsBackward", "gradient");
  const Tensor& xhat = forward.xhat;
  CheckSameDevice(gain, gy, "LayerNormRowsBackward", "gain");
  CheckSameDevice(xhat, gy, "LayerNormRowsBackward", "normalised rows");
  CheckSameDevice(forward.rstd, gy, "LayerNormRowsBackward", "inverse deviations");
  FG_CHECK(gy.rank() == 2 && gy.shape() == xhat.shape() && gain.numel() == gy.dim(1) &&
           forward.rstd.numel() == gy.dim(0))
      << "LayerNormRowsBackward: gradient " << gy.ShapeString() << " for rows " << xhat.ShapeString();
  const int64_t n = gy.dim(0), d = gy.dim(1);
  const Device dev = gy.device();
  if (gx != nullptr) *gx = Tensor::Empty({n, d}, DType::kFloat32, dev);
  if (ggain != nullptr) *ggain = Tensor::Empty({d}, DType::kFloat32, dev);
  if (gbias != nullptr) *gbias = Tensor::Empty({d}, DType::kFloat32, dev);
  FG_DISPATCH(dev, LayerNormRowsBackward, gy.f32(), gain.f32(), xhat.f32(), forward.rstd.f32(), n, d,
              gx ? gx->f32() : nullptr, ggain ? ggain->f32() : nullptr, gbias ? gbias->f32() : nullptr);
}

}  // namespace fg::ops
