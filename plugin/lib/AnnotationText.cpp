//===- AnnotationText.cpp - the text form of [[spmd::type]] ---------------===//
//
// Reads "dp = V, tp = S(0), spmd::rank(2)", the string SPMD_TYPE makes of its
// arguments (AnnotationText.h has the grammar). Names are looked up with
// Sema from the scope being parsed, so an axis means what it would mean in
// the expression form `[[spmd::type(dp = V)]]`; only the overload resolution
// and constant evaluation of every `axis = type` are saved.
//
//===----------------------------------------------------------------------===//

#include "AnnotationText.h"
#include "AttributeMessages.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/Basic/CharInfo.h"
#include "clang/Lex/Lexer.h"
#include "clang/Sema/Lookup.h"
#include "clang/Sema/Scope.h"
#include "llvm/Support/MathExtras.h"

#include <cstdint>

#include <optional>

using namespace clang;

namespace spmd::plugin {

namespace {

/// A token of the annotation text.
struct Tok {
  enum Kind : unsigned char { Ident, Number, Punct, End } K;
  llvm::StringRef Text;
  unsigned Offset; ///< in the text
  bool is(llvm::StringRef P) const { return K == Punct && Text == P; }
};

/// Splits \p Text into identifiers, numbers and punctuators (`::` is one);
/// whitespace and comments are skipped. Returns the offset of the first
/// character no entry can hold, or npos when there is none.
size_t tokenize(llvm::StringRef Text, llvm::SmallVectorImpl<Tok> &Out) {
  size_t I = 0, N = Text.size();
  while (I < N) {
    char C = Text[I];
    size_t B = I;
    if (isWhitespace(C)) {
      ++I;
    } else if (Text.substr(I).starts_with("//")) {
      I = std::min(Text.find('\n', I), N);
    } else if (Text.substr(I).starts_with("/*")) {
      size_t E = Text.find("*/", I + 2);
      if (E == llvm::StringRef::npos)
        return B;
      I = E + 2;
    } else if (isAsciiIdentifierStart(C) || isDigit(C)) {
      while (I < N && (isAsciiIdentifierContinue(Text[I]) ||
                       (isDigit(C) && Text[I] == '\'')))
        ++I;
      Out.push_back({isDigit(C) ? Tok::Number : Tok::Ident, Text.slice(B, I),
                     unsigned(B)});
    } else if (Text.substr(I).starts_with("::")) {
      I += 2;
      Out.push_back({Tok::Punct, Text.slice(B, I), unsigned(B)});
    } else if (llvm::StringRef("=,(){}-+*/%").contains(C)) {
      ++I;
      Out.push_back({Tok::Punct, Text.slice(B, I), unsigned(B)});
    } else {
      return B;
    }
  }
  return llvm::StringRef::npos;
}

/// Where each token of the text is written. The text is the stringized
/// argument list of a macro invocation (SPMD_TYPE): when the invocation's own
/// argument tokens are the same tokens, each maps to its own; otherwise (an
/// annotation built by another macro) every token maps to the invocation. A
/// string written directly maps into itself.
class TokenLocations {
public:
  TokenLocations(const StringLiteral *Lit, llvm::ArrayRef<Tok> Toks,
                 const SourceManager &SM, const LangOptions &LO) {
    SourceLocation L = Lit->getBeginLoc();
    Fallback = L;
    if (L.isFileID()) {
      // [[spmd::type("tp = R")]]: the text follows the opening quote unless
      // the literal has a prefix or escapes, which the check below finds.
      const char *Data = SM.getCharacterData(L);
      for (const Tok &T : Toks) {
        if (llvm::StringRef(Data + 1 + T.Offset, T.Text.size()) != T.Text) {
          Locs.clear();
          return;
        }
        Locs.push_back(L.getLocWithOffset(1 + T.Offset));
      }
      return;
    }
    CharSourceRange Range = SM.getExpansionRange(L);
    Fallback = Range.getBegin();
    bool Invalid = false;
    llvm::StringRef Src = Lexer::getSourceText(Range, SM, LO, &Invalid);
    size_t Open = Src.find('(');
    if (Invalid || Open == llvm::StringRef::npos || !Src.ends_with(")"))
      return;
    llvm::SmallVector<Tok, 16> Own;
    if (tokenize(Src.slice(Open + 1, Src.size() - 1), Own) !=
            llvm::StringRef::npos ||
        Own.size() != Toks.size())
      return;
    for (size_t I = 0; I < Own.size(); ++I)
      if (Own[I].Text != Toks[I].Text)
        return;
    for (const Tok &T : Own)
      Locs.push_back(Fallback.getLocWithOffset(Open + 1 + T.Offset));
  }

