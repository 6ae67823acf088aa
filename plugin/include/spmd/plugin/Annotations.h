//===- Annotations.h - parsed [[spmd::...]] attributes ----------*- C++ -*-===//
//
// The SPMD attributes ([[spmd::type]], [[spmd::mesh]], [[spmd::op]],
// [[spmd::unchecked]]) are parsed by ParsedAttrInfo handlers registered by
// this library and stored here, in the checker's own table, instead of being
// attached to the AST: the AST that code generation sees is unchanged, so
// object files are identical with and without the plugin.
//
// Entries are keyed by the declaration's source location. Template
// instantiations (and the parameters and locals inside them) carry the
// locations of their patterns, so an annotation written in a template applies
// to every instantiation.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_ANNOTATIONS_H
#define SPMD_PLUGIN_ANNOTATIONS_H

#include "clang/AST/Decl.h"
#include "clang/Basic/SourceLocation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <spmd/annotations.h>
#include <spmd/core/propagation.h>
#include <spmd/core/tensor_type.h>

#include <optional>
#include <string>
#include <vector>

namespace spmd::plugin {

/// One `axis = type` entry of [[spmd::type(...)]].
struct AxisEntry {
  std::string Axis;                         ///< the axis name ("tp")
  PerAxisType Type;                         ///< as written (S(i) kept)
  const clang::VarDecl *AxisDecl = nullptr; ///< the spmd::Axis constant
  clang::SourceLocation Loc;                ///< the `axis = type` expression
};

/// A parsed [[spmd::type(...)]]: the declared SPMD type of a variable,
/// parameter, field or function result.
struct TypeAnnotation {
  llvm::SmallVector<AxisEntry, 4> Entries;
  clang::SourceLocation Loc; ///< the attribute
  /// The entry for \p Axis, or null.
  const AxisEntry *entry(llvm::StringRef Axis) const;
  /// "{dp: R, tp: S(0)}" as written.
  std::string str() const;
};

/// A parsed [[spmd::mesh(...)]]: the axes in scope in a function body.
struct MeshAnnotation {
  llvm::SmallVector<std::string, 4> Axes;
  clang::SourceLocation Loc;
};

/// A parsed [[spmd::when(flag, axis = type, ...)]] (Value = true) or
/// [[spmd::unless(flag, ...)]] (Value = false) on a method or one of its
/// parameters: for an instance whose bool data member `flag` has that value,
/// the listed axes have these types instead of the [[spmd::type]] ones.
struct WhenAnnotation {
  std::string Flag;            ///< the data member's name, resolved later
  bool Value = true;           ///< the flag's value the types apply to
  clang::SourceLocation FlagLoc;
  TypeAnnotation Type;         ///< the entries; Type.Loc is the attribute
};

/// The annotations of one translation unit.
class AnnotationTable {
public:
  /// The table of the translation unit that \p Ctx belongs to (created on
  /// first use).
  static AnnotationTable &get(const clang::ASTContext &Ctx);
  /// Drops the table of \p Ctx (call when the translation unit is done; a
  /// tool may reuse the address for the next one).
  static void release(const clang::ASTContext &Ctx);

  void setType(const clang::Decl *D, TypeAnnotation A);
  void setMesh(const clang::Decl *D, MeshAnnotation A);
  void setOpClass(const clang::Decl *D, core::OpClass C);
  void setUnchecked(const clang::Decl *D);
  void setAxisSize(const clang::Decl *D, std::string Axis);
  void addWhen(const clang::Decl *D, WhenAnnotation W);

  /// The declared type of a variable, parameter or field (for a parameter,
  /// the annotation may sit on any redeclaration of its function).
  const TypeAnnotation *typeOf(const clang::ValueDecl *D) const;
  /// The declared result type of a function (any redeclaration).
  const TypeAnnotation *resultOf(const clang::FunctionDecl *FD) const;
  /// The declared type of parameter \p I of \p FD (any redeclaration).
  const TypeAnnotation *paramOf(const clang::FunctionDecl *FD,
                                unsigned I) const;
  const MeshAnnotation *meshOf(const clang::FunctionDecl *FD) const;
  std::optional<core::OpClass> opClassOf(const clang::FunctionDecl *FD) const;
  /// [[spmd::op(kind)]] on a callable data member or local variable.
  std::optional<core::OpClass> opClassOfCallable(const clang::ValueDecl *D) const;
  bool isUnchecked(const clang::FunctionDecl *FD) const;
  /// The axis whose size \p FD returns ([[spmd::axis_size(axis)]]), or null.
  const std::string *axisSizeOf(const clang::FunctionDecl *FD) const;
  /// The [[spmd::when]] / [[spmd::unless]] annotations of \p FD's result
  /// (Param = -1) or parameter \p Param, from the first redeclaration (or
  /// overridden method) that has any.
  llvm::ArrayRef<WhenAnnotation> whensOf(const clang::FunctionDecl *FD,
                                         int Param) const;
  /// Every declaration that carries a [[spmd::when]] / [[spmd::unless]] or a
  /// [[spmd::type]], in parsing order (for the checks at the end of the
  /// translation unit).
  llvm::ArrayRef<const clang::Decl *> whenDecls() const { return WhenDecls; }
  llvm::ArrayRef<const clang::Decl *> typedDecls() const { return TypedDecls; }
  /// The [[spmd::type]] written on \p D itself (no redeclaration lookup).
  const TypeAnnotation *ownType(const clang::Decl *D) const;
  /// Whether \p FD has any SPMD annotation (result, parameter, mesh, op).
  bool isAnnotatedFunction(const clang::FunctionDecl *FD) const;
  bool empty() const {
    return Types.empty() && Meshes.empty() && Ops.empty() &&
           Unchecked.empty() && AxisSizes.empty() && Whens.empty();
  }

private:
  using Key = std::pair<unsigned, unsigned>; // (decl kind, location)
  static Key key(const clang::Decl *D);
  template <typename MapT>
  static auto lookup(const MapT &M, const clang::Decl *D)
      -> decltype(&M.begin()->second);

  llvm::DenseMap<Key, TypeAnnotation> Types;
  llvm::DenseMap<Key, MeshAnnotation> Meshes;
  llvm::DenseMap<Key, core::OpClass> Ops;
  llvm::DenseMap<Key, bool> Unchecked;
  llvm::DenseMap<Key, std::string> AxisSizes;
  llvm::DenseMap<Key, llvm::SmallVector<WhenAnnotation, 1>> Whens;
  std::vector<const clang::Decl *> WhenDecls, TypedDecls;
};

/// Reads an spmd::Axis constant expression (`tp`, `ns::tp`) to its name;
/// sets \p AxisDecl to the constant when it is a variable.
std::optional<std::string> evaluateAxis(const clang::Expr *E,
                                        const clang::ASTContext &Ctx,
                                        const clang::VarDecl **AxisDecl);
/// Reads an spmd::PerAxisType constant expression (R, S(0), ...).
std::optional<PerAxisType> evaluatePerAxisType(const clang::Expr *E,
                                               const clang::ASTContext &Ctx);
/// Whether \p T is the class spmd::Axis.
bool isAxisType(clang::QualType T);

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_ANNOTATIONS_H
