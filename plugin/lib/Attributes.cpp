//===- Attributes.cpp - [[spmd::...]] attribute parsing ---------*- C++ -*-===//
//
// Registers the SPMD attributes with Clang and parses their arguments into the
// AnnotationTable. Nothing is attached to the AST (see Annotations.h).
//
// Clang 19 parses the arguments of a scoped plugin attribute only when the
// plugin also registers the bare spelling for C++11 syntax (the parser looks
// plugin attributes up by their unscoped name), so every attribute has both
// spellings, and the unscoped one is rejected here with a fix-it.
//
//===----------------------------------------------------------------------===//

#include "spmd/plugin/Annotations.h"

#include "AnnotationText.h"
#include "AttributeMessages.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Basic/ParsedAttrInfo.h"
#include "clang/Sema/Lookup.h"
#include "clang/Sema/ParsedAttr.h"
#include "clang/Sema/Sema.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"

#include <spmd/core/per_axis_type.h>

#include <memory>
#include <mutex>

using namespace clang;

namespace spmd::plugin {

//===----------------------------------------------------------------------===//
// AnnotationTable
//===----------------------------------------------------------------------===//

namespace {
std::mutex TablesMutex;
llvm::DenseMap<const ASTContext *, std::unique_ptr<AnnotationTable>> &tables() {
  static llvm::DenseMap<const ASTContext *, std::unique_ptr<AnnotationTable>>
      Tables;
  return Tables;
}
} // namespace

AnnotationTable &AnnotationTable::get(const ASTContext &Ctx) {
  std::lock_guard<std::mutex> Lock(TablesMutex);
  auto &Slot = tables()[&Ctx];
  if (!Slot)
    Slot = std::make_unique<AnnotationTable>();
  return *Slot;
}

void AnnotationTable::release(const ASTContext &Ctx) {
  std::lock_guard<std::mutex> Lock(TablesMutex);
  tables().erase(&Ctx);
}

AnnotationTable::Key AnnotationTable::key(const Decl *D) {
  // The kind keeps a variable apart from a lambda capture field (same
  // location) and a function from its parameters.
  unsigned Kind = isa<ParmVarDecl>(D)    ? 1
                  : isa<VarDecl>(D)      ? 2
                  : isa<FieldDecl>(D)    ? 3
                  : isa<FunctionDecl>(D) ? 4
                                         : 5;
  return {Kind, D->getLocation().getRawEncoding()};
}

template <typename MapT>
auto AnnotationTable::lookup(const MapT &M, const Decl *D) const
    -> decltype(&M.begin()->second) {
  if (!D || D->getLocation().isInvalid())
    return nullptr;
  if (!Imported.empty())
    resolveImported(D);
  if (M.empty())
    return nullptr;
  return find(M, key(D));
}

void AnnotationTable::setType(const Decl *D, TypeAnnotation A) {
  if (Types.assign(key(D), std::move(A)))
    TypedDecls.push_back(D);
}
void AnnotationTable::addWhen(const Decl *D, WhenAnnotation W) {
  auto &List = Whens[key(D)];
  if (List.empty())
    WhenDecls.push_back(D);
  List.push_back(std::move(W));
}
const TypeAnnotation *AnnotationTable::ownType(const Decl *D) const {
  return lookup(Types, D);
}
void AnnotationTable::setMesh(const Decl *D, MeshAnnotation A) {
  Meshes[key(D)] = std::move(A);
}
void AnnotationTable::setOpClass(const Decl *D, core::OpClass C) {
  Ops[key(D)] = C;
}
void AnnotationTable::setUnchecked(const Decl *D) { Unchecked[key(D)] = true; }
void AnnotationTable::setLocal(const Decl *D, bool InferInputs) {
  Local[key(D)] = true;
  if (InferInputs)
    LocalInfer[key(D)] = true;
}
void AnnotationTable::setAxisSize(const Decl *D, std::string Axis) {
  AxisSizes[key(D)] = std::move(Axis);
}
void AnnotationTable::setAxisRank(const Decl *D, std::string Axis) {
  AxisRanks[key(D)] = std::move(Axis);
}
void AnnotationTable::setAxisGroup(const Decl *D, std::string Axis) {
  AxisGroups[key(D)] = std::move(Axis);
}

/// Every declaration an annotation of \p FD may sit on: its redeclarations,
/// those of the template pattern it was instantiated from and, after them,
/// those of the virtual methods it overrides (an override inherits their
/// annotations).
static void candidates(const FunctionDecl *FD,
                       llvm::SmallVectorImpl<const FunctionDecl *> &Out,
                       bool Overridden, unsigned Depth = 0) {
  for (const FunctionDecl *R : FD->redecls())
    Out.push_back(R);
  if (const FunctionDecl *Pattern = FD->getTemplateInstantiationPattern())
    for (const FunctionDecl *R : Pattern->redecls())
      Out.push_back(R);
  if (const auto *MD = dyn_cast<CXXMethodDecl>(FD);
      MD && Overridden && Depth < 8)
    for (const CXXMethodDecl *O : MD->overridden_methods())
      candidates(O, Out, Overridden, Depth + 1);
}

static llvm::SmallVector<const FunctionDecl *, 4>
candidates(const FunctionDecl *FD, bool Overridden = true) {
  llvm::SmallVector<const FunctionDecl *, 4> Out;
  candidates(FD, Out, Overridden);
  return Out;
}

const TypeAnnotation *AnnotationTable::typeOf(const ValueDecl *D) const {
  if (Types.empty() || !D)
    return nullptr;
  if (const auto *P = dyn_cast<ParmVarDecl>(D)) {
    if (const auto *FD = dyn_cast<FunctionDecl>(P->getDeclContext()))
      return paramOf(FD, P->getFunctionScopeIndex());
  }
  return lookup(Types, D);
}

const TypeAnnotation *AnnotationTable::resultOf(const FunctionDecl *FD) const {
  if (Types.empty() || !FD)
    return nullptr;
  for (const FunctionDecl *C : candidates(FD))
    if (const TypeAnnotation *A = lookup(Types, C))
      return A;
  return nullptr;
}

const TypeAnnotation *AnnotationTable::paramOf(const FunctionDecl *FD,
                                               unsigned I) const {
  if (Types.empty() || !FD)
    return nullptr;
  for (const FunctionDecl *C : candidates(FD))
    if (I < C->getNumParams())
      if (const TypeAnnotation *A = lookup(Types, C->getParamDecl(I)))
        return A;
  return nullptr;
}

const MeshAnnotation *AnnotationTable::meshOf(const FunctionDecl *FD) const {
  if (Meshes.empty() || !FD)
    return nullptr;
  for (const FunctionDecl *C : candidates(FD))
    if (const MeshAnnotation *A = lookup(Meshes, C))
      return A;
  return nullptr;
}

std::optional<core::OpClass>
AnnotationTable::opClassOf(const FunctionDecl *FD) const {
  if (Ops.empty() || !FD)
    return std::nullopt;
  for (const FunctionDecl *C : candidates(FD))
    if (const core::OpClass *A = lookup(Ops, C))
      return *A;
  return std::nullopt;
}

std::optional<core::OpClass>
AnnotationTable::opClassOfCallable(const ValueDecl *D) const {
  if (const core::OpClass *C = lookup(Ops, D))
    return *C;
  return std::nullopt;
}

bool AnnotationTable::isUnchecked(const FunctionDecl *FD) const {
  if ((Unchecked.empty() && Imported.empty()) || !FD)
    return false;
  for (const FunctionDecl *C : candidates(FD, /*Overridden=*/false))
    if (lookup(Unchecked, C))
      return true;
  return false;
}

bool AnnotationTable::isLocal(const FunctionDecl *FD) const {
  if ((Local.empty() && Imported.empty()) || !FD)
    return false;
  for (const FunctionDecl *C : candidates(FD, /*Overridden=*/false))
    if (lookup(Local, C))
      return true;
  return false;
}

bool AnnotationTable::isLocalInfer(const FunctionDecl *FD) const {
  if (!isLocal(FD))
    return false;
  for (const FunctionDecl *C : candidates(FD, /*Overridden=*/false))
    if (lookup(LocalInfer, C))
      return true;
  return false;
}

const std::string *
AnnotationTable::axisOf(const llvm::DenseMap<Key, std::string> &M,
                        const FunctionDecl *FD) const {
  if ((M.empty() && Imported.empty()) || !FD)
    return nullptr;
  for (const FunctionDecl *C : candidates(FD))
    if (const std::string *A = lookup(M, C))
      return A;
  return nullptr;
}

const std::string *AnnotationTable::axisSizeOf(const FunctionDecl *FD) const {
  return axisOf(AxisSizes, FD);
}

const std::string *AnnotationTable::axisRankOf(const FunctionDecl *FD) const {
  return axisOf(AxisRanks, FD);
}

const std::string *AnnotationTable::axisSizeOfVar(const ValueDecl *D) const {
  return isa_and_nonnull<FunctionDecl>(D) ? nullptr : lookup(AxisSizes, D);
}

const std::string *AnnotationTable::axisRankOfVar(const ValueDecl *D) const {
  return isa_and_nonnull<FunctionDecl>(D) ? nullptr : lookup(AxisRanks, D);
}

const std::string *AnnotationTable::axisGroupOf(const ValueDecl *D) const {
  // A parameter's annotation may sit on another redeclaration of its
  // function: look it up on each.
  if (const auto *P = dyn_cast_or_null<ParmVarDecl>(D))
    if (const auto *FD = dyn_cast<FunctionDecl>(P->getDeclContext())) {
      unsigned I = P->getFunctionScopeIndex();
      for (const FunctionDecl *R : FD->redecls())
        if (I < R->getNumParams())
          if (const std::string *A = lookup(AxisGroups, R->getParamDecl(I)))
            return A;
      return nullptr;
    }
  return lookup(AxisGroups, D);
}

llvm::ArrayRef<WhenAnnotation> AnnotationTable::whensOf(const FunctionDecl *FD,
                                                        int Param) const {
  if (Whens.empty() || !FD)
    return {};
  for (const FunctionDecl *C : candidates(FD)) {
    const Decl *D = C;
    if (Param >= 0) {
      if (unsigned(Param) >= C->getNumParams())
        continue;
      D = C->getParamDecl(Param);
    }
    if (const auto *L = lookup(Whens, D))
      return *L;
  }
  return {};
}

bool AnnotationTable::isAnnotatedFunction(const FunctionDecl *FD) const {
  if (resultOf(FD) || meshOf(FD) || opClassOf(FD) || isLocalInfer(FD))
    return true;
  for (unsigned I = 0, N = FD->getNumParams(); I < N; ++I)
    if (paramOf(FD, I))
      return true;
  if (!Whens.empty()) {
    if (!whensOf(FD, -1).empty())
      return true;
    for (unsigned I = 0, N = FD->getNumParams(); I < N; ++I)
      if (!whensOf(FD, I).empty())
        return true;
  }
  return false;
}

const AxisEntry *TypeAnnotation::entry(llvm::StringRef Axis) const {
  for (const AxisEntry &E : Entries)
    if (E.Axis == Axis)
      return &E;
  return nullptr;
}

std::string TypeAnnotation::str() const {
  // A tuple entry (two or more axes on one dim, from spmd::spec) is printed
  // as the PartitionSpec it was written as, in spec §12.1's notation, with
  // the order of its axes: {spec((dp, tp), None), ep: R}. Otherwise (the
  // common case) every entry is `axis: type`.
  int Dims = Rank;
  bool Tuple = false, Negative = false;
  for (const AxisEntry &E : Entries)
    if (E.Type.is_shard()) {
      Negative |= E.Type.dim < 0;
      Dims = std::max(Dims, E.Type.dim + 1);
      for (const AxisEntry &O : Entries)
        Tuple |= &O != &E && O.Type.is_shard() && O.Type.dim == E.Type.dim;
    }
  std::string S = "{";
  bool First = true;
  if (Tuple && !Negative) {
    S += "spec(";
    for (int D = 0; D < Dims; ++D) {
      llvm::SmallVector<const AxisEntry *, 3> Axes;
      for (const AxisEntry &E : Entries)
        if (E.Type.is_shard() && E.Type.dim == D)
          Axes.push_back(&E);
      llvm::stable_sort(Axes, [](const AxisEntry *X, const AxisEntry *Y) {
        return X->Pos < Y->Pos;
      });
      std::string Entry = Axes.empty() ? "None" : "";
      for (size_t I = 0; I < Axes.size(); ++I)
        Entry += (I ? ", " : "") + Axes[I]->Axis;
      if (Axes.size() > 1)
        Entry = "(" + Entry + ")";
      S += (D ? ", " : "") + Entry;
    }
    S += ")";
    First = false;
  }
  for (const AxisEntry &E : Entries) {
    if (Tuple && !Negative && E.Type.is_shard())
      continue;
    S += (First ? "" : ", ") + E.Axis + ": " + core::to_string(E.Type);
    First = false;
  }
  return S + "}";
}

//===----------------------------------------------------------------------===//
// Constant evaluation of axes and types
//===----------------------------------------------------------------------===//

static bool isSpmdRecord(QualType T, llvm::StringRef Name) {
  const auto *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  if (!RD || !RD->getIdentifier() || RD->getName() != Name)
    return false;
  const auto *NS = dyn_cast<NamespaceDecl>(RD->getDeclContext());
  return NS && NS->getIdentifier() && NS->getName() == "spmd" &&
         NS->getParent()->getRedeclContext()->isTranslationUnit();
}

bool isAxisType(QualType T) { return isSpmdRecord(T, "Axis"); }

/// The string a `const char*` APValue points to (a string literal), if any.
static std::optional<std::string> stringOf(const APValue &V) {
  if (!V.isLValue() || V.isNullPointer())
    return std::nullopt;
  const auto *E = V.getLValueBase().dyn_cast<const Expr *>();
  const auto *SL = dyn_cast_or_null<StringLiteral>(E);
  if (!SL || !SL->isOrdinary())
    return std::nullopt;
  uint64_t Offset = V.getLValueOffset().getQuantity();
  llvm::StringRef S = SL->getString();
  if (Offset > S.size())
    return std::nullopt;
  return S.drop_front(Offset).str();
}

/// The name held by an spmd::Axis constant variable.
static std::optional<std::string> axisOfVar(const VarDecl *VD) {
  if (!VD || !isAxisType(VD->getType()) || !VD->getInit())
    return std::nullopt;
  const APValue *V = VD->evaluateValue();
  if (!V || !V->isStruct() || V->getStructNumFields() < 1)
    return std::nullopt;
  return stringOf(V->getStructField(0));
}

std::optional<std::string> constantAxis(const VarDecl *VD) {
  return VD->isConstexpr() ? axisOfVar(VD) : std::nullopt;
}

std::optional<std::string> evaluateAxis(const Expr *E, const ASTContext &Ctx,
                                        const VarDecl **AxisDecl) {
  if (AxisDecl)
    *AxisDecl = nullptr;
  if (!E || E->containsErrors() || E->isValueDependent())
    return std::nullopt;
  E = E->IgnoreParenImpCasts();
  if (!isAxisType(E->getType()))
    return std::nullopt;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    if (const auto *VD = dyn_cast<VarDecl>(DRE->getDecl())) {
      if (AxisDecl)
        *AxisDecl = VD;
      // Fast path: a constexpr variable's value is evaluated (and cached)
      // by Clang once.
      if (std::optional<std::string> A = constantAxis(VD))
        return A;
    }
  Expr::EvalResult R;
  if (E->EvaluateAsRValue(R, Ctx) && R.Val.isStruct() &&
      R.Val.getStructNumFields() >= 1)
    return stringOf(R.Val.getStructField(0));
  return std::nullopt;
}

/// R, I, V, P, S(k) from an evaluated spmd::PerAxisType.
static std::optional<PerAxisType> perAxisTypeOf(const APValue &V) {
  if (!V.isStruct() || V.getStructNumFields() < 2)
    return std::nullopt;
  const APValue &Kind = V.getStructField(0);
  const APValue &Dim = V.getStructField(1);
  if (!Kind.isInt() || !Dim.isInt())
    return std::nullopt;
  int64_t K = Kind.getInt().getExtValue();
  if (K < 0 || K > static_cast<int64_t>(TypeKind::Shard))
    return std::nullopt;
  PerAxisType T;
  T.kind = static_cast<TypeKind>(K);
  T.dim = T.kind == TypeKind::Shard
              ? static_cast<int>(Dim.getInt().getExtValue())
              : 0;
  return T;
}

std::optional<PerAxisType> constantPerAxisType(const VarDecl *VD) {
  if (!VD->isConstexpr() || !VD->getInit() ||
      !isSpmdRecord(VD->getType(), "PerAxisType"))
    return std::nullopt;
  const APValue *V = VD->evaluateValue();
  return V ? perAxisTypeOf(*V) : std::nullopt;
}

std::optional<PerAxisType> evaluatePerAxisType(const Expr *E,
                                               const ASTContext &Ctx) {
  if (!E || E->containsErrors() || E->isValueDependent())
    return std::nullopt;
  E = E->IgnoreParenImpCasts();
  if (const auto *CE = dyn_cast<CXXConstructExpr>(E))
    if (CE->getNumArgs() == 1 &&
        CE->getConstructor()->isCopyOrMoveConstructor())
      E = CE->getArg(0)->IgnoreParenImpCasts();
  if (!isSpmdRecord(E->getType(), "PerAxisType"))
    return std::nullopt;
  // Fast path for R, I, V, P (constexpr variables, evaluated once by Clang).
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    if (const auto *VD = dyn_cast<VarDecl>(DRE->getDecl()))
      if (std::optional<PerAxisType> T = constantPerAxisType(VD))
        return T;
  Expr::EvalResult R;
  if (!E->EvaluateAsRValue(R, Ctx))
    return std::nullopt;
  return perAxisTypeOf(R.Val);
}

//===----------------------------------------------------------------------===//
// The attributes
//===----------------------------------------------------------------------===//

namespace {

enum class AttrWhich {
  Type,
  Mesh,
  Op,
  Unchecked,
  AxisSize,
  AxisRank,
  AxisGroup,
  Local,
  When,
  Unless
};

const char *attrName(AttrWhich W) {
  switch (W) {
  case AttrWhich::Type:
    return "spmd::type";
  case AttrWhich::Mesh:
    return "spmd::mesh";
  case AttrWhich::Op:
    return "spmd::op";
  case AttrWhich::Unchecked:
    return "spmd::unchecked";
  case AttrWhich::Local:
    return "spmd::local";
  case AttrWhich::AxisSize:
    return "spmd::axis_size";
  case AttrWhich::AxisRank:
    return "spmd::axis_rank";
  case AttrWhich::AxisGroup:
    return "spmd::axis_group";
  case AttrWhich::When:
    return "spmd::when";
  case AttrWhich::Unless:
    return "spmd::unless";
  }
  llvm_unreachable("every AttrWhich has a spelling");
}

/// Parses one `axis = type` expression. On failure reports at \p E and
/// returns std::nullopt (silently when Sema already reported the expression).
std::optional<AxisEntry> parseEntry(Sema &S, const Expr *E,
                                    llvm::StringRef Where) {
  ASTContext &Ctx = S.getASTContext();
  if (E->containsErrors())
    return std::nullopt;
  const Expr *Inner = E->IgnoreParenImpCasts();
  if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(Inner))
    Inner = MTE->getSubExpr()->IgnoreParenImpCasts();
  const auto *Op = dyn_cast<CXXOperatorCallExpr>(Inner);
  if (!Op || Op->getOperator() != OO_Equal || Op->getNumArgs() != 2 ||
      !isAxisType(Op->getArg(0)->getType())) {
    S.Diag(E->getExprLoc(),
           customDiag(S, DiagnosticsEngine::Error, msg::EntryForm))
        << Where << E->getSourceRange();
    return std::nullopt;
  }
  AxisEntry Entry;
  Entry.Loc = E->getExprLoc();
  std::optional<std::string> Axis =
      evaluateAxis(Op->getArg(0), Ctx, &Entry.AxisDecl);
  if (!Axis || Axis->empty()) {
    S.Diag(Op->getArg(0)->getExprLoc(),
           customDiag(S, DiagnosticsEngine::Error, msg::AxisNotConstant))
        << Where << Op->getArg(0)->getSourceRange();
    return std::nullopt;
  }
  Entry.Axis = *Axis;
  std::optional<PerAxisType> T = evaluatePerAxisType(Op->getArg(1), Ctx);
  if (!T) {
    S.Diag(Op->getArg(1)->getExprLoc(),
           customDiag(S, DiagnosticsEngine::Error, msg::TypeNotConstant))
        << Entry.Axis << Where << Op->getArg(1)->getSourceRange();
    return std::nullopt;
  }
  Entry.Type = *T;
  return Entry;
}

/// An `spmd::rank(n)` entry of [[spmd::type]]: its n (-1 when n is not a
/// constant in range), or nullopt when \p E is not a rank entry.
std::optional<int> rankEntry(Sema &S, const Expr *E) {
  if (E->containsErrors() || !isSpmdRecord(E->getType(), "Rank"))
    return std::nullopt;
  Expr::EvalResult R;
  if (!E->EvaluateAsRValue(R, S.getASTContext()) || !R.Val.isStruct() ||
      R.Val.getStructNumFields() != 1 || !R.Val.getStructField(0).isInt())
    return -1;
  int64_t N = R.Val.getStructField(0).getInt().getExtValue();
  return N >= 0 && N < 64 ? int(N) : -1;
}

/// Element \p I of an evaluated array (initialised or filler).
const APValue &arrayElt(const APValue &A, unsigned I) {
  return I < A.getArrayInitializedElts() ? A.getArrayInitializedElt(I)
                                         : A.getArrayFiller();
}

/// The dims of an evaluated spmd::SpecAnnotation (a PartitionSpec): per dim,
/// its axes in order (outer to inner), empty for None; nullopt when it is not a
/// constant.
std::optional<SmallVector<SmallVector<std::string, 2>, 4>>
partitionSpecOf(const APValue &V) {
  if (!V.isStruct() || V.getStructNumFields() < 1 ||
      !V.getStructField(0).isArray())
    return std::nullopt;
  const APValue &Dims = V.getStructField(0);
  SmallVector<SmallVector<std::string, 2>, 4> Out;
  for (unsigned D = 0; D < Dims.getArraySize(); ++D) {
    const APValue &E = arrayElt(Dims, D);
    if (!E.isStruct() || E.getStructNumFields() < 2 ||
        !E.getStructField(0).isArray() || !E.getStructField(1).isInt())
      return std::nullopt;
    int64_t Count = E.getStructField(1).getInt().getExtValue();
    if (Count < 0)
      break; // an unused trailing parameter of spmd::spec
    const APValue &Axes = E.getStructField(0);
    SmallVector<std::string, 2> Dim;
    for (int64_t A = 0; A < Count && A < Axes.getArraySize(); ++A) {
      std::optional<std::string> Name = stringOf(arrayElt(Axes, A));
      if (!Name || Name->empty())
        return std::nullopt;
      Dim.push_back(*Name);
    }
    Out.push_back(std::move(Dim));
  }
  return Out;
}

/// An `spmd::spec(...)` entry of [[spmd::type]], converted to `axis = S(i)`
/// entries (spec §12.1) with the spec's length as rank. Reports and returns
/// false on a bad spec; leaves \p IsSpec false when \p E is not a spec.
bool specEntry(Sema &S, const Expr *E, SmallVectorImpl<AxisEntry> &Entries,
               int &Rank, bool &IsSpec) {
  IsSpec = false;
  if (E->containsErrors() || !isSpmdRecord(E->getType(), "SpecAnnotation"))
    return true;
  IsSpec = true;
  Expr::EvalResult R;
  std::optional<SmallVector<SmallVector<std::string, 2>, 4>> Dims;
  if (E->EvaluateAsRValue(R, S.getASTContext()))
    Dims = partitionSpecOf(R.Val);
  if (!Dims) {
    S.Diag(E->getExprLoc(),
           customDiag(S, DiagnosticsEngine::Error, msg::BadSpec))
        << E->getSourceRange();
    return false;
  }
  for (unsigned D = 0; D < Dims->size(); ++D) {
    const auto &Axes = (*Dims)[D];
    // A tuple {dp, tp} shards dim D by each of its axes, outer to inner
    // (spec §12.1): each gets S(D) and its position in the tuple.
    for (unsigned Pos = 0; Pos < Axes.size(); ++Pos) {
      AxisEntry Entry;
      Entry.Axis = Axes[Pos];
      Entry.Type = PerAxisType{TypeKind::Shard, int(D)};
      Entry.Loc = E->getExprLoc();
      Entry.Pos = int(Pos);
      Entries.push_back(std::move(Entry));
    }
  }
  Rank = int(Dims->size());
  return true;
}

/// The arguments of [[spmd::type]] as written: axis entries (and a spec's
/// S entries) go to \p Parsed, spmd::rank to \p A.Rank, spmd::spec's length
/// and location to \p SpecRank and \p SpecLoc. Reports every bad argument
/// and returns false after any.
bool parseTypeArgs(Sema &S, const ParsedAttr &Attr, TypeAnnotation &A,
                   SmallVectorImpl<AxisEntry> &Parsed, int &SpecRank,
                   SourceLocation &SpecLoc) {
  bool OK = true;
  for (unsigned I = 0; I < Attr.getNumArgs(); ++I) {
    bool IsSpec = false;
    int ThisRank = -1;
    if (!specEntry(S, Attr.getArgAsExpr(I), Parsed, ThisRank, IsSpec))
      OK = false;
    if (IsSpec) {
      if (SpecLoc.isValid()) {
        S.Diag(Attr.getArgAsExpr(I)->getExprLoc(),
               customDiag(S, DiagnosticsEngine::Error, msg::SpecTwice));
        OK = false;
      }
      SpecLoc = Attr.getArgAsExpr(I)->getExprLoc();
      SpecRank = ThisRank;
      continue;
    }
    if (std::optional<int> R = rankEntry(S, Attr.getArgAsExpr(I))) {
      if (*R < 0 || A.Rank >= 0) {
        S.Diag(Attr.getArgAsExpr(I)->getExprLoc(),
               customDiag(S, DiagnosticsEngine::Error, msg::BadRank));
        OK = false;
      } else {
        A.Rank = *R;
      }
      continue;
    }
    std::optional<AxisEntry> E =
        parseEntry(S, Attr.getArgAsExpr(I), "spmd::type");
    if (!E) {
      OK = false;
      continue;
    }
    Parsed.push_back(std::move(*E));
  }
  return OK;
}

/// An spmd::spec fixes the rank (one entry per dim); an spmd::rank next to it
/// must agree. Sets \p A.Rank from the spec; false after reporting a
/// mismatch.
bool reconcileSpecRank(Sema &S, TypeAnnotation &A, int SpecRank,
                       SourceLocation SpecLoc) {
  if (SpecLoc.isValid() && A.Rank >= 0 && A.Rank != SpecRank) {
    S.Diag(SpecLoc, customDiag(S, DiagnosticsEngine::Error,
                               "'spmd::spec' has %0 entries but "
                               "'spmd::rank(%1)' says the tensor has %1 "
                               "dims; a PartitionSpec has one entry per "
                               "dim (write spmd::None for unsharded dims)"))
        << SpecRank << A.Rank;
    return false;
  }
  if (SpecLoc.isValid())
    A.Rank = SpecRank;
  return true;
}

/// Counts \p Axis in \p Table (AnnotationTable::countAxis); one axis too
/// many is reported at \p Loc and returns false.
bool countAxis(Sema &S, AnnotationTable &Table, llvm::StringRef Axis,
               SourceLocation Loc) {
  if (Table.countAxis(Axis))
    return true;
  S.Diag(Loc, customDiag(S, DiagnosticsEngine::Error,
                         "too many mesh axes: the annotations of one "
                         "translation unit can name at most %0 distinct "
                         "axes, and '%1' is one more; split the file or "
                         "reuse axes"))
      << unsigned(AnnotationTable::MaxAxes) << Axis;
  return false;
}

/// Moves \p Parsed into \p A's entries; an axis given twice, or one more
/// than the translation unit can hold (countAxis), is reported (the first
/// with a note at its first use) and returns false.
bool addTypeEntries(Sema &S, AnnotationTable &Table, TypeAnnotation &A,
                    SmallVectorImpl<AxisEntry> &Parsed) {
  bool OK = true;
  for (AxisEntry &Entry : Parsed) {
    const AxisEntry *E = &Entry;
    if (!countAxis(S, Table, E->Axis, E->Loc)) {
      OK = false;
      continue;
    }
    if (const AxisEntry *Prev = A.entry(E->Axis)) {
      S.Diag(E->Loc, customDiag(S, DiagnosticsEngine::Error,
                                "axis '%0' appears twice in 'spmd::type'"))
          << E->Axis;
      S.Diag(Prev->Loc, customDiag(S, DiagnosticsEngine::Note,
                                   "axis '%0' first given here"))
          << E->Axis;
      OK = false;
      continue;
    }
    A.Entries.push_back(std::move(Entry));
  }
  return OK;
}

struct SpmdAttrInfo : public ParsedAttrInfo {
  AttrWhich Which;