  SourceLocation at(size_t I) const {
    return I < Locs.size() ? Locs[I] : Fallback;
  }

private:
  llvm::SmallVector<SourceLocation, 16> Locs;
  SourceLocation Fallback;
};

/// A name as written: `tp`, `mesh::tp`, `::spmd::R`.
struct Name {
  llvm::SmallVector<llvm::StringRef, 3> Parts;
  bool Global = false;
  size_t First = 0; ///< its first token
};

/// The reader of one annotation's text (AnnotationText.h).
class TypeTextReader {
public:
  TypeTextReader(Sema &S, const StringLiteral *Lit, llvm::ArrayRef<Tok> Toks)
      : S(S), Toks(Toks),
        Locs(Lit, Toks, S.getSourceManager(), S.getLangOpts()) {}

  ReadResult read(TypeAnnotation &A, llvm::SmallVectorImpl<AxisEntry> &Parsed,
                  int &SpecRank, SourceLocation &SpecLoc) {
    while (true) {
      size_t Start = Pos;
      if (!entry(A, Parsed, SpecRank, SpecLoc)) {
        Pos = Start; // skip the whole entry, from outside its parentheses
        skipEntry();
      } else if (!atEntryEnd()) {
        bad(Pos, msg::EntryForm);
        skipEntry();
      }
      if (peek().K == Tok::End)
        break;
      ++Pos; // the comma
    }
    return Dependent ? ReadResult::Ignored
           : Errors  ? ReadResult::Invalid
                     : ReadResult::Read;
  }

  SourceLocation loc(size_t I) const { return Locs.at(I); }
  bool reported() const { return Errors || Dependent; }

private:
  Sema &S;
  llvm::ArrayRef<Tok> Toks;
  TokenLocations Locs;
  size_t Pos = 0;
  bool Errors = false, Dependent = false;

  const Tok &peek(size_t K = 0) const {
    static const Tok EndTok{Tok::End, "", 0};
    return Pos + K < Toks.size() ? Toks[Pos + K] : EndTok;
  }
  bool accept(llvm::StringRef P) {
    if (!peek().is(P))
      return false;
    ++Pos;
    return true;
  }
  bool atEntryEnd() const { return peek().K == Tok::End || peek().is(","); }

  /// Skips to the comma that ends the current entry (outside parentheses
  /// and braces), so that the next entry is read and reported on its own.
  void skipEntry() {
    int Depth = 0;
    for (; peek().K != Tok::End; ++Pos) {
      if (peek().is("(") || peek().is("{"))
        ++Depth;
      else if (peek().is(")") || peek().is("}"))
        Depth = std::max(0, Depth - 1);
      else if (Depth == 0 && peek().is(","))
        return;
    }
  }

  /// Reports \p Fmt (whose %0 is the attribute) at token \p I.
  bool bad(size_t I, const char *Fmt) {
    S.Diag(loc(I), customDiag(S, DiagnosticsEngine::Error, Fmt))
        << "spmd::type";
    Errors = true;
    return false;
  }

  std::optional<Name> name() {
    Name N;
    N.First = Pos;
    N.Global = accept("::");
    while (peek().K == Tok::Ident) {
      N.Parts.push_back(peek().Text);
      ++Pos;
      if (!peek().is("::") || peek(1).K != Tok::Ident)
        return N;
      ++Pos;
    }
    Pos = N.First;
    return std::nullopt;
  }

  /// Whether \p N is the vocabulary word \p Word of spmd/annotations.h:
  /// `Word`, `spmd::Word` or `spmd::types::Word`.
  static bool isWord(const Name &N, llvm::StringRef Word) {
    size_t K = N.Parts.size();
    if (N.Parts.back() != Word || K > 3)
      return false;
    if (K == 1)
      return !N.Global;
    return N.Parts[0] == "spmd" && (K == 2 || N.Parts[1] == "types");
  }

