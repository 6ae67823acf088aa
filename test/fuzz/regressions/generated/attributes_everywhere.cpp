// Kept input (generated, class bad_attribute): SPMD attributes with garbage
// arguments in every place an attribute can go. Must compile without a crash.
#include "prelude.h"

void lam_0() { auto l = [] [[spmd::unchecked(S(-2147483648) spmd:: + nullptr)]] (int) {}; l(1); }
template <typename T> [[spmd::op('c' []{ return R; }() tp)]] T tp_1(const T& x) { return x; }
[[spmd::type()]] Tensor g_2;
struct [[spmd::op(S( []{ return R; }() S(99999999999) "\xff")]] S_3 {};
namespace [[spmd::typ(S(99999999999))]] ns_4 {}
struct [[spmdx::Type(tp =  = R sizeof(int))]] S_5 {};
enum [[spmd::mesh(::)]] E_6 { A_6 };
enum [[spmd::mesh(tp =  , nullptr "x")]] E_7 { A_7 };
struct [[spmd::op]] S_8 {};
namespace [[spmd::Type(spmd:: "x" R nullptr)]] ns_9 {}
Tensor fp_10([[mesh(... linear = R +)]] const Tensor& x);
namespace [[spmd::typ(S(-2147483648) = R 1.5 ))]] ns_11 {}
struct M_12 { [[spmdx::unchecked(spmd:: -1)]] Tensor m; [[spmdx::unchecked(spmd:: -1)]] static int s; };
template <typename T> [[spmd::typ("\xff" tp 1.5 =)]] T tp_13(const T& x) { return x; }
void lo_14() { [[spmd::type({ tp =  u8"")]] Tensor x; (void)x; }
template <typename T> [[spmdx::typ]] T tp_15(const T& x) { return x; }
struct [[spmd::unchecked("x")]] S_16 {};
void lo_17() { [[spmd::mesh(-1 } linear })]] Tensor x; (void)x; }
using Alias_18 [[type]] = Tensor;
[[spmd::mesh()]] Tensor g_19;
void sl_20() { [[spmdx::typ('c' dp)]] static Tensor x; (void)x; }
[[spmdx::unchecked(tp)]] Tensor fn_21(const Tensor& x);
void lo_22() { [[spmd::type()]] Tensor x; (void)x; }
struct M_23 { [[typ([]{ return R; }())]] Tensor m; [[typ([]{ return R; }())]] static int s; };
SPMD_TYPE(dp = I, tp = V)
Tensor body(const Tensor& p0, SPMD_TYPE(tp = P) const Tensor& p1, bool c, int n) {
  if (c) return p0;
  while (n-- > 0) {
    switch (n) {
    case 0: {
      while (n-- > 0) {
        if (n == 1) goto L1_482;
        {
          Tensor v1 = p0;
          v1.add_(p0.exp());
          v1 = v1.sum();
        }
        L1_482:;
        if (c) return spmd::all_reduce(spmd::shard(p1, dp, S(0), P).matmul(torch::matmul(p1, p0)), tp, V, S(0));
        for (int i3 = 0; i3 < n; ++i3) {
          if (c) return (p0 * torch::matmul((true ? p1 : p0), torch::matmul(p1, p0)));
        }
      }
      break;
    }
    default: break;
    }
    Tensor v2 = torch::matmul(opaque(p0).sigmoid(), (p0 * 2.0));
  }
  switch (n) {
  case 0: {
    Tensor v3 = p0;
    v3 = torch::matmul(p0, v3.tanh());
    while (n-- > 0) {
      if (n == 3) goto L2_588;
      {
        if (n == 3) goto L3_245;
        {
          SPMD_TYPE(tp = I) Tensor v4 = opaque((torch::matmul(p0, v3) * 2.0));
        }
        L3_245:;
        if (n == 1) goto L4_353;
        {
          p0.sub_(spmd::invariant_to_replicate(p1, dp).matmul((torch::relu(v3) * 2.0)));
          Tensor v5 = spmd::redistribute(p1, tp, I, S(0)).add(v3).add(spmd::invariant_to_replicate(v3, tp));
        }
        L4_353:;
        v3 = p1;
      }
      L2_588:;
    }
    break;
  }
  case 1: {
    switch (n) {
    case 0: {
      spmd::assert_type(p0, {dp = S(0), tp = V});
      Tensor v6 = torch::matmul(p1, p0).exp().neg();
    }
    case 1: {
      auto v7 = [&](const Tensor& a) { return spmd::all_reduce(a, tp, P, R); };
      Tensor v8 = v7(p1);
      for (int i2 = 0; i2 < n; ++i2) {
        p0.sub_(spmd::invariant_to_replicate(v8, dp));
        SPMD_TYPE(dp = V) Tensor v9 = torch::matmul(spmd::invariant_to_replicate(p0, tp), torch::matmul(p1, p0)).mul(v8);
        if (c) return spmd::invariant_to_replicate((n > 2 ? (n > 2 ? p1 : v9) : opaque(p0)), tp);
        if (i2 == 3) break;
      }
      break;
    }
    case 2: {
      for (int i2 = 0; i2 < n; ++i2) {
        while (n-- > 0) {
          if (c) return p1;
          Tensor v10 = torch::relu(p1);
        }
      }
      Tensor v11 = torch::matmul((c ? p1 : p1).matmul(p1.sum()), spmd::invariant_to_replicate(p1, tp).matmul(torch::matmul(p0, p0)));
      if (n == 2) goto L5_836;
      {
        if (n == 0) goto L6_333;
        {
          spmd::assert_type(p0, {tp = S(1)});
          v11 = torch::gelu(p1);
          Tensor v12 = p0;
        }
        L6_333:;
      }
      L5_836:;
      break;
    }
    default: break;
    }
    p0.sub_(spmd::invariant_to_replicate(p0, dp));
    auto v13 = [&](SPMD_TYPE(tp = S(-1)) const Tensor& a) { return spmd::all_reduce(a, tp, P, R); };
    Tensor v14 = v13(p1);
    break;
  }
  default: break;
  }
  {
    if (c) return (p0 * p0.mm(p0)).mm(p0.clone().neg());
    if (n == 3) goto L7_253;
    {
      p1.copy_((c ? (p1.mm(p0) * 2.0) : torch::relu(torch::relu(p0))));
      p1.copy_(spmd::convert(torch::matmul(p1, opaque(p1)), tp, S(1), S(1), {.gather_dim = 1}));
    }
    L7_253:;
    spmd::assert_type(p1, {tp = V});
  }
  try {
    try {
      if (c) return spmd::invariant_to_replicate(opaque((n > 2 ? p1 : p1)), tp);
      Tensor v15 = p1;
      auto v16 = [&](const Tensor& a) { return a; };
      Tensor v17 = v16(v15);
    } catch (...) {
      Tensor v18 = p1;
    }
  } catch (...) {
    try {
      spmd::assert_type(p1, {tp = S(1)});
    } catch (...) {
      if (c) return (p1 + p0.mm(p0)).clone();
    }
  }
  return opaque(p0).matmul(p0).sum();
}

