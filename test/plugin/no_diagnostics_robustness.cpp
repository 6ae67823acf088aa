// Unusual code the checker must walk without crashing or reporting:
// exceptions, goto, structured bindings, range-for, constexpr if, variadic
// templates, recursion, std containers, constructors with member
// initializers, virtual functions, statement expressions, unevaluated
// operands.
// expected-no-diagnostics
#include "Inputs/prelude.h"

#include <functional>
#include <tuple>
#include <utility>
#include <vector>

struct Base {
  virtual ~Base() = default;
  SPMD_TYPE(tp = R) virtual Tensor run(SPMD_TYPE(tp = R) const Tensor& x) = 0;
};

struct Derived : Base {
  SPMD_TYPE(tp = V) Tensor w;
  explicit Derived(SPMD_TYPE(tp = V) const Tensor& weight) : w(weight) {}
  SPMD_TYPE(tp = R) Tensor run(SPMD_TYPE(tp = R) const Tensor& x) override {
    auto y = torch::matmul(x, w);
    return spmd::all_gather(y, tp, S(1), R);
  }
};

SPMD_TYPE(tp = R)
Tensor exceptions(SPMD_TYPE(tp = P) const Tensor& p) {
  try {
    auto r = spmd::all_reduce(p, tp, P, R);
    if (r.dim() > 4)
      throw 1;
    return r;
  } catch (int) {
    return spmd::all_reduce(p, tp, P, R);
  } catch (...) {
    throw;
  }
}

SPMD_TYPE(tp = R)
Tensor gotos(SPMD_TYPE(tp = P) const Tensor& p, int n) {
  Tensor x = p;
again:
  if (n-- > 0)
    goto again;
  return spmd::all_reduce(x, tp, P, R);
}

std::pair<Tensor, Tensor> two(const Tensor& a);

SPMD_TYPE(tp = R)
Tensor bindings_and_ranges(SPMD_TYPE(tp = R) const Tensor& r,
                           const std::vector<Tensor>& xs) {
  auto [a, b] = two(r);
  Tensor acc = r;
  for (const Tensor& x : xs)
    acc = acc + x * 0;
  std::vector<Tensor> copies{r, r};
  for (auto& c : copies)
    c = c.relu();
  (void)a;
  (void)b;
  return acc;
}

template <bool Sharded>
SPMD_TYPE(tp = R)
Tensor constexpr_if(SPMD_TYPE(tp = V) const Tensor& v) {
  if constexpr (Sharded)
    return spmd::all_gather(v, tp, S(0), R);
  else
    return spmd::all_gather(v, tp, V, R);
}
template Tensor constexpr_if<true>(const Tensor&);
template Tensor constexpr_if<false>(const Tensor&);

template <typename... Ts>
Tensor sum_all(const Tensor& first, const Ts&... rest) {
  return (first + ... + rest);
}
Tensor use_variadic(SPMD_TYPE(tp = P) const Tensor& a,
                    SPMD_TYPE(tp = P) const Tensor& b) {
  return sum_all(a, b, a);
}

SPMD_TYPE(tp = R)
Tensor recursion(SPMD_TYPE(tp = R) const Tensor& x, int depth) {
  if (depth == 0)
    return x;
  return recursion(torch::relu(x), depth - 1);
}

void callbacks(SPMD_TYPE(tp = P) const Tensor& p) {
  std::function<Tensor(const Tensor&)> f = [](const Tensor& t) {
    return spmd::all_reduce(t, tp, P, R);
  };
  auto r = f(p);
  (void)r;
  (void)sizeof(torch::relu(p));          // unevaluated
  using T = decltype(torch::relu(p));    // unevaluated
  auto gnu = ({ spmd::all_reduce(p, tp, P, R); }); // statement expression
  (void)gnu;
}
