// collectives_test.cpp - every collective and legal (src, dst) on 2, 4 and 8
// Gloo ranks: forward values against a reference computed from the spec on
// the full per-rank list (§7.3-§7.8, §7.12), backward gradients against the
// spec's backward table applied to the per-rank upstream gradients (checked
// through both Tensor::backward and torch::autograd::grad), and double
// backward ("the backward of the backward is the forward", §7.13).
//
// The reference below is written from the spec's per-rank formulas with
// plain ATen ops on the list [x_0, ..., x_{n-1}]; it shares no code with the
// runtime or the core, and the backward table is written out per case.
#include <spmd/core/collectives.h>
#include <torch/csrc/autograd/autograd.h>

#include <numeric>

#include "runtime_test_util.h"

namespace spmd {
namespace {

SPMD_AXIS(tp);
SPMD_AXIS(dp);

using at::Tensor;
using core::Collective;
using testing::run_mesh;
using testing::TensorEq;

// One operation with its options, which may differ per rank (uneven splits).
struct Step {
  Collective op;
  PerAxisType src;
  PerAxisType dst;
  std::function<CollectiveOptions(int r, int n)> options = [](int, int) {
    return CollectiveOptions{};
  };
};

Step step(Collective op, PerAxisType src, PerAxisType dst,
          CollectiveOptions o = {}) {
  return Step{op, src, dst, [o](int, int) { return o; }};
}

struct Case {
  std::string name;
  Step forward;
  std::function<Tensor(int r, int n)> input;
  std::vector<Step> backward;  ///< the spec's backward table entry
};

CollectiveOptions with(std::function<void(CollectiveOptions&)> f) {
  CollectiveOptions o;
  f(o);
  return o;
}

CollectiveOptions expert() {
  return with([](CollectiveOptions& o) { o.expert_mode = true; });
}

// ---------------------------------------------------------------------------
// Reference semantics (spec), on the full per-rank list.

int64_t wrap(int64_t d, int64_t ndim) { return d < 0 ? d + ndim : d; }

std::vector<Tensor> reference(const Step& s, const std::vector<Tensor>& xs);

Tensor sum(const std::vector<Tensor>& ts) {
  Tensor acc = at::zeros_like(ts[0]);
  for (const auto& t : ts) acc = acc + t;
  return acc;
}

std::vector<Tensor> reference(const Step& s, const std::vector<Tensor>& xs) {
  const int n = static_cast<int>(xs.size());
  std::vector<Tensor> ys(n);
  using K = TypeKind;
  for (int r = 0; r < n; ++r) {
    const CollectiveOptions o = s.options(r, n);
    const Tensor& x = xs[r];
    std::vector<Tensor> parts;
    switch (s.op) {
      case Collective::AllReduce:  // §7.3: y_r = sum_s x_s
        ys[r] = sum(xs);
        break;
      case Collective::AllGather:
      case Collective::Unshard:  // §7.4
        if (s.src.kind == K::Varying) {
          ys[r] = at::stack(xs, wrap(o.gather_dim.value_or(0), x.dim() + 1));
        } else {
          ys[r] = at::cat(xs, wrap(s.src.dim, x.dim()));
        }
        break;
      case Collective::ReduceScatter: {  // §7.5
        for (int q = 0; q < n; ++q) {
          const Tensor& xq = xs[q];
          if (s.dst.kind == K::Varying) {
            parts.push_back(
                xq.select(wrap(o.scatter_dim.value_or(0), xq.dim()), r));
          } else {
            const int64_t i = wrap(s.dst.dim, xq.dim());
            parts.push_back(o.split_sizes.empty()
                                ? xq.chunk(n, i)[r]
                                : xq.split_with_sizes(o.split_sizes, i)[r]);
          }
        }
        ys[r] = sum(parts);
        break;
      }
      case Collective::AllToAll: {  // §7.6
        if (!o.input_split_sizes.empty()) {
          for (int q = 0; q < n; ++q)
            parts.push_back(xs[q].split_with_sizes(
                s.options(q, n).input_split_sizes, 0)[r]);
          ys[r] = at::cat(parts, 0);
          break;
        }
        const bool ss = s.src.kind == K::Shard, ds = s.dst.kind == K::Shard;
        int64_t split = wrap(o.split_dim.value_or(0), x.dim());
        int64_t concat = wrap(o.concat_dim.value_or(0), x.dim());
        if (ss && ds) {
          split = wrap(s.dst.dim, x.dim());
          concat = wrap(s.src.dim, x.dim());
        } else if (ss) {
          split = wrap(s.src.dim, x.dim());
        } else if (ds) {
          concat = wrap(s.dst.dim, x.dim());
        }
        for (int q = 0; q < n; ++q)
          parts.push_back(ss || ds ? xs[q].chunk(n, split)[r]
                                   : xs[q].select(split, r));
        ys[r] = ss || ds ? at::cat(parts, concat) : at::stack(parts, concat);
        break;
      }
      case Collective::Convert:
      case Collective::Shard:
      case Collective::InvariantToReplicate: {  // §7.8
        const K a = s.src.kind, b = s.dst.kind;
        const bool ri = a == K::Replicate || a == K::Invariant;
        if (s.op == Collective::InvariantToReplicate ||
            (ri && (b == K::Replicate || b == K::Invariant))) {
          ys[r] = x;
        } else if (ri && b == K::Varying) {
          ys[r] = x.select(wrap(o.scatter_dim.value_or(0), x.dim()), r);
        } else if (ri && b == K::Shard) {
          ys[r] = x.chunk(n, wrap(s.dst.dim, x.dim()))[r];
        } else if (ri && b == K::Partial) {
          ys[r] = r == 0 ? x : at::zeros_like(x);
        } else if (a == K::Varying && b == K::Partial) {
          std::vector<Tensor> slots;
          for (int q = 0; q < n; ++q)
            slots.push_back(q == r ? x : at::zeros_like(x));
          ys[r] = at::stack(slots, 0);
        } else if (a == K::Shard && b == K::Partial) {
          std::vector<Tensor> slots;
          for (int q = 0; q < n; ++q)
            slots.push_back(q == r ? x : at::zeros_like(x));
          ys[r] = at::cat(slots, wrap(s.src.dim, x.dim()));
        } else {
          ys[r] = x;  // same base type: no-op
        }
        break;
      }
      case Collective::Reinterpret:  // §7.7: data unchanged
        ys[r] = x;
        break;
      case Collective::LocalSplit: {  // keep own piece of the split
        const int64_t i = wrap(s.dst.dim, x.dim());
        ys[r] = x.split_with_sizes(o.split_sizes, i)[r];
        break;
      }
      case Collective::Redistribute:
        ADD_FAILURE() << "reference: route redistribute in the case table";
        break;
    }
  }
  return ys;
}

Tensor call(const Step& s, const Tensor& x, int r, int n, const Axis& axis) {
  const CollectiveOptions o = s.options(r, n);
  switch (s.op) {
    case Collective::AllReduce:
      return all_reduce(x, axis, s.src, s.dst, o);
    case Collective::AllGather:
      return all_gather(x, axis, s.src, s.dst, o);
    case Collective::ReduceScatter:
      return reduce_scatter(x, axis, s.src, s.dst, o);
    case Collective::AllToAll:
      return all_to_all(x, axis, s.src, s.dst, o);
    case Collective::Convert:
      return convert(x, axis, s.src, s.dst, o);
    case Collective::Reinterpret:
      return reinterpret(x, axis, s.src, s.dst, o);
    case Collective::Redistribute:
      return redistribute(x, axis, s.src, s.dst, o);
    case Collective::Shard:
      return shard(x, axis, s.src, s.dst, o);
    case Collective::Unshard:
      return unshard(x, axis, s.src, s.dst, o);
    case Collective::InvariantToReplicate:
      return invariant_to_replicate(x, axis, o);
    case Collective::LocalSplit:
      break;
  }
  ADD_FAILURE() << "no public function for this step";
  return x;
}

// Distinct small integers per rank and element: sums stay exact in double.
Tensor seed(at::IntArrayRef shape, int r, int salt) {
  int64_t numel = 1;
  for (auto d : shape) numel *= d;
  return (at::arange(numel, at::kDouble) * (salt + 1) + 100 * r + 7 * salt)
      .view(shape);
}

// Runs every case on a 1-D mesh {tp: n} (or on `axis` of `shape`) and checks
// forward, backward (two ways) and double backward against the reference.
void run_cases(const std::vector<Case>& cases, int n) {
  run_mesh({{tp, n}}, [&](const DeviceMesh& mesh) {
    const int r = static_cast<int>(mesh.axis("tp").local_rank);
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + " on " + std::to_string(n) + " ranks, rank " +
                   std::to_string(r));
      std::vector<Tensor> xs;
      for (int q = 0; q < n; ++q) xs.push_back(c.input(q, n));
      std::vector<Tensor> ys = reference(c.forward, xs);

      Tensor x = xs[r].clone().requires_grad_(true);
      Tensor y = call(c.forward, x, r, n, tp);
      EXPECT_TRUE(TensorEq(y, ys[r])) << "forward";
      if (c.backward.empty()) continue;

      // Upstream gradients of every rank; the spec's dual on that list.
      std::vector<Tensor> gs;
      for (int q = 0; q < n; ++q) gs.push_back(seed(ys[q].sizes(), q, 1));
      std::vector<Tensor> expected = gs;
      for (const Step& b : c.backward) expected = reference(b, expected);

      Tensor g = gs[r].clone().requires_grad_(true);
      auto grads = torch::autograd::grad({y}, {x}, {g}, /*retain_graph=*/true,
                                         /*create_graph=*/true);
      EXPECT_TRUE(TensorEq(grads[0], expected[r])) << "autograd::grad";
      y.backward(gs[r]);
      EXPECT_TRUE(TensorEq(x.grad(), expected[r])) << "Tensor::backward";

      // Double backward: d<grad_x, h>/dg is the forward applied to h.
      std::vector<Tensor> hs;
      for (int q = 0; q < n; ++q) hs.push_back(seed(xs[q].sizes(), q, 2));
      std::vector<Tensor> forward_of_h = reference(c.forward, hs);
      auto gg = torch::autograd::grad({grads[0]}, {g}, {hs[r]});
      EXPECT_TRUE(TensorEq(gg[0], forward_of_h[r])) << "double backward";
    }
  });
}

