// Calls the checker cannot see through (docs/plugin.md "Strict mode"): a
// function with no SPMD annotation and no body the checker analyses (a
// kernel declared in a header). In strict mode a call that passes a tensor of
// known type and returns or may write a tensor is reported once, at the call
// (opaque-call); in every mode the tensors it may write (non-const
// references, by value) are unknown after it, and strict mode does not
// report them again. Constructors, `Tensor*` parameters given `&t` and calls
// through a function pointer or std::function of unknown target are such
// calls too. Not reported: annotated callees, bodies the checker analyses,
// torch/std functions, calls that only read, untyped arguments.
// RUN-PLUGIN: -Xclang -verify=strict,both -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=strict,both,global -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=both -Xclang -verify-ignore-unexpected=note
#include "Inputs/prelude.h"

#include <utility>
#include <functional>

// Kernels of another library: only declared.
void attn_kernel(Tensor& out, const Tensor& q, const Tensor& k); // #attn
void attn_by_value(Tensor out, const Tensor& q);
Tensor rms_kernel(const Tensor& x); // #rms
void read_only(const Tensor& out, const Tensor& x);
void log_tensor(const Tensor& x);
int64_t count_nonzero(const Tensor& x);

// --- fires in strict mode, once per call -----------------------------------

SPMD_TYPE(tp = R)
Tensor written(SPMD_TYPE(tp = R) const Tensor& q,
               SPMD_TYPE(tp = R) const Tensor& k) {
  auto out = torch::zeros_like(q);
  attn_kernel(out, q, k); // strict-warning {{call of 'attn_kernel', which has no SPMD annotation and no body the checker analyses, with 'out' of type {tp: R}: the types it expects are not checked, and 'out' (which it may write) is unknown after the call; annotate its declaration with [[spmd::type(...)]]}}
  return out; // unknown now: no stale R, and no second report
}

// Without the call, the stale type would be a false alarm: the kernel turns
// the buffer into this rank's partial sum.
SPMD_TYPE(tp = P)
Tensor stale(SPMD_TYPE(tp = V) const Tensor& q, SPMD_TYPE(tp = V) const Tensor& k) {
  auto out = torch::zeros_like(q);
  attn_kernel(out, q, k); // strict-warning {{call of 'attn_kernel'}}
  return out;
}

SPMD_TYPE(tp = R)
Tensor by_value(SPMD_TYPE(tp = R) const Tensor& q) {
  Tensor out = torch::zeros_like(q);
  attn_by_value(out, q); // strict-warning {{'out' (which it may write) is unknown after the call}}
  return out;
}

SPMD_TYPE(tp = R)
Tensor result(SPMD_TYPE(tp = R) const Tensor& x) {
  // A call that only reads is an unannotated call: its result is reported
  // where it is first used (docs/plugin.md "Diagnostics"), once per variable.
  auto y = rms_kernel(x);
  auto z = rms_kernel(x);
  return y + z; // strict-warning {{'y' has an unknown SPMD type: it holds the result of 'rms_kernel'}} strict-warning {{'z' has an unknown SPMD type}}
}

// Global mode names the shard dim and the rank in the suggested annotation.
void sharded_out(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) {
  Tensor out = torch::zeros_like(x);
  attn_kernel(out, x, x); // strict-warning {{call of 'attn_kernel'}} global-note@#attn {{e.g. SPMD_TYPE(tp = S(0), spmd::rank(2)) on parameter 'out' for the type passed here}}
}

SPMD_TYPE(tp = S(0))
Tensor sharded(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) {
  return rms_kernel(x); // strict-warning {{the result of 'rms_kernel' has an unknown SPMD type}}
}

// A declared variable keeps its declared type (as on any assignment): the
// call is reported, the variable is not said to become unknown.
void declared_out(SPMD_TYPE(tp = V) const Tensor& q, SPMD_TYPE(tp = V) const Tensor& k) {
  SPMD_TYPE(tp = V) Tensor out = torch::zeros_like(q);
  attn_kernel(out, q, k); // strict-warning {{with 'out' of type {tp: V}: the types it expects are not checked; annotate its declaration}}
}

// A helper whose body is there but does nothing SPMD is not analysed either.
Tensor plain_helper(const Tensor& x) {
  auto h = x * 2;
  return h.relu();
}

void uses_plain(SPMD_TYPE(tp = R) const Tensor& x) {
  auto y = plain_helper(x);
  auto z = y + x; // strict-warning {{'y' has an unknown SPMD type: it holds the result of 'plain_helper'}}
}

// --- a const reference is read: the fact is kept ---------------------------