  SpmdAttrInfo(AttrWhich W, ArrayRef<Spelling> Sp, unsigned NumArgs,
               unsigned OptArgs)
      : Which(W) {
    this->NumArgs = NumArgs;
    this->OptArgs = OptArgs;
    Spellings = Sp;
  }

  /// Rejects `[[type(...)]]`: the bare spelling exists only so that Clang
  /// parses the arguments of the scoped one.
  bool checkScope(Sema &S, const ParsedAttr &Attr) const {
    if (Attr.hasScope() && Attr.getScopeName()->getName() == "spmd")
      return true;
    S.Diag(Attr.getLoc(),
           customDiag(S, DiagnosticsEngine::Error,
                      "SPMD attribute '%0' must be written with its "
                      "namespace: [[%1(...)]]"))
        << Attr.getAttrName()->getName() << attrName(Which)
        << FixItHint::CreateInsertion(Attr.getLoc(), "spmd::");
    return false;
  }

  bool diagAppertainsToDecl(Sema &S, const ParsedAttr &Attr,
                            const Decl *D) const override {
    if (!checkScope(S, Attr))
      return false;
    bool OK;
    if (Which == AttrWhich::Type) {
      const auto *VD = dyn_cast<VarDecl>(D);
      OK = isa<FunctionDecl>(D) || isa<ParmVarDecl>(D) ||
           (isa<FieldDecl>(D) && !isa<ObjCIvarDecl>(D)) ||
           // A static, thread_local or extern local lives across calls:
           // not a per-call value the dataflow can follow.
           (VD && VD->isLocalVarDecl() && VD->hasLocalStorage());
    } else if (Which == AttrWhich::When || Which == AttrWhich::Unless) {
      // Whether the function is a method is checked at the end of the
      // translation unit (a parameter has no function yet here).
      OK = isa<FunctionDecl>(D) || isa<ParmVarDecl>(D);
    } else if (Which == AttrWhich::Op) {
      // On a callable member or local (std::function, a function pointer):
      // calls through it are typed as an op of that class.
      const auto *VD = dyn_cast<VarDecl>(D);
      OK = isa<FunctionDecl>(D) || isa<FieldDecl>(D) ||
           (VD && !isa<ParmVarDecl>(VD) && VD->isLocalVarDecl());
    } else if (Which == AttrWhich::AxisSize || Which == AttrWhich::AxisRank ||
               Which == AttrWhich::AxisGroup) {
      // An accessor (not for axis_group), or a variable, parameter or data
      // member holding the size, the rank or the group object.
      OK = (Which != AttrWhich::AxisGroup && isa<FunctionDecl>(D)) ||
           isa<VarDecl>(D) || (isa<FieldDecl>(D) && !isa<ObjCIvarDecl>(D));
    } else {
      OK = isa<FunctionDecl>(D);
    }
    if (OK)
      return true;
    S.Diag(Attr.getLoc(),
           customDiag(S, DiagnosticsEngine::Error,
                      Which == AttrWhich::Type
                          ? "'%0' applies to local variables, parameters, "
                            "functions (their result) and non-static data "
                            "members, not to %1"
                      : Which == AttrWhich::When || Which == AttrWhich::Unless
                          ? "'%0' applies to methods and their parameters, "
                            "not to %1"
                      : Which == AttrWhich::Op
                          ? "'%0' applies to functions and to callable data "
                            "members and local variables, not to %1"
                      : Which == AttrWhich::AxisGroup
                          ? "'%0' applies to variables, parameters and data "
                            "members holding a process group, not to %1"
                      : Which == AttrWhich::AxisSize ||
                              Which == AttrWhich::AxisRank
                          ? "'%0' applies to functions, variables, parameters "
                            "and data members, not to %1"
                          : "'%0' applies to functions, not to %1"))
        << attrName(Which) << describe(D) << Attr.getRange();
    return false;
  }