// Inputs.
std::function<Tensor(int, int)> varying(
    std::function<std::vector<int64_t>(int)> shape) {
  return [shape](int r, int n) { return seed(shape(n), r, 0); };
}
std::function<Tensor(int, int)> varying(std::vector<int64_t> shape) {
  return varying([shape](int) { return shape; });
}
std::function<Tensor(int, int)> same(
    std::function<std::vector<int64_t>(int)> shape) {
  return [shape](int, int n) { return seed(shape(n), 0, 0); };
}
std::function<Tensor(int, int)> same(std::vector<int64_t> shape) {
  return same([shape](int) { return shape; });
}

using namespace spmd::types;
constexpr auto AR = Collective::AllReduce;
constexpr auto AG = Collective::AllGather;
constexpr auto RS = Collective::ReduceScatter;
constexpr auto A2A = Collective::AllToAll;
constexpr auto CV = Collective::Convert;
constexpr auto RI = Collective::Reinterpret;

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllReduceMatchesSpec) {
  run_cases(
      {
          {"all_reduce(P->R)",
           step(AR, P, R),
           varying({2, 3}),
           {step(AR, P, R)}},
          {"all_reduce(P->I)",
           step(AR, P, I),
           varying({2, 3}),
           {step(CV, I, R)}},
          {"all_reduce(V->R) reinterprets V as P",
           step(AR, V, R),
           varying({4}),
           {step(AR, P, R)}},
          {"all_reduce(V->I)", step(AR, V, I), varying({4}), {step(CV, I, R)}},
          {"all_reduce(P->R) 0-d",
           step(AR, P, R),
           varying(std::vector<int64_t>{}),
           {step(AR, P, R)}},
      },
      GetParam());
}