SPMD_TYPE(tp = R)
Tensor kept(SPMD_TYPE(tp = V) const Tensor& x) {
  auto out = torch::zeros_like(x);
  read_only(out, x); // reads only, returns nothing: not reported
  log_tensor(x);
  int64_t n = count_nonzero(x);
  return out; // both-error {{returned value has type V on axis 'tp', but 'kept' is declared to return R there}}
}

// --- must not fire ------------------------------------------------------------

// Annotated kernels: the arguments are checked instead.
void attn_annotated(SPMD_TYPE(tp = V) Tensor& out, SPMD_TYPE(tp = V) const Tensor& q);

void annotated(SPMD_TYPE(tp = V) const Tensor& q, SPMD_TYPE(tp = R) const Tensor& r) {
  auto out = torch::zeros_like(q);
  attn_annotated(out, q);
  attn_annotated(out, r); // both-error {{argument 'r' of 'attn_annotated' has type R on axis 'tp', but parameter 'q' is declared V there}}
}

// The documented fix: a wrapper marked SPMD_UNCHECKED whose types are
// declared (its body, calling the kernel, is not analysed).
SPMD_UNCHECKED
SPMD_TYPE(tp = V)
Tensor attention(SPMD_TYPE(tp = V) const Tensor& q, SPMD_TYPE(tp = V) const Tensor& k) {
  auto out = torch::zeros_like(q);
  attn_kernel(out, q, k);
  return out;
}

SPMD_TYPE(tp = V)
Tensor through_wrapper(SPMD_TYPE(tp = V) const Tensor& q, SPMD_TYPE(tp = V) const Tensor& k) {
  return attention(q, k);
}

// A body the checker analyses: its own parameters are what strict mode
// reports, inside it.
Tensor reduce_helper(const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R); // strict-warning {{'x' has an unknown SPMD type}}
}

void analysed_body(SPMD_TYPE(tp = P) const Tensor& x) {
  auto y = reduce_helper(x);
}

// A call that only reads, whose result spmd::assert_type types at once (the
// docs' gradient helper): nothing is lost. Writing a tensor is still
// reported.
Tensor grad_of(const Tensor& w);
void grad_into(Tensor& g, const Tensor& w);

void asserted(SPMD_TYPE(dp = R, tp = V) const Tensor& w) {
  Tensor g = spmd::assert_type(grad_of(w), {dp = P, tp = V});
  auto d = spmd::all_reduce(g, dp, P, R);
  Tensor h = torch::zeros_like(w);
  grad_into(h, w); // strict-warning {{call of 'grad_into'}}
  Tensor hh = spmd::assert_type(h, {dp = P, tp = V});
}

// torch and std functions, tensor methods, untyped arguments.
void library(SPMD_TYPE(tp = R) const Tensor& x, const Tensor& raw) {
  auto a = torch::relu(x);
  auto b = std::move(a);
  auto c = x.clone();
  auto d = rms_kernel(raw); // nothing typed goes in
}

// A visible body that only reads a by-value tensor (no SPMD in it, so not
// analysed) leaves the caller's tensor as it was; one that writes it in
// place, assigns it or hands it to a writing op may change it.
void print_sizes(Tensor x) { auto n = x.size(0); }
void scale_in_place(Tensor x) { x.mul_(2.0); }
void fill_out(Tensor out, const Tensor& x) { at::relu_out(out, x); }

SPMD_TYPE(tp = P)
Tensor visible_bodies(SPMD_TYPE(tp = P) const Tensor& y) {
  Tensor a = y.clone();
  print_sizes(a);
  Tensor b = y.clone();
  scale_in_place(b); // strict-warning {{call of 'scale_in_place'}}
  Tensor c = y.clone();
  fill_out(c, y); // strict-warning {{call of 'fill_out'}}
  return a;
}

// --- pointers and constructors --------------------------------------------

// A `Tensor*` parameter is written through like a `Tensor&` (`kernel(&out)`);
// a `const Tensor*` one is read. A visible body that only reads through the
// pointer leaves the tensor as it was.
void ptr_kernel(Tensor* out, const Tensor& q);
void const_ptr_kernel(const Tensor* out, const Tensor& q);
void scale_through(Tensor* out) { out->mul_(2.0); }
void size_through(Tensor* out) { auto n = out->size(0); }

SPMD_TYPE(tp = R)
Tensor pointer_written(SPMD_TYPE(tp = V) const Tensor& q) {
  auto out = torch::zeros_like(q);
  ptr_kernel(&out, q); // strict-warning {{call of 'ptr_kernel', which has no SPMD annotation and no body the checker analyses, with 'out' of type {tp: V}: the types it expects are not checked, and 'out' (which it may write) is unknown after the call}}
  return out; // unknown now: no stale V
}