  static std::string describe(const Decl *D) {
    if (const auto *VD = dyn_cast<VarDecl>(D)) {
      if (VD->isStaticDataMember())
        return "static data members";
      if (VD->isLocalVarDecl()) {
        if (VD->getTSCSpec() != TSCS_unspecified)
          return "thread_local local variables";
        if (VD->hasExternalStorage())
          return "extern local variables";
        return "static local variables";
      }
      return "global or namespace-scope variables";
    }
    if (isa<FieldDecl>(D))
      return "data members";
    if (isa<ParmVarDecl>(D))
      return "parameters";
    if (isa<TypeDecl>(D))
      return "types";
    if (isa<NamespaceDecl>(D))
      return "namespaces";
    return std::string("'") + D->getDeclKindName() + "' declarations";
  }

  AttrHandling handleDeclAttribute(Sema &S, Decl *D,
                                   const ParsedAttr &Attr) const override {
    if (!checkScope(S, Attr))
      return AttributeNotApplied;
    for (unsigned I = 0; I < Attr.getNumArgs(); ++I) {
      // Clang parses a lone identifier as first argument as an identifier,
      // not an expression: `mesh(dp, tp)`, `op(linear)`.
      if (Attr.isArgIdent(I)) {
        if (Which == AttrWhich::Type ||
            ((Which == AttrWhich::When || Which == AttrWhich::Unless) &&
             I > 0)) {
          IdentifierLoc *IL = Attr.getArgAsIdent(I);
          S.Diag(IL->Loc,
                 customDiag(S, DiagnosticsEngine::Error, msg::LoneAxis))
              << IL->Ident->getName();
          return AttributeNotApplied;
        }
        continue;
      }
      if (!Attr.getArgAsExpr(I))
        return AttributeNotApplied;
      const Expr *E = Attr.getArgAsExpr(I);
      if (E->containsErrors())
        return AttributeNotApplied; // Sema already said why.
      if (E->isValueDependent() || E->isTypeDependent()) {
        S.Diag(E->getExprLoc(),
               customDiag(S, DiagnosticsEngine::Warning, msg::Dependent))
            << attrName(Which);
        return AttributeNotApplied;
      }
    }
    AnnotationTable &Table = AnnotationTable::get(S.getASTContext());
    switch (Which) {
    case AttrWhich::Type:
      return handleType(S, D, Attr, Table);
    case AttrWhich::Mesh:
      return handleMesh(S, D, Attr, Table);
    case AttrWhich::Op:
      return handleOp(S, D, Attr, Table);
    case AttrWhich::Unchecked:
      Table.setUnchecked(D);
      return AttributeApplied;
    case AttrWhich::Local:
      return handleLocal(S, D, Attr, Table);
    case AttrWhich::AxisSize:
    case AttrWhich::AxisRank:
    case AttrWhich::AxisGroup:
      return handleAxisAccessor(S, D, Attr, Table);
    case AttrWhich::When:
    case AttrWhich::Unless:
      return handleWhen(S, D, Attr, Table);
    }
    return AttributeNotApplied;
  }

