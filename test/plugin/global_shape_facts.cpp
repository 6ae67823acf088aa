// Global mode: what the code shows about ranks and sizes keeps a shard dim
// known. cat / stack take inputs of one rank, so one input's rank gives the
// others'. A reduction with keepdim leaves its reduced dims of size 1,
// unsqueeze inserts one, and pointwise ops keep them (broadcasting from the
// end): a replicated operand of size 1 on the sharded dim broadcasts along
// it, so the shard is kept. A collective other than all_reduce / reinterpret
// forgets the sizes. Without these facts the dim is lost, which strict mode
// reports where it matters (and an error on the shard goes unseen).
// RUN-PLUGIN: -Xclang -verify=strict,both -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=both -fplugin-arg-spmd-check-global
#include "Inputs/prelude.h"

// --- cat / stack: one rank for every input ----------------------------------

// The KV cache: the new keys say S(0) without a rank; the cache gives it.
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor append(SPMD_TYPE(tp = S(0), spmd::rank(3)) const Tensor& keys,
              SPMD_TYPE(tp = S(0)) const Tensor& k) {
  auto all = torch::cat({keys, k}, /*dim=*/1);
  return all.narrow(1, 0, 4);
}

// A shard counted from the end resolves with the other input's rank.
SPMD_TYPE(tp = S(2), spmd::rank(3))
Tensor from_end(SPMD_TYPE(tp = S(2), spmd::rank(3)) const Tensor& a,
                SPMD_TYPE(tp = S(-1)) const Tensor& b) {
  return torch::cat({a, b}, 0);
}

SPMD_TYPE(tp = S(3), spmd::rank(4))
Tensor stacked(SPMD_TYPE(tp = S(-1)) const Tensor& a,
               SPMD_TYPE(tp = S(2), spmd::rank(3)) const Tensor& b) {
  return torch::stack({a, b}, 0);
}

// ... and then a shard on another dim is seen.
Tensor mixed(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& a, // both-note {{type S(0) on axis 'tp' declared here}}
             SPMD_TYPE(tp = S(-1)) const Tensor& b) { // both-note {{type S(-1) on axis 'tp' declared here}}
  return torch::cat({a, b}, 0); // both-error {{args[0] is sharded on dim 0 but args[1] on dim 1}} both-note {{suggestion: shard every input on the same dim}}
}

// No input with a rank: still unknown.
SPMD_TYPE(tp = S(0))
Tensor rankless(SPMD_TYPE(tp = S(-1)) const Tensor& a,
                SPMD_TYPE(tp = S(-1)) const Tensor& b) {
  auto c = torch::cat({a, b}, 0); // strict-note {{type V on axis 'tp' inferred from this operation}}
  return c; // strict-warning {{'c' is sharded on axis 'tp' on an unknown dim (global mode): args[0] is S(-1) but its rank is unknown, so cat cannot place the shard}}
}

// --- size-1 dims ------------------------------------------------------------

// The vocab-parallel softmax's shift: the global max with keepdim is [n, 1],
// broadcast along the sharded vocabulary.
SPMD_TYPE(tp = S(-1), spmd::rank(2))
Tensor shift(SPMD_TYPE(tp = S(-1), spmd::rank(2)) const Tensor& logits,
             SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& all_max) {
  Tensor global_max, unused;
  std::tie(global_max, unused) = all_max.max(-1, /*keepdim=*/true);
  return logits - global_max;
}

SPMD_TYPE(tp = S(-1), spmd::rank(2))
Tensor kept(SPMD_TYPE(tp = S(-1), spmd::rank(2)) const Tensor& logits,
            SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& full) {
  auto m = std::get<0>(full.max(-1, /*keepdim=*/true)).detach();
  auto s = (full.sum({-1}, /*keepdim=*/true) + 1).exp(); // pointwise keeps it
  auto u = full.mean(-1).unsqueeze(-1);                   // unsqueeze inserts one
  return (logits - m) * s / u;
}

// An operand of size 1 from the front (unsqueeze(0)) broadcasts a rank-2
// shard of dim 0.
SPMD_TYPE(tp = S(0), spmd::rank(2))
Tensor row_scale(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x,
                 SPMD_TYPE(tp = R, spmd::rank(1)) const Tensor& w) {
  return x * w.unsqueeze(0);
}

