// Containers filled by push_back / emplace_back / insert keep their element
// type: a value pushed into an annotated container (local or field) is
// checked against its declared element type at the push; an unannotated
// local that starts empty gets the join of what was pushed (unknown on an
// axis where pushes disagree); v[i], range-for and v.back() read it.
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

#include <vector>

// Filled by pushes only: the elements are what was pushed.
Tensor filled_by_pushes(SPMD_TYPE(tp = P) const Tensor& p) {
  std::vector<Tensor> parts;
  parts.push_back(p);
  parts.emplace_back(p * 2.0);
  auto bad = torch::relu(parts[0]); // expected-error {{relu: Partial type on axis tp cannot propagate}} strict-error {{relu: Partial}}
  auto bad2 = torch::gelu(parts.back()); // expected-error {{gelu: Partial type on axis tp cannot propagate}} strict-error {{gelu: Partial}}
  return parts.front();
}

// Pushes in a loop, read back by range-for: no false alarm on a V sum.
SPMD_TYPE(tp = V)
Tensor pushed_in_a_loop(SPMD_TYPE(tp = V) const Tensor& x,
                        SPMD_TYPE(tp = I) const Tensor& i) {
  std::vector<Tensor> outs;
  for (int k = 0; k < 4; ++k)
    outs.push_back(torch::relu(x));
  Tensor acc = x;
  for (const Tensor& o : outs)
    acc = acc + o;
  for (const Tensor& o : outs)
    auto bad = o + i; // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{Invariant}}
  return acc;
}

// insert() adds an element too.
Tensor inserted(SPMD_TYPE(tp = P) const Tensor& p) {
  std::vector<Tensor> v;
  v.insert(v.begin(), p);
  return torch::relu(v.at(0)); // expected-error {{relu: Partial type on axis tp cannot propagate}} strict-error {{relu: Partial}}
}

// Pushes that disagree: the elements are unknown, not a conflict.
Tensor disagreeing(SPMD_TYPE(tp = P) const Tensor& p,
                   SPMD_TYPE(tp = R) const Tensor& r) {
  std::vector<Tensor> v;
  v.push_back(p);
  v.push_back(r);
  return torch::relu(v[1]); // strict-warning {{unknown SPMD type}}
}

// A container with no elements yet is not a type: reading it is unknown.
SPMD_TYPE(tp = R)
Tensor never_filled() {
  std::vector<Tensor> v;
  return v[0]; // strict-warning {{unknown SPMD type}}
}

// clear() starts over.
SPMD_TYPE(tp = R)
Tensor cleared(SPMD_TYPE(tp = P) const Tensor& p,
               SPMD_TYPE(tp = R) const Tensor& r) {
  std::vector<Tensor> v;
  v.push_back(p);
  v.clear();
  v.push_back(r);
  return torch::relu(v[0]);
}

// A declared local container: every push is checked.
void declared_local(SPMD_TYPE(tp = V) const Tensor& x,
                    SPMD_TYPE(tp = I) const Tensor& i) {
  SPMD_TYPE(tp = V) std::vector<Tensor> shards;
  shards.push_back(x);
  shards.push_back(i); // expected-error {{value pushed into 'shards' has type I on axis 'tp', but the elements of 'shards' are declared V there}} strict-error {{value pushed into 'shards'}}
  shards.emplace_back(x * 2.0);
  auto bad = shards[0] + i; // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{Invariant}}
}

// A declared container field: pushes into it are checked, reads see the
// declared element type.
struct KvCache {
  SPMD_TYPE(tp = V) std::vector<Tensor> keys;
  std::vector<Tensor> scratch; // unannotated: not checked

  void append(SPMD_TYPE(tp = V) const Tensor& k,
              SPMD_TYPE(tp = P) const Tensor& p) {
    keys.push_back(k);
    this->keys.emplace_back(k);
    keys.push_back(p); // expected-error {{value pushed into 'keys' has type P on axis 'tp', but the elements of 'keys' are declared V there}} strict-error {{value pushed into 'keys'}}
    keys.insert(keys.end(), p); // expected-error {{value pushed into 'keys' has type P on axis 'tp', but the elements of 'keys' are declared V there}} strict-error {{value pushed into 'keys'}}
    scratch.push_back(p);
  }

  SPMD_TYPE(tp = I)
  Tensor last(SPMD_TYPE(tp = I) const Tensor& i) {
    auto bad = keys.back() + i; // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{Invariant}}
    return i;
  }
};

// An unknown value pushed into a declared container is reported in strict
// mode only.
void unknown_push(SPMD_TYPE(tp = V) const Tensor& x) {
  SPMD_TYPE(tp = V) std::vector<Tensor> v;
  v.push_back(opaque(x)); // strict-warning {{unknown SPMD type}}
}
