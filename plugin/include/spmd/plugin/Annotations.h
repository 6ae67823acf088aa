//===- Annotations.h - parsed [[spmd::...]] attributes ----------*- C++ -*-===//
//
// The SPMD attributes ([[spmd::type]], [[spmd::mesh]], [[spmd::op]],
// [[spmd::unchecked]], [[spmd::local]]) are parsed by ParsedAttrInfo handlers
// registered by this library and stored here, in the checker's own table,
// instead of being attached to the AST: the AST that code generation sees is
// unchanged, so object files are identical with and without the plugin.
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
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <spmd/annotations.h>
#include <spmd/core/propagation.h>
#include <spmd/core/tensor_type.h>

#include <deque>
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
  /// For S(i) from an `spmd::spec(...)` tuple entry: the axis's position in
  /// the tuple of dim i (0 = outermost); 0 otherwise.
  int Pos = 0;
};

/// A parsed [[spmd::type(...)]]: the declared SPMD type of a variable,
/// parameter, field or function result.
struct TypeAnnotation {
  llvm::SmallVector<AxisEntry, 4> Entries;
  clang::SourceLocation Loc; ///< the attribute
  /// The tensor's rank from an `spmd::rank(n)` entry, or -1.
  int Rank = -1;
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
  std::string Flag;  ///< the data member's name, resolved later
  bool Value = true; ///< the flag's value the types apply to
  clang::SourceLocation FlagLoc;
  TypeAnnotation Type; ///< the entries; Type.Loc is the attribute
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
  /// \p InferInputs: [[spmd::local(spmd::Infer)]], the region's input
  /// types are inferred from the arguments at its calls.
  void setLocal(const clang::Decl *D, bool InferInputs = false);
  void setAxisSize(const clang::Decl *D, std::string Axis);
  void setAxisRank(const clang::Decl *D, std::string Axis);
  /// [[spmd::axis_group(axis)]] on a variable, parameter or data member: the
  /// object is the process group of \p Axis.
  void setAxisGroup(const clang::Decl *D, std::string Axis);
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
  std::optional<core::OpClass>
  opClassOfCallable(const clang::ValueDecl *D) const;
  bool isUnchecked(const clang::FunctionDecl *FD) const;
  /// Whether \p FD is a local region ([[spmd::local]]): its body is checked
  /// with local semantics in global mode, its annotations are the boundary.
  bool isLocal(const clang::FunctionDecl *FD) const;
  /// Whether \p FD is a local region whose input types are inferred
  /// ([[spmd::local(spmd::Infer)]], spec §12.3's `in_types = Infer`): its
  /// parameters are not checked at calls; the body starts from the join of
  /// the arguments seen at the calls in the translation unit.
  bool isLocalInfer(const clang::FunctionDecl *FD) const;
  /// The axis whose size \p FD returns ([[spmd::axis_size(axis)]]), or null.
  const std::string *axisSizeOf(const clang::FunctionDecl *FD) const;
  /// The axis whose rank \p FD returns ([[spmd::axis_rank(axis)]]), or null.
  const std::string *axisRankOf(const clang::FunctionDecl *FD) const;
  /// The axis whose size the variable, parameter or data member \p D holds
  /// ([[spmd::axis_size(axis)]] on it), or null.
  const std::string *axisSizeOfVar(const clang::ValueDecl *D) const;
  /// The axis along which \p D holds this rank's index
  /// ([[spmd::axis_rank(axis)]] on it), or null.
  const std::string *axisRankOfVar(const clang::ValueDecl *D) const;
  /// The axis whose process group the variable, parameter or data member
  /// \p D is ([[spmd::axis_group(axis)]]), or null.
  const std::string *axisGroupOf(const clang::ValueDecl *D) const;
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
  /// The most distinct axis names one translation unit's annotations may
  /// hold: the checker numbers axes with 16 bits (TypeLattice.h, AxisId).
  static constexpr size_t MaxAxes = 65536;
  /// Counts \p Axis among the axes the annotations name; false when it is a
  /// new one past MaxAxes (it is not counted then).
  bool countAxis(llvm::StringRef Axis) {
    if (AxisNames.count(Axis))
      return true;
    if (AxisNames.size() >= MaxAxes)
      return false;
    AxisNames.insert(Axis);
    return true;
  }
  bool empty() const {
    return Types.empty() && Meshes.empty() && Ops.empty() &&
           Unchecked.empty() && AxisSizes.empty() && AxisRanks.empty() &&
           AxisGroups.empty() && Local.empty() && Imported.empty() &&
           Whens.empty();
  }

