//===- Divergence.h - collectives reached by some ranks only ----*- C++ -*-===//
//
// A collective over a mesh axis must be called by every rank of that axis,
// the same number of times, in the same order; a rank that skips one leaves
// the others waiting (a hang, or a timeout naming nobody). This check finds
// collectives that are control dependent on a branch whose condition may
// differ across the ranks of the collective's axis (docs/type-system.md,
// "Communication safety"): a condition that reads this rank's index on the
// axis, the global rank, or the data of a tensor that is V or P there.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_DIVERGENCE_H
#define SPMD_PLUGIN_LIB_DIVERGENCE_H

#include "Transfer.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace spmd::plugin {

/// Reports each collective of \p Cfg (the body of \p FD, analysed to a fixed
/// point by \p T) that runs under a branch that may go different ways on the
/// ranks of its axis (ProblemCode::DivergentCollective). \p EdgeTaken says
/// whether an edge can be taken at all (a layout flag's dead edge cannot);
/// \p OneRank(B, A): axis A has one rank on every path to block B (a size-1
/// guard), where nothing can diverge.
void checkDivergentCollectives(
    TUContext &TU, const clang::FunctionDecl *FD, const clang::CFG &Cfg,
    const Transfer &T, ProblemHandler &Handler,
    llvm::function_ref<bool(const clang::CFGBlock &, const clang::CFGBlock &)>
        EdgeTaken,
    llvm::function_ref<bool(const clang::CFGBlock &, AxisId)> OneRank);

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_DIVERGENCE_H
