// bugs.h - the classic tensor-parallel mistakes of issue 16, each a switch at
// one place of the GPT (marked "// BUG" there).
//
//   -DGPT_BUG=GPT_BUG_<name>  compiles exactly that mistake in (the plugin
//                             rejects it: test/examples/CMakeLists.txt);
//   -DGPT_BUGS_AT_RUNTIME      every switch reads gpt::active_bug() instead,
//                             so that one build without the plugin trains
//                             each variant (to show that it trains wrongly).
// Without either, every switch is the constant `false` and the dead branch
// is not part of the program (Clang's CFG drops it; the plugin never sees
// it), so the clean build is checked exactly as written.
#ifndef SPMD_EXAMPLES_GPT_BUGS_H
#define SPMD_EXAMPLES_GPT_BUGS_H

#define GPT_BUG_none 0
#define GPT_BUG_missing_copy_to_tp 1  // all_gather to I before sharded weights
#define GPT_BUG_double_reduce 2       // all_reduce, then reduce_scatter again
#define GPT_BUG_bias_before_reduce \
  3  // row-parallel bias inside the partial sum
#define GPT_BUG_unsynced_norm_grads \
  4                                 // SP norm/bias gradients not summed over tp
#define GPT_BUG_ce_sharded_vocab 5  // log-softmax over this rank's vocab slice
#define GPT_BUG_gather_wrong_dim 6  // all_gather on the batch dim
#define GPT_BUG_missing_dp_reduce 7      // sharded gradients not summed over dp
#define GPT_BUG_grad_norm_tp_times 8     // replicated squares summed over tp
#define GPT_BUG_embedding_not_reduced 9  // vocab-parallel lookup never summed
#define GPT_BUG_wrong_layer_kind 10      // second MLP layer column-parallel
#define GPT_BUG_embedding_not_masked 11  // out-of-shard rows not zeroed

#ifndef GPT_BUG
#define GPT_BUG GPT_BUG_none
#endif

/// Whether bug `name` is compiled in (a preprocessor constant).
#define GPT_BUG_IS(name) (GPT_BUG == GPT_BUG_##name)

namespace gpt {
/// The bug the runtime-switched build trains with (GPT_BUG_none: none).
int active_bug();
/// Selects it; throws std::invalid_argument in a build without
/// GPT_BUGS_AT_RUNTIME (its bugs are compiled out) unless bug is none.
void set_active_bug(int bug);
/// GPT_BUG_<name> for a name (not wrong_layer_kind, which changes a member's
/// type and so cannot be switched at run time), or -1.
int bug_by_name(const char* name);
}  // namespace gpt

#if defined(GPT_BUGS_AT_RUNTIME)
#define GPT_BUG_ON(name) (::gpt::active_bug() == GPT_BUG_##name)
#else
#define GPT_BUG_ON(name) GPT_BUG_IS(name)
#endif

#endif  // SPMD_EXAMPLES_GPT_BUGS_H