TEST_P(Collectives, AllGatherMatchesSpec) {
  auto gdim = [](int64_t g) {
    return with([g](CollectiveOptions& o) { o.gather_dim = g; });
  };
  auto sdim = [](int64_t g) {
    return with([g](CollectiveOptions& o) { o.scatter_dim = g; });
  };
  // Uneven shard sizes 1, 2, 3, 1, 2, ... per rank.
  auto sizes = [](int n) {
    std::vector<int64_t> s;
    for (int q = 0; q < n; ++q) s.push_back(q % 3 + 1);
    return s;
  };
  auto uneven = [sizes](int, int n) {
    CollectiveOptions o;
    o.split_sizes = sizes(n);
    return o;
  };
  auto uneven_input = [sizes](int r, int n) {
    return seed({sizes(n)[r], 2}, r, 0);
  };
  run_cases(
      {
          {"all_gather(V->R) 0-d stacks to [n]",
           step(AG, V, R),
           varying(std::vector<int64_t>{}),
           {step(RS, P, V)}},
          {"all_gather(V->R) stacks on dim 0",
           step(AG, V, R),
           varying({2, 2}),
           {step(RS, P, V)}},
          {"all_gather(V->R, gather_dim=1)",
           step(AG, V, R, gdim(1)),
           varying({2, 3}),
           {step(RS, P, V, sdim(1))}},
          {"all_gather(V->R, gather_dim=-1)",
           step(AG, V, R, gdim(-1)),
           varying({2, 3}),
           {step(RS, P, V, sdim(-1))}},
          {"all_gather(V->I)", step(AG, V, I), varying({3}), {step(CV, I, V)}},
          {"all_gather(V->I, gather_dim=1)",
           step(AG, V, I, gdim(1)),
           varying({2, 3}),
           {step(CV, I, V, sdim(1))}},
          {"all_gather(S(0)->R) concatenates",
           step(AG, S(0), R),
           varying({2}),
           {step(RS, P, S(0))}},
          {"all_gather(S(1)->R)",
           step(AG, S(1), R),
           varying({2, 1}),
           {step(RS, P, S(1))}},
          {"all_gather(S(-1)->R) negative dim",
           step(AG, S(-1), R),
           varying({2, 3}),
           {step(RS, P, S(1))}},
          {"all_gather(S(0)->I)",
           step(AG, S(0), I),
           varying({2, 2}),
           {step(CV, I, S(0))}},
          {"all_gather(S(0)->R, split_sizes) uneven",
           Step{AG, S(0), R, uneven},
           uneven_input,
           {Step{RS, P, S(0), uneven}}},
          {"all_gather(S(0)->I, split_sizes) uneven: backward keeps own piece",
           Step{AG, S(0), I, uneven},
           uneven_input,
           {Step{Collective::LocalSplit, I, S(0), uneven}}},
          {"unshard(S(0)->R) is all_gather",
           step(Collective::Unshard, S(0), R),
           varying({2}),
           {step(RS, P, S(0))}},
      },
      GetParam());
}