  /// Precompiled headers and modules: Clang does not keep plugin attributes
  /// in an AST file, so the table of the compilation that writes one is
  /// saved beside it (annotationsFileFor) and read back by the compilations
  /// that load it. Declarations are identified by kind, canonical file,
  /// line and column, plus the spelling position of each macro level for a
  /// declaration a macro generated: the same on both sides, and distinct for
  /// the declarations of one macro expansion.
  ///
  /// Writes the entries declared in files (not the main file's own locals),
  /// between a version line and an "end <count>" line, with the canonical
  /// path of the main file (the AST file's source).
  void write(llvm::raw_ostream &OS, const clang::SourceManager &SM) const;
  /// Adds the entries written by write(); looked up lazily for declarations
  /// loaded from an AST file. False (with \p Err naming the problem, and
  /// nothing added) for an empty file, another version's file, a file cut
  /// short, a malformed line, or a file written for a source other than
  /// \p ExpectedSource (the AST file's canonical source path; "" accepts
  /// any).
  bool read(llvm::StringRef Text, const clang::SourceManager &SM,
            llvm::StringRef ExpectedSource, std::string &Err);
  /// The annotations file kept beside the AST file \p ASTFile.
  static std::string annotationsFileFor(llvm::StringRef ASTFile);

private:
  using Key = std::pair<unsigned, unsigned>; // (decl kind, location)
  /// The [[spmd::type]] annotations by key. The hash table holds only an
  /// index into a deque (stable addresses for the pointers lookups hand
  /// out): the checker looks up every local variable, most of which have no
  /// annotation, and a probe then touches 12-byte buckets instead of whole
  /// TypeAnnotations (a few hundred bytes each, megabytes for a large
  /// translation unit). Iterates as (key, annotation) pairs in insertion
  /// order.
  class TypeStore {
  public:
    using Entry = std::pair<Key, TypeAnnotation>;
    bool empty() const { return Entries.empty(); }
    /// The annotation of \p K, or null.
    const TypeAnnotation *find(Key K) const {
      auto It = Index.find(K);
      return It == Index.end() ? nullptr : &Entries[It->second].second;
    }
    /// The annotation of \p K, default-constructed if there is none yet.
    TypeAnnotation &operator[](Key K) {
      auto [It, New] = Index.try_emplace(K, unsigned(Entries.size()));
      if (New)
        Entries.push_back({K, TypeAnnotation()});
      return Entries[It->second].second;
    }
    /// Sets the annotation of \p K; returns whether \p K is new.
    bool assign(Key K, TypeAnnotation A) {
      bool New = !Index.count(K);
      (*this)[K] = std::move(A);
      return New;
    }
    std::deque<Entry>::const_iterator begin() const { return Entries.begin(); }
    std::deque<Entry>::const_iterator end() const { return Entries.end(); }

  private:
    llvm::DenseMap<Key, unsigned> Index;
    std::deque<Entry> Entries;
  };
  static Key key(const clang::Decl *D);
  /// The value of \p K in \p M, or null.
  template <typename MapT>
  static auto find(const MapT &M, Key K) -> decltype(&M.begin()->second) {
    auto It = M.find(K);
    return It == M.end() ? nullptr : &It->second;
  }
  static const TypeAnnotation *find(const TypeStore &M, Key K) {
    return M.find(K);
  }
  template <typename MapT>
  auto lookup(const MapT &M, const clang::Decl *D) const
      -> decltype(&M.begin()->second);
  /// The axis named by \p FD's entry in \p M (AxisSizes or AxisRanks) on any
  /// of its redeclarations, or null.
  const std::string *axisOf(const llvm::DenseMap<Key, std::string> &M,
                            const clang::FunctionDecl *FD) const;
  /// Moves the imported entries of \p D (loaded from an AST file) into the
  /// tables, once per declaration.
  void resolveImported(const clang::Decl *D) const;

  // Mutable: imported entries move in on first lookup (resolveImported).
  mutable TypeStore Types;
  mutable llvm::DenseMap<Key, MeshAnnotation> Meshes;
  mutable llvm::DenseMap<Key, core::OpClass> Ops;
  mutable llvm::DenseMap<Key, bool> Unchecked;
  mutable llvm::DenseMap<Key, bool> Local;
  mutable llvm::DenseMap<Key, bool> LocalInfer;
  mutable llvm::DenseMap<Key, std::string> AxisSizes;
  mutable llvm::DenseMap<Key, std::string> AxisRanks;
  mutable llvm::DenseMap<Key, std::string> AxisGroups;
  /// Read from annotations files, by "kind:file:line:col": one line of
  /// write()'s format each, without the key.
  mutable llvm::StringMap<llvm::SmallVector<std::string, 1>> Imported;
  llvm::StringSet<> AxisNames; ///< countAxis

  mutable llvm::DenseSet<Key> Resolved;
  const clang::SourceManager *ImportSM = nullptr;
  mutable llvm::DenseMap<Key, llvm::SmallVector<WhenAnnotation, 1>> Whens;
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
/// The name held by the constexpr spmd::Axis variable \p VD, or nullopt.
std::optional<std::string> constantAxis(const clang::VarDecl *VD);
/// The value of the constexpr spmd::PerAxisType variable \p VD, or nullopt.
std::optional<PerAxisType> constantPerAxisType(const clang::VarDecl *VD);
/// Whether \p T is the class spmd::Axis.
bool isAxisType(clang::QualType T);

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_ANNOTATIONS_H
