// SPMD_TYPE(...) hands its entries to the plugin as text
// ([[spmd::type("dp = R")]]), read with the grammar of the expression form
// and with C++'s name lookup from where the annotation is written
// (plugin/lib/AnnotationText.h). Each spelling below is read to the type a
// later use shows (an error that only that type gives), and each bad entry is
// reported on its own line, as the expression form reports it.
// RUN-PLUGIN: -Xclang -verify -ferror-limit=0 -Wunused-variable -Wunused-const-variable -fplugin-arg-spmd-check-global
#include "Inputs/prelude.h"

namespace mesh {
SPMD_AXIS(ep);
}
namespace ax = mesh;
constexpr int kHidden = 1;
constexpr spmd::PerAxisType RowShard = spmd::S(0);
int not_an_axis = 0;

// --- spellings that read as the expression form would ----------------------

// spmd:: and spmd::types:: qualifiers, parentheses; the relu of a pending sum is an error
// whose note points at the entry.
void qualified(SPMD_TYPE(tp = (spmd::P)) const Tensor& a, // #qa
               SPMD_TYPE(tp = spmd::types::P) const Tensor& b, // #qb
               SPMD_TYPE(tp = ::spmd::P) const Tensor& c) { // #qc
  Tensor x = torch::relu(a); // expected-error {{torch::relu: Partial type on axis tp}} expected-note {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R)}}
  // expected-note@#qa {{'a' has type P on axis 'tp' declared here}}
  Tensor y = torch::relu(b); // expected-error {{Partial type on axis tp}} expected-note {{insert}}
  // expected-note@#qb {{'b' has type P on axis 'tp' declared here}}
  Tensor z = torch::relu(c); // expected-error {{Partial type on axis tp}} expected-note {{insert}}
  // expected-note@#qc {{'c' has type P on axis 'tp' declared here}}
}

// An axis from a namespace, through an alias, and a local axis constant (no
// unused-variable warning: the annotation uses it).
void namespaced(SPMD_TYPE(mesh::ep = P) const Tensor& a, // #na
                SPMD_TYPE(ax::ep = P) const Tensor& b) { // #nb
  Tensor x = torch::relu(a); // expected-error {{Partial type on axis ep}} expected-note {{insert spmd::all_reduce(..., mesh::ep, spmd::P, spmd::R)}}
  // expected-note@#na {{'a' has type P on axis 'ep' declared here}}
  Tensor y = torch::relu(b); // expected-error {{Partial type on axis ep}} expected-note {{insert}}
  // expected-note@#nb {{'b' has type P on axis 'ep' declared here}}
  constexpr spmd::Axis local_tp{"tp"};
  SPMD_TYPE(local_tp = V) Tensor v = x; // #lv
  SPMD_TYPE(local_tp = R) Tensor r = v; // expected-error {{initializer of 'r' has type V on axis 'tp', but 'r' is declared R there}}
  // expected-note@-1 {{declared type is {tp: R}}}
  // expected-note@#lv {{type V on axis 'tp' declared here}}
}

// S(k) with a negative literal, a constexpr integer, integer arithmetic
// (folded as C++ would: (1 * 4 - 2) / 2 % 2 = 1), and a named
// PerAxisType constant: the shard dims reach the global checker (S(1) of a
// rank-2 tensor is S(-1); S(0) is a different shard).
Tensor shards(SPMD_TYPE(tp = S(-1), spmd::rank(2)) const Tensor& a, // #sa
              SPMD_TYPE(tp = S(kHidden), spmd::rank(2)) const Tensor& b,
              SPMD_TYPE(tp = S((kHidden * 4 - 2) / 2 % 2), spmd::rank(1 + 1)) const Tensor& b2,
              SPMD_TYPE(tp = RowShard, spmd::rank(2)) const Tensor& c) { // #sc
  Tensor same = a + b + b2;
  return same + c; // expected-error {{operator+ on axis tp: args[0] is sharded on output dim 1 but args[1] on output dim 0}} expected-note {{all_to_all}}
  // expected-note@#sa {{'same' has type S(1) on axis 'tp' declared here}}
  // expected-note@#sc {{'c' has type S(0) on axis 'tp' declared here}}
}

// Spread over lines, with comments; macros in the entries are expanded (the
// entries are then reported at the start of the annotation).
#define TP_PARTIAL tp = P
void layout(SPMD_TYPE(dp = R,  // the data-parallel axis #tpp
                      /* the tensor-parallel axis: */ TP_PARTIAL)
                const Tensor& a) {
  Tensor x = torch::relu(a); // expected-error {{Partial type on axis tp}} expected-note {{insert}}
  // expected-note@#tpp {{'a' has type P on axis 'tp' declared here}}
}

