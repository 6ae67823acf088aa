// The fused QKV split in global mode (docs/plugin.md "Annotating an existing
// engine"). A column-parallel fused projection stored Megatron-style
// ([q; k; v] rows, each split on tp) gives each rank [q_r | k_r | v_r] on its
// last dim: splitting that slice is a per-rank operation. In global mode
// `chunk(3, -1)` of the S(-1) projection is a split of the whole sharded dim
// (the global q would be rank 0's slice), so it is rejected; the idiom is an
// SPMD_LOCAL helper that chunks and returns S(-1). A weight stored head by
// head (examples/gpt) needs no helper: after a view that puts the heads on
// their own dim (restated with assert_type), the chunk is on a dim tp does
// not shard.
// RUN-PLUGIN: -Xclang -verify -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict-shards
#include "Inputs/prelude.h"

#include <vector>

SPMD_TYPE(tp = S(-1), spmd::rank(3))
Tensor attention(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& q,
                 SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& k,
                 SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& v);

// --- the mistake: chunk on the sharded dim in global code ------------------

SPMD_TYPE(tp = S(-1), spmd::rank(3))
Tensor split_globally(SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& x,
                      SPMD_TYPE(tp = S(0)) const Tensor& w_qkv) { // expected-note {{type S(2) on axis 'tp' declared here}}
  auto parts = at::linear(x, w_qkv).chunk(3, -1); // expected-error {{No valid sharding strategy for at::linear(x, w_qkv).chunk on axis tp: it splits along dim 2, which tp shards (S(2)}} expected-note {{or index another dim; if each rank's shard holds its own pieces (a fused QKV or gate/up weight sharded per piece), split it in a local region instead: a helper marked SPMD_LOCAL}}
  // The pieces' dim is lost with the rejected op: reported once, at the op
  // (no follow-on strict-shards warning at the uses).
  return attention(parts[0], parts[1], parts[2]);
}

// --- the idiom: a local helper ----------------------------------------------

/// Each rank's q, k and v from its slice of the fused projection.
SPMD_LOCAL
SPMD_TYPE(tp = S(-1), spmd::rank(3))
std::vector<Tensor> split_qkv(SPMD_TYPE(tp = S(-1)) const Tensor& qkv) {
  return qkv.chunk(3, -1);
}

SPMD_TYPE(tp = S(-1), spmd::rank(3))
Tensor split_locally(SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& x,
                     SPMD_TYPE(tp = S(0)) const Tensor& w_qkv) {
  auto parts = split_qkv(at::linear(x, w_qkv));
  return attention(parts[0], parts[1], parts[2]);
}

// --- a weight stored head by head: view, restate, chunk off the shard -------

SPMD_TYPE(tp = S(2), spmd::rank(4))
Tensor heads_major(SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& x,
                   SPMD_TYPE(tp = S(0)) const Tensor& w_qkv, int64_t s,
                   int64_t b, int64_t local_heads, int64_t head_dim) {
  auto fused = spmd::assert_type(
      at::linear(x, w_qkv).view({s, b, local_heads, 3 * head_dim}),
      {tp = S(2)});
  auto parts = fused.chunk(3, -1); // dim 3: not the shard
  return parts[0] * parts[1] + parts[2];
}
