// The shapes of the engine as first written (ScaleLLM's own idioms), before
// the workarounds the other files use. Each one is a false alarm or a strict
// unknown of today's plugin, recorded in mutants.py (EXPECTED_FALSE_ALARMS,
// EXPECTED_UNKNOWNS): when the plugin learns the idiom, the harness says so.
#include "engine2.h"

namespace llm {
namespace F = torch::nn::functional;

// (1) The row-parallel input split in place, as ScaleLLM writes it:
// `input = scatter(input)` on the parameter whose layout type is R.
// Learned: a by-value parameter is rebound by an assignment
// (test/plugin/reassigned_parameters.cpp); it used to be an error that
// cascaded into the linear and the reduce.
class RowParallelFirstTryImpl : public torch::nn::Module {
 public:
  RowParallelFirstTryImpl(bool input_is_parallelized, const ParallelArgs& args)
      : input_is_parallelized_(input_is_parallelized), args_(args) {}

  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = S(-1), spmd::rank(2))
                            SPMD_UNLESS(input_is_parallelized_, tp = R)
                                torch::Tensor input) {
    if (!input_is_parallelized_) {
      input = scatter_to_tp_region(input, args_);
    }
    auto output = F::linear(input, weight_);
    if (args_.world_size() > 1) {
      output = reduce_from_tp_region(output, args_);
    }
    return output;
  }

 private:
  SPMD_TYPE(tp = S(1), spmd::rank(2)) torch::Tensor weight_;
  bool input_is_parallelized_;
  ParallelArgs args_;
};

// (2) The masked vocab-parallel lookup handed to the reduce wrapper, whose
// parameter says P. Learned: rows zeroed outside the rank's shard are the
// pending sum of the lookup, P (test/plugin/global_masked_lookup_partial.cpp,
// docs/type-system.md "Masked lookups are P"); they used to stay V, which a
// P parameter does not take.
SPMD_TYPE(tp = R, spmd::rank(2))
torch::Tensor vocab_lookup_first_try(
    SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor input,
    SPMD_TYPE(tp = S(0), spmd::rank(2)) torch::Tensor weight,
    int64_t start_index, int64_t end_index, const ParallelArgs& args) {
  auto masked_input = input - start_index;
  const auto input_mask = (input < start_index) | (input >= end_index);
  masked_input.masked_fill_(input_mask, 0);
  auto output = F::embedding(masked_input, weight);
  output.masked_fill_(input_mask.unsqueeze(-1), 0);
  return reduce_from_tp_region(output, args);
}

// (3) A parameter reassigned with another rank (`cos = cos.unsqueeze(1)`).
// Learned with (1): the rank follows the assignment; the declared rank(2)
// used to be kept, so the broadcast against the heads looked like one of
// unknown size.
SPMD_TYPE(tp = S(1), spmd::rank(3))
torch::Tensor rotary_first_try(
    SPMD_TYPE(tp = S(1), spmd::rank(3)) torch::Tensor x,
    SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor cos,
    SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor sin) {
  cos = cos.unsqueeze(1);
  sin = sin.unsqueeze(1);
  auto halves = x.chunk(2, -1);
  return torch::cat({halves[0] * cos - halves[1] * sin,
                     halves[1] * cos + halves[0] * sin}, -1);
}

// (4) Structured bindings of the QKV projection, reassigned with the
// per-head views. Learned: an assignment to a binding updates its type and
// rank (test/plugin/reassigned_bindings.cpp); it used to be ignored, so the
// transpose(-2, -1) of k looked like a move of the shard into the
// contraction dim.
SPMD_TYPE(tp = S(0), spmd::rank(3))
torch::Tensor scores_first_try(QKVParallelLinear& qkv_proj,
                               SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor x,
                               int64_t heads, int64_t head_dim) {
  const int64_t n_tokens = x.size(0);
  auto [q, k, v] = qkv_proj(x);
  q = spmd::assert_type(q.view({n_tokens, heads, head_dim}), {tp = S(1)});
  k = spmd::assert_type(k.view({n_tokens, heads, head_dim}), {tp = S(1)});
  return torch::matmul(q.transpose(0, 1), k.transpose(0, 1).transpose(-2, -1));
}

// (5) GQA's kv repeat written inline (unsqueeze, expand, reshape) with an
// assert_type after the reshape, as the docs say for a view. Learned: an
// expand whose sizes are not constants keeps the shard
// (test/plugin/global_expand_variable_sizes.cpp); it used to be lost one op
// before the assert_type.
SPMD_TYPE(tp = S(1), spmd::rank(3))
torch::Tensor repeat_kv_first_try(
    SPMD_TYPE(tp = S(1), spmd::rank(3)) torch::Tensor k, int64_t n_tokens,
    int64_t kv_heads, int64_t n_rep, int64_t head_dim) {
  return spmd::assert_type(
      k.unsqueeze(2)
          .expand({n_tokens, kv_heads, n_rep, head_dim})
          .reshape({n_tokens, kv_heads * n_rep, head_dim}),
      {tp = S(1)});
}

// (6) Each replica's loss, typed dp = V, summed by all_reduce(P -> R)
// (the implicit V -> P). Learned: a V declared V (not S(i)) reduced as P
// needs no shard dim (test/plugin/strict_declared_v_reduce.cpp); strict
// global mode used to ask for it.
SPMD_MESH(dp, tp)
SPMD_TYPE(dp = R, tp = R)
torch::Tensor average_loss_first_try(
    SPMD_TYPE(dp = V, tp = R) torch::Tensor local_loss,
    const ParallelArgs& args) {
  return spmd::all_reduce(local_loss, dp, P, R) / static_cast<double>(args.dp_size());
}

}  // namespace llm

namespace llm {

// (7) ScaleLLM's reduce is in place (`process_group->allreduce(input);
// return input;`); with the runtime's in-place all_reduce the result is
// dropped and `input` returned. Learned: an options variable set by constant
// field assignments before the call is read, and an in-place all_reduce
// updates its input (test/plugin/collective_options_variables.cpp); the
// checker used to keep `input` a pending sum.
SPMD_TYPE(tp = R)
torch::Tensor reduce_in_place_first_try(SPMD_TYPE(tp = P) torch::Tensor input,
                                        const ParallelArgs& args) {
  if (args.world_size() == 1) {
    return input;
  }
  spmd::CollectiveOptions options;
  options.inplace = true;
  spmd::all_reduce(input, tp, P, R, options);
  return input;
}

}  // namespace llm

namespace llm {

// (8) The flash-attention kernel declared as its library ships it, without
// SPMD types: the call checks nothing and `out` is unknown after it; strict
// mode reports the call (opaque-call). kernels.cpp annotates the
// declaration.
void flash_attn_first_try(const torch::Tensor& q, const torch::Tensor& k,
                          const torch::Tensor& v, torch::Tensor& out,
                          float scale);

SPMD_TYPE(tp = S(1), spmd::rank(3))
torch::Tensor attention_first_try(
    SPMD_TYPE(tp = S(1), spmd::rank(3)) const torch::Tensor& q,
    SPMD_TYPE(tp = S(1), spmd::rank(3)) const torch::Tensor& k,
    SPMD_TYPE(tp = S(1), spmd::rank(3)) const torch::Tensor& v, float scale) {
  auto out = torch::zeros_like(q);
  flash_attn_first_try(q, k, v, out, scale);
  return out;
}

}  // namespace llm