  /// [[spmd::when(flag, axis = type, ...)]] / [[spmd::unless(...)]]: the
  /// flag is a data member named by a bare identifier (the class may not be
  /// complete yet; the name is resolved when the method is analysed).
  AttrHandling handleWhen(Sema &S, Decl *D, const ParsedAttr &Attr,
                          AnnotationTable &Table) const {
    const char *Name = attrName(Which);
    if (Attr.getNumArgs() < 2 || !Attr.isArgIdent(0)) {
      S.Diag(Attr.getLoc(),
             customDiag(S, DiagnosticsEngine::Error,
                        "'%0' takes the name of a bool data member and at "
                        "least one 'axis = type', e.g. [[%0(gather_output_, "
                        "tp = I)]]"))
          << Name;
      return AttributeNotApplied;
    }
    WhenAnnotation W;
    IdentifierLoc *IL = Attr.getArgAsIdent(0);
    W.Flag = IL->Ident->getName().str();
    W.FlagLoc = IL->Loc;
    W.Value = Which == AttrWhich::When;
    W.Type.Loc = Attr.getLoc();
    bool OK = true;
    for (unsigned I = 1; I < Attr.getNumArgs(); ++I) {
      std::optional<AxisEntry> E = parseEntry(S, Attr.getArgAsExpr(I), Name);
      if (!E) {
        OK = false;
        continue;
      }
      if (!countAxis(S, Table, E->Axis, E->Loc)) {
        OK = false;
        continue;
      }
      if (W.Type.entry(E->Axis)) {
        S.Diag(E->Loc, customDiag(S, DiagnosticsEngine::Error,
                                  "axis '%0' appears twice in '%1'"))
            << E->Axis << Name;
        OK = false;
        continue;
      }
      W.Type.Entries.push_back(std::move(*E));
    }
    if (!OK)
      return AttributeNotApplied;
    Table.addWhen(D, std::move(W));
    return AttributeApplied;
  }