// Without keepdim, or a replicated operand whose size is unknown: broadcast
// or not, the dim is lost.
SPMD_TYPE(tp = S(-1), spmd::rank(2))
Tensor not_kept(SPMD_TYPE(tp = S(-1), spmd::rank(2)) const Tensor& logits,
                SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& full) {
  auto d = logits - full; // strict-note {{type V on axis 'tp' inferred from this operation}}
  return d; // strict-warning {{'d' is sharded on axis 'tp' on an unknown dim (global mode): args[1] dim 1 has unknown size: broadcast or not}}
}

SPMD_TYPE(tp = S(0), spmd::rank(2))
Tensor unsqueezed_elsewhere(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x,
                            SPMD_TYPE(tp = R, spmd::rank(1)) const Tensor& w) {
  auto y = x * w.unsqueeze(1); // strict-note {{type V on axis 'tp' inferred from this operation}}
  return y; // strict-warning {{'y' is sharded on axis 'tp' on an unknown dim (global mode): args[1] dim 0 has unknown size: broadcast or not}}
}

// A collective other than all_reduce / reinterpret forgets the sizes (a
// gather lengthens a dim); an all_reduce keeps them.
SPMD_TYPE(tp = S(0), spmd::rank(2))
Tensor gathered(SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& x,
                SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& y) {
  auto all = spmd::all_gather(x.sum(0, /*keepdim=*/true), tp, S(1), R);
  auto d = y * all; // strict-note {{type V on axis 'tp' inferred from this operation}}
  return d; // strict-warning {{'d' is sharded on axis 'tp' on an unknown dim (global mode): args[1] dim 0 has unknown size: broadcast or not}}
}

SPMD_TYPE(tp = S(0), spmd::rank(2))
Tensor reduced(SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& x,
               SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& y) {
  auto total = spmd::all_reduce(x.sum({0, 1}, /*keepdim=*/true), tp, P, R);
  return y * total;
}

// --- one operand sharded from the end, a rule counting from the end ---------

// Any rank that holds the dims gives the same answer counted from the end: a
// pointwise op with scalars, softmax along a negative dim, a reduction over
// negative dims keep (or reject) the shard without a rank.
void vocab_softmax(SPMD_TYPE(tp = S(-1)) const Tensor& logits, double t) { // both-note {{type S(-1) on axis 'tp' declared here}}
  auto p = torch::softmax(logits / t, -1); // both-note {{suggestion: compute it across shards}} both-error {{No valid sharding strategy for torch::softmax on axis tp: it works along dim 0, which tp shards (S(0)): every rank sees only its shard of that dim (args[0]'s rank is unknown: dims are numbered as for a rank-1 tensor, dim d is d - 1 counted from the end)}}
}

SPMD_TYPE(tp = S(-2))
Tensor other_dim(SPMD_TYPE(tp = S(-2)) const Tensor& x) {
  return torch::softmax(x * 2, -1).sum({-1}, /*keepdim=*/true);
}

SPMD_TYPE(tp = S(-1))
Tensor reduced_before(SPMD_TYPE(tp = S(-2)) const Tensor& x) {
  return x.sum(-1);
}

SPMD_TYPE(tp = R)
Tensor summed_shard(SPMD_TYPE(tp = S(-1)) const Tensor& x) {
  return spmd::all_reduce((x * 2).sum(-1), tp, P, R);
}

// A rule with a dim counted from the front depends on the rank: unknown.
SPMD_TYPE(tp = S(-1))
Tensor from_front(SPMD_TYPE(tp = S(-1)) const Tensor& x) {
  auto y = x.transpose(0, 1); // strict-note 2 {{type V on axis 'tp' inferred from this operation}}
  // The sum needs the dim, and so does the declared return.
  return y.sum(-1); // strict-warning {{'y' is sharded on axis 'tp' on an unknown dim (global mode): args[0] is S(-1) but its rank is unknown, so transpose cannot place the shard}} strict-warning {{this value is sharded on axis 'tp' on an unknown dim}}
}
