//===- AstHelpers.h - how the analysis reads C++ expressions ----*- C++ -*-===//
//
// Which C++ types are tensors and scalars, which functions are the runtime's
// API, and how to see through the parts of an expression that do not change
// a tensor value (parentheses, temporaries, copies, std::move).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_ASTHELPERS_H
#define SPMD_PLUGIN_LIB_ASTHELPERS_H

#include "clang/AST/Decl.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace spmd::plugin {

class AnnotationTable;

/// The name of the outermost non-inline namespace \p D sits in; empty when
/// there is none or it is anonymous. One walk of the declaration contexts
/// answers every isInTopNamespace question about \p D.
llvm::StringRef topNamespaceName(const clang::Decl *D);

/// Whether \p D sits in the (non-inline) top-level namespace \p Name.
bool isInTopNamespace(const clang::Decl *D, llvm::StringRef Name);

/// Whether \p D sits in the top-level namespace at or torch (ATen's ops).
bool isInTorchNamespace(const clang::Decl *D);

/// Whether \p NS (a topNamespaceName) is a library's the checker models or
/// that is not the user's to annotate: std, c10, at, torch, spmd.
bool isLibraryNamespaceName(llvm::StringRef NS);

/// Whether \p D belongs to a library the checker models or that is not the
/// user's to annotate: the top-level namespaces std, c10, at, torch, spmd.
bool isInLibraryNamespace(const clang::Decl *D);

/// Whether \p FD is libtorch's Module::register_parameter or
/// register_buffer (torch:: or at::): the tensor it returns takes the type
/// declared for the field it initialises.
bool isModuleRegistration(const clang::FunctionDecl *FD);

/// Whether \p FD is `spmd::<name>` (the runtime's API).
bool isSpmdFunction(const clang::FunctionDecl *FD);

/// The arguments of \p CE written in the source: trailing default arguments
/// (such as the runtime's `spmd::SourceLocation loc`) are not counted.
unsigned numWrittenArgs(const clang::CallExpr *CE);

/// at::Tensor / at::TensorBase (torch::Tensor is an alias) and classes
/// derived from them are tensors; c10::Scalar and arithmetic types are plain
/// numbers. Caches the answer per class.
class TypeClassifier {
public:
  bool isTensor(clang::QualType T);
  bool isScalar(clang::QualType T);
  /// A container of tensors the analysis tracks as one value, the type of
  /// all its elements: std::optional / c10::optional, std::vector,
  /// std::array, std::tuple, std::pair, c10::ArrayRef (TensorList) and
  /// std::initializer_list whose element types are tensors or such
  /// containers.
  bool isTensorContainer(clang::QualType T);
  /// std::optional<Tensor> / c10::optional<Tensor>.
  bool isOptionalTensor(clang::QualType T);
  /// A tensor or a container of tensors: the values the analysis tracks.
  bool isTracked(clang::QualType T) {
    return isTensor(T) || isTensorContainer(T);
  }

private:
  bool isTensorRecord(const clang::CXXRecordDecl *RD);
  bool isContainerRecord(const clang::CXXRecordDecl *RD);
  llvm::DenseMap<const clang::CXXRecordDecl *, bool> Cache;
  llvm::DenseMap<const clang::CXXRecordDecl *, bool> ContainerCache;
  llvm::DenseMap<const clang::Type *, bool> TypeCache; // isTensor
  const clang::Type *LastType = nullptr; // isTensor's latest question
  bool LastIsTensor = false;
  llvm::DenseMap<const clang::Type *, bool> ContainerTypeCache;
  /// isContainerRecord calls under way (their answers are not final yet).
  unsigned ClassifyingContainers = 0;
};

/// Whether \p E is an optional tensor that is certainly empty: a default
/// argument, `{}`, `c10::nullopt` / `std::nullopt`, a default-constructed
/// optional.
bool isEmptyOptional(const clang::Expr *E, TypeClassifier &Types);

/// Strips what does not change a tensor value: parentheses, implicit
/// conversions, temporaries, copies and moves.
const clang::Expr *skipTransparent(const clang::Expr *E, TypeClassifier &Types);