  /// The declaration \p N names from the scope being parsed, or null.
  NamedDecl *lookup(const Name &N) {
    ASTContext &Ctx = S.getASTContext();
    SourceLocation Loc = loc(N.First);
    DeclContext *DC = N.Global ? Ctx.getTranslationUnitDecl() : nullptr;
    auto Find = [&](llvm::StringRef Part, Sema::LookupNameKind Kind) {
      LookupResult R(S, &Ctx.Idents.get(Part), Loc, Kind);
      R.suppressDiagnostics();
      if (DC)
        S.LookupQualifiedName(R, DC);
      else
        S.LookupName(R, S.getCurScope());
      return R.getAsSingle<NamedDecl>();
    };
    for (size_t K = 0; K + 1 < N.Parts.size(); ++K) {
      NamedDecl *D = Find(N.Parts[K], Sema::LookupNestedNameSpecifierName);
      if (isa_and_nonnull<TemplateTypeParmDecl>(D)) {
        dependent(N.First); // `Axes::tp` in a template
        return nullptr;
      }
      if (auto *Alias = dyn_cast_or_null<NamespaceAliasDecl>(D))
        D = Alias->getNamespace();
      DC = dyn_cast_or_null<DeclContext>(D);
      if (!DC || !(isa<NamespaceDecl>(DC) || isa<CXXRecordDecl>(DC)))
        return nullptr;
    }
    return Find(N.Parts.back(), Sema::LookupOrdinaryName);
  }

  static std::string spelled(const Name &N) {
    std::string Out = N.Global ? "::" : "";
    for (size_t K = 0; K < N.Parts.size(); ++K)
      Out += (K ? "::" : "") + N.Parts[K].str();
    return Out;
  }

  /// The axis named by \p N. An unknown name is reported; a name that is
  /// not an axis constant too, unless \p InSpec (spec() reports the spec).
  std::optional<std::string> axis(const Name &N, const VarDecl **Decl,
                                  bool InSpec = false) {
    NamedDecl *D = lookup(N);
    if (Dependent)
      return std::nullopt;
    if (isa_and_nonnull<NonTypeTemplateParmDecl>(D) ||
        (isa_and_nonnull<VarDecl>(D) &&
         cast<VarDecl>(D)->getType()->isDependentType())) {
      dependent(N.First);
      return std::nullopt;
    }
    const auto *VD = dyn_cast_or_null<VarDecl>(D);
    std::optional<std::string> Axis = VD ? constantAxis(VD) : std::nullopt;
    if (!Axis || Axis->empty()) {
      if (!D) {
        S.Diag(loc(N.First),
               customDiag(S, DiagnosticsEngine::Error,
                          "unknown mesh axis '%0' in 'spmd::type': no "
                          "spmd::Axis constant of that name is in scope "
                          "(declare it with SPMD_AXIS(%0))"))
            << spelled(N);
        Errors = true;
      } else if (!InSpec) {
        bad(N.First, msg::AxisNotConstant);
      }
      return std::nullopt;
    }
    // The text names the constant as the expression form would: it is used.
    const_cast<VarDecl *>(VD)->setReferenced();
    if (Decl)
      *Decl = VD;
    return Axis;
  }

  void dependent(size_t I) {
    if (!Dependent)
      S.Diag(loc(I), customDiag(S, DiagnosticsEngine::Warning, msg::Dependent))
          << "spmd::type";
    Dependent = true;
  }

  /// An integer constant expression as S(k) and spmd::rank(n) take it:
  /// literals and constexpr integer names, with + - * / %, signs and
  /// parentheses (what the expression form would fold; nullopt on overflow
  /// or a division by zero).
  std::optional<int64_t> integer() {
    std::optional<int64_t> L = product();
    while (L && (peek().is("+") || peek().is("-"))) {
      bool Minus = peek().is("-");
      ++Pos;
      std::optional<int64_t> R = product();
      int64_t Out;
      if (!R || (Minus ? llvm::SubOverflow(*L, *R, Out)
                       : llvm::AddOverflow(*L, *R, Out)))
        return std::nullopt;
      L = Out;
    }
    return L;
  }

  std::optional<int64_t> product() {
    std::optional<int64_t> L = unary();
    while (L && (peek().is("*") || peek().is("/") || peek().is("%"))) {
      char Op = peek().Text[0];
      ++Pos;
      std::optional<int64_t> R = unary();
      int64_t Out = 0;
      if (!R || (Op == '*' && llvm::MulOverflow(*L, *R, Out)) ||
          (Op != '*' && (*R == 0 || (*R == -1 && *L == INT64_MIN))))
        return std::nullopt;
      L = Op == '*' ? Out : Op == '/' ? *L / *R : *L % *R;
    }
    return L;
  }