TEST_P(Collectives, ReduceScatterMatchesSpec) {
  auto sdim = [](int64_t d) {
    return with([d](CollectiveOptions& o) { o.scatter_dim = d; });
  };
  auto gdim = [](int64_t d) {
    return with([d](CollectiveOptions& o) { o.gather_dim = d; });
  };
  auto sizes = [](int n) {
    std::vector<int64_t> s;
    for (int q = 0; q < n; ++q) s.push_back((q + 1) % 3 + 1);
    return s;
  };
  auto uneven = [sizes](int, int n) {
    CollectiveOptions o;
    o.split_sizes = sizes(n);
    return o;
  };
  auto total = [sizes](int n) {
    auto s = sizes(n);
    return std::vector<int64_t>{std::accumulate(s.begin(), s.end(), int64_t{0}),
                                2};
  };
  run_cases(
      {
          {"reduce_scatter(P->V) unbinds dim 0",
           step(RS, P, V),
           varying([](int n) {
             return std::vector<int64_t>{n, 2};
           }),
           {step(AG, V, R)}},
          {"reduce_scatter(P->V, scatter_dim=1)",
           step(RS, P, V, sdim(1)),
           varying([](int n) {
             return std::vector<int64_t>{3, n};
           }),
           {step(AG, V, R, gdim(1))}},
          {"reduce_scatter(V->V) reinterprets V as P",
           step(RS, V, V),
           varying([](int n) { return std::vector<int64_t>{n}; }),
           {step(AG, V, R)}},
          {"reduce_scatter(P->S(0)) splits",
           step(RS, P, S(0)),
           varying([](int n) { return std::vector<int64_t>{2 * n}; }),
           {step(AG, S(0), R)}},
          {"reduce_scatter(P->S(-1)) negative dim",
           step(RS, P, S(-1)),
           varying([](int n) {
             return std::vector<int64_t>{3, 3 * n};
           }),
           {step(AG, S(1), R)}},
          {"reduce_scatter(P->S(0), split_sizes) uneven",
           Step{RS, P, S(0), uneven},
           varying(total),
           {Step{AG, S(0), R, uneven}}},
      },
      GetParam());
}

