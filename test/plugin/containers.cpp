// Containers of tensors hold one type for all their elements: the pieces of
// chunk/split/unbind, std::vector/std::tuple/std::pair values, indexing,
// .at/.front/.back, std::get, structured bindings and std::tie. A function
// returning a container can be annotated (the type of every element).
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

#include <tuple>
#include <utility>
#include <vector>

SPMD_TYPE(tp = V)
Tensor chunk_pieces(SPMD_TYPE(tp = V) const Tensor& qkv,
                    SPMD_TYPE(tp = I) const Tensor& i) {
  auto parts = qkv.chunk(3, -1);
  auto q = parts[0];
  auto k = parts.at(1);
  auto bad = parts.back() + i; // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{Invariant}}
  auto s = torch::split(qkv, 4, -1);
  auto u = qkv.unbind(0);
  return q * k + s[0] + u.front();
}

Tensor pieces_of_partial(SPMD_TYPE(tp = P) const Tensor& p) {
  auto halves = p.chunk(2, -1);
  return torch::gelu(halves[0]); // expected-error {{gelu: Partial type on axis tp cannot propagate}} strict-error {{gelu: Partial}}
}

// Structured bindings and std::get of a returned tuple.
SPMD_TYPE(tp = V)
Tensor bindings(SPMD_TYPE(tp = V) const Tensor& logits,
                SPMD_TYPE(tp = I) const Tensor& i) {
  auto [gate, up] = std::make_pair(logits.chunk(2, -1)[0], logits);
  auto values = std::get<0>(logits.max(-1, true));
  auto [m, idx] = logits.max(-1);
  auto bad = m + i; // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{Invariant}}
  return gate * up + values;
}

// std::tie assigns every tied variable.
SPMD_TYPE(tp = V)
std::tuple<Tensor, Tensor> split_kv(SPMD_TYPE(tp = V) const Tensor& kv);

Tensor tie_assigns(SPMD_TYPE(tp = V) const Tensor& kv,
                   SPMD_TYPE(tp = P) const Tensor& p) {
  Tensor k = p;
  Tensor v;
  std::tie(k, v) = split_kv(kv);
  return torch::gelu(k) + torch::gelu(v); // k is V now: no error
}

Tensor tie_partial(SPMD_TYPE(tp = P) const Tensor& p) {
  Tensor a, b;
  std::tie(a, b) = std::make_tuple(p, p * 2.0);
  auto bad = torch::relu(b); // expected-error {{relu: Partial type on axis tp cannot propagate}} strict-error {{relu: Partial}}
  return a;
}

// A declared variable tied to a value of another type.
void tie_declared(SPMD_TYPE(tp = V) const Tensor& kv) {
  SPMD_TYPE(tp = R) Tensor k;
  Tensor v;
  std::tie(k, v) = split_kv(kv); // expected-error {{value assigned to 'k' has type V on axis 'tp', but 'k' is declared R there}} strict-error {{value assigned to 'k'}}
}

// An annotated container result is checked at its returns.
SPMD_TYPE(tp = V)
std::vector<Tensor> heads(SPMD_TYPE(tp = V) const Tensor& x,
                          SPMD_TYPE(tp = I) const Tensor& i) {
  if (x.dim() > 2)
    return x.chunk(2, 0);
  return {i, i}; // expected-error {{returned value has type I on axis 'tp', but 'heads' is declared to return V there}} strict-error {{returned value}}
}

// Elements of different types are not a conflict: they are unknown.
Tensor mixed(SPMD_TYPE(tp = P) const Tensor& p,
             SPMD_TYPE(tp = R) const Tensor& r) {
  std::vector<Tensor> both = {p, r};
  return torch::relu(both[0]); // strict-warning {{unknown SPMD type}}
}

// Range-for over pieces.
SPMD_TYPE(tp = V)
Tensor range_for(SPMD_TYPE(tp = V) const Tensor& x,
                 SPMD_TYPE(tp = I) const Tensor& i) {
  Tensor acc = x;
  for (const auto& piece : x.chunk(4, -1))
    acc = acc + piece;
  for (const Tensor& piece : i.chunk(4, -1))
    auto bad = x + piece; // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{Invariant}}
  return acc;
}