  /// The one string argument of [[spmd::type("dp = R")]], the form
  /// SPMD_TYPE expands to (AnnotationText.h), or null.
  static const StringLiteral *typeText(const ParsedAttr &Attr) {
    if (Attr.getNumArgs() != 1 || !Attr.isArgExpr(0))
      return nullptr;
    return dyn_cast<StringLiteral>(Attr.getArgAsExpr(0)->IgnoreParenImpCasts());
  }

  AttrHandling handleType(Sema &S, Decl *D, const ParsedAttr &Attr,
                          AnnotationTable &Table) const {
    if (Attr.getNumArgs() == 0) {
      S.Diag(Attr.getLoc(),
             customDiag(S, DiagnosticsEngine::Error,
                        "'spmd::type' needs at least one 'axis = type' "
                        "argument, e.g. [[spmd::type(dp = R, tp = V)]]"));
      return AttributeNotApplied;
    }
    TypeAnnotation A;
    A.Loc = Attr.getLoc();
    // A rank from spmd::rank and one from spmd::spec, checked to agree.
    int SpecRank = -1;
    SourceLocation SpecLoc;
    SmallVector<AxisEntry, 4> Parsed;
    bool OK;
    if (const StringLiteral *Text = typeText(Attr)) {
      ReadResult R = readTypeText(S, Text, A, Parsed, SpecRank, SpecLoc);
      if (R == ReadResult::Ignored)
        return AttributeNotApplied;
      OK = R == ReadResult::Read;
    } else {
      OK = parseTypeArgs(S, Attr, A, Parsed, SpecRank, SpecLoc);
    }
    if (!reconcileSpecRank(S, A, SpecRank, SpecLoc))
      OK = false;
    if (!addTypeEntries(S, Table, A, Parsed))
      OK = false;
    if (OK && A.Entries.empty() && !SpecLoc.isValid()) {
      S.Diag(Attr.getLoc(),
             customDiag(S, DiagnosticsEngine::Error,
                        "'spmd::type' with 'spmd::rank' needs at least one "
                        "'axis = type' argument, e.g. [[spmd::type(tp = "
                        "S(-1), spmd::rank(3))]]"));
      OK = false;
    }
    if (!OK)
      return AttributeNotApplied;
    Table.setType(D, std::move(A));
    return AttributeApplied;
  }

