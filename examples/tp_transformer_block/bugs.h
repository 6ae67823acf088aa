// bugs.h - single-point mistakes switched into the real tp block (issue 11),
// besides the whole-file variants of examples/bugs/.
//
//   -DTP_BLOCK_BUG=TP_BLOCK_BUG_<name>  compiles exactly that mistake into
//                                       tensor_parallel.cpp or
//                                       sequence_parallel.cpp, at the line
//                                       marked "// BUG(<name>)"; the plugin
//                                       rejects it there in global mode
//                                       (test/examples/CMakeLists.txt).
// Without it every switch is off and the sources are the clean example (the
// mistake is compiled out by the preprocessor; the build never sees it).
#ifndef SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_BUGS_H
#define SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_BUGS_H

#define TP_BLOCK_BUG_none 0
// tensor_parallel.cpp: the residual x (duplicated, I) added to the
// row-parallel partial product before the all_reduce, as a row-parallel
// bias would be: every tp rank adds it, so the sum holds it tp times.
#define TP_BLOCK_BUG_residual_before_reduce 1
// tensor_parallel.cpp: gelu applied to the pending sum before the all_reduce.
#define TP_BLOCK_BUG_gelu_on_partial 2
// sequence_parallel.cpp: the sequence all_gather along the last dim of an
// activation sharded on dim 0 (the sequence).
#define TP_BLOCK_BUG_gather_wrong_dim 3
// sequence_parallel.cpp: all_reduce of the sequence-sharded activation where
// an all_gather was needed (a shard is not a pending sum).
#define TP_BLOCK_BUG_all_reduce_not_gather 4
// tensor_parallel.cpp: the all_reduce of the row-parallel product forgotten
// (Megatron's g): each tp rank adds only its own term of the sum to the
// residual. Written as one mistake since global mode infers the pending sum
// (no hand-written reinterpret marks it any more).
#define TP_BLOCK_BUG_missing_all_reduce 5

#ifndef TP_BLOCK_BUG
#define TP_BLOCK_BUG TP_BLOCK_BUG_none
#endif

/// Whether mistake `name` is compiled in (a preprocessor constant).
#define TP_BLOCK_BUG_IS(name) (TP_BLOCK_BUG == TP_BLOCK_BUG_##name)

#endif  // SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_BUGS_H