  std::optional<int64_t> unary() {
    if (accept("-")) {
      std::optional<int64_t> V = unary();
      if (!V || *V == INT64_MIN)
        return std::nullopt;
      return -*V;
    }
    if (accept("+"))
      return unary();
    if (accept("(")) {
      std::optional<int64_t> V = integer();
      return V && accept(")") ? V : std::nullopt;
    }
    return primary();
  }

  /// An integer literal or a constexpr integer variable.
  std::optional<int64_t> primary() {
    int64_t Value = 0;
    if (peek().K == Tok::Number) {
      std::string Digits = peek().Text.str();
      llvm::erase(Digits, '\'');
      if (llvm::StringRef(Digits).getAsInteger(0, Value))
        return std::nullopt;
      ++Pos;
      return Value;
    }
    std::optional<Name> N = name();
    if (!N)
      return std::nullopt;
    NamedDecl *D = lookup(*N);
    if (isa_and_nonnull<NonTypeTemplateParmDecl>(D)) {
      dependent(N->First);
      return std::nullopt;
    }
    const auto *VD = dyn_cast_or_null<VarDecl>(D);
    const APValue *V =
        VD && VD->getType()->isIntegralOrEnumerationType() &&
                VD->isUsableInConstantExpressions(S.getASTContext())
            ? VD->evaluateValue()
            : nullptr;
    if (!V || !V->isInt())
      return std::nullopt;
    const_cast<VarDecl *>(VD)->setReferenced();
    return V->getInt().getExtValue();
  }

  /// R, I, V, P, S(k) or a constexpr spmd::PerAxisType variable.
  std::optional<PerAxisType> type() {
    if (accept("(")) {
      std::optional<PerAxisType> T = type();
      return T && accept(")") ? T : std::nullopt;
    }
    std::optional<Name> N = name();
    if (!N)
      return std::nullopt;
    static constexpr std::pair<const char *, TypeKind> Words[] = {
        {"R", TypeKind::Replicate},
        {"I", TypeKind::Invariant},
        {"V", TypeKind::Varying},
        {"P", TypeKind::Partial}};
    for (const auto &[Word, Kind] : Words)
      if (isWord(*N, Word))
        return PerAxisType{Kind, 0};
    if (isWord(*N, "S") && accept("(")) {
      std::optional<int64_t> Dim = integer();
      if (!Dim || !accept(")") || *Dim < -64 || *Dim > 63)
        return std::nullopt;
      return PerAxisType{TypeKind::Shard, int(*Dim)};
    }
    const auto *VD = dyn_cast_or_null<VarDecl>(lookup(*N));
    return VD ? constantPerAxisType(VD) : std::nullopt;
  }

  bool entry(TypeAnnotation &A, llvm::SmallVectorImpl<AxisEntry> &Parsed,
             int &SpecRank, SourceLocation &SpecLoc) {
    std::optional<Name> N = name();
    if (!N)
      return bad(Pos, msg::EntryForm);
    if (peek().is("(") && isWord(*N, "rank"))
      return rank(*N, A);
    if (peek().is("(") && isWord(*N, "spec"))
      return spec(*N, Parsed, SpecRank, SpecLoc);
    if (!accept("=")) {
      if (N->Parts.size() == 1 && !N->Global && atEntryEnd()) {
        S.Diag(loc(N->First),
               customDiag(S, DiagnosticsEngine::Error, msg::LoneAxis))
            << N->Parts[0];
        Errors = true;
        return false;
      }
      return bad(N->First, msg::EntryForm);
    }
    AxisEntry Entry;
    Entry.Loc = loc(N->First);
    std::optional<std::string> Axis = axis(*N, &Entry.AxisDecl);
    if (!Axis)
      return false;
    Entry.Axis = std::move(*Axis);
    size_t TypeAt = Pos;
    std::optional<PerAxisType> T = type();
    if (!T || !atEntryEnd()) {
      if (!Dependent) {
        S.Diag(loc(TypeAt),
               customDiag(S, DiagnosticsEngine::Error, msg::TypeNotConstant))
            << Entry.Axis << "spmd::type";
        S.Diag(loc(TypeAt),
               customDiag(S, DiagnosticsEngine::Note,
                          "SPMD_TYPE reads R, I, V, P, S(k) and constexpr "
                          "spmd::PerAxisType names, k an integer expression "
                          "of literals and constexpr names (+ - * / %, "
                          "parentheses); for another constant expression "
                          "write [[spmd::type(...)]]"));
        Errors = true;
      }
      return false;
    }
    Entry.Type = *T;
    Parsed.push_back(std::move(Entry));
    return true;
  }