TEST_P(Collectives, AllToAllMatchesSpec) {
  auto dims = [](int64_t split, int64_t concat) {
    return with([=](CollectiveOptions& o) {
      o.split_dim = split;
      o.concat_dim = concat;
    });
  };
  // Rank q sends (q + 2k) % 3 + 1 rows to rank k.
  auto rows = [](int q, int k) { return int64_t{(q + 2 * k) % 3 + 1}; };
  auto uneven = [rows](int r, int n) {
    CollectiveOptions o;
    for (int k = 0; k < n; ++k) {
      o.input_split_sizes.push_back(rows(r, k));
      o.output_split_sizes.push_back(rows(k, r));
    }
    return o;
  };
  auto uneven_back = [rows](int r, int n) {
    CollectiveOptions o;
    for (int k = 0; k < n; ++k) {
      o.input_split_sizes.push_back(rows(k, r));
      o.output_split_sizes.push_back(rows(r, k));
    }
    return o;
  };
  auto uneven_input = [rows](int r, int n) {
    int64_t total = 0;
    for (int k = 0; k < n; ++k) total += rows(r, k);
    return seed({total, 2}, r, 0);
  };
  run_cases(
      {
          {"all_to_all(V->V) transposes mesh axis and dim 0",
           step(A2A, V, V),
           varying([](int n) { return std::vector<int64_t>{n}; }),
           {step(A2A, V, V)}},
          {"all_to_all(V->V, split_dim=0, concat_dim=1)",
           step(A2A, V, V, dims(0, 1)),
           varying([](int n) {
             return std::vector<int64_t>{n, 2};
           }),
           {step(A2A, V, V, dims(1, 0))}},
          {"all_to_all(S(0)->S(1)) unshard on 0, reshard on 1",
           step(A2A, S(0), S(1)),
           varying([](int n) {
             return std::vector<int64_t>{2, n};
           }),
           {step(A2A, S(1), S(0))}},
          {"all_to_all(S(1)->S(0))",
           step(A2A, S(1), S(0)),
           varying([](int n) {
             return std::vector<int64_t>{2 * n, 2};
           }),
           {step(A2A, S(0), S(1))}},
          {"all_to_all(S(-1)->S(0)) negative dim",
           step(A2A, S(-1), S(0)),
           varying([](int n) {
             return std::vector<int64_t>{n, 3};
           }),
           {step(A2A, S(0), S(1))}},
          {"all_to_all(S(0)->V)",
           step(A2A, S(0), V),
           varying([](int n) {
             return std::vector<int64_t>{2 * n, 3};
           }),
           {step(A2A, S(0), S(0))}},
          {"all_to_all(V->S(1)) splits on dim 0, concatenates on 1",
           step(A2A, V, S(1)),
           varying([](int n) {
             return std::vector<int64_t>{n, 2};
           }),
           {step(A2A, S(0), S(1))}},
          {"all_to_all(S(1)->V) splits on dim 1, concatenates on 0",
           step(A2A, S(1), V),
           varying([](int n) {
             return std::vector<int64_t>{2, 2 * n};
           }),
           {step(A2A, S(1), S(0))}},
          {"all_to_all(S(0)->S(0), split sizes) uneven",
           Step{A2A, S(0), S(0), uneven},
           uneven_input,
           {Step{A2A, S(0), S(0), uneven_back}}},
      },
      GetParam());
}

TEST_P(Collectives, ConvertMatchesSpec) {
  auto rows = [](int n) { return std::vector<int64_t>{n, 2}; };
  auto len = [](int n) { return std::vector<int64_t>{2 * n}; };
  run_cases(
      {
          {"convert(R->V) takes own row",
           step(CV, R, V),
           same(rows),
           {step(CV, V, P, expert())}},
          {"convert(I->V)", step(CV, I, V), same(rows), {step(AG, V, I)}},
          {"convert(R->S(0)) takes own chunk",
           step(CV, R, S(0)),
           same(len),
           {step(CV, S(0), P, expert())}},
          {"convert(R->S(-1)) negative dim",
           step(CV, R, S(-1)),
           same([](int n) {
             return std::vector<int64_t>{2, n};
           }),
           {step(CV, S(1), P, expert())}},
          {"convert(I->S(0))",
           step(CV, I, S(0)),
           same(len),
           {step(AG, S(0), I)}},
          {"convert(R->P) zeroes non-0 ranks",
           step(CV, R, P),
           same({3}),
           {step(CV, R, P)}},
          {"convert(I->P) expert",
           step(CV, I, P, expert()),
           same({3}),
           {step(CV, R, I, expert())}},
          {"convert(V->P) expert: zero-pad into a stack",
           step(CV, V, P, expert()),
           varying({2}),
           {step(CV, R, V)}},
          {"convert(V->P) 0-d",
           step(CV, V, P, expert()),
           varying(std::vector<int64_t>{}),
           {step(CV, R, V)}},
          {"convert(S(0)->P) expert",
           step(CV, S(0), P, expert()),
           varying({2, 2}),
           {step(CV, R, S(0))}},
          {"convert(I->R) identity, backward all_reduce(P->I)",
           step(CV, I, R),
           same({3}),
           {step(AR, P, I)}},
          {"invariant_to_replicate is convert(I->R)",
           step(Collective::InvariantToReplicate, I, R),
           same({3}),
           {step(AR, P, I)}},
          {"convert(R->I) expert",
           step(CV, R, I, expert()),
           same({3}),
           {step(CV, I, P, expert())}},
          {"shard(R->S(0)) is convert",
           step(Collective::Shard, R, S(0)),
           same(len),
           {step(CV, S(0), P, expert())}},
          {"convert(R->S(0)) uneven chunk (forward)",
           step(CV, R, S(0)),
           same([](int n) { return std::vector<int64_t>{2 * n - 1}; }),
           {}},
          {"convert(V->V) no-op", step(CV, V, V), varying({2}), {}},
      },
      GetParam());
}

