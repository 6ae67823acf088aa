// norm.cpp - RMSNorm and LayerNorm, with and without sequence parallelism.
#include "engine.h"

namespace engine {

RMSNormImpl::RMSNormImpl(int64_t hidden, double eps) : eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({hidden}));
}

SPMD_TYPE(dp = V, tp = I)
Tensor RMSNormImpl::forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  auto variance = x.to(c10::ScalarType::Float).pow(2).mean({-1}, true);
  auto normed = x * (variance + eps_).rsqrt();
  return normed * weight_;
}

LayerNormImpl::LayerNormImpl(int64_t hidden, double eps, bool affine)
    : hidden_(hidden), eps_(eps) {
  if (affine) {
    weight_ = register_parameter("weight", torch::ones({hidden}));
    bias_ = register_parameter("bias", torch::zeros({hidden}));
  }
}

SPMD_TYPE(dp = V, tp = I)
Tensor LayerNormImpl::forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  return at::layer_norm(x, {hidden_}, weight_, bias_, eps_);
}

SPMD_TYPE(dp = V, tp = S(0))
Tensor sp_rms_norm(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(2)) const Tensor& x,
                   SPMD_TYPE(dp = R, tp = R, spmd::rank(1)) const Tensor& weight,
                   double eps) {
  auto variance = x.pow(2).mean({-1}, /*keepdim=*/true);
  return x * (variance + eps).rsqrt() * weight;
}

SPMD_TYPE(dp = V, tp = S(0))
Tensor sp_layer_norm(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(2)) const Tensor& x,
                     SPMD_TYPE(dp = R, tp = R) const Tensor& weight,
                     SPMD_TYPE(dp = R, tp = R) const Tensor& bias, double eps) {
  return at::layer_norm(x, {x.size(-1)}, weight, bias, eps);
}

SPMD_TYPE(dp = R, tp = R)
Tensor sync_sp_norm_grad(SPMD_TYPE(dp = P, tp = P) const Tensor& grad) {
  auto over_tp = spmd::all_reduce(grad, tp, P, R);
  return spmd::all_reduce(over_tp, dp, P, R);
}

}  // namespace engine
