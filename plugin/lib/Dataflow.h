//===- Dataflow.h - the per-function driver of the SPMD analysis -*- C++
//-*-===//
//
// Builds the function's CFG, runs the transfer functions to a fixed point
// with Clang's ForwardDataflowWorklist (reverse post-order priority), then
// walks the blocks once more with the converged facts, reporting problems.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_DATAFLOW_H
#define SPMD_PLUGIN_LIB_DATAFLOW_H

#include "Problems.h"
#include "Transfer.h"

namespace spmd::plugin {

/// Visits of one block after which a fact still changing there is widened to
/// Top (unknown): loops converge in a bounded number of rounds whatever they
/// carry, and everything else in the function is still checked.
inline constexpr unsigned WidenAfterVisits = 8;

/// Analyses the body of \p FD, reporting to \p Handler.
void analyzeFunction(TUContext &TU, const clang::FunctionDecl *FD,
                     ProblemHandler &Handler);

/// Analyses every relevant function body of the translation unit (defined in
/// Checker.cpp, next to the consumer that calls it).
void analyzeTranslationUnit(TUContext &TU, ProblemHandler &Handler);

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_DATAFLOW_H
