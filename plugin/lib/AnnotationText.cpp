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

/// Whether \p C starts an identifier: as in C++, an ASCII letter, `_` or a
/// byte of a UTF-8 encoded character (Clang checks the characters themselves
/// when it lexes the axis declaration the name must match).
bool isIdentifierStart(char C) {
  return isAsciiIdentifierStart(C) || static_cast<unsigned char>(C) >= 0x80;
}
bool isIdentifierContinue(char C) {
  return isAsciiIdentifierContinue(C) || static_cast<unsigned char>(C) >= 0x80;
}

/// Splits \p Text into identifiers, numbers and punctuators (`::` is one);
/// whitespace and /* */ comments are skipped. Returns the offset of the first
/// character no entry can hold, or npos when there is none. `//` comments
/// are skipped only when \p LineComments (source text); in the annotation's
/// string `//` is such a character, as it would comment out the rest.
size_t tokenize(llvm::StringRef Text, llvm::SmallVectorImpl<Tok> &Out,
                bool LineComments = false) {
  size_t I = 0, N = Text.size();
  while (I < N) {
    char C = Text[I];
    size_t B = I;
    if (isWhitespace(C)) {
      ++I;
    } else if (Text.substr(I).starts_with("//")) {
      if (!LineComments)
        return B;
      I = std::min(Text.find('\n', I), N);
    } else if (Text.substr(I).starts_with("/*")) {
      size_t E = Text.find("*/", I + 2);
      if (E == llvm::StringRef::npos)
        return B;
      I = E + 2;
    } else if (isIdentifierStart(C) || isDigit(C)) {
      while (I < N &&
             (isIdentifierContinue(Text[I]) || (isDigit(C) && Text[I] == '\'')))
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
/// string written directly maps into itself, through its string tokens (it
/// may be continued by others, from macros too, and hold escapes).
class TokenLocations {
public:
  TokenLocations(const StringLiteral *Lit, llvm::ArrayRef<Tok> Toks,
                 const SourceManager &SM, const LangOptions &LO,
                 const TargetInfo &Target) {
    SourceLocation L = Lit->getBeginLoc();
    Fallback = L;
    if (L.isFileID()) {
      // [[spmd::type("tp = R")]]: one plain string token, `"` + the text +
      // `"`, holds the text right after its opening quote.
      if (Lit->getNumConcatenated() == 1 &&
          Lexer::MeasureTokenLength(L, SM, LO) == Lit->getByteLength() + 2) {
        for (const Tok &T : Toks)
          Locs.push_back(L.getLocWithOffset(1 + T.Offset));
        return;
      }
      // Otherwise each byte is found in the tokens (in order, so that each
      // search starts from the token of the last).
      unsigned StartToken = 0, StartOffset = 0;
      for (const Tok &T : Toks)
        Locs.push_back(Lit->getLocationOfByte(T.Offset, SM, LO, Target,
                                              &StartToken, &StartOffset));
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
    if (tokenize(Src.slice(Open + 1, Src.size() - 1), Own,
                 /*LineComments=*/true) != llvm::StringRef::npos ||
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
  /// Whether the tokens have their own locations (else all are Fallback).
  bool mapped() const { return !Locs.empty(); }

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
      : S(S), Toks(Toks), Locs(Lit, Toks, S.getSourceManager(), S.getLangOpts(),
                               S.getASTContext().getTargetInfo()) {}

  ReadResult read(TypeAnnotation &A, llvm::SmallVectorImpl<AxisEntry> &Parsed,
                  int &SpecRank, SourceLocation &SpecLoc) {
    bool Several = hasSeveralEntries();
    while (true) {
      size_t Start = Pos;
      EntryErrors = Errors;
      if (!entry(A, Parsed, SpecRank, SpecLoc)) {
        Pos = Start; // skip the whole entry, from outside its parentheses
        skipEntry();
      } else if (!atEntryEnd()) {
        bad(Pos, msg::EntryForm);
        skipEntry();
      }
      // Errors all reported at a macro's use: say which entry they are about.
      if (Errors != EntryErrors && Several && !Locs.mapped())
        S.Diag(loc(Start), customDiag(S, DiagnosticsEngine::Note,
                                      "in the entry '%0' of 'spmd::type'"))
            << spelling(Start, Pos);
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

  /// The most parentheses and signs one entry nests (Clang's default
  /// -fbracket-depth): the reader recurses on each.
  static constexpr unsigned MaxDepth = 256;

private:
  Sema &S;
  llvm::ArrayRef<Tok> Toks;
  TokenLocations Locs;
  size_t Pos = 0;
  unsigned Errors = 0;      ///< errors reported
  unsigned EntryErrors = 0; ///< errors reported before the current entry
  bool Dependent = false;
  unsigned Depth = 0;       ///< parentheses and signs entered
  bool TooDeep = false;     ///< Depth went past MaxDepth (reported)
  unsigned EntryParens = 0; ///< parentheses around the current entry

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
  bool atEntryEnd() const {
    return peek().K == Tok::End || peek().is(",") ||
           (EntryParens && peek().is(")"));
  }

  /// Whether the text has a comma outside parentheses and braces.
  bool hasSeveralEntries() const {
    int Nest = 0;
    for (const Tok &T : Toks) {
      if (T.is("(") || T.is("{"))
        ++Nest;
      else if (T.is(")") || T.is("}"))
        --Nest;
      else if (Nest == 0 && T.is(","))
        return true;
    }
    return false;
  }

  /// Tokens [\p B, \p E) as they would be written: `tp = S(0)`.
  std::string spelling(size_t B, size_t E) const {
    std::string Out;
    for (size_t I = B; I < E && I < Toks.size(); ++I) {
      const Tok &T = Toks[I];
      bool Tight = I == B || T.is("(") || T.is(")") || T.is("::") ||
                   T.is(",") || Toks[I - 1].is("(") || Toks[I - 1].is("::");
      Out += (Tight ? "" : " ") + T.Text.str();
    }
    return Out;
  }

  /// Enters one more parenthesis or sign at token \p I; past MaxDepth
  /// reports it (once) and returns false.
  bool enter(size_t I) {
    if (Depth < MaxDepth) {
      ++Depth;
      return true;
    }
    if (!TooDeep) {
      S.Diag(loc(I), customDiag(S, DiagnosticsEngine::Error,
                                "'spmd::type' nests parentheses and signs "
                                "more than 256 deep; write the entry with "
                                "fewer of them"));
      ++Errors;
    }
    TooDeep = true;
    return false;
  }

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
    ++Errors;
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
        ++Errors;
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
    if (!peek().is("-") && !peek().is("+") && !peek().is("("))
      return primary();
    if (!enter(Pos))
      return std::nullopt;
    std::optional<int64_t> V;
    if (accept("-")) {
      V = unary();
      V = V && *V != INT64_MIN ? std::optional<int64_t>(-*V) : std::nullopt;
    } else if (accept("+")) {
      V = unary();
    } else {
      ++Pos; // (
      V = integer();
      if (!accept(")"))
        V = std::nullopt;
    }
    --Depth;
    return V;
  }

  /// An integer literal or a constexpr integer variable.
  std::optional<int64_t> primary() {
    if (peek().K == Tok::Number) {
      std::string Digits = peek().Text.str();
      llvm::erase(Digits, '\'');
      // The suffixes of an integer literal (u, l, ll, z) change no value.
      llvm::StringRef Literal = llvm::StringRef(Digits).rtrim("uUlLzZ");
      llvm::APInt Value;
      if (Literal.getAsInteger(0, Value))
        return std::nullopt;
      if (Value.getActiveBits() > 63)
        return tooWide(Pos, peek().Text);
      ++Pos;
      return int64_t(Value.getZExtValue());
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
    if (!V->getInt().isRepresentableByInt64())
      return tooWide(N->First, spelled(*N));
    return V->getInt().getExtValue();
  }

  /// Reports the integer \p Written at token \p I as wider than 64 bits.
  std::nullopt_t tooWide(size_t I, llvm::StringRef Written) {
    S.Diag(loc(I), customDiag(S, DiagnosticsEngine::Error,
                              "integer '%0' in 'spmd::type' does not fit in "
                              "64 bits; an axis type takes a dimension "
                              "between -64 and 63"))
        << Written;
    ++Errors;
    return std::nullopt;
  }

  /// R, I, V, P, S(k) or a constexpr spmd::PerAxisType variable.
  std::optional<PerAxisType> type() {
    if (peek().is("(")) {
      if (!enter(Pos))
        return std::nullopt;
      ++Pos;
      std::optional<PerAxisType> T = type();
      --Depth;
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
    if (peek().is("(")) { // (tp = V), as the expression form reads it
      if (!enter(Pos))
        return false;
      ++Pos;
      ++EntryParens;
      bool OK = entry(A, Parsed, SpecRank, SpecLoc);
      --EntryParens;
      --Depth;
      if (!OK)
        return false;
      return accept(")") || bad(Pos, msg::EntryForm);
    }
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
        ++Errors;
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
      if (!Dependent && Errors == EntryErrors) {
        S.Diag(loc(TypeAt),
               customDiag(S, DiagnosticsEngine::Error, msg::TypeNotConstant))
            << Entry.Axis << "spmd::type";
        S.Diag(loc(TypeAt),
               customDiag(S, DiagnosticsEngine::Note,
                          "SPMD_TYPE reads R, I, V, P, S(k) and constexpr "
                          "spmd::PerAxisType names, k an integer expression "
                          "of literals and constexpr names (+ - * / %%, "
                          "parentheses); for another constant expression "
                          "write [[spmd::type(...)]]"));
        ++Errors;
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
      if (Dependent || Errors != EntryErrors)
        return false;
      S.Diag(loc(N.First),
             customDiag(S, DiagnosticsEngine::Error, msg::BadRank));
      ++Errors;
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
      ++Errors;
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
      if (Errors == EntryErrors && !Dependent) {
        S.Diag(Loc, customDiag(S, DiagnosticsEngine::Error, msg::BadSpec));
        ++Errors;
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
  if (Bad != llvm::StringRef::npos && Str.substr(Bad).starts_with("//")) {
    // Reported where the `//` is (a token only for its location).
    Toks.push_back({Tok::Punct, Str.substr(Bad, 2), unsigned(Bad)});
    TypeTextReader Reader(S, Text, Toks);
    S.Diag(Reader.loc(Toks.size() - 1),
           customDiag(S, DiagnosticsEngine::Error,
                      "'//' in the text of 'spmd::type' would comment out "
                      "the rest of it; remove it, or write a /* */ comment"));
    return ReadResult::Invalid;
  }
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
