//===- AttributeMessages.h - texts of the annotation errors -----*- C++ -*-===//
//
// The errors about a bad [[spmd::type]] argument, shared by its two readers:
// the expression form (Attributes.cpp) and the text form that SPMD_TYPE
// produces (AnnotationText.cpp), so that a mistake reads the same in both.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_ATTRIBUTEMESSAGES_H
#define SPMD_PLUGIN_ATTRIBUTEMESSAGES_H

#include "clang/Basic/Diagnostic.h"
#include "clang/Sema/Sema.h"

namespace spmd::plugin {

/// The ID of a diagnostic with the format \p Fmt at level \p L.
inline unsigned customDiag(clang::Sema &S, clang::DiagnosticsEngine::Level L,
                           const char *Fmt) {
  return S.getDiagnostics().getDiagnosticIDs()->getCustomDiagID(
      static_cast<clang::DiagnosticIDs::Level>(L), Fmt);
}

namespace msg {
/// %0: the attribute.
inline constexpr const char EntryForm[] =
    "argument of '%0' must be 'axis = type' where 'axis' is an spmd::Axis "
    "constant (SPMD_AXIS) and 'type' is R, I, V, P or S(k), e.g. 'dp = R'";
/// %0: the identifier written alone.
inline constexpr const char LoneAxis[] =
    "argument of 'spmd::type' must be 'axis = type', e.g. '%0 = R'";
/// %0: the attribute.
inline constexpr const char AxisNotConstant[] =
    "axis in '%0' must be a constant expression naming an spmd::Axis "
    "(declare it with SPMD_AXIS(name))";
/// %0: the axis, %1: the attribute.
inline constexpr const char TypeNotConstant[] =
    "type of axis '%0' in '%1' must be a constant expression: R, I, V, P or "
    "S(k)";
inline constexpr const char BadRank[] =
    "'spmd::rank' in 'spmd::type' must be a constant between 0 and 63, given "
    "once";
inline constexpr const char BadSpec[] =
    "'spmd::spec' in 'spmd::type' must be a constant expression whose "
    "entries are spmd::None, an spmd::Axis constant (SPMD_AXIS) or a tuple "
    "{dp, tp}";
inline constexpr const char SpecTwice[] =
    "'spmd::spec' given twice in 'spmd::type'";
/// %0: the attribute.
inline constexpr const char Dependent[] =
    "arguments of '%0' that depend on template parameters are not "
    "supported; the annotation is ignored";
} // namespace msg

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_ATTRIBUTEMESSAGES_H
