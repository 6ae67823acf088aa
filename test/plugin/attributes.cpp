// The SPMD attributes on every declaration they apply to, in every spelling
// the header allows; each one is read (the errors prove it).
#include "Inputs/prelude.h"

static_assert(__has_cpp_attribute(spmd::type), "the plugin registers spmd::type");
static_assert(__has_cpp_attribute(spmd::mesh), "");
static_assert(__has_cpp_attribute(spmd::op), "");
static_assert(__has_cpp_attribute(spmd::unchecked), "");
#ifndef SPMD_CHECK_PLUGIN_LOADED
#error "annotations.h must see the plugin"
#endif

namespace model {
SPMD_AXIS(cp);              // an axis in a namespace
inline constexpr spmd::Axis expert{"ep"}; // a constant whose name differs
}

// On a function (its result), its parameters, a local, a field; S(k) with a
// negative k; qualified axes; several axes.
[[spmd::type(dp = V, tp = S(-1), model::cp = R)]] // #result
Tensor f([[spmd::type(dp = V, tp = S(-1), model::cp = R)]] const Tensor& x) {
  [[spmd::type(dp = V, tp = V, model::cp = R)]] Tensor y = x;
  return y;
}

SPMD_TYPE(model::expert = P) // #ep
Tensor g(SPMD_TYPE(model::expert = V) const Tensor& x) { // #x
  return x; // expected-error {{returned value has type V on axis 'ep', but 'g' is declared to return P there}}
  // expected-note@#x {{type V on axis 'ep' declared here}}
  // expected-note@#ep {{declared type is {ep: P}}}
}

struct Module {
  [[spmd::type(tp = V)]] Tensor weight; // #weight
  SPMD_TYPE(tp = I) Tensor bias;
  Tensor unannotated;
};

void fields(Module& m, SPMD_TYPE(tp = R) const Tensor& r) { // #r
  m.weight = r; // expected-error {{value assigned to 'weight' has type R on axis 'tp', but 'weight' is declared V there}} expected-note {{insert spmd::convert(..., tp, spmd::R, spmd::V)}}
  // expected-note@#r {{declared here}}
  // expected-note@#weight {{declared type is {tp: V}}}
  m.unannotated = r;
}

// The annotation may sit on any declaration of the function.
SPMD_TYPE(tp = R) Tensor declared_first(SPMD_TYPE(tp = P) const Tensor& p);
Tensor declared_first(const Tensor& p) { return spmd::all_reduce(p, tp, P, R); }

// mesh, op and unchecked, scoped forms; op takes an identifier or a string.
[[spmd::mesh(dp, tp)]] void with_mesh();
[[spmd::mesh(model::cp)]] void with_qualified_mesh();
[[spmd::op(linear)]] Tensor op1(const Tensor&);
[[spmd::op("multilinear")]] Tensor op2(const Tensor&, const Tensor&);
[[spmd::op(nonlinear)]] Tensor op3(const Tensor&);
[[spmd::unchecked]] void skipped();
SPMD_MESH(dp) SPMD_OP(linear) SPMD_UNCHECKED Tensor all_macros(const Tensor&);
