// The text form's limits: what SPMD_TYPE and [[spmd::type("...")]] reject
// with an error instead of crashing or reading something else, and the
// spellings it reads as the expression form does (parenthesised entries,
// non-ASCII axis names). test/plugin/scripts/annotation_text_stress.py runs
// the same reader on generated inputs too large to write here.
// RUN-PLUGIN: -Xclang -verify -ferror-limit=0
#include "Inputs/prelude.h"

// --- nesting: at most 256 parentheses and signs ------------------------------

void deep_ok(SPMD_TYPE(tp = S(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((0)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) const Tensor& a,
             SPMD_TYPE(dp = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((R))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) const Tensor& b);
void deep_int(SPMD_TYPE(tp = S((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((0))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) const Tensor& a); // expected-error {{'spmd::type' nests parentheses and signs more than 256 deep; write the entry with fewer of them}}
void deep_type(SPMD_TYPE(tp = (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((R)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) const Tensor& a); // expected-error {{nests parentheses and signs more than 256 deep}}
void deep_signs([[spmd::type("tp = S(- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - 0)")]] const Tensor& a); // expected-error {{nests parentheses and signs more than 256 deep}}
// One error for the entry, and the next entry still read.
void deep_then_bad(SPMD_TYPE(tp = S((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((0)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))), dp = Q) const Tensor& a); // expected-error {{more than 256 deep}} expected-error {{type of axis 'dp' in 'spmd::type' must be a constant expression}} expected-note {{SPMD_TYPE reads R, I, V, P, S(k) and constexpr spmd::PerAxisType names, k an integer expression of literals and constexpr names (+ - * / %, parentheses)}}

// --- '//' in a string would comment out the rest -----------------------------

void line_comment([[spmd::type("dp = R // , tp = P")]] const Tensor& a); // expected-error-re {{{{^}}'//' in the text of 'spmd::type' would comment out the rest of it; remove it, or write a /* */ comment}}
void block_comment([[spmd::type("dp = R /* , tp = P */")]] const Tensor& a);
// A // comment inside SPMD_TYPE's arguments is the preprocessor's: fine.
void macro_comment(SPMD_TYPE(dp = R, // the batch
                             tp = Q) const Tensor& a); // expected-error {{type of axis 'tp' in 'spmd::type' must be a constant expression}} expected-note {{SPMD_TYPE reads}}

// --- integers wider than 64 bits ---------------------------------------------

constexpr __int128 kHuge = (__int128(1) << 100) + 1;
constexpr unsigned long long kBigUnsigned = ~0ull;
constexpr long long kOne = 1;
void wide_literal(SPMD_TYPE(tp = S(1267650600228229401496703205377)) const Tensor& a); // expected-error {{integer '1267650600228229401496703205377' in 'spmd::type' does not fit in 64 bits; an axis type takes a dimension between -64 and 63}}
void wide_u64(SPMD_TYPE(tp = S(18446744073709551617)) const Tensor& a); // expected-error {{integer '18446744073709551617' in 'spmd::type' does not fit in 64 bits}}
void wide_constant(SPMD_TYPE(tp = S(kHuge)) const Tensor& a); // expected-error {{integer 'kHuge' in 'spmd::type' does not fit in 64 bits}}
void wide_unsigned(SPMD_TYPE(tp = S(kBigUnsigned - 1)) const Tensor& a); // expected-error {{integer 'kBigUnsigned' in 'spmd::type' does not fit in 64 bits}}
// Literal suffixes and a 64-bit constant are read (the annotations hold:
// their P entries give the errors).
void suffixes(SPMD_TYPE(tp = S(1u - 1ull), dp = P, spmd::rank(2L)) const Tensor& a, // #suffixes
              SPMD_TYPE(tp = S(kOne), dp = P) const Tensor& b) { // #kone
  Tensor x = torch::relu(a); // expected-error {{torch::relu: Partial type on axis dp}} expected-note {{insert}}
  // expected-note@#suffixes {{'a' has type P on axis 'dp' declared here}}
  Tensor y = torch::relu(b); // expected-error {{torch::relu: Partial type on axis dp}} expected-note {{insert}}
  // expected-note@#kone {{'b' has type P on axis 'dp' declared here}}
}

// --- spellings the expression form accepts -----------------------------------

void parenthesised(SPMD_TYPE((tp = P), ((dp = R))) const Tensor& a, // #paren
                   SPMD_TYPE((spmd::rank(2)), tp = P) const Tensor& b) {
  Tensor x = torch::relu(a); // expected-error {{torch::relu: Partial type on axis tp}} expected-note {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R)}}
  // expected-note@#paren {{'a' has type P on axis 'tp' declared here}}
}
void paren_bad(SPMD_TYPE((tp = P) x) const Tensor& a); // expected-error {{argument of 'spmd::type' must be 'axis = type'}}

SPMD_AXIS(τ);
SPMD_AXIS(é_axis);
void non_ascii(SPMD_TYPE(τ = P, é_axis = R) const Tensor& a) { // #tau
  Tensor x = torch::relu(a); // expected-error {{torch::relu: Partial type on axis τ}} expected-note {{insert spmd::all_reduce(..., τ, spmd::P, spmd::R)}}
  // expected-note@#tau {{'a' has type P on axis 'τ' declared here}}
}
void non_ascii_unknown(SPMD_TYPE(σ = P) const Tensor& a); // expected-error {{unknown mesh axis 'σ' in 'spmd::type'}}

// --- an annotation built by another macro: each error names its entry -------

#define TWO_BAD SPMD_TYPE(tp P, dp P)
void two_bad(TWO_BAD const Tensor& a); // expected-error 2 {{argument of 'spmd::type' must be 'axis = type'}} expected-note {{in the entry 'tp P' of 'spmd::type'}} expected-note {{in the entry 'dp P' of 'spmd::type'}}
#define ONE_BAD SPMD_TYPE(tp P)
void one_bad(ONE_BAD const Tensor& a); // expected-error {{argument of 'spmd::type' must be 'axis = type'}}

// --- a string continued by a macro's string ---------------------------------

#define TP_ENTRY "    tp = Q"
void continued([[spmd::type("dp = R, " TP_ENTRY)]] const Tensor& a); // expected-error {{type of axis 'tp' in 'spmd::type' must be a constant expression}} expected-note {{SPMD_TYPE reads}}
void escaped([[spmd::type("dp = R,\n tp = Q")]] const Tensor& a); // expected-error {{type of axis 'tp' in 'spmd::type' must be a constant expression}} expected-note {{SPMD_TYPE reads}}
