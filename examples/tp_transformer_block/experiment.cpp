// experiment.cpp - the experiment around the block (experiment.h): the loss,
// parameters and data from the seed, the one-device reference, the types the
// runtime checker starts from. Checked by the spmd-check plugin like the rest
// of the example.
#include "experiment.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <spmd/checker.h>

#include <cmath>
#include <string>
#include <vector>

namespace tp_example {

using namespace spmd::types;

at::Tensor grad_of(const at::Tensor& param) {
  const at::Tensor& g = param.grad();
  return g.defined() ? g : at::zeros_like(param);
}

// ---------------------------------------------------------------- the loss

// Mean squared error over the global batch, without sequence parallelism.
// Each dp rank sums its own tokens and divides by the global count, so the
// whole-batch loss is the sum of the ranks' values: P on dp. On tp the loss is
// one duplicated computation: I (its gradient seed 1.0 is correct as is).
SPMD_TYPE(dp = P, tp = I)
at::Tensor loss_tp(SPMD_TYPE(dp = V, tp = I) const at::Tensor& out,
                   SPMD_TYPE(dp = V, tp = I) const at::Tensor& target,
                   double global_count) {
  auto err = out - target;                            // {dp: V, tp: I}
  auto local_sum = (err * err).sum() / global_count;  // {dp: V, tp: I}
  return spmd::reinterpret(local_sum, dp, V, P);      // {dp: P, tp: I}
}

// The same loss with sequence parallelism: each tp rank holds a slice of the
// tokens, so the tp ranks' sums are first reduced (reduce-from-TP, dst I).
SPMD_TYPE(dp = P, tp = I)
at::Tensor loss_sp(SPMD_TYPE(dp = V, tp = S(0)) const at::Tensor& out,
                   SPMD_TYPE(dp = V, tp = S(0)) const at::Tensor& target,
                   double global_count) {
  auto err = out - target;                            // {dp: V, tp: V}
  auto local_sum = (err * err).sum() / global_count;  // {dp: V, tp: V}
  auto tp_partial = spmd::reinterpret(local_sum, tp, V, P);
  auto dp_share = spmd::all_reduce(tp_partial, tp, P, I);  // {dp: V, tp: I}
  return spmd::reinterpret(dp_share, dp, V, P);            // {dp: P, tp: I}
}

// ------------------------------------------------------- plumbing (untyped)

FullParams init_params(const Config& c) {
  at::Generator gen = at::detail::createCPUGenerator(c.seed);
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  FullParams p;
  p.ln_w = 1.0 + 0.1 * at::randn({c.hidden}, gen, f32);
  p.ln_b = 0.1 * at::randn({c.hidden}, gen, f32);
  p.w1 = at::randn({c.ffn, c.hidden}, gen, f32) / std::sqrt(double(c.hidden));
  p.w2 = at::randn({c.hidden, c.ffn}, gen, f32) / std::sqrt(double(c.ffn));
  return p;
}

Data make_data(const Config& c) {
  at::Generator gen = at::detail::createCPUGenerator(c.seed + 1);
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  Data d;
  d.x = at::randn({c.seq, c.batch, c.hidden}, gen, f32);
  at::Tensor teacher =
      at::randn({c.hidden, c.hidden}, gen, f32) / std::sqrt(double(c.hidden));
  d.target = d.x + 0.5 * at::tanh(at::matmul(d.x, teacher));
  return d;
}

// This rank's piece of a whole tensor: chunk `index` of `parts` along `dim`,
// or the whole tensor when dim < 0.
at::Tensor piece(const at::Tensor& t, int64_t dim, int64_t parts,
                 int64_t index) {
  if (dim < 0) return t;
  return t.chunk(parts, dim)[index];
}

at::Tensor leaf(const at::Tensor& t) {
  return t.clone().contiguous().requires_grad_(true);
}

void Reference::step(const Data& d, double lr) {
  for (at::Tensor* t : {&p.ln_w, &p.ln_b, &p.w1, &p.w2})
    t->mutable_grad() = at::Tensor();
  auto h = at::layer_norm(d.x, {d.x.size(-1)}, p.ln_w, p.ln_b);
  auto a = at::gelu(at::matmul(h, p.w1.t()));
  auto out = d.x + at::matmul(a, p.w2.t());
  auto err = out - d.target;
  auto l = (err * err).sum() / double(d.x.numel());
  l.backward();
  loss = l.item<double>();
  at::NoGradGuard no_grad;
  grads = FullParams{p.ln_w.grad().clone(), p.ln_b.grad().clone(),
                     p.w1.grad().clone(), p.w2.grad().clone()};
  p.ln_w.sub_(grads.ln_w * lr);
  p.ln_b.sub_(grads.ln_b * lr);
  p.w1.sub_(grads.w1 * lr);
  p.w2.sub_(grads.w2 * lr);
}

spmd::checker::TypecheckOptions checker_options(const Config& c) {
  spmd::checker::TypecheckOptions o;
  if (!c.sequence_parallel && tp_layout().global) {
    o.local = false;
    o.local_axes = std::vector<std::string>{"dp"};
  }
  return o;
}

// A weight's type on tp for a shard dim of TpLayout (-1: whole, I).
static spmd::PerAxisType on_tp(int64_t dim) { return dim < 0 ? I : S(dim); }

void assert_types_tp(const LocalParams& p, const at::Tensor& x,
                     const at::Tensor& target) {
  const TpLayout layout = tp_layout();
  spmd::assert_type(x, {dp = V, tp = I});
  spmd::assert_type(target, {dp = V, tp = I});
  spmd::assert_type(p.ln_w, {dp = R, tp = I});
  spmd::assert_type(p.ln_b, {dp = R, tp = I});
  spmd::assert_type(p.w1, {dp = R, tp = on_tp(layout.w1_dim)});
  spmd::assert_type(p.w2, {dp = R, tp = on_tp(layout.w2_dim)});
}

void assert_types_sp(const LocalParams& p, const at::Tensor& x,
                     const at::Tensor& target) {
  spmd::assert_type(x, {dp = V, tp = S(0)});
  spmd::assert_type(target, {dp = V, tp = S(0)});
  spmd::assert_type(p.ln_w, {dp = R, tp = R});
  spmd::assert_type(p.ln_b, {dp = R, tp = R});
  spmd::assert_type(p.w1, {dp = R, tp = S(0)});
  spmd::assert_type(p.w2, {dp = R, tp = S(1)});
}

}  // namespace tp_example