// A PartitionSpec and a tuple read as in global_specs.cpp.
void specs(SPMD_TYPE(spmd::spec({dp, tp}, spmd::None)) const Tensor& a, // #pa
           SPMD_TYPE(spmd::spec(spmd::None, tp)) const Tensor& b) { // #pb
  Tensor x = a + b; // expected-error {{operator+ on axis tp: args[0] is sharded on output dim 0 but args[1] on output dim 1}} expected-note {{all_to_all}}
  // expected-note@#pa {{'a' has type S(0) on axis 'tp' declared here}}
  // expected-note@#pb {{'b' has type S(1) on axis 'tp' declared here}}
}

// The expression form is still read as before.
void expression_form([[spmd::type(tp = P)]] const Tensor& a) { // #ea
  Tensor x = torch::relu(a); // expected-error {{Partial type on axis tp}} expected-note {{insert}}
  // expected-note@#ea {{'a' has type P on axis 'tp' declared here}}
}

// --- bad entries, each reported on its own line ----------------------------

void unknown(SPMD_TYPE(dp = R, xp = V) const Tensor& a); // expected-error {{unknown mesh axis 'xp' in 'spmd::type': no spmd::Axis constant of that name is in scope (declare it with SPMD_AXIS(xp))}}
void not_axis(SPMD_TYPE(not_an_axis = R) const Tensor& a); // expected-error {{axis in 'spmd::type' must be a constant expression naming an spmd::Axis (declare it with SPMD_AXIS(name))}}
void bad_type(SPMD_TYPE(tp = Q) const Tensor& a); // expected-error {{type of axis 'tp' in 'spmd::type' must be a constant expression: R, I, V, P or S(k)}} expected-note {{SPMD_TYPE reads R, I, V, P, S(k) and constexpr spmd::PerAxisType names}}
void bad_dim(SPMD_TYPE(tp = S(x)) const Tensor& a); // expected-error {{type of axis 'tp' in 'spmd::type' must be a constant expression}} expected-note {{SPMD_TYPE reads R, I, V, P, S(k) and constexpr spmd::PerAxisType names}}
void lone(SPMD_TYPE(tp) const Tensor& a); // expected-error {{argument of 'spmd::type' must be 'axis = type', e.g. 'tp = R'}}
void empty(SPMD_TYPE() const Tensor& a); // expected-error {{'spmd::type' needs at least one 'axis = type' argument}}
void twice(SPMD_TYPE(tp = R, tp = V) const Tensor& a); // expected-error {{axis 'tp' appears twice in 'spmd::type'}} expected-note {{axis 'tp' first given here}}
void bad_rank(SPMD_TYPE(tp = R, spmd::rank(-1)) const Tensor& a); // expected-error {{'spmd::rank' in 'spmd::type' must be a constant between 0 and 63, given once}}
void garbage(SPMD_TYPE(tp = R + 1) const Tensor& a); // expected-error {{type of axis 'tp' in 'spmd::type' must be a constant expression}} expected-note {{SPMD_TYPE reads R, I, V, P, S(k) and constexpr spmd::PerAxisType names}}
void string_entry(SPMD_TYPE(tp = "R") const Tensor& a); // expected-error {{type of axis 'tp' in 'spmd::type' must be a constant expression}} expected-note {{SPMD_TYPE reads R, I, V, P, S(k) and constexpr spmd::PerAxisType names}}
void spec_entry(SPMD_TYPE(spmd::spec(tp, 3)) const Tensor& a); // expected-error {{'spmd::spec' in 'spmd::type' must be a constant expression whose entries are}}
void two_bad(SPMD_TYPE(xp = R, // expected-error {{unknown mesh axis 'xp'}}
                       tp = Q) // expected-error {{type of axis 'tp'}} expected-note {{SPMD_TYPE reads}}
                 const Tensor& a);

// Written through another macro: reported at that macro's use.
#define BAD_ANNOTATION SPMD_TYPE(yp = R)
void through_macro(BAD_ANNOTATION const Tensor& a); // expected-error {{unknown mesh axis 'yp'}}

template <int Dim, typename Axes>
struct Templated {
  // Names that depend on template parameters cannot be read.
  SPMD_TYPE(tp = S(Dim)) Tensor t; // expected-warning {{arguments of 'spmd::type' that depend on template parameters are not supported; the annotation is ignored}}
  SPMD_TYPE(Axes::tp = R) Tensor u; // expected-warning {{arguments of 'spmd::type' that depend on template parameters are not supported}}
};

// A bad name inside a spec is one error; the entries after it are read.
void spec_unknown(SPMD_TYPE(spmd::spec(xp, None), dp = Q) const Tensor& a); // expected-error {{unknown mesh axis 'xp'}} expected-error {{type of axis 'dp'}} expected-note {{SPMD_TYPE reads}}
void bad_arithmetic(SPMD_TYPE(tp = S(1 / 0)) const Tensor& a, // expected-error {{type of axis 'tp'}} expected-note {{SPMD_TYPE reads}}
                    SPMD_TYPE(tp = R, spmd::rank(2 - 3)) const Tensor& b); // expected-error {{'spmd::rank' in 'spmd::type' must be a constant}}