  AttrHandling handleMesh(Sema &S, Decl *D, const ParsedAttr &Attr,
                          AnnotationTable &Table) const {
    if (Attr.getNumArgs() == 0) {
      S.Diag(Attr.getLoc(),
             customDiag(S, DiagnosticsEngine::Error,
                        "'spmd::mesh' needs at least one axis, e.g. "
                        "[[spmd::mesh(dp, tp)]]"));
      return AttributeNotApplied;
    }
    MeshAnnotation M;
    M.Loc = Attr.getLoc();
    llvm::StringSet<> Seen;
    for (unsigned I = 0; I < Attr.getNumArgs(); ++I) {
      std::optional<std::string> Axis;
      SourceLocation Loc;
      if (Attr.isArgIdent(I)) {
        IdentifierLoc *IL = Attr.getArgAsIdent(I);
        Loc = IL->Loc;
        LookupResult R(S, IL->Ident, IL->Loc, Sema::LookupOrdinaryName);
        S.LookupName(R, S.getCurScope());
        const auto *VD = R.getAsSingle<VarDecl>();
        if (R.getAsSingle<NonTypeTemplateParmDecl>() ||
            (VD && VD->getType()->isDependentType())) {
          // As for `W::ax` (an expression that depends on a parameter).
          S.Diag(Loc, customDiag(S, DiagnosticsEngine::Warning, msg::Dependent))
              << "spmd::mesh";
          return AttributeNotApplied;
        }
        if (VD)
          Axis = axisOfVar(VD);
      } else {
        const Expr *E = Attr.getArgAsExpr(I);
        Loc = E->getExprLoc();
        Axis = evaluateAxis(E, S.getASTContext(), nullptr);
      }
      if (!Axis || Axis->empty()) {
        S.Diag(Loc, customDiag(S, DiagnosticsEngine::Error,
                               "argument of 'spmd::mesh' must be an spmd::Axis "
                               "constant (declare it with SPMD_AXIS(name))"));
        return AttributeNotApplied;
      }
      if (!Seen.insert(*Axis).second) {
        S.Diag(Loc, customDiag(S, DiagnosticsEngine::Error,
                               "axis '%0' appears twice in 'spmd::mesh'"))
            << *Axis;
        return AttributeNotApplied;
      }
      if (!countAxis(S, Table, *Axis, Loc))
        return AttributeNotApplied;
      M.Axes.push_back(*Axis);
    }
    Table.setMesh(D, std::move(M));
    return AttributeApplied;
  }