TEST_P(Collectives, ReinterpretMatchesSpec) {
  run_cases(
      {
          {"reinterpret(V->P)",
           step(RI, V, P),
           varying({3}),
           {step(RI, R, V, expert())}},
          {"reinterpret(R->V) expert",
           step(RI, R, V, expert()),
           same({3}),
           {step(RI, V, P)}},
          {"reinterpret(R->P) expert, self-dual",
           step(RI, R, P, expert()),
           same({3}),
           {step(RI, R, P, expert())}},
          {"reinterpret(R->I) expert acts as convert(R,I)",
           step(RI, R, I, expert()),
           same({3}),
           {step(CV, I, P, expert())}},
          {"reinterpret(I->R) expert acts as convert(I,R)",
           step(RI, I, R, expert()),
           same({3}),
           {step(AR, P, I)}},
          {"reinterpret(I->V) composes I->R->V",
           step(RI, I, V),
           same({3}),
           {step(RI, V, P), step(AR, P, I)}},
          {"reinterpret(I->P) composes I->R->P",
           step(RI, I, P),
           same({3}),
           {step(RI, R, P, expert()), step(AR, P, I)}},
      },
      GetParam());
}

TEST_P(Collectives, RedistributeFollowsTheRoutingTable) {
  auto rows = [](int n) { return std::vector<int64_t>{n, 2}; };
  auto sdim = [](int64_t d) {
    return with([d](CollectiveOptions& o) { o.scatter_dim = d; });
  };
  // Each row: the primitive that §7.12 routes to, for the reference.
  struct R2 {
    std::string name;
    PerAxisType src, dst;
    Step routed;
    std::function<Tensor(int, int)> input;
    std::vector<Step> backward;
  };
  std::vector<R2> table = {
      {"redistribute(P->R) = all_reduce",
       P,
       R,
       step(AR, P, R),
       varying({2}),
       {step(AR, P, R)}},
      {"redistribute(V->R) = all_gather",
       V,
       R,
       step(AG, V, R),
       varying({2}),
       {step(RS, P, V)}},
      {"redistribute(S(0)->I) = all_gather",
       S(0),
       I,
       step(AG, S(0), I),
       varying({2}),
       {step(CV, I, S(0))}},
      {"redistribute(R->S(1)) = convert",
       R,
       S(1),
       step(CV, R, S(1)),
       same([](int n) {
         return std::vector<int64_t>{2, 2 * n};
       }),
       {step(CV, S(1), P, expert())}},
      {"redistribute(R->I) = convert [expert]",
       R,
       I,
       step(CV, R, I, expert()),
       same({2}),
       {step(CV, I, P, expert())}},
      {"redistribute(P->V) = reduce_scatter",
       P,
       V,
       step(RS, P, V, sdim(0)),
       varying(rows),
       {step(AG, V, R)}},
      {"redistribute(P->S(1)) = reduce_scatter(scatter_dim=1)",
       P,
       S(1),
       step(RS, P, S(1)),
       varying([](int n) {
         return std::vector<int64_t>{2, 2 * n};
       }),
       {step(AG, S(1), R)}},
      {"redistribute(S(0)->S(1)) = all_to_all",
       S(0),
       S(1),
       step(A2A, S(0), S(1)),
       varying([](int n) {
         return std::vector<int64_t>{2, n};
       }),
       {step(A2A, S(1), S(0))}},
      {"redistribute(V->P) = convert [expert]",
       V,
       P,
       step(CV, V, P, expert()),
       varying({2}),
       {step(CV, R, V)}},
      {"redistribute(I->R) = convert",
       I,
       R,
       step(CV, I, R),
       same({2}),
       {step(AR, P, I)}},
      {"redistribute(S(0)->V) no-op",
       S(0),
       V,
       step(CV, V, V),
       varying({2}),
       {step(CV, V, V)}},
  };
  const int n = GetParam();
  run_mesh({{tp, n}}, [&](const DeviceMesh& mesh) {
    const int r = static_cast<int>(mesh.axis("tp").local_rank);
    for (const R2& t : table) {
      SCOPED_TRACE(t.name);
      std::vector<Tensor> xs;
      for (int q = 0; q < n; ++q) xs.push_back(t.input(q, n));
      auto ys = reference(t.routed, xs);
      Tensor x = xs[r].clone().requires_grad_(true);
      Tensor y = redistribute(x, tp, t.src, t.dst);
      EXPECT_TRUE(TensorEq(y, ys[r]));
      std::vector<Tensor> gs;
      for (int q = 0; q < n; ++q) gs.push_back(seed(ys[q].sizes(), q, 1));
      auto expected = gs;
      for (const Step& b : t.backward) expected = reference(b, expected);
      auto grads = torch::autograd::grad({y}, {x}, {gs[r]});
      EXPECT_TRUE(TensorEq(grads[0], expected[r])) << "backward";
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(2, 4, 8),
                         [](const auto& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// --- 2-D meshes: a collective on one axis leaves the other axis untouched.

TEST(Collectives2D, AllGatherAndReduceScatterOnOneAxisOf2x4) {
  run_mesh({{dp, 2}, {tp, 4}}, [](const DeviceMesh& mesh) {
    const int r = mesh.rank();
    const int row = r / 4, col = r % 4;
    Tensor x = at::full({1}, double(r), at::kDouble);
    // tp gathers the 4 ranks of this dp row; dp gathers the 2 of this column.
    Tensor tp_all = all_gather(x, tp, S(0), R);
    Tensor dp_all = all_gather(x, dp, S(0), R);
    EXPECT_TRUE(
        TensorEq(tp_all, at::arange(4 * row, 4 * row + 4, at::kDouble)));
    EXPECT_TRUE(TensorEq(dp_all, at::tensor({double(col), double(col + 4)})));
    // reduce_scatter on dp sums over the column only.
    Tensor z = at::arange(2, at::kDouble) + r;
    Tensor rs = reduce_scatter(z, dp, P, V);
    EXPECT_TRUE(TensorEq(
        rs, at::scalar_tensor(double(2 * col + 4 + 2 * row), at::kDouble)));
  });
}

// An all_reduce of at most 1 KiB travels inside the consistency check's
// message (one round trip); just below, at and above that size, in each
// dtype it takes, in place and on a non-contiguous input, the sums are those
// of the ordinary path, on every rank.
TEST(Collectives2D, AllReduceAroundTheInlineSizeSumsEveryRank) {
  run_mesh({{dp, 1}, {tp, 4}}, [](const DeviceMesh& mesh) {
    const int r = mesh.rank();
    for (int64_t numel : {1, 127, 128, 129, 300}) {  // 128 doubles = 1 KiB
      for (auto dtype : {at::kDouble, at::kFloat, at::kLong, at::kInt}) {
        Tensor base = at::arange(numel, at::kLong);
        Tensor x = (base * (r + 1)).to(dtype);
        Tensor want = (base * 10).to(dtype);  // 1 + 2 + 3 + 4
        Tensor z = all_reduce(x, tp, P, R);
        EXPECT_TRUE(TensorEq(z, want)) << numel << " " << dtype;
        EXPECT_FALSE(z.is_view()) << "a view cannot be detached in place";
        CollectiveOptions o;
        o.inplace = true;
        Tensor y = x.clone();
        all_reduce(y, tp, P, R, o);
        EXPECT_TRUE(TensorEq(y, want)) << "in place, " << numel;
      }
    }
    Tensor m = (at::arange(12, at::kDouble).view({3, 4}) + r).t();
    EXPECT_TRUE(TensorEq(
        all_reduce(m, tp, P, I),
        (at::arange(12, at::kDouble).view({3, 4}) * 4 + 6).t().contiguous()));
  });
}

// all_gather and reduce_scatter travel inside the consistency check's
// message when their input fits its room (1 KiB at first, then as much as
// the group's earlier calls wanted, up to 32 KiB on 4 ranks): below, at and
// above each room, repeated so that the room has grown, past the largest
// room, on V, S(0) and S(1), the results are those of the ordinary path on
// every rank.
TEST(Collectives2D, AllGatherAndReduceScatterAroundTheInlineRoom) {
  run_mesh({{dp, 1}, {tp, 4}}, [](const DeviceMesh& mesh) {
    const int64_t r = mesh.rank(), n = 4;
    // rows x 4 doubles: 32 rows = 1 KiB, 1024 rows = 32 KiB.
    for (int64_t rows : {1, 32, 33, 200, 200, 1024, 1025, 1025, 3000}) {
      auto of_rank = [&](int64_t s) {
        return at::arange(rows * 4, at::kDouble).view({rows, 4}) * (s + 1) + s;
      };
      std::vector<Tensor> all;
      for (int64_t s = 0; s < n; ++s) all.push_back(of_rank(s));
      Tensor x = of_rank(r);
      EXPECT_TRUE(TensorEq(all_gather(x, tp, S(0), R), at::cat(all, 0)))
          << rows;
      EXPECT_TRUE(TensorEq(all_gather(x, tp, S(1), R), at::cat(all, 1)))
          << rows;
      EXPECT_TRUE(TensorEq(all_gather(x, tp, V, R), at::stack(all, 0))) << rows;
      EXPECT_TRUE(TensorEq(all_gather(x.to(at::kLong), tp, S(0), R),
                           at::cat(all, 0).to(at::kLong)))
          << rows;
      // reduce_scatter of [4 * rows, 4]: the sum over ranks, piece r.
      Tensor big = at::cat({x, x + 1, x + 2, x + 3}, 0);
      Tensor sum = at::zeros_like(big);
      for (int64_t s = 0; s < n; ++s) {
        Tensor b = of_rank(s);
        sum += at::cat({b, b + 1, b + 2, b + 3}, 0);
      }
      EXPECT_TRUE(TensorEq(reduce_scatter(big, tp, P, S(0)),
                           sum.chunk(n, 0)[r].contiguous()))
          << rows;
      EXPECT_TRUE(TensorEq(reduce_scatter(big.t(), tp, P, S(1)),
                           sum.t().chunk(n, 1)[r].contiguous()))
          << rows;
      Tensor stacked = big.view({n, rows, 4});
      EXPECT_TRUE(TensorEq(reduce_scatter(stacked, tp, P, V),
                           sum.view({n, rows, 4})[r]))
          << rows;
      CollectiveOptions o;
      o.scatter_dim = 1;
      EXPECT_TRUE(TensorEq(
          reduce_scatter(stacked.transpose(0, 1).contiguous(), tp, P, V, o),
          sum.view({n, rows, 4})[r]))
          << rows;
    }
  });
}

// all_to_all's blocks travel inside the consistency check's message, each
// to its destination, when a block fits the room (32 KiB on 4 ranks):
// results around that size equal the exchange computed from every rank's
// input, non-contiguous inputs and other dims (the kernel's path) too.
TEST(Collectives2D, AllToAllAroundTheInlineRoom) {
  run_mesh({{dp, 1}, {tp, 4}}, [](const DeviceMesh& mesh) {
    const int64_t r = mesh.rank(), n = 4;
    // 4 * rows x 4 doubles: a block of 32 rows is 1 KiB, of 1024 32 KiB.
    for (int64_t rows : {1, 32, 33, 200, 1024, 1025, 1025, 3000}) {
      auto of_rank = [&](int64_t s) {
        return at::arange(n * rows * 4, at::kDouble).view({n * rows, 4}) *
                   (s + 1) +
               s;
      };
      std::vector<Tensor> mine;  // block r of every rank, in rank order
      for (int64_t s = 0; s < n; ++s) mine.push_back(of_rank(s).chunk(n, 0)[r]);
      Tensor x = of_rank(r);
      EXPECT_TRUE(TensorEq(all_to_all(x, tp, S(0), S(0)), at::cat(mine, 0)))
          << rows;
      EXPECT_TRUE(TensorEq(all_to_all(x.t().contiguous().t(), tp, S(0), S(0)),
                           at::cat(mine, 0)))
          << rows;
      EXPECT_TRUE(TensorEq(all_to_all(x.to(at::kLong), tp, S(0), S(0)),
                           at::cat(mine, 0).to(at::kLong)))
          << rows;
      EXPECT_TRUE(TensorEq(all_to_all(x.view({n, rows, 4}), tp, V, V),
                           at::stack(mine, 0)))
          << rows;
      // S(1) -> S(0): split dim 0, concat dim 1 (the kernel's path).
      EXPECT_TRUE(TensorEq(all_to_all(x, tp, S(1), S(0)), at::cat(mine, 1)))
          << rows;
    }
  });
}

TEST(Collectives2D, AllToAllOnOneAxisOf2x2) {
  run_mesh({{dp, 2}, {tp, 2}}, [](const DeviceMesh& mesh) {
    const int r = mesh.rank();
    const int row = r / 2, col = r % 2;
    Tensor x = at::tensor({double(10 * r), double(10 * r + 1)});
    // tp: rank (row, col) receives element col of both ranks in its row.
    Tensor y = all_to_all(x, tp, V, V);
    EXPECT_TRUE(TensorEq(y, at::tensor({double(10 * (2 * row) + col),
                                        double(10 * (2 * row + 1) + col)})));
  });
}

}  // namespace
}  // namespace spmd
