// Malformed annotations are errors at the attribute, saying what was
// expected.
#include "Inputs/prelude.h"

int not_an_axis = 0;
spmd::PerAxisType runtime_type();

[[type(tp = R)]] Tensor unscoped(); // expected-error {{SPMD attribute 'type' must be written with its namespace: [[spmd::type(...)]]}}
[[mesh(tp)]] void unscoped_mesh(); // expected-error {{SPMD attribute 'mesh' must be written with its namespace}}
[[spmd::type(tp = R, tp = V)]] Tensor twice(); // expected-error {{axis 'tp' appears twice in 'spmd::type'}} expected-note {{axis 'tp' first given here}}
[[spmd::type(tp)]] Tensor no_type(); // expected-error {{argument of 'spmd::type' must be 'axis = type', e.g. 'tp = R'}}
[[spmd::type(dp = R, tp)]] Tensor no_type2(); // expected-error {{argument of 'spmd::type' must be 'axis = type' where 'axis' is an spmd::Axis constant}}
[[spmd::type()]] Tensor empty(); // expected-error {{'spmd::type' needs at least one 'axis = type' argument}}
[[spmd::type(tp = runtime_type())]] Tensor not_constant(); // expected-error {{type of axis 'tp' in 'spmd::type' must be a constant expression: R, I, V, P or S(k)}}
[[spmd::type(not_an_axis = R)]] Tensor not_axis(); // expected-error {{assigning to 'int' from incompatible type}}
[[spmd::type(tp = 3)]] Tensor not_a_type(); // expected-error {{no viable overloaded '='}}
// expected-note@* 0+ {{candidate function}}
[[spmd::type(tp = R)]] Tensor global_tensor; // expected-error {{'spmd::type' applies to local variables, parameters, functions (their result) and non-static data members, not to global or namespace-scope variables}}
struct [[spmd::type(tp = R)]] TypeDecl {}; // expected-error {{not to types}}
struct S1 {
  [[spmd::type(tp = R)]] static Tensor s; // expected-error {{not to static data members}}
};
[[spmd::op("sideways")]] Tensor bad_op(const Tensor&); // expected-error {{argument of 'spmd::op' must be "linear", "multilinear" or "nonlinear" (got "sideways")}}
[[spmd::op(sideways)]] Tensor bad_op2(const Tensor&); // expected-error {{argument of 'spmd::op' must be linear, multilinear or nonlinear (got 'sideways')}}
[[spmd::op]] Tensor op_without_arg(const Tensor&); // expected-error {{'op' attribute takes one argument}}
[[spmd::mesh(dp, dp)]] void mesh_twice(); // expected-error {{axis 'dp' appears twice in 'spmd::mesh'}}
[[spmd::mesh(3)]] void mesh_not_axis(); // expected-error {{argument of 'spmd::mesh' must be an spmd::Axis constant}}
[[spmd::mesh()]] void mesh_empty(); // expected-error {{'spmd::mesh' needs at least one axis}}
[[spmd::mesh(dp)]] int mesh_on_variable; // expected-error {{'spmd::mesh' applies to functions, not to global or namespace-scope variables}}
[[spmd::unchecked(1)]] void unchecked_arg(); // expected-error {{'unchecked' attribute takes no arguments}}

void statement() {
  [[spmd::type(tp = R)]]; // expected-error {{'type' attribute cannot be applied to a statement}}
}

template <typename Axis>
struct Templated {
  // Arguments that depend on template parameters cannot be read.
  [[spmd::type(Axis::value = R)]] Tensor t; // expected-warning {{arguments of 'spmd::type' that depend on template parameters are not supported; the annotation is ignored}}
};

// A mesh axis from a template parameter, named alone or through a member,
// is the same warning (a non-axis name stays an error).
struct MeshAxes {
  static constexpr spmd::Axis ax{"ax"};
};
template <const spmd::Axis& ax> [[spmd::mesh(ax)]] void mesh_param(); // expected-warning {{arguments of 'spmd::mesh' that depend on template parameters are not supported; the annotation is ignored}}
template <typename W> [[spmd::mesh(W::ax)]] void mesh_member(); // expected-warning {{arguments of 'spmd::mesh' that depend on template parameters are not supported}}
template <int N> [[spmd::mesh(not_an_axis)]] void mesh_not_axis(); // expected-error {{argument of 'spmd::mesh' must be an spmd::Axis constant}}

// Locals that outlive the call are not per-call values: an error, like the
// globals they are.
void storage_classes() {
  [[spmd::type(tp = R)]] static Tensor s; // expected-error {{'spmd::type' applies to local variables, parameters, functions (their result) and non-static data members, not to static local variables}}
  [[spmd::type(tp = R)]] thread_local Tensor t; // expected-error {{not to thread_local local variables}}
  [[spmd::type(tp = R)]] static thread_local Tensor st; // expected-error {{not to thread_local local variables}}
  [[spmd::type(tp = R)]] extern Tensor e; // expected-error {{not to extern local variables}}
  [[spmd::type(tp = R)]] Tensor ok = opaque(Tensor());
  [[spmd::type(tp = R)]] const Tensor& ok_ref = ok;
}
