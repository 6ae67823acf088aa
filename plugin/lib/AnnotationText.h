//===- AnnotationText.h - the text form of [[spmd::type]] -------*- C++ -*-===//
//
// SPMD_TYPE(dp = V, tp = S(0)) expands to [[spmd::type("dp = V, tp = S(0)")]]
// when the plugin is loaded, so that Clang reads one string literal instead
// of one overloaded, constant-evaluated `axis = type` call per entry
// (docs/plugin.md, "What the annotations cost"). readTypeText reads that text
// into the same entries as the expression form.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_ANNOTATIONTEXT_H
#define SPMD_PLUGIN_ANNOTATIONTEXT_H

#include "spmd/plugin/Annotations.h"

#include "clang/AST/Expr.h"
#include "clang/Sema/Sema.h"
#include "llvm/ADT/SmallVector.h"

namespace spmd::plugin {

/// What reading an annotation's arguments came to.
enum class ReadResult {
  Read,    ///< every argument read
  Invalid, ///< at least one bad argument, each reported as an error
  Ignored, ///< depends on a template parameter (reported as a warning)
};

/// Reads the text form of [[spmd::type]]'s arguments, \p Text, with the
/// grammar of the expression form:
///
///   entries := entry (',' entry)*
///   entry := axis '=' type | rank '(' int ')' | spec '(' [dims] ')'
///   type := R | I | V | P | S '(' int ')' | <constexpr PerAxisType>
///           | '(' type ')'
///   int := integer expression: <literal> | <constexpr integer> | '(' int ')'
///          | ('-' | '+') int | int ('+' | '-' | '*' | '/' | '%') int
///   dims := dim (',' dim)*
///   dim := None | axis | '{' axis (',' axis)* '}'
///
/// R, I, V, P, S, rank, spec and None may be written with `spmd::` (or
/// `spmd::types::`); an axis or a constant is a name, qualified or not,
/// looked up from the scope of the declaration being annotated, as C++ would
/// look it up in the expression form. Axis entries (and the S(i) entries of
/// a spec, spec §12.1) go to \p Parsed, spmd::rank(n) to \p A.Rank, the
/// spec's length and location to \p SpecRank and \p SpecLoc. Every bad entry
/// is reported where it is written (the macro's own argument tokens when
/// they can be matched, else the SPMD_TYPE invocation).
ReadResult readTypeText(clang::Sema &S, const clang::StringLiteral *Text,
                        TypeAnnotation &A,
                        llvm::SmallVectorImpl<AxisEntry> &Parsed, int &SpecRank,
                        clang::SourceLocation &SpecLoc);

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_ANNOTATIONTEXT_H