  /// [[spmd::local]] or [[spmd::local(spmd::Infer)]] (spec §12.3's
  /// local_map with in_types = Infer).
  AttrHandling handleLocal(Sema &S, Decl *D, const ParsedAttr &Attr,
                           AnnotationTable &Table) const {
    if (Attr.getNumArgs() == 0) {
      Table.setLocal(D);
      return AttributeApplied;
    }
    if (Attr.isArgIdent(0) &&
        Attr.getArgAsIdent(0)->Ident->getName() == "Infer") {
      return setLocalInfer(S, D, Table); // `using spmd::Infer;`
    }
    const Expr *E = Attr.isArgExpr(0) ? Attr.getArgAsExpr(0) : nullptr;
    if (!E || E->containsErrors() || !isSpmdRecord(E->getType(), "InferType")) {
      if (!E || !E->containsErrors())
        S.Diag(E ? E->getExprLoc() : Attr.getLoc(),
               customDiag(S, DiagnosticsEngine::Error,
                          "the argument of 'spmd::local' must be spmd::Infer "
                          "(the region's input types are inferred from the "
                          "arguments at its calls); without an argument the "
                          "parameters' [[spmd::type]] annotations are the "
                          "input types"));
      return AttributeNotApplied;
    }
    return setLocalInfer(S, D, Table);
  }

  /// An Infer region's input types come from its calls: a parameter with
  /// its own [[spmd::type]] contradicts that (spec §12.3: Infer is the
  /// whole in_types, not a leaf).
  AttrHandling setLocalInfer(Sema &S, Decl *D, AnnotationTable &Table) const {
    bool OK = true;
    if (const auto *FD = dyn_cast<FunctionDecl>(D))
      for (const ParmVarDecl *P : FD->parameters())
        if (const TypeAnnotation *A = Table.ownType(P)) {
          S.Diag(A->Loc,
                 customDiag(S, DiagnosticsEngine::Error,
                            "parameter '%0' of a local region with inferred "
                            "input types ([[spmd::local(spmd::Infer)]]) must "
                            "not have [[spmd::type]]: its type is inferred "
                            "from the arguments at the calls; remove the "
                            "annotation, or drop spmd::Infer to declare every "
                            "input"))
              << P->getName();
          OK = false;
        }
    if (!OK)
      return AttributeNotApplied;
    Table.setLocal(D, /*InferInputs=*/true);
    return AttributeApplied;
  }

  /// [[spmd::axis_size(tp)]] on a function that returns the number of ranks
  /// along axis tp: a branch taken only when it is 1 may skip collectives.
  /// [[spmd::axis_rank(tp)]] on a function that returns this rank's index
  /// along tp: a branch on it differs across the ranks of tp.
  /// [[spmd::axis_size(tp)]] / [[spmd::axis_rank(tp)]] on a variable,
  /// parameter or data member of integer type: it holds that number.
  /// [[spmd::axis_group(tp)]] on a variable, parameter or data member of any
  /// type: the object is tp's process group; its size, rank and the
  /// accessors called on it are tp's (docs/type-system.md §18.3).
  AttrHandling handleAxisAccessor(Sema &S, Decl *D, const ParsedAttr &Attr,
                                  AnnotationTable &Table) const {
    bool Size = Which == AttrWhich::AxisSize;
    bool Group = Which == AttrWhich::AxisGroup;
    std::optional<std::string> Axis;
    SourceLocation Loc = Attr.getLoc();
    if (Attr.getNumArgs() == 1) {
      if (Attr.isArgIdent(0)) {
        IdentifierLoc *IL = Attr.getArgAsIdent(0);
        Loc = IL->Loc;
        LookupResult R(S, IL->Ident, IL->Loc, Sema::LookupOrdinaryName);
        S.LookupName(R, S.getCurScope());
        if (const auto *VD = R.getAsSingle<VarDecl>())
          Axis = axisOfVar(VD);
      } else {
        const Expr *E = Attr.getArgAsExpr(0);
        Loc = E->getExprLoc();
        Axis = evaluateAxis(E, S.getASTContext(), nullptr);
      }
    }
    if (!Axis || Axis->empty()) {
      S.Diag(Loc, customDiag(S, DiagnosticsEngine::Error,
                             Group  ? "'spmd::axis_group' takes one spmd::Axis "
                                      "constant, the axis whose process group "
                                      "the object is, e.g. "
                                      "[[spmd::axis_group(tp)]]"
                             : Size ? "'spmd::axis_size' takes one spmd::Axis "
                                      "constant, the axis whose number of "
                                      "ranks the function returns, e.g. "
                                      "[[spmd::axis_size(tp)]]"
                                    : "'spmd::axis_rank' takes one spmd::Axis "
                                      "constant, the axis along which the "
                                      "function returns this rank's index, "
                                      "e.g. [[spmd::axis_rank(tp)]]"));
      return AttributeNotApplied;
    }
    if (!Group && !isa<FunctionDecl>(D)) {
      QualType T = cast<ValueDecl>(D)->getType().getNonReferenceType();
      if (!T->isIntegerType() || T->isBooleanType()) {
        S.Diag(Attr.getLoc(),
               customDiag(S, DiagnosticsEngine::Error,
                          "'%0' on a variable or data member needs an integer "
                          "type (it holds the number), not %1; for the "
                          "process-group object itself write "
                          "[[spmd::axis_group(%2)]]"))
            << attrName(Which) << T << *Axis << Attr.getRange();
        return AttributeNotApplied;
      }
    }
    if (Group)
      Table.setAxisGroup(D, std::move(*Axis));
    else if (Size)
      Table.setAxisSize(D, std::move(*Axis));
    else
      Table.setAxisRank(D, std::move(*Axis));
    return AttributeApplied;
  }