SPMD_TYPE(tp = R)
Tensor pointer_bodies(SPMD_TYPE(tp = V) const Tensor& q) {
  auto a = torch::zeros_like(q);
  scale_through(&a); // strict-warning {{call of 'scale_through'}}
  auto b = torch::zeros_like(q);
  size_through(&b);
  return b; // both-error {{returned value has type V on axis 'tp', but 'pointer_bodies' is declared to return R there}}
}

SPMD_TYPE(tp = R)
Tensor const_pointer_read(SPMD_TYPE(tp = V) const Tensor& q) {
  auto out = torch::zeros_like(q);
  const_ptr_kernel(&out, q);
  return out; // both-error {{returned value has type V on axis 'tp', but 'const_pointer_read' is declared to return R there}}
}

// A constructor of a class the checker does not model, taking a non-const
// `Tensor&`, may write it (at once; a write later through a reference it
// keeps, in a method call, is not seen).
struct OutWriter {
  OutWriter(Tensor& out, const Tensor& q);
  void run();
};
struct QReader {
  QReader(const Tensor& q);
};
struct Keeps {
  Keeps(Tensor t) : t_(t) {}
  Tensor t_;
};

SPMD_TYPE(tp = R)
Tensor constructor_written(SPMD_TYPE(tp = V) const Tensor& q) {
  auto out = torch::zeros_like(q);
  OutWriter w(out, q); // strict-warning {{call of 'OutWriter::OutWriter', which has no SPMD annotation and no body the checker analyses, with 'out' of type {tp: V}: the types it expects are not checked, and 'out' (which it may write) is unknown after the call}}
  w.run();
  return out;
}

SPMD_TYPE(tp = R)
Tensor constructor_reads(SPMD_TYPE(tp = V) const Tensor& q) {
  QReader r(q);
  auto out = torch::zeros_like(q);
  Keeps k(out); // a visible constructor that only copies it
  return out; // both-error {{returned value has type V on axis 'tp', but 'constructor_reads' is declared to return R there}}
}

// --- indirect calls whose target is unknown ---------------------------------

// A function pointer or std::function that may hold any function: what it
// may write is read from its parameter types (indirect_calls.cpp: targets the
// checker resolves are checked instead).
void fill_a(Tensor& out, const Tensor& q);
void fill_b(Tensor& out, const Tensor& q);
void read_a(const Tensor& out, const Tensor& q);

SPMD_TYPE(tp = R)
Tensor through_pointer_param(void (*fill)(Tensor&, const Tensor&),
                             SPMD_TYPE(tp = V) const Tensor& q) {
  auto out = torch::zeros_like(q);
  fill(out, q); // strict-warning {{call through 'fill', whose target the checker cannot tell, with 'out' of type {tp: V}: the types it expects are not checked, and 'out' (which it may write) is unknown after the call; let it hold one annotated function}}
  return out;
}

SPMD_TYPE(tp = R)
Tensor through_reassigned(SPMD_TYPE(tp = V) const Tensor& q, bool b) {
  std::function<void(Tensor&, const Tensor&)> fill = fill_a;
  if (b)
    fill = fill_b;
  auto out = torch::zeros_like(q);
  fill(out, q); // strict-warning {{call through 'fill', whose target the checker cannot tell}}
  return out;
}

SPMD_TYPE(tp = R)
Tensor through_reader(void (*read)(const Tensor&, const Tensor&),
                      SPMD_TYPE(tp = V) const Tensor& q) {
  auto out = torch::zeros_like(q);
  read(out, q); // only reads: not reported, 'out' keeps its type
  return out; // both-error {{returned value has type V on axis 'tp', but 'through_reader' is declared to return R there}}
}

// A pointer given &t.
SPMD_TYPE(tp = R)
Tensor through_pointer_out(void (*fill)(Tensor*), SPMD_TYPE(tp = V) const Tensor& q) {
  auto out = torch::zeros_like(q);
  fill(&out); // strict-warning {{call through 'fill'}}
  return out;
}

// A target the checker resolves but cannot see through: as a direct call.
SPMD_TYPE(tp = R)
Tensor through_resolved(SPMD_TYPE(tp = V) const Tensor& q) {
  auto fill = &fill_a;
  auto out = torch::zeros_like(q);
  fill(out, q); // strict-warning {{call of 'fill_a', which has no SPMD annotation and no body the checker analyses, with 'out' of type {tp: V}}}
  return out;
}
