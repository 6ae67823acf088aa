//===- Layouts.h - layers whose types depend on a constructor flag -*- C++ -*-//
//
// Tensor-parallel layers choose their layout with a bool member set at
// construction (`gather_output_`, `input_is_parallel_`, `reduce_results_`).
// [[spmd::when(flag, ...)]] / [[spmd::unless(flag, ...)]] on a method or its
// parameters give the types of each layout. A layout is a choice of the
// method's flags: its body is analysed once per layout (branches on a flag
// pruned to the layout's side), and a call is typed with the layout its
// instance was constructed with (the constant stored in the flag by the
// constructor, read from the construction of the member or variable).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_LAYOUTS_H
#define SPMD_PLUGIN_LIB_LAYOUTS_H

#include "spmd/plugin/Annotations.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

namespace spmd::plugin {

class TypeClassifier;

/// The bool data members a method's [[spmd::when]] / [[spmd::unless]] name.
struct LayoutFlags {
  llvm::SmallVector<const clang::FieldDecl *, 4> Flags;
  /// Index of \p F in Flags, or -1.
  int indexOf(const clang::FieldDecl *F) const;
};

/// A (partial) choice of a method's flags: bit i of Known says whether
/// Flags[i]'s value is known, bit i of Values is that value.
struct Layout {
  uint32_t Known = 0, Values = 0;
  /// Per flag: where its value was decided (a constructor argument); for an
  /// unknown flag, the one construction's argument that is not a constant
  /// (else invalid).
  std::array<clang::SourceLocation, 4> Where;
  bool complete(unsigned N) const {
    return Known == (N >= 32 ? ~0u : (1u << N) - 1);
  }
};

/// Layout-dependent declarations of one translation unit.
class LayoutTable {
public:
  /// Most flags per method: its body is analysed 2^N times.
  static constexpr unsigned MaxFlags = 4;

  LayoutTable(clang::ASTContext &Ctx, const AnnotationTable &Table,
              TypeClassifier &Types)
      : Ctx(Ctx), Table(Table), Types(Types) {}

  /// The flags of \p FD (empty for most functions); names that do not
  /// resolve are skipped (validate() reports them).
  const LayoutFlags &flagsOf(const clang::FunctionDecl *FD);

  /// The declared type of parameter \p Param (-1: the result) of \p FD in
  /// layout \p L: the [[spmd::type]] with the entries of every when/unless
  /// whose flag has the value, on the axes they list. With unknown flags,
  /// the entries on which all completions of \p L agree; \p Partial is set
  /// when some axis was dropped for that reason.
  const TypeAnnotation *typeIn(const clang::FunctionDecl *FD, int Param,
                               const Layout &L, bool *Partial = nullptr);

  /// The layout of the instance a call of \p FD runs on: \p Instance is the
  /// object expression (`this`, a member, a local, through a module
  /// holder's `->`); inside a method of the same class analysed in layout
  /// \p Current of \p CurrentFD, `this` has that layout.
  Layout layoutOfInstance(const clang::FunctionDecl *FD,
                          const clang::Expr *Instance,
                          const clang::FunctionDecl *CurrentFD,
                          const Layout *Current);

  /// Where the value of a flag that parameter \p Param (-1: the result) of
  /// \p FD depends on was decided in \p L, or an invalid location; with
  /// \p Flag and \p Value, which flag and its value there.
  clang::SourceLocation whereDecided(const clang::FunctionDecl *FD, int Param,
                                     const Layout &L,
                                     const clang::FieldDecl **Flag = nullptr,
                                     bool *Value = nullptr);

  /// The data member or local variable a call's object \p Instance denotes
  /// (through a module holder's `->`), or null (`this`, a temporary).
  const clang::ValueDecl *instanceDecl(const clang::Expr *Instance) const;

  /// The value of the condition \p Cond in layout \p L of \p FD (`flag_`,
  /// `!flag_`, `this->flag_ == false`), or nullopt.
  std::optional<bool> conditionIn(const clang::FunctionDecl *FD,
                                  const clang::Expr *Cond, const Layout &L);

  /// Errors for when/unless that name no bool member of a method's class,
  /// sit on a non-method, or list too many flags; errors for an override
  /// whose own [[spmd::type]] differs from the overridden method's.
  void validate(clang::DiagnosticsEngine &DE);

private:
  const clang::FieldDecl *resolve(const clang::FunctionDecl *FD,
                                  llvm::StringRef Name) const;
  const TypeAnnotation *typeInComplete(const clang::FunctionDecl *FD, int Param,
                                       uint32_t Values);
  std::optional<bool> flagAtConstruction(const clang::Expr *Site,
                                         const clang::CXXRecordDecl *Impl,
                                         const clang::FieldDecl *Flag,
                                         clang::SourceLocation &Where);
  void constructionSites(const clang::FieldDecl *Member,
                         llvm::SmallVectorImpl<const clang::Expr *> &Out);
  // The steps of validate().
  void validateWhenPlacement(clang::DiagnosticsEngine &DE);
  void validateFlagCounts(clang::DiagnosticsEngine &DE);
  void validateOverrides(clang::DiagnosticsEngine &DE);
  void warnUntracked(clang::DiagnosticsEngine &DE);
  void warnRedeclarations(clang::DiagnosticsEngine &DE);

  clang::ASTContext &Ctx;
  const AnnotationTable &Table;
  TypeClassifier &Types;
  llvm::DenseMap<const clang::FunctionDecl *, LayoutFlags> Flags;
  std::map<std::tuple<const void *, int, uint32_t, uint32_t>,
           std::unique_ptr<TypeAnnotation>>
      Specialized;
};

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_LAYOUTS_H