  AttrHandling handleOp(Sema &S, Decl *D, const ParsedAttr &Attr,
                        AnnotationTable &Table) const {
    std::optional<std::string> Text;
    if (Attr.isArgIdent(0)) { // [[spmd::op(linear)]]
      IdentifierLoc *IL = Attr.getArgAsIdent(0);
      Text = IL->Ident->getName().str();
      core::Result<core::OpClass> Parsed = core::parse_op_class(*Text);
      if (Parsed.ok()) {
        Table.setOpClass(D, *Parsed);
        return AttributeApplied;
      }
      S.Diag(IL->Loc, customDiag(S, DiagnosticsEngine::Error,
                                 "argument of 'spmd::op' must be linear, "
                                 "multilinear or nonlinear (got '%0')"))
          << *Text;
      return AttributeNotApplied;
    }
    const Expr *E = Attr.getArgAsExpr(0);
    Expr::EvalResult R;
    if (const auto *SL = dyn_cast<StringLiteral>(E->IgnoreParenImpCasts()))
      Text = SL->isOrdinary()
                 ? std::optional<std::string>(SL->getString().str())
                 : std::nullopt;
    else if (E->EvaluateAsRValue(R, S.getASTContext()))
      Text = stringOf(R.Val);
    std::optional<core::OpClass> C;
    if (Text) {
      core::Result<core::OpClass> Parsed = core::parse_op_class(*Text);
      if (Parsed.ok())
        C = *Parsed;
    }
    if (!C) {
      S.Diag(E->getExprLoc(),
             customDiag(S, DiagnosticsEngine::Error,
                        "argument of 'spmd::op' must be \"linear\", "
                        "\"multilinear\" or \"nonlinear\"%0"))
          << (Text ? " (got \"" + *Text + "\")" : std::string())
          << E->getSourceRange();
      return AttributeNotApplied;
    }
    Table.setOpClass(D, *C);
    return AttributeApplied;
  }
};

// Spellings: scoped and bare (see the file comment).
constexpr ParsedAttrInfo::Spelling TypeSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::type"}, {ParsedAttr::AS_CXX11, "type"}};
constexpr ParsedAttrInfo::Spelling MeshSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::mesh"}, {ParsedAttr::AS_CXX11, "mesh"}};
constexpr ParsedAttrInfo::Spelling OpSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::op"}, {ParsedAttr::AS_CXX11, "op"}};
constexpr ParsedAttrInfo::Spelling AxisSizeSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::axis_size"},
    {ParsedAttr::AS_CXX11, "axis_size"}};
constexpr ParsedAttrInfo::Spelling AxisRankSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::axis_rank"},
    {ParsedAttr::AS_CXX11, "axis_rank"}};
constexpr ParsedAttrInfo::Spelling AxisGroupSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::axis_group"},
    {ParsedAttr::AS_CXX11, "axis_group"}};
constexpr ParsedAttrInfo::Spelling LocalSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::local"}, {ParsedAttr::AS_CXX11, "local"}};
constexpr ParsedAttrInfo::Spelling WhenSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::when"}, {ParsedAttr::AS_CXX11, "when"}};
constexpr ParsedAttrInfo::Spelling UnlessSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::unless"}, {ParsedAttr::AS_CXX11, "unless"}};
constexpr ParsedAttrInfo::Spelling UncheckedSpellings[] = {
    {ParsedAttr::AS_CXX11, "spmd::unchecked"},
    {ParsedAttr::AS_CXX11, "unchecked"}};

struct TypeAttrInfo : SpmdAttrInfo {
  TypeAttrInfo() : SpmdAttrInfo(AttrWhich::Type, TypeSpellings, 0, 15) {}
};
struct MeshAttrInfo : SpmdAttrInfo {
  MeshAttrInfo() : SpmdAttrInfo(AttrWhich::Mesh, MeshSpellings, 0, 15) {}
};
struct OpAttrInfo : SpmdAttrInfo {
  OpAttrInfo() : SpmdAttrInfo(AttrWhich::Op, OpSpellings, 1, 0) {}
};
struct AxisSizeAttrInfo : SpmdAttrInfo {
  AxisSizeAttrInfo()
      : SpmdAttrInfo(AttrWhich::AxisSize, AxisSizeSpellings, 0, 15) {}
};
struct AxisRankAttrInfo : SpmdAttrInfo {
  AxisRankAttrInfo()
      : SpmdAttrInfo(AttrWhich::AxisRank, AxisRankSpellings, 0, 15) {}
};
struct AxisGroupAttrInfo : SpmdAttrInfo {
  AxisGroupAttrInfo()
      : SpmdAttrInfo(AttrWhich::AxisGroup, AxisGroupSpellings, 0, 15) {}
};
struct LocalAttrInfo : SpmdAttrInfo {
  LocalAttrInfo() : SpmdAttrInfo(AttrWhich::Local, LocalSpellings, 0, 1) {}
};
struct WhenAttrInfo : SpmdAttrInfo {
  WhenAttrInfo() : SpmdAttrInfo(AttrWhich::When, WhenSpellings, 0, 15) {}
};
struct UnlessAttrInfo : SpmdAttrInfo {
  UnlessAttrInfo() : SpmdAttrInfo(AttrWhich::Unless, UnlessSpellings, 0, 15) {}
};
struct UncheckedAttrInfo : SpmdAttrInfo {
  UncheckedAttrInfo()
      : SpmdAttrInfo(AttrWhich::Unchecked, UncheckedSpellings, 0, 0) {}
};

ParsedAttrInfoRegistry::Add<TypeAttrInfo>
    RegisterType("spmd::type", "SPMD type of a tensor value");
ParsedAttrInfoRegistry::Add<MeshAttrInfo>
    RegisterMesh("spmd::mesh", "mesh axes in scope of a function");
ParsedAttrInfoRegistry::Add<OpAttrInfo>
    RegisterOp("spmd::op", "propagation class of an opaque function");
ParsedAttrInfoRegistry::Add<AxisSizeAttrInfo>
    RegisterAxisSize("spmd::axis_size",
                     "the function returns the number of ranks of an axis");
ParsedAttrInfoRegistry::Add<AxisRankAttrInfo>
    RegisterAxisRank("spmd::axis_rank",
                     "the function returns this rank's index along an axis");
ParsedAttrInfoRegistry::Add<AxisGroupAttrInfo>
    RegisterAxisGroup("spmd::axis_group",
                      "the object is the process group of an axis");
ParsedAttrInfoRegistry::Add<LocalAttrInfo>
    RegisterLocal("spmd::local",
                  "a local region in global mode (local_map, spec 12.3)");
ParsedAttrInfoRegistry::Add<WhenAttrInfo>
    RegisterWhen("spmd::when", "types of an instance whose flag is true");
ParsedAttrInfoRegistry::Add<UnlessAttrInfo>
    RegisterUnless("spmd::unless", "types of an instance whose flag is false");
ParsedAttrInfoRegistry::Add<UncheckedAttrInfo>
    RegisterUnchecked("spmd::unchecked", "skip the body of a function");

} // namespace

/// Referenced by the analysis so that a static link pulls this file (and the
/// attribute registrations above) into every client.
void linkAttributes() {}

} // namespace spmd::plugin