  bool rank(const Name &N, TypeAnnotation &A) {
    ++Pos; // (
    std::optional<int64_t> R = integer();
    if (!R || !accept(")") || *R < 0 || *R > 63 || A.Rank >= 0) {
      if (Dependent)
        return false;
      S.Diag(loc(N.First),
             customDiag(S, DiagnosticsEngine::Error, msg::BadRank));
      Errors = true;
      return false;
    }
    A.Rank = int(*R);
    return true;
  }

  /// spmd::spec(...): dim D listing axis a means `a = S(D)`; a tuple lists
  /// the axes of one dim outer to inner (spec §12.1).
  bool spec(const Name &N, llvm::SmallVectorImpl<AxisEntry> &Parsed,
            int &SpecRank, SourceLocation &SpecLoc) {
    SourceLocation Loc = loc(N.First);
    if (SpecLoc.isValid()) {
      S.Diag(Loc, customDiag(S, DiagnosticsEngine::Error, msg::SpecTwice));
      Errors = true;
      return false;
    }
    ++Pos; // (
    llvm::SmallVector<AxisEntry, 4> Entries;
    int Dims = 0;
    bool OK = accept(")");
    while (!OK) {
      if (!specDim(Dims, Loc, Entries))
        break;
      ++Dims;
      if (accept(")"))
        OK = true;
      else if (!accept(","))
        break;
    }
    if (!OK) {
      if (!Errors && !Dependent) {
        S.Diag(Loc, customDiag(S, DiagnosticsEngine::Error, msg::BadSpec));
        Errors = true;
      }
      return false;
    }
    Parsed.append(Entries.begin(), Entries.end());
    SpecRank = Dims;
    SpecLoc = Loc;
    return true;
  }

  /// One dim of a spec: None, an axis or a tuple {dp, tp}.
  bool specDim(int D, SourceLocation Loc,
               llvm::SmallVectorImpl<AxisEntry> &Entries) {
    bool Tuple = accept("{");
    for (int Position = 0;; ++Position) {
      std::optional<Name> N = name();
      if (!N)
        return false;
      if (!Tuple && isWord(*N, "None"))
        return true;
      AxisEntry Entry;
      std::optional<std::string> Axis =
          axis(*N, &Entry.AxisDecl, /*InSpec=*/true);
      if (!Axis)
        return false;
      Entry.Axis = std::move(*Axis);
      Entry.Type = PerAxisType{TypeKind::Shard, D};
      Entry.Loc = Loc;
      Entry.Pos = Position;
      Entries.push_back(std::move(Entry));
      if (!Tuple)
        return true;
      if (accept("}"))
        return true;
      if (!accept(","))
        return false;
    }
  }
};

} // namespace

ReadResult readTypeText(Sema &S, const StringLiteral *Text, TypeAnnotation &A,
                        llvm::SmallVectorImpl<AxisEntry> &Parsed, int &SpecRank,
                        SourceLocation &SpecLoc) {
  llvm::SmallVector<Tok, 16> Toks;
  llvm::StringRef Str = Text->isOrdinary() ? Text->getString() : "\"";
  // A character no entry holds (a string, an operator) ends the tokens:
  // what comes before it is read, so that a bad spec is reported as one.
  size_t Bad = tokenize(Str, Toks);
  TypeTextReader Reader(S, Text, Toks);
  if (Bad != llvm::StringRef::npos) {
    ReadResult R = Reader.read(A, Parsed, SpecRank, SpecLoc);
    if (!Reader.reported())
      S.Diag(Reader.loc(Toks.empty() ? 0 : Toks.size() - 1),
             customDiag(S, DiagnosticsEngine::Error, msg::EntryForm))
          << "spmd::type";
    return R == ReadResult::Ignored ? R : ReadResult::Invalid;
  }
  if (Toks.empty()) {
    S.Diag(Reader.loc(0),
           customDiag(S, DiagnosticsEngine::Error,
                      "'spmd::type' needs at least one 'axis = type' "
                      "argument, e.g. [[spmd::type(dp = R, tp = V)]]"));
    return ReadResult::Invalid;
  }
  return Reader.read(A, Parsed, SpecRank, SpecLoc);
}

} // namespace spmd::plugin