/// The variable an lvalue expression names, if it is a plain variable (a
/// structured binding of a tuple-like value: its holding variable).
const clang::VarDecl *namedVar(const clang::Expr *E, TypeClassifier &Types);
/// The structured binding an expression names (`q` of `auto& [q, k] = e;`).
const clang::BindingDecl *namedBinding(const clang::Expr *E,
                                       TypeClassifier &Types);
/// The field an lvalue expression names (`this->w`, `obj.w`).
const clang::FieldDecl *namedField(const clang::Expr *E, TypeClassifier &Types);

/// Strips parentheses, implicit casts and the wrappers of a braced argument
/// (temporaries, initializer_list, functional casts, full expressions).
const clang::Expr *skipBraceWrappers(const clang::Expr *E);

/// The tensors in a list argument ({a, b} for cat/stack).
void listElements(const clang::Expr *E, TypeClassifier &Types,
                  llvm::SmallVectorImpl<const clang::Expr *> &Out);

/// The tensor an optional argument is built from (`bias` in
/// `linear(x, w, bias)` with an optional parameter), else \p E.
const clang::Expr *seeThroughOptional(const clang::Expr *E,
                                      TypeClassifier &Types);

/// The call a function body only forwards to: the body is `return g(...);`
/// (or `g(...);`), a single statement; null otherwise. Module holders'
/// operator() (`return impl_->forward(std::forward<Args>(args)...);`) and
/// engines' wrapper classes have this shape.
const clang::CallExpr *forwardedCall(const clang::FunctionDecl *FD,
                                     TypeClassifier &Types);

/// The argument passed for each parameter of \p Callee at \p Call (a
/// CallExpr or a CXXConstructExpr): Out[I] is the argument bound to
/// `Callee->getParamDecl(I)`, in every call form: free and static functions,
/// member calls (`o.f(a)`: the object is not an argument), operator calls
/// (`o(a)`, `a + b`: the object of a member operator, also of a C++23
/// `static operator()`, is argument 0 but no parameter), C++23 explicit
/// object parameters (`f(this const S&, a)`: the object is parameter 0 in
/// both `o(a)` and `o.f(a)`), and constructors. Arguments past the last
/// parameter (C variadics) are dropped; Out is shorter than the parameter
/// list when trailing parameters have no argument.
void argumentsByParameter(const clang::Expr *Call,
                          const clang::FunctionDecl *Callee,
                          llvm::SmallVectorImpl<const clang::Expr *> &Out);

/// The axis whose process group the object expression \p E is: a variable,
/// parameter or data member with [[spmd::axis_group(axis)]], seen through
/// `*p`, `p->` (smart pointers' operator-> and operator*), `&g`, `.get()`,
/// parentheses and casts, and through a local reference or pointer
/// initialised from such an object (`auto& g = *args.tp_group;`). Null
/// when \p E is no bound group.
const std::string *groupAxisOf(const clang::Expr *E,
                               const AnnotationTable &Table,
                               unsigned Depth = 0);

/// What a query of a process group returns, by the query's name
/// (docs/type-system.md §18.3).
enum class GroupQuery { None, Size, Rank };
GroupQuery groupQueryKind(llvm::StringRef Name);

/// The axis a size (\p Q = Size) or rank (\p Q = Rank) query \p E reads
/// from a bound process group, or from a variable, parameter or data member
/// annotated [[spmd::axis_size(axis)]] / [[spmd::axis_rank(axis)]]:
/// `g.getSize()`, `g->size()`, `g->world_size()`, `pg.getRank()`,
/// `get_world_size(g)` (a free function of the group), `world_size_`.
/// Null otherwise.
const std::string *groupQueryAxis(const clang::Expr *E,
                                  const AnnotationTable &Table, GroupQuery Q);

/// Whether an insertion around \p E can be offered as a fix-it (its range is
/// valid and not inside a macro).
bool isEditableRange(const clang::Expr *E);

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_ASTHELPERS_H
