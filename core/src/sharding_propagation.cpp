// Sharding propagation of global SPMD (spec §12.2): per-axis rules by op
// family, then the whole-op combination (promotion to P, output spec, order).
#include <spmd/core/sharding_propagation.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace spmd::core {
namespace {

using K = Placement::Kind;

// ---- op families -----------------------------------------------------------

const std::set<std::string, std::less<>> kPointwise = {
    "add",         "sub",        "subtract",     "rsub",        "mul",
    "multiply",    "div",        "divide",       "true_divide", "floor_divide",
    "remainder",   "fmod",       "neg",          "negative",    "positive",
    "clone",       "detach",     "contiguous",   "to",          "float",
    "half",        "bfloat16",   "double",       "type_as",     "abs",
    "exp",         "exp2",       "expm1",        "log",         "log2",
    "log10",       "log1p",      "tanh",         "sigmoid",     "relu",
    "relu6",       "gelu",       "silu",         "mish",        "elu",
    "selu",        "leaky_relu", "hardtanh",     "hardswish",   "softplus",
    "sqrt",        "rsqrt",      "reciprocal",   "square",      "pow",
    "where",       "clamp",      "clamp_min",    "clamp_max",   "clip",
    "sign",        "sin",        "cos",          "tan",         "erf",
    "floor",       "ceil",       "round",        "trunc",       "eq",
    "ne",          "lt",         "le",           "gt",          "ge",
    "maximum",     "minimum",    "logical_and",  "logical_or",  "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor",  "bitwise_not", "masked_fill",
    "dropout",     "lerp",       "addcmul",      "addcdiv",     "nan_to_num",
    "isnan",       "isinf",      "zeros_like",   "ones_like",   "full_like",
    "empty_like",  "rand_like",  "randn_like",   "copy",        "fill",
    "zero",        "sigmoid_",   "glu_pointwise"};
const std::set<std::string, std::less<>> kContraction = {
    "mm", "bmm", "matmul", "einsum", "linear", "addmm", "baddbmm", "addbmm",
    "mv", "dot", "addmv",  "outer",  "ger",    "addr",  "inner"};
const std::set<std::string, std::less<>> kLinearReduction = {"sum", "nansum",
                                                             "mean", "nanmean"};
const std::set<std::string, std::less<>> kNonlinearReduction = {
    "max",  "min",    "amax",     "amin",     "argmax",    "argmin",
    "prod", "norm",   "var",      "std",      "logsumexp", "all",
    "any",  "median", "var_mean", "std_mean", "aminmax",   "count_nonzero"};
const std::set<std::string, std::less<>> kAlongDim = {
    "softmax", "log_softmax", "sort",   "argsort",      "topk",     "cumsum",
    "cumprod", "cummax",      "cummin", "logcumsumexp", "kthvalue", "msort"};
const std::set<std::string, std::less<>> kNorm = {"layer_norm", "rms_norm"};
const std::set<std::string, std::less<>> kShape = {
    "transpose",    "swapaxes", "swapdims",     "t",           "T",
    "mT",           "permute",  "movedim",      "moveaxis",    "view",
    "reshape",      "view_as",  "reshape_as",   "flatten",     "ravel",
    "unflatten",    "squeeze",  "unsqueeze",    "expand",      "expand_as",
    "broadcast_to", "narrow",   "select",       "slice",       "index",
    "index_select", "cat",      "concat",       "concatenate", "stack",
    "chunk",        "split",    "tensor_split", "unbind",      "flip",
    "roll",         "repeat",   "tile",         "triu",        "tril"};

// ---- message helpers -------------------------------------------------------

std::string arg(std::size_t i) { return "args[" + std::to_string(i) + "]"; }

TypeError no_strategy(std::string_view op, std::string_view axis,
                      const std::string& why, const std::string& fix) {
  TypeError e;
  e.kind = ErrorKind::SpmdTypeError;
  e.axis = std::string(axis);
  e.message = "No valid sharding strategy for " + std::string(op) +
              " on axis " + std::string(axis) + ": " + why;
  e.fix = fix;
  return e;
}

TypeError propagation_error(std::string_view op, std::string_view axis,
                            const std::string& why, const std::string& fix) {
  TypeError e = no_strategy(op, axis, why, fix);
  e.kind = ErrorKind::DTensorPropagationError;
  return e;
}

std::string gather_fix(std::string_view axis, std::size_t i, long d) {
  return "all_gather " + arg(i) + " first: spmd::all_gather(t, " +
         std::string(axis) + ", S(" + std::to_string(d) +
         "), R) (or redistribute the other operands to the same sharding)";
}

std::optional<long> norm_dim(long d, long rank) {
  if (d < -rank || d >= rank) return std::nullopt;
  return d < 0 ? d + rank : d;
}

AxisOutcome unknown(std::optional<long> rank = std::nullopt,
                    std::string note = {}) {
  return {Placement::unknown(), rank, std::move(note)};
}

AxisOutcome out(Placement p, std::optional<long> rank, std::string note = {}) {
  return {p, rank, std::move(note)};
}

Result<long> dim_arg(std::string_view op, std::string_view axis, long d,
                     long rank) {
  auto n = norm_dim(d, rank);
  if (!n) {
    TypeError e;
    e.kind = ErrorKind::SpmdTypeError;
    e.axis = std::string(axis);
    e.message = std::string(op) + ": dim " + std::to_string(d) +
                " is out of range for a tensor of rank " + std::to_string(rank);
    return e;
  }
  return *n;
}

// ---- pointwise with broadcasting -------------------------------------------

Result<AxisOutcome> pointwise(std::string_view op,
                              const std::vector<AxisArg>& ts,
                              std::string_view axis,
                              const std::vector<std::string>& names = {}) {
  auto arg = [&](std::size_t i) {
    return i < names.size() ? names[i] : spmd::core::arg(i);
  };
  long out_rank = 0;
  for (const auto& t : ts) {
    if (t.placement.kind == K::Unknown) return unknown();
    if (!t.shape.rank_known()) return unknown();
    out_rank = std::max(out_rank, t.shape.rank());
  }
  std::optional<long> dim;
  std::size_t who = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const auto& p = ts[i].placement;
    if (p.kind == K::Partial) {
      return no_strategy(op, axis,
                         arg(i) +
                             " is a pending sum (P) and another operand "
                             "is sharded",
                         "all_reduce " + arg(i) + " first");
    }
    if (!p.is_shard()) continue;
    long od = p.dim + out_rank - ts[i].shape.rank();
    if (dim && *dim != od) {
      return no_strategy(
          op, axis,
          arg(who) + " is sharded on output dim " + std::to_string(*dim) +
              " but " + arg(i) + " on output dim " + std::to_string(od) +
              " (its dim " + std::to_string(p.dim) +
              "); elementwise ops need the same sharding on every operand",
          "spmd::all_to_all(" + arg(i) + ", " + std::string(axis) + ", S(" +
              std::to_string(p.dim) + "), S(" +
              std::to_string(*dim - (out_rank - ts[i].shape.rank())) +
              ")) to move its shard, or all_gather one of them");
    }
    dim = od;
    who = i;
  }
  if (!dim) return out(Placement::replicate(), out_rank);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].placement.is_shard()) continue;
    long k = *dim - (out_rank - ts[i].shape.rank());
    if (k < 0) continue;  // broadcast: the operand lacks the dim
    auto size = ts[i].shape.size(k);
    if (!size) {
      // Spec §12.2's S+R rule with the size unknown: a replicated operand
      // of the whole extent is rejected, one of size 1 broadcasts.
      AxisOutcome u =
          unknown(out_rank, arg(i) + " dim " + std::to_string(k) +
                                " has unknown size: broadcast or not");
      u.fix = "if " + arg(i) + " has the whole extent on its dim " +
              std::to_string(k) + " (a bias of the sharded features), " +
              "it must be sharded like " + arg(who) +
              ": declare it [[spmd::type(" + std::string(axis) + " = S(" +
              std::to_string(k) +
              "))]] (one of size 1 there broadcasts and is right as it is; the "
              "checker does not see sizes)";
      return u;
    }
    if (*size == 1) continue;  // broadcast along the sharded dim
    return no_strategy(
        op, axis,
        arg(who) + " is sharded on dim " +
            std::to_string(ts[who].placement.dim) + " (S(" +
            std::to_string(ts[who].placement.dim) + "), local shape " +
            ts[who].shape.to_string() + ") but " + arg(i) +
            " is replicated with the whole extent " + std::to_string(*size) +
            " on its dim " + std::to_string(k) + " (shape " +
            ts[i].shape.to_string() + "): the local pieces would not line up",
        "shard " + arg(i) + " the same way: spmd::convert(t, " +
            std::string(axis) + ", R, S(" + std::to_string(k) +
            ")), or all_gather " + arg(who) + " (spmd::all_gather(t, " +
            std::string(axis) + ", S(" + std::to_string(ts[who].placement.dim) +
            "), R))");
  }
  return out(Placement::shard(*dim), out_rank);
}

// ---- contractions ----------------------------------------------------------

// One operand of a labelled contraction.
struct Labelled {
  std::vector<int> labels;      // one label per dim
  std::set<int> broadcastable;  // labels that may broadcast (size 1)
};

// A contraction's operands and label names, for contract's messages.
struct ContractCall {
  std::string_view op;
  const std::vector<AxisArg>& ts;
  const std::vector<std::size_t>& idx;
  std::string_view axis;
  const std::vector<std::string>& label_names;

  std::string lname(int l) const {
    return l < static_cast<int>(label_names.size()) ? label_names[l]
                                                    : std::to_string(l);
  }
};

// Operand j is S(dim) but the op gives it fewer dims.
TypeError shard_beyond_labels(const ContractCall& c, std::size_t j, long dim,
                              std::size_t n_labels) {
  TypeError e;
  e.kind = ErrorKind::InvalidArgument;
  e.axis = std::string(c.axis);
  e.message = std::string(c.op) + ": " + arg(c.idx[j]) + " is S(" +
              std::to_string(dim) + ") but the op gives it only " +
              std::to_string(n_labels) + " dims";
  return e;
}

// Operands `who` (label L) and j (label l) are sharded on different labels.
TypeError two_shard_labels(const ContractCall& c,
                           const std::vector<int>& out_labels, std::size_t who,
                           int L, std::size_t j, int l) {
  const auto& p = c.ts[c.idx[j]].placement;
  bool both_free = std::count(out_labels.begin(), out_labels.end(), L) &&
                   std::count(out_labels.begin(), out_labels.end(), l);
  return no_strategy(
      c.op, c.axis,
      arg(c.idx[who]) + " is sharded on dim " +
          std::to_string(c.ts[c.idx[who]].placement.dim) + " (" + c.lname(L) +
          ") and " + arg(c.idx[j]) + " on dim " + std::to_string(p.dim) + " (" +
          c.lname(l) + ")" +
          (both_free ? ": both free dims cannot be sharded by one axis"
                     : ": one axis can shard only one dim of a "
                       "contraction"),
      "keep one operand sharded and all_gather the other (spmd::"
      "all_gather(t, " +
          std::string(c.axis) + ", S(" + std::to_string(p.dim) + "), R))");
}

// Operand `who` is sharded on label L and operand j has L (its dim k) but
// is replicated there.
TypeError replicated_on_label(const ContractCall& c, std::size_t who, int L,
                              std::size_t j, long k, bool contracted) {
  const auto& t = c.ts[c.idx[j]];
  std::string sd = std::to_string(c.ts[c.idx[who]].placement.dim);
  std::string axis(c.axis);
  if (contracted) {
    return no_strategy(
        c.op, c.axis,
        arg(c.idx[who]) + " is sharded on dim " + sd +
            ", the contraction dim (" + c.lname(L) + "), but " + arg(c.idx[j]) +
            " is replicated on its dim " + std::to_string(k) +
            " (the same contraction dim, shape " + t.shape.to_string() +
            "): each rank would contract a full dim with a shard",
        "shard " + arg(c.idx[j]) + " on dim " + std::to_string(k) +
            " as well (spmd::convert(t, " + axis + ", R, S(" +
            std::to_string(k) +
            ")) or feed it the sharded output of the "
            "previous layer), which makes the result a pending sum (P); or "
            "all_gather " +
            arg(c.idx[who]) + " (spmd::all_gather(t, " + axis + ", S(" + sd +
            "), R))");
  }
  return no_strategy(
      c.op, c.axis,
      arg(c.idx[who]) + " is sharded on dim " + sd + " (" + c.lname(L) +
          ") but " + arg(c.idx[j]) + " is replicated on its dim " +
          std::to_string(k) + " (the same dim " + c.lname(L) + ", shape " +
          t.shape.to_string() + ")",
      "shard " + arg(c.idx[j]) + " on dim " + std::to_string(k) +
          " too (spmd::convert(t, " + axis + ", R, S(" + std::to_string(k) +
          "))), or all_gather " + arg(c.idx[who]));
}

// Generic labelled rule: all shards on one label L; every operand that has L
// is sharded on it (or broadcasts it); L in the output -> Shard, else Partial.
Result<AxisOutcome> contract(std::string_view op,
                             const std::vector<AxisArg>& ts,
                             const std::vector<std::size_t>& idx,
                             const std::vector<Labelled>& ops,
                             const std::vector<int>& out_labels,
                             std::string_view axis,
                             const std::vector<std::string>& label_names) {
  const ContractCall c{op, ts, idx, axis, label_names};
  std::optional<int> L;
  std::size_t who = 0;
  long out_rank = static_cast<long>(out_labels.size());
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const auto& p = ts[idx[j]].placement;
    if (p.kind == K::Unknown) return unknown(out_rank);
    if (p.kind == K::Partial)
      return no_strategy(op, axis,
                         arg(idx[j]) +
                             " is a pending sum (P) while another "
                             "operand is sharded",
                         "all_reduce " + arg(idx[j]) + " first");
    if (!p.is_shard()) continue;
    if (p.dim >= static_cast<long>(ops[j].labels.size()))
      return shard_beyond_labels(c, j, p.dim, ops[j].labels.size());
    int l = ops[j].labels[p.dim];
    if (L && *L != l) return two_shard_labels(c, out_labels, who, *L, j, l);
    L = l;
    who = j;
  }
  if (!L) return out(Placement::replicate(), out_rank);
  auto it = std::find(out_labels.begin(), out_labels.end(), *L);
  bool contracted = it == out_labels.end();
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const auto& t = ts[idx[j]];
    if (t.placement.is_shard()) continue;
    auto pos = std::find(ops[j].labels.begin(), ops[j].labels.end(), *L);
    if (pos == ops[j].labels.end()) continue;  // operand lacks the dim
    long k = pos - ops[j].labels.begin();
    if (ops[j].broadcastable.count(*L)) {
      auto size = t.shape.size(k);
      if (!size) return unknown(out_rank);
      if (*size == 1) continue;
    }
    return replicated_on_label(c, who, *L, j, k, contracted);
  }
  if (contracted) return out(Placement::partial(), out_rank);
  return out(Placement::shard(it - out_labels.begin()), out_rank);
}

// Parses an einsum equation into labelled operands (ellipsis expanded with
// the operands' ranks). Returns false when a rank is unknown.
struct Einsum {
  std::vector<Labelled> ops;
  std::vector<int> out;
  std::vector<std::string> names;
};

// The comma-separated operand terms of an einsum equation's left side.
std::vector<std::string> einsum_terms(const std::string& lhs) {
  std::vector<std::string> terms;
  std::size_t b = 0;
  while (true) {
    auto c = lhs.find(',', b);
    terms.push_back(lhs.substr(b, c - b));
    if (c == std::string::npos) break;
    b = c + 1;
  }
  return terms;
}

// The rank of the ellipsis part (the longest one an operand gives it; -1
// when no term has "..."); nullopt when a term with "..." has an operand of
// unknown rank.
std::optional<long> einsum_ellipsis_rank(const std::vector<std::string>& terms,
                                         const std::vector<AxisArg>& ts) {
  long ell = -1;
  for (std::size_t j = 0; j < terms.size(); ++j) {
    const std::string& t = terms[j];
    auto e = t.find("...");
    if (e == std::string::npos) continue;
    if (!ts[j].shape.rank_known()) return std::nullopt;
    long named = static_cast<long>(t.size()) - 3;
    ell = std::max(ell, ts[j].shape.rank() - named);
  }
  return ell;
}

// Label ids of an einsum: a character gets the next id at its first use
// (and its name in `names`).
struct EinsumIds {
  std::map<char, int> ids;
  std::vector<std::string>& names;

  int operator()(char c) {
    auto [it, fresh] = ids.emplace(c, static_cast<int>(ids.size()));
    if (fresh) names.push_back(std::string(1, c));
    return it->second;
  }
};

// The output labels: the right side when the equation has "->"; otherwise
// the ellipsis, then the letters used once, alphabetically.
std::vector<int> einsum_output(bool has_arrow, const std::string& lhs,
                               const std::string& rhs,
                               const std::vector<int>& ell_ids, EinsumIds& id) {
  std::vector<int> out;
  if (has_arrow) {
    for (std::size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.compare(i, 3, "...") == 0) {
        out.insert(out.end(), ell_ids.begin(), ell_ids.end());
        i += 2;
      } else {
        out.push_back(id(rhs[i]));
      }
    }
    return out;
  }
  out = ell_ids;
  std::map<char, int> count;
  for (char c : lhs)
    if (std::isalpha(static_cast<unsigned char>(c))) ++count[c];
  for (auto [c, n] : count)
    if (n == 1) out.push_back(id(c));
  return out;
}

Result<std::optional<Einsum>> parse_einsum(std::string_view op,
                                           std::string_view axis,
                                           std::string eq,
                                           const std::vector<AxisArg>& ts) {
  eq.erase(std::remove_if(eq.begin(), eq.end(),
                          [](char c) {
                            return std::isspace(static_cast<unsigned char>(c));
                          }),
           eq.end());
  auto bad = [&](const std::string& why) -> TypeError {
    TypeError e;
    e.kind = ErrorKind::InvalidArgument;
    e.axis = std::string(axis);
    e.message = std::string(op) + ": einsum equation \"" + eq + "\": " + why;
    return e;
  };
  std::string lhs = eq, rhs;
  bool has_arrow = false;
  if (auto a = eq.find("->"); a != std::string::npos) {
    lhs = eq.substr(0, a);
    rhs = eq.substr(a + 2);
    has_arrow = true;
  }
  std::vector<std::string> terms = einsum_terms(lhs);
  if (terms.size() != ts.size())
    return bad(std::to_string(terms.size()) + " operands in the equation, " +
               std::to_string(ts.size()) + " tensors given");
  Einsum r;
  EinsumIds id{{}, r.names};
  auto ell_rank = einsum_ellipsis_rank(terms, ts);
  if (!ell_rank) return std::optional<Einsum>{};
  long ell = *ell_rank;  // rank of the ellipsis part (broadcast, right-aligned)
  // Letters get ids in order of appearance, then the ellipsis dims.
  for (char c : eq)
    if (std::isalpha(static_cast<unsigned char>(c))) id(c);
  std::vector<int> ell_ids;
  int next = static_cast<int>(id.ids.size());
  for (long i = 0; i < ell; ++i) {
    ell_ids.push_back(next + static_cast<int>(i));
    r.names.push_back("..." + std::to_string(i));
  }
  for (std::size_t j = 0; j < terms.size(); ++j) {
    Labelled L;
    const std::string& t = terms[j];
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 3, "...") == 0) {
        long named = static_cast<long>(t.size()) - 3;
        long here = ts[j].shape.rank() - named;
        for (long k = ell - here; k < ell; ++k) {
          L.labels.push_back(ell_ids[k]);
          L.broadcastable.insert(ell_ids[k]);
        }
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(t[i]))) {
        L.labels.push_back(id(t[i]));
      } else {
        return bad(std::string("unexpected character '") + t[i] + "'");
      }
    }
    if (ts[j].shape.rank_known() &&
        static_cast<long>(L.labels.size()) != ts[j].shape.rank())
      return bad("operand " + std::to_string(j) + " has rank " +
                 std::to_string(ts[j].shape.rank()) + " but " +
                 std::to_string(L.labels.size()) + " subscripts");
    r.ops.push_back(std::move(L));
  }
  r.out = einsum_output(has_arrow, lhs, rhs, ell_ids, id);
  return std::optional<Einsum>{std::move(r)};
}

// The einsum equation of a matrix product, from the operand ranks.
std::optional<std::string> product_equation(const std::string& name, long ra,
                                            long rb) {
  if (name == "mm") return std::string("ij,jk->ik");
  if (name == "bmm") return std::string("bij,bjk->bik");
  if (name == "mv") return std::string("ij,j->i");
  if (name == "dot" || name == "inner") return std::string("i,i->");
  if (name == "outer" || name == "ger") return std::string("i,j->ij");
  // matmul: by ranks, batch dims broadcast (spec of torch.matmul).
  if (ra == 1 && rb == 1) return std::string("i,i->");
  if (ra == 2 && rb == 1) return std::string("ij,j->i");
  if (ra == 1 && rb == 2) return std::string("j,jk->k");
  if (ra == 2 && rb == 2) return std::string("ij,jk->ik");
  std::string a = ra == 1 ? "j" : "...ij";
  std::string b = rb == 1 ? "j" : "...jk";
  std::string o = "...";
  if (ra != 1) o += "i";
  if (rb != 1) o += "k";
  return a + "," + b + "->" + o;
}

Result<AxisOutcome> product(std::string_view op, const std::string& kind,
                            const std::vector<AxisArg>& ts, std::size_t a,
                            std::size_t b, std::string_view axis) {
  std::vector<AxisArg> pair = {ts[a], ts[b]};
  if (!pair[0].shape.rank_known() || !pair[1].shape.rank_known()) {
    if (kind == "mm" || kind == "bmm" || kind == "mv" || kind == "dot") {
      // Ranks are fixed by the op.
      long ra = kind == "bmm" ? 3 : (kind == "dot" ? 1 : 2);
      long rb = kind == "bmm" ? 3 : (kind == "mm" ? 2 : 1);
      if (!pair[0].shape.rank_known()) pair[0].shape = Shape::of_rank(ra);
      if (!pair[1].shape.rank_known()) pair[1].shape = Shape::of_rank(rb);
    } else {
      return unknown();
    }
  }
  auto eq = product_equation(kind, pair[0].shape.rank(), pair[1].shape.rank());
  auto parsed = parse_einsum(op, axis, *eq, pair);
  if (!parsed) return parsed.error();
  if (!*parsed) return unknown();
  // Report operand numbers of the original call.
  std::vector<AxisArg> view(std::max(a, b) + 1);
  view[a] = pair[0];
  view[b] = pair[1];
  return contract(op, view, {a, b}, (*parsed)->ops, (*parsed)->out, axis,
                  (*parsed)->names);
}

// self + product (addmm & co., linear's bias): a product that is a pending
// sum cannot take a replicated addend (it would be added n times).
Result<AxisOutcome> add_to_product(std::string_view op, const AxisOutcome& prod,
                                   const AxisArg& addend, std::size_t addend_i,
                                   std::string_view axis,
                                   const std::string& product_text) {
  if (prod.placement.kind == K::Unknown || addend.placement.kind == K::Unknown)
    return unknown(prod.out_rank);
  if (prod.placement.kind == K::Partial) {
    if (addend.placement.kind == K::Partial) return prod;
    return no_strategy(
        op, axis,
        "the product " + product_text +
            " contracts a sharded dim, so it is a pending sum (P) on " +
            std::string(axis) + ", and " + arg(addend_i) + " (" +
            addend.placement.to_string() +
            ") would be added to every rank's partial sum, i.e. " +
            std::string(axis) + "-size times",
        "add " + arg(addend_i) + " after the all_reduce (spmd::all_reduce(y, " +
            std::string(axis) + ", P, R) + bias), or drop it from this op");
  }
  if (!prod.out_rank) return unknown();
  std::vector<AxisArg> two = {
      AxisArg{prod.placement, Shape::of_rank(*prod.out_rank)}, addend};
  // The product has no known sizes; a replicated addend is fine unless it
  // spans the sharded dim with extent > 1, which pointwise() checks.
  return pointwise(op, two, axis, {product_text, arg(addend_i)});
}

Result<AxisOutcome> contraction(std::string_view op, const std::string& name,
                                const std::vector<AxisArg>& ts,
                                const ShardingArgs& args,
                                std::string_view axis) {
  auto need = [&](std::size_t n) -> Status {
    if (ts.size() >= n) return Ok{};
    TypeError e;
    e.kind = ErrorKind::InvalidArgument;
    e.message = std::string(op) + " takes " + std::to_string(n) +
                " tensors, got " + std::to_string(ts.size());
    return e;
  };
  if (name == "einsum") {
    if (!args.known || args.equation.empty()) return unknown();
    auto parsed = parse_einsum(op, axis, args.equation, ts);
    if (!parsed) return parsed.error();
    if (!*parsed) return unknown();
    std::vector<std::size_t> idx(ts.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    return contract(op, ts, idx, (*parsed)->ops, (*parsed)->out, axis,
                    (*parsed)->names);
  }
  if (name == "linear") {
    // linear(x[..., k], w[n, k], bias[n]) = x @ w^T + bias.
    if (auto s = need(2); !s) return s.error();
    std::vector<AxisArg> pair = {ts[0], ts[1]};
    if (!pair[0].shape.rank_known()) return unknown();
    if (!pair[1].shape.rank_known()) pair[1].shape = Shape::of_rank(2);
    std::string eq =
        pair[1].shape.rank() == 1 ? "...k,k->..." : "...k,nk->...n";
    auto parsed = parse_einsum(op, axis, eq, pair);
    if (!parsed) return parsed.error();
    if (!*parsed) return unknown();
    auto prod = contract(op, ts, {0, 1}, (*parsed)->ops, (*parsed)->out, axis,
                         (*parsed)->names);
    if (!prod || ts.size() < 3) return prod;
    return add_to_product(op, *prod, ts[2], 2, axis, "args[0] @ args[1]^T");
  }
  if (name == "addmm" || name == "baddbmm" || name == "addmv" ||
      name == "addr" || name == "addbmm") {
    if (auto s = need(3); !s) return s.error();
    std::string kind = name == "addmm"     ? "mm"
                       : name == "baddbmm" ? "bmm"
                       : name == "addmv"   ? "mv"
                       : name == "addr"    ? "outer"
                                           : "addbmm";
    Result<AxisOutcome> prod = unknown();
    if (kind == "addbmm") {
      std::vector<AxisArg> pair = {ts[1], ts[2]};
      for (auto& p : pair)
        if (!p.shape.rank_known()) p.shape = Shape::of_rank(3);
      auto parsed = parse_einsum(op, axis, "bij,bjk->ik", pair);
      if (!parsed) return parsed.error();
      std::vector<AxisArg> view = {ts[0], pair[0], pair[1]};
      prod = contract(op, view, {1, 2}, (*parsed)->ops, (*parsed)->out, axis,
                      (*parsed)->names);
    } else {
      prod = product(op, kind, ts, 1, 2, axis);
    }
    if (!prod) return prod;
    return add_to_product(op, *prod, ts[0], 0, axis, "args[1] @ args[2]");
  }
  if (auto s = need(2); !s) return s.error();
  return product(op, name, ts, 0, 1, axis);
}

// ---- reductions and along-dim ops
// --------------------------------------------

// The reduced dims (normalised), or nullopt when unknown.
std::optional<std::vector<long>> reduced_dims(const ShardingArgs& args,
                                              long rank) {
  if (!args.known) return std::nullopt;
  std::vector<long> dims;
  if (!args.has_dims || args.dims.empty()) {
    for (long d = 0; d < rank; ++d) dims.push_back(d);
    return dims;
  }
  for (long d : args.dims) {
    auto n = norm_dim(d, rank);
    if (!n) return std::nullopt;
    dims.push_back(*n);
  }
  return dims;
}

// Whether `args` reduce every dim of an operand of shape `s`: no dim
// argument (or an empty list), or, with the rank known, a list naming every
// dim. False when the arguments are unknown.
bool reduces_every_dim(const ShardingArgs& args, const Shape& s) {
  if (!args.known) return false;
  if (!args.has_dims || args.dims.empty()) return true;
  if (!s.rank_known()) return false;
  auto dims = reduced_dims(args, s.rank());
  if (!dims) return false;
  std::set<long> distinct(dims->begin(), dims->end());
  return static_cast<long>(distinct.size()) == s.rank();
}

// A sum, not a mean: the reductions whose per-rank results over a shard add
// up to the global result exactly.
bool is_sum(const std::string& name) {
  return name == "sum" || name == "nansum";
}

// A reduction over the sharded dim d. Only a sum is a pending sum of the
// one-device value: each rank's sum of its shard adds up to the global sum.
// A mean's per-rank results add up to axis-size times the global mean (DTensor
// calls it Partial(avg), which has no type here), and a max, a variance, a
// norm or a product of the shards do not add up to anything: all rejected,
// with the rewrite that is a sum.
Result<AxisOutcome> over_shard(std::string_view op, const std::string& name,
                               bool linear, long d, std::string_view axis,
                               std::optional<long> out_rank) {
  if (linear && is_sum(name)) return out(Placement::partial(), out_rank);
  const std::string a(axis), dim = std::to_string(d);
  const std::string sharded =
      "dim " + dim + ", which " + a + " shards (S(" + dim + "))";
  if (name == "mean" || name == "nanmean")
    return no_strategy(
        op, axis,
        "it averages over " + sharded +
            ": each rank averages its own shard, so the per-rank means add "
            "up to " +
            a +
            "-size times the global mean, not to the mean (there is no "
            "pending-mean type, DTensor's Partial(avg))",
        "sum over the dim, then divide by the global size: " +
            std::string(name == "nanmean" ? "nansum" : "sum") +
            " / (the global count of the averaged elements) is the pending "
            "sum (P) of the mean; or " +
            gather_fix(axis, 0, d));
  std::string combine =
      " is not a sum: the per-rank results cannot be "
      "combined by a pending sum";
  if (name == "max" || name == "min" || name == "amax" || name == "amin" ||
      name == "aminmax")
    combine +=
        " (they combine by a max or a min, and spmd::all_reduce only "
        "sums)";
  return no_strategy(
      op, axis, "it reduces over " + sharded + ", and " + name + combine,
      gather_fix(axis, 0, d) + "; or reduce over the other dims only");
}

Result<AxisOutcome> reduction(std::string_view op, const std::string& name,
                              bool linear, const std::vector<AxisArg>& ts,
                              const ShardingArgs& args, std::string_view axis) {
  const AxisArg& x = ts.at(0);
  // The full-reduction rule: a sum over every dim of a tensor sharded on
  // some dim, whichever it is (the front end may not know it: a V without a
  // dim is Unknown here), is the pending sum of the global sum. A caller
  // promotes only a V result (§12.2), so an Unknown operand that is not V
  // is not affected. A mean is not claimed (over_shard).
  if (x.placement.kind == K::Unknown) {
    if (linear && is_sum(name) && reduces_every_dim(args, x.shape))
      return out(Placement::partial(), !args.keepdim ? std::optional<long>(0)
                                       : x.shape.rank_known()
                                           ? std::optional<long>(x.shape.rank())
                                           : std::nullopt);
    return unknown();
  }
  if (!x.shape.rank_known()) {
    // Every dim reduced: the shard dim is among them whatever the rank.
    if (!x.placement.is_shard() || !reduces_every_dim(args, x.shape))
      return unknown();
  }
  std::optional<long> known_rank;
  if (x.shape.rank_known()) known_rank = x.shape.rank();
  long rank = known_rank ? *known_rank : x.placement.dim + 1;
  auto dims = reduced_dims(args, rank);
  if (!dims) return unknown();
  std::optional<long> out_rank =
      !known_rank    ? (args.keepdim ? std::nullopt : std::optional<long>(0))
      : args.keepdim ? *known_rank
                     : *known_rank - static_cast<long>(dims->size());
  if (!x.placement.is_shard()) return out(x.placement, out_rank);
  long d = x.placement.dim;
  if (std::count(dims->begin(), dims->end(), d))
    return over_shard(op, name, linear, d, axis, out_rank);
  long nd = d;
  if (!args.keepdim)
    for (long r : *dims)
      if (r < d) --nd;
  return out(Placement::shard(nd), out_rank);
}

Result<AxisOutcome> along_dim(std::string_view op, const std::string& name,
                              const std::vector<AxisArg>& ts,
                              const ShardingArgs& args, std::string_view axis) {
  const AxisArg& x = ts.at(0);
  if (x.placement.kind == K::Unknown || !x.shape.rank_known()) return unknown();
  long rank = x.shape.rank();
  if (!x.placement.is_shard()) return out(x.placement, rank);
  if (!args.known) return unknown(rank);
  long raw = args.has_dims && !args.dims.empty() ? args.dims[0] : -1;
  auto dim = dim_arg(op, axis, raw, rank);
  if (!dim) return dim.error();
  long d = x.placement.dim;
  if (*dim != d) return out(x.placement, rank);
  std::string fix = gather_fix(axis, 0, d);
  if (name == "softmax" || name == "log_softmax")
    fix =
        "compute it across shards (vocab-parallel: the local max and the "
        "local sum of exp, each all_reduced over " +
        std::string(axis) + "), or " + fix;
  return no_strategy(op, axis,
                     "it works along dim " + std::to_string(d) + ", which " +
                         std::string(axis) + " shards (S(" + std::to_string(d) +
                         ")): every rank sees only its "
                         "shard of that dim",
                     fix);
}

Result<AxisOutcome> norm_layer(std::string_view op,
                               const std::vector<AxisArg>& ts,
                               const ShardingArgs& args,
                               std::string_view axis) {
  const AxisArg& x = ts.at(0);
  for (std::size_t i = 1; i < ts.size(); ++i) {
    if (ts[i].placement.kind == K::Unknown) return unknown();
    if (ts[i].placement.kind != K::Replicate)
      return no_strategy(op, axis,
                         arg(i) + " (weight/bias) is " +
                             ts[i].placement.to_string() +
                             "; the normalisation parameters must be "
                             "replicated",
                         "all_gather the parameter first");
  }
  if (x.placement.kind == K::Unknown || !x.shape.rank_known()) return unknown();
  long rank = x.shape.rank();
  if (!x.placement.is_shard()) return out(x.placement, rank);
  if (!args.known || args.normalized_ndim <= 0) return unknown(rank);
  long d = x.placement.dim;
  if (d >= rank - args.normalized_ndim)
    return no_strategy(
        op, axis,
        "it normalises over the last " + std::to_string(args.normalized_ndim) +
            " dims, and dim " + std::to_string(d) + " is sharded by " +
            std::string(axis) + " (S(" + std::to_string(d) +
            ")): the statistics would cover one shard only",
        gather_fix(axis, 0, d) +
            "; or compute the statistics with an all_reduce over " +
            std::string(axis));
  return out(x.placement, rank);
}

// ---- embedding and losses --------------------------------------------------

Result<AxisOutcome> embedding(std::string_view op, bool aten_order,
                              const std::vector<AxisArg>& ts,
                              std::string_view axis) {
  if (ts.size() < 2) return unknown();
  std::size_t ii = aten_order ? 1 : 0, wi = aten_order ? 0 : 1;
  const AxisArg& in = ts[ii];
  const AxisArg& w = ts[wi];
  if (in.placement.kind == K::Unknown || w.placement.kind == K::Unknown)
    return unknown();
  std::optional<long> out_rank;
  if (in.shape.rank_known()) out_rank = in.shape.rank() + 1;
  if (in.placement.kind == K::Partial || w.placement.kind == K::Partial)
    return no_strategy(op, axis, "an operand is a pending sum (P)",
                       "all_reduce it first");
  if (w.placement.is_shard() && in.placement.is_shard())
    return no_strategy(op, axis,
                       "both the indices " + arg(ii) + " and the table " +
                           arg(wi) + " are sharded",
                       "all_gather one of them");
  if (in.placement.is_shard()) return out(in.placement, out_rank);
  if (w.placement.is_shard() && w.placement.dim == 0) {
    // Every rank looks up a row for every index, also for the indices
    // another rank owns: V with unmasked rows, a pending sum only once those
    // rows are zeroed (infer_global, masks.h).
    AxisOutcome o = unknown(
        out_rank,
        std::string(op) + ": the table is vocab-sharded on " +
            std::string(axis) +
            " (S(0)): each rank looks up a row for every index, also for the "
            "indices another rank owns, so the result holds unmasked rows "
            "(V): it is a pending sum (P) only once the rows of indices "
            "outside the rank's shard are zeroed (a vocab-parallel embedding: "
            "shift the indices by the vocab offset, then masked_fill(mask, 0) "
            "the result)");
    o.unmasked_rows = true;
    return o;
  }
  if (w.placement.is_shard() && w.placement.dim == 1) {
    if (!out_rank) return unknown();
    return out(Placement::shard(*out_rank - 1), out_rank);
  }
  return out(Placement::replicate(), out_rank);
}

Result<AxisOutcome> loss(std::string_view op, const std::vector<AxisArg>& ts,
                         const ShardingArgs& args, std::string_view axis) {
  if (ts.size() < 2) return unknown();
  const AxisArg& x = ts[0];
  const AxisArg& tgt = ts[1];
  if (x.placement.kind == K::Unknown || tgt.placement.kind == K::Unknown ||
      !x.shape.rank_known() || !args.known)
    return unknown();
  long rank = x.shape.rank();
  long class_dim = rank >= 2 ? 1 : 0;
  long out_rank = args.reduction == "none" ? rank - 1 : 0;
  if (x.placement.is_shard() && x.placement.dim == class_dim) {
    return no_strategy(
        op, axis,
        "the logits args[0] are sharded on the class dim " +
            std::to_string(class_dim) + " by " + std::string(axis) + " (S(" +
            std::to_string(class_dim) +
            ")): the softmax inside the loss needs every class",
        "use a vocab-parallel cross-entropy (local max and sum of exp "
        "all_reduced over " +
            std::string(axis) +
            ", the target logit picked by the rank that owns it), or "
            "all_gather the logits first (spmd::all_gather(t, " +
            std::string(axis) + ", S(" + std::to_string(class_dim) + "), R))");
  }
  // Batch sharding: the target (input dims without the class dim) must
  // follow.
  std::optional<long> td;  // target dim matching the input shard
  if (x.placement.is_shard())
    td = x.placement.dim > class_dim ? x.placement.dim - 1 : x.placement.dim;
  if (tgt.placement.is_shard() && (!td || tgt.placement.dim != *td))
    return no_strategy(op, axis,
                       "the target args[1] is sharded on dim " +
                           std::to_string(tgt.placement.dim) +
                           " but the logits args[0] are " +
                           x.placement.to_string(),
                       "shard the logits and the target on the same batch dim");
  if (td && !tgt.placement.is_shard())
    return no_strategy(
        op, axis,
        "the logits args[0] are sharded on batch dim " +
            std::to_string(x.placement.dim) + " but the target args[1] is " +
            tgt.placement.to_string(),
        "shard the target the same way (spmd::convert(t, " + std::string(axis) +
            ", R, S(" + std::to_string(*td) + ")))");
  if (!td) return out(Placement::replicate(), out_rank);
  if (args.reduction == "none") return out(Placement::shard(*td), out_rank);
  if (args.reduction == "mean")
    return no_strategy(
        op, axis,
        "reduction=mean over a batch sharded by " + std::string(axis) +
            ": each rank averages its own shard, so the per-rank losses add "
            "up to " +
            std::string(axis) +
            "-size times the global mean loss, not to the mean (there is no "
            "pending-mean type)",
        "use reduction=sum and divide by the global batch size (the pending "
        "sum (P) of the mean loss), or reduction=none and reduce it yourself");
  return out(Placement::partial(), out_rank);
}

// ---- shape ops -------------------------------------------------------------

// The target sizes of a view with the -1 entry inferred from `total`;
// nullopt when a target size is unknown.
std::optional<std::vector<long>> view_sizes(
    const std::vector<std::optional<long>>& target, long total) {
  std::vector<long> outs;
  long known = 1, infer = -1;
  for (std::size_t j = 0; j < target.size(); ++j) {
    if (!target[j]) return std::nullopt;
    if (*target[j] == -1) {
      infer = static_cast<long>(j);
      outs.push_back(1);
    } else {
      outs.push_back(*target[j]);
      known *= *target[j];
    }
  }
  if (infer >= 0) outs[infer] = known ? total / known : 0;
  return outs;
}

// A view of a tensor sharded on dim d: its input and output sizes, and the
// shapes text its messages show.
struct ViewShapes {
  std::string_view op;
  std::string_view axis;
  long d;
  const std::vector<long>& in;
  const std::vector<long>& outs;
  std::string shapes;  // " (local shape [..] to [..])"
};

// The sharded dim lies in the input group [ia, i), which becomes the output
// group [ja, j): it survives only as the outermost non-1 dim of the group,
// onto the single output dim of extent > 1.
Result<AxisOutcome> shard_through_group(const ViewShapes& v, std::size_t ia,
                                        std::size_t i, std::size_t ja,
                                        std::size_t j) {
  long d = v.d;
  long out_rank = static_cast<long>(v.outs.size());
  std::size_t first = ia;
  while (first < i && v.in[first] == 1) ++first;
  std::size_t ofirst = ja;
  while (ofirst < j && v.outs[ofirst] == 1) ++ofirst;
  std::size_t out_n = 0;
  for (std::size_t k = ja; k < j; ++k) out_n += v.outs[k] != 1;
  if (out_n > 1)
    return propagation_error(
        v.op, v.axis,
        "reshaping a tensor sharded on dim " + std::to_string(d) +
            " into multiple smaller dimensions is not supported: the "
            "sharded dim is split across output dims" +
            v.shapes,
        "all_gather dim " + std::to_string(d) +
            " before the reshape, or shard a dim that is not split");
  if (static_cast<long>(first) != d)
    return no_strategy(
        v.op, v.axis,
        "it merges dims " + std::to_string(ia) + ".." + std::to_string(i - 1) +
            " and the shard is on the inner dim " + std::to_string(d) +
            ": the merged dim would interleave the ranks' shards" + v.shapes,
        "shard the outermost merged dim instead, move dim " +
            std::to_string(d) + " first (permute) before merging, or " +
            gather_fix(v.axis, 0, d));
  return out(Placement::shard(static_cast<long>(ofirst)), out_rank);
}

// view / reshape of a sharded tensor: walks the input and output sizes in
// groups of equal product; size-1 dims pair up or drop out.
Result<AxisOutcome> view_like(std::string_view op, const AxisArg& x,
                              std::vector<std::optional<long>> target,
                              std::string_view axis) {
  if (!x.shape.rank_known()) return unknown();
  long d = x.placement.dim;
  std::vector<long> in;
  for (long i = 0; i < x.shape.rank(); ++i) {
    auto s = x.shape.size(i);
    if (!s) return unknown(static_cast<long>(target.size()));
    in.push_back(*s);
  }
  long total = 1;
  for (long s : in) total *= s;
  auto sized = view_sizes(target, total);
  if (!sized) return unknown(static_cast<long>(target.size()));
  const std::vector<long>& outs = *sized;
  long out_rank = static_cast<long>(outs.size());
  std::string shapes = " (local shape " + x.shape.to_string() + " to [";
  for (std::size_t j = 0; j < outs.size(); ++j)
    shapes += (j ? ", " : "") + std::to_string(outs[j]);
  shapes += "])";
  const ViewShapes v{op, axis, d, in, outs, shapes};
  std::size_t i = 0, j = 0;
  while (i < in.size() || j < outs.size()) {
    if (i < in.size() && in[i] == 1 && (j >= outs.size() || outs[j] != 1)) {
      if (static_cast<long>(i) == d)
        return propagation_error(
            op, axis,
            "reshaping a tensor sharded on dim " + std::to_string(d) +
                " (local size 1) is ambiguous: the sharded dim disappears" +
                shapes,
            "all_gather dim " + std::to_string(d) + " before reshaping");
      ++i;
      continue;
    }
    if (j < outs.size() && outs[j] == 1 && (i >= in.size() || in[i] != 1)) {
      ++j;
      continue;
    }
    if (i < in.size() && j < outs.size() && in[i] == 1 && outs[j] == 1) {
      if (static_cast<long>(i) == d)
        return out(Placement::shard(static_cast<long>(j)), out_rank);
      ++i;
      ++j;
      continue;
    }
    if (i >= in.size() || j >= outs.size()) return unknown(out_rank);
    std::size_t ia = i, ja = j;
    long pi = in[i++], pj = outs[j++];
    while (pi != pj) {
      if (pi < pj) {
        if (i >= in.size()) return unknown(out_rank);
        pi *= in[i++];
      } else {
        if (j >= outs.size()) return unknown(out_rank);
        pj *= outs[j++];
      }
    }
    if (d < static_cast<long>(ia) || d >= static_cast<long>(i)) continue;
    return shard_through_group(v, ia, i, ja, j);
  }
  return unknown(out_rank);
}

// cat / concat / concatenate / stack: every input sharded on the same dim;
// cat must not concatenate along it, stack shifts it past the new dim.
Result<AxisOutcome> cat_stack(std::string_view op, const std::string& name,
                              const std::vector<AxisArg>& ts,
                              const ShardingArgs& args, std::string_view axis) {
  bool stack = name == "stack";
  std::optional<long> rank, sd;
  std::size_t who = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].placement.kind == K::Unknown || !ts[i].shape.rank_known())
      return unknown();
    rank = ts[i].shape.rank();
    if (ts[i].placement.kind == K::Partial)
      return no_strategy(op, axis, arg(i) + " is a pending sum (P)",
                         "all_reduce it first");
    if (!ts[i].placement.is_shard()) continue;
    if (sd && *sd != ts[i].placement.dim)
      return no_strategy(op, axis,
                         arg(who) + " is sharded on dim " +
                             std::to_string(*sd) + " but " + arg(i) +
                             " on dim " + std::to_string(ts[i].placement.dim),
                         "shard every input on the same dim");
    sd = ts[i].placement.dim;
    who = i;
  }
  if (!rank) return unknown();
  long out_rank = stack ? *rank + 1 : *rank;
  if (!sd) return out(Placement::replicate(), out_rank);
  for (std::size_t i = 0; i < ts.size(); ++i)
    if (!ts[i].placement.is_shard())
      return no_strategy(op, axis,
                         arg(who) + " is sharded on dim " +
                             std::to_string(*sd) + " but " + arg(i) + " is " +
                             ts[i].placement.to_string() +
                             ": every input must be sharded the same way",
                         "spmd::convert(" + arg(i) + ", " + std::string(axis) +
                             ", R, S(" + std::to_string(*sd) + "))");
  if (!args.known) return unknown(out_rank);
  long raw = args.has_dims && !args.dims.empty() ? args.dims[0] : 0;
  auto dim = dim_arg(op, axis, raw, out_rank);
  if (!dim) return dim.error();
  if (stack)
    return out(Placement::shard(*sd >= *dim ? *sd + 1 : *sd), out_rank);
  if (*dim == *sd)
    return no_strategy(op, axis,
                       "it concatenates along dim " + std::to_string(*sd) +
                           ", which " + std::string(axis) +
                           " shards: the result would interleave the "
                           "ranks' shards",
                       "concatenate along another dim, or all_gather the "
                       "inputs first");
  return out(Placement::shard(*sd), out_rank);
}

// args[0] of a one-tensor shape op on one axis (rank known, placement
// known), with the two answers every such rule gives.
struct ShapeInput {
  std::string_view op;
  std::string_view axis;
  const AxisArg& x;
  long rank;
  bool sharded;
  long d;  // the shard dim (meaningful when sharded)

  ShapeInput(std::string_view op, std::string_view axis, const AxisArg& x)
      : op(op),
        axis(axis),
        x(x),
        rank(x.shape.rank()),
        sharded(x.placement.is_shard()),
        d(x.placement.dim) {}

  // The shard moves to dim `nd`; an unsharded placement is kept.
  Result<AxisOutcome> keep(long out_rank, long nd) const {
    return out(sharded ? Placement::shard(nd) : x.placement, out_rank);
  }
  // The op works on the sharded dim in a way local indices cannot express.
  TypeError on_shard(const std::string& what) const {
    return no_strategy(op, axis,
                       what + " dim " + std::to_string(d) + ", which " +
                           std::string(axis) + " shards (S(" +
                           std::to_string(d) +
                           ")): local indices are not global indices",
                       gather_fix(axis, 0, d) + ", or index another dim");
  }
  // A split (chunk, split, tensor_split, unbind) of the sharded dim: as
  // on_shard, and where each rank's shard holds its own pieces (a fused QKV
  // or gate/up projection sharded piece by piece) the split is a local
  // operation, written in a local region.
  TypeError split_on_shard() const {
    TypeError e = on_shard("it splits along");
    e.fix +=
        "; if each rank's shard holds its own pieces (a fused QKV or "
        "gate/up weight sharded per piece), split it in a local region "
        "instead: a helper marked SPMD_LOCAL ([[spmd::local]]; at "
        "runtime spmd::checker::LocalRegionGuard) whose parameter and "
        "result are declared " +
        std::string(axis) + " = S(" + std::to_string(d) + ")";
    return e;
  }
};

// transpose / swapaxes / swapdims / movedim / moveaxis / t / mT: two dims
// swap (or one moves); the shard follows its dim.
Result<AxisOutcome> transpose_like(const ShapeInput& s, const std::string& name,
                                   const ShardingArgs& args) {
  long a = 0, b = 1;
  if (name == "t") {
    if (s.rank < 2) return s.keep(s.rank, s.d);
  } else if (name == "mT") {
    a = -2;
    b = -1;
  } else {
    if (args.dims.size() < 2) return unknown(s.rank);
    a = args.dims[0];
    b = args.dims[1];
  }
  auto na = dim_arg(s.op, s.axis, a, s.rank);
  if (!na) return na.error();
  auto nb = dim_arg(s.op, s.axis, b, s.rank);
  if (!nb) return nb.error();
  if (!s.sharded) return s.keep(s.rank, 0);
  if (name == "movedim" || name == "moveaxis") {
    std::vector<long> order;
    for (long k = 0; k < s.rank; ++k)
      if (k != *na) order.push_back(k);
    order.insert(order.begin() + *nb, *na);
    long nd = std::find(order.begin(), order.end(), s.d) - order.begin();
    return s.keep(s.rank, nd);
  }
  return s.keep(s.rank, s.d == *na ? *nb : s.d == *nb ? *na : s.d);
}

// permute: the shard goes where its dim is listed.
Result<AxisOutcome> permute(const ShapeInput& s, const ShardingArgs& args) {
  if (static_cast<long>(args.dims.size()) != s.rank) return unknown(s.rank);
  for (std::size_t k = 0; k < args.dims.size(); ++k) {
    auto n = dim_arg(s.op, s.axis, args.dims[k], s.rank);
    if (!n) return n.error();
    if (*n == s.d) return s.keep(s.rank, static_cast<long>(k));
  }
  return s.keep(s.rank, s.d);
}

// view / reshape / view_as / reshape_as: see view_like.
Result<AxisOutcome> view_reshape(const ShapeInput& s, const std::string& name,
                                 const std::vector<AxisArg>& ts,
                                 const ShardingArgs& args) {
  std::vector<std::optional<long>> target = args.sizes;
  if (name == "view_as" || name == "reshape_as") {
    if (ts.size() < 2 || !ts[1].shape.rank_known()) return unknown();
    target = *ts[1].shape.dims;
  }
  if (!s.sharded) return out(s.x.placement, static_cast<long>(target.size()));
  return view_like(s.op, s.x, target, s.axis);
}

// flatten / ravel: the merged dims keep the shard only when it is on the
// outermost dim of extent > 1.
Result<AxisOutcome> flatten(const ShapeInput& s, const std::string& name,
                            const ShardingArgs& args) {
  long st = 0, e = -1;
  if (name == "flatten" && args.has_dims && !args.dims.empty()) {
    st = args.dims[0];
    if (args.dims.size() > 1) e = args.dims[1];
  }
  if (s.rank == 0) return s.keep(1, 0);
  auto ns = dim_arg(s.op, s.axis, st, s.rank);
  if (!ns) return ns.error();
  auto ne = dim_arg(s.op, s.axis, e, s.rank);
  if (!ne) return ne.error();
  long out_rank = s.rank - (*ne - *ns);
  long d = s.d;
  if (!s.sharded || d < *ns) return s.keep(out_rank, d);
  if (d > *ne) return s.keep(out_rank, d - (*ne - *ns));
  for (long k = *ns; k < d; ++k) {
    auto sz = s.x.shape.size(k);
    if (!sz) return unknown(out_rank);
    if (*sz != 1)
      return no_strategy(
          s.op, s.axis,
          "it merges dims " + std::to_string(*ns) + ".." + std::to_string(*ne) +
              " and the shard is on the inner dim " + std::to_string(d) +
              ": the merged dim would interleave the ranks' shards",
          "flatten from the sharded dim on, move it first, or " +
              gather_fix(s.axis, 0, d));
  }
  return s.keep(out_rank, *ns);
}

// unflatten: the sharded dim may become one dim of extent > 1 only.
Result<AxisOutcome> unflatten(const ShapeInput& s, const ShardingArgs& args) {
  if (args.dims.empty()) return unknown();
  auto nd = dim_arg(s.op, s.axis, args.dims[0], s.rank);
  if (!nd) return nd.error();
  long k = static_cast<long>(args.sizes.size());
  long out_rank = s.rank + k - 1;
  long d = s.d;
  if (!s.sharded || d < *nd) return s.keep(out_rank, d);
  if (d > *nd) return s.keep(out_rank, d + k - 1);
  long pos = -1;
  for (long j = 0; j < k; ++j) {
    if (!args.sizes[j]) return unknown(out_rank);
    if (*args.sizes[j] == 1) continue;
    if (pos >= 0)
      return propagation_error(
          s.op, s.axis,
          "unflattening dim " + std::to_string(d) + ", which " +
              std::string(s.axis) +
              " shards, into multiple smaller dimensions is not supported",
          "all_gather dim " + std::to_string(d) + " first");
    pos = j;
  }
  return s.keep(out_rank, *nd + (pos < 0 ? 0 : pos));
}

// squeeze: size-1 dims go; squeezing the sharded dim is ambiguous.
Result<AxisOutcome> squeeze(const ShapeInput& s, const ShardingArgs& args) {
  std::vector<long> dims;
  if (args.has_dims) {
    for (long a : args.dims) {
      auto n = dim_arg(s.op, s.axis, a, s.rank);
      if (!n) return n.error();
      dims.push_back(*n);
    }
  } else {
    for (long k = 0; k < s.rank; ++k) dims.push_back(k);
  }
  long removed_before = 0, out_rank = s.rank;
  for (long k : dims) {
    auto sz = s.x.shape.size(k);
    if (!sz) return unknown();
    if (*sz != 1) continue;
    --out_rank;
    if (s.sharded && k == s.d)
      return propagation_error(
          s.op, s.axis,
          "squeezing dim " + std::to_string(s.d) + " (local size 1), which " +
              std::string(s.axis) +
              " shards, is ambiguous: the sharded dim "
              "disappears",
          "all_gather dim " + std::to_string(s.d) + " first");
    if (k < s.d) ++removed_before;
  }
  return s.keep(out_rank, s.d - removed_before);
}

// unsqueeze: a new dim at or before the shard shifts it.
Result<AxisOutcome> unsqueeze(const ShapeInput& s, const ShardingArgs& args) {
  if (args.dims.empty()) return unknown();
  auto n = dim_arg(s.op, s.axis, args.dims[0], s.rank + 1);
  if (!n) return n.error();
  return s.keep(s.rank + 1, s.d >= *n ? s.d + 1 : s.d);
}

// expand / broadcast_to / expand_as: new leading dims; the sharded dim must
// keep its local extent. A size at the sharded dim that is not a constant
// (GQA's `k.unsqueeze(2).expand({n, kv_heads, rep, d})`, sizes held in
// variables) is read as that extent: the only size torch's expand takes there
// unless the extent is 1, and a rank's one element repeated in place keeps
// each rank's block its block (as repeat_interleave by a count does). The
// number of sizes, the result's rank, is known from the list.
Result<AxisOutcome> expand(const ShapeInput& s, const std::string& name,
                           const std::vector<AxisArg>& ts,
                           const ShardingArgs& args) {
  std::vector<std::optional<long>> target = args.sizes;
  if (name == "expand_as") {
    if (ts.size() < 2 || !ts[1].shape.rank_known()) return unknown();
    target = *ts[1].shape.dims;
  }
  long out_rank = static_cast<long>(target.size());
  long lead = out_rank - s.rank;
  if (lead < 0) {
    TypeError e;
    e.kind = ErrorKind::InvalidArgument;
    e.axis = std::string(s.axis);
    e.message = std::string(s.op) + ": " + std::to_string(target.size()) +
                " sizes for a tensor of rank " + std::to_string(s.rank);
    return e;
  }
  if (!s.sharded) return s.keep(out_rank, 0);
  long d = s.d;
  auto t = target.at(d + lead);
  auto sz = s.x.shape.size(d);
  if (t && *t != -1 && (!sz || *sz != *t)) {
    if (!sz) return unknown(out_rank);
    return no_strategy(
        s.op, s.axis,
        "it expands dim " + std::to_string(d) + " (local size " +
            std::to_string(*sz) + ") to " + std::to_string(*t) + ", and " +
            std::string(s.axis) + " shards that dim",
        "expand the dim before sharding it, or " + gather_fix(s.axis, 0, d));
  }
  return s.keep(out_rank, d + lead);
}

// narrow / slice / select / index_select / chunk / split / tensor_split /
// unbind: indexing or splitting along the sharded dim is an error (a
// full-range narrow/slice is a no-op).
Result<AxisOutcome> narrow_select_split(const ShapeInput& s,
                                        const std::string& name,
                                        const std::vector<AxisArg>& ts,
                                        const ShardingArgs& args) {
  long raw = args.has_dims && !args.dims.empty() ? args.dims[0] : 0;
  auto n = dim_arg(s.op, s.axis, raw, s.rank);
  if (!n) return n.error();
  bool removes = name == "select" || name == "unbind";
  long out_rank = removes ? s.rank - 1 : s.rank;
  if (name == "index_select" && ts.size() > 1 &&
      ts[1].placement.kind != K::Replicate)
    return ts[1].placement.kind == K::Unknown
               ? Result<AxisOutcome>(unknown(out_rank))
               : Result<AxisOutcome>(no_strategy(s.op, s.axis,
                                                 "the index args[1] is sharded",
                                                 "all_gather the index first"));
  if (!s.sharded) return s.keep(out_rank, 0);
  long d = s.d;
  if (*n == d) {
    if ((name == "narrow" || name == "slice") && args.full_range)
      return s.keep(out_rank, d);
    if (name == "chunk" || name == "split" || name == "tensor_split" ||
        name == "unbind")
      return s.split_on_shard();
    return s.on_shard("it indexes");
  }
  return s.keep(out_rank, removes && *n < d ? d - 1 : d);
}

// index (__getitem__): walks the subscript, dims consumed from the input and
// dims produced; slicing or indexing the sharded dim is an error.
Result<AxisOutcome> index_subscript(const ShapeInput& s,
                                    const ShardingArgs& args) {
  long n_named = 0;
  for (const auto& it : args.index)
    if (it.kind != IndexItem::Kind::Ellipsis &&
        it.kind != IndexItem::Kind::NewAxis)
      ++n_named;
  long in_dim = 0, out_dim = 0;
  std::optional<long> nd;
  bool tensor_seen = false;
  auto consume_full = [&](long count) {
    for (long k = 0; k < count; ++k, ++in_dim, ++out_dim)
      if (in_dim == s.d) nd = out_dim;
  };
  for (const auto& it : args.index) {
    switch (it.kind) {
      case IndexItem::Kind::Ellipsis:
        consume_full(s.rank - n_named);
        break;
      case IndexItem::Kind::NewAxis:
        ++out_dim;
        break;
      case IndexItem::Kind::FullSlice:
        consume_full(1);
        break;
      case IndexItem::Kind::Slice:
        if (s.sharded && in_dim == s.d) return s.on_shard("it slices");
        consume_full(1);
        break;
      case IndexItem::Kind::Integer:
        if (s.sharded && in_dim == s.d) return s.on_shard("it indexes");
        ++in_dim;
        break;
      case IndexItem::Kind::Tensor:
        if (s.sharded && in_dim == s.d) return s.on_shard("it indexes");
        tensor_seen = true;
        ++in_dim;
        break;
    }
  }
  consume_full(s.rank - in_dim);
  // Advanced indexing moves dims around (torch's rules); not modelled.
  if (tensor_seen && s.sharded) return unknown();
  if (tensor_seen) return s.keep(out_dim, 0);
  if (!s.sharded) return s.keep(out_dim, 0);
  if (!nd) return unknown(out_dim);
  return s.keep(out_dim, *nd);
}

// flip / roll: moving elements along the sharded dim crosses ranks (roll
// without dims rolls the flattened tensor: every dim).
Result<AxisOutcome> flip_roll(const ShapeInput& s, const std::string& name,
                              const ShardingArgs& args) {
  if (!s.sharded) return s.keep(s.rank, 0);
  if (!args.has_dims || (name == "roll" && args.dims.empty()))
    return s.on_shard("it moves elements across");
  for (long a : args.dims) {
    auto n = dim_arg(s.op, s.axis, a, s.rank);
    if (!n) return n.error();
    if (*n == s.d) return s.on_shard("it moves elements across");
  }
  return s.keep(s.rank, s.d);
}

// triu / tril: the triangle of the last two dims is cut at the diagonal,
// a global row - column index; each rank's block counts its own rows and
// columns from 0, so a shard of either dim cuts every rank's block in the
// wrong place (a causal mask built on a shard). Other dims (batch, heads)
// keep their shard.
Result<AxisOutcome> triangle(const ShapeInput& s) {
  if (s.rank < 2) {
    TypeError e;
    e.kind = ErrorKind::InvalidArgument;
    e.axis = std::string(s.axis);
    e.message = std::string(s.op) + ": needs a tensor of rank 2 or more, got " +
                std::to_string(s.rank);
    return e;
  }
  if (!s.sharded || s.d < s.rank - 2) return s.keep(s.rank, s.d);
  std::string d = std::to_string(s.d);
  std::string a(s.axis);
  return no_strategy(
      s.op, s.axis,
      "it keeps a triangle of the last two dims, cut at the diagonal (a "
      "global row - column index), and " +
          a + " shards dim " + d + " (S(" + d +
          ")): each rank's block counts its rows and columns from 0, so its "
          "triangle is cut in the wrong place",
      gather_fix(s.axis, 0, s.d) +
          ", or build this rank's block of the mask with its global "
          "offset (triu(diagonal + start) of the block, or a comparison "
          "of global indices)");
}

// repeat_interleave: each element repeated in place; the shards of an
// evenly sharded dim repeated by a constant count are still the blocks of
// the repeated dim, so the shard is kept. Counts given per element (a
// tensor, args[1]) along the sharded dim do not split evenly; without a
// dim the tensor is flattened first.
Result<AxisOutcome> repeat_interleave(const ShapeInput& s,
                                      const std::vector<AxisArg>& ts,
                                      const ShardingArgs& args) {
  if (!args.has_dims) {
    if (!s.sharded) return s.keep(1, 0);
    if (s.rank == 1 && ts.size() == 1) return s.keep(1, 0);
    return s.on_shard("it flattens (no dim given) and repeats along");
  }
  if (args.dims.empty()) return unknown();
  auto n = dim_arg(s.op, s.axis, args.dims[0], s.rank);
  if (!n) return n.error();
  if (ts.size() > 1) {
    if (ts[1].placement.kind == K::Unknown) return unknown(s.rank);
    if (s.sharded && *n == s.d)
      return s.on_shard("it repeats by per-element counts along");
  }
  return s.keep(s.rank, s.d);
}

// scaled_dot_product_attention(q, k, v[, mask]): q [..., L, E], k [..., S,
// E], v [..., S, Ev]; the output is [..., L, Ev]. A shard of a batch or
// heads dim (one of the leading dims) that q, k and v share is kept: each
// rank attends with its own heads. The scores are a sum over E and the
// softmax runs over the keys S, so a shard of E, of S, or of a leading dim
// that not every operand shares is rejected; a mask with the sharded dim
// must be sharded with it (a replicated mask broadcasts only where its size
// is 1). Queries sharded (L) with whole keys and values are correct without
// a causal mask and wrong with one (the mask's rows count from 0 on every
// rank), which the rule cannot see: unknown.
// Dims named from the end are the same in q, k and v (their ranks may
// differ only by leading dims).
long attention_from_end(const AxisArg& t) {
  return t.placement.dim - t.shape.rank();
}

// q, k or v sharded on the features (every one) or on the keys (k, v): the
// scores need every rank's part. Empty when neither is the case.
std::optional<Result<AxisOutcome>> attention_sum_dims(
    std::string_view op, const std::vector<AxisArg>& ts,
    std::string_view axis) {
  for (std::size_t i = 0; i < 3; ++i) {
    const AxisArg& t = ts[i];
    if (!t.placement.is_shard()) continue;
    long e = attention_from_end(t);
    if (e == -1)
      return no_strategy(
          op, axis,
          arg(i) + " is sharded on its last dim (S(" +
              std::to_string(t.placement.dim) +
              ")): the scores are a sum "
              "over the features, and each rank holds only its part",
          "shard the heads instead (a dim before the last two), or " +
              gather_fix(axis, i, t.placement.dim));
    if (e == -2 && i > 0)
      return no_strategy(
          op, axis,
          arg(i) + " is sharded on the keys (S(" +
              std::to_string(t.placement.dim) +
              ")): the softmax runs over every key, and each rank holds "
              "only its keys",
          gather_fix(axis, i, t.placement.dim) +
              " (ring attention is written by hand, in a local region)");
  }
  return std::nullopt;
}

// The masks after q, k, v (args[3..]) against the batch or heads dim `e`
// (from the end) that q, k and v share: sharded alike, broadcast (absent or
// of size 1), or rejected. Empty when every mask fits.
std::optional<Result<AxisOutcome>> attention_masks(
    std::string_view op, const std::vector<AxisArg>& ts, std::string_view axis,
    long e, long rank) {
  for (std::size_t i = 3; i < ts.size(); ++i) {
    const AxisArg& m = ts[i];
    long md = m.shape.rank() + e;  // the mask's dim aligned from the end
    if (md < 0) continue;          // the mask lacks the dim: broadcast
    if (m.placement.is_shard() && m.placement.dim == md) continue;
    if (m.placement.kind == K::Replicate) {
      auto sz = m.shape.size(md);
      if (sz && *sz == 1) continue;
      if (!sz) return unknown(rank);
    }
    return no_strategy(op, axis,
                       "the mask " + arg(i) + " is " + m.placement.to_string() +
                           " but the heads or batch dim it has is sharded "
                           "in args[0..2]",
                       "shard the mask like the heads, or give it size 1 "
                       "on that dim");
  }
  return std::nullopt;
}

Result<AxisOutcome> attention(std::string_view op,
                              const std::vector<AxisArg>& ts,
                              std::string_view axis) {
  if (ts.size() < 3) return unknown();
  for (const auto& t : ts)
    if (t.placement.kind == K::Unknown || !t.shape.rank_known())
      return unknown();
  long rank = ts[0].shape.rank();
  if (rank < 2) return unknown();
  for (std::size_t i = 0; i < ts.size(); ++i)
    if (ts[i].placement.kind == K::Partial)
      return no_strategy(op, axis,
                         arg(i) +
                             " is a pending sum (P): the softmax of the "
                             "scores is not linear",
                         "all_reduce " + arg(i) + " first");
  const AxisArg& q = ts[0];
  bool any = false;
  for (const auto& t : ts) any = any || t.placement.is_shard();
  if (!any) return out(Placement::replicate(), rank);
  if (auto rejected = attention_sum_dims(op, ts, axis)) return *rejected;
  if (q.placement.is_shard() && attention_from_end(q) == -2) {
    if (ts[1].placement.kind == K::Replicate &&
        ts[2].placement.kind == K::Replicate)
      return unknown(rank);  // causal or not: not visible here
    return no_strategy(op, axis,
                       "args[0] is sharded on the queries and args[1] / "
                       "args[2] are not replicated",
                       gather_fix(axis, 0, q.placement.dim));
  }
  // A leading (batch or heads) dim: q, k and v sharded on it alike.
  long e = attention_from_end(q.placement.is_shard()       ? q
                              : ts[1].placement.is_shard() ? ts[1]
                                                           : ts[2]);
  for (std::size_t i = 0; i < 3; ++i)
    if (!ts[i].placement.is_shard() || attention_from_end(ts[i]) != e)
      return no_strategy(
          op, axis,
          "args[0], args[1] and args[2] must be sharded on the same batch "
          "or heads dim; " +
              arg(i) + " is " + ts[i].placement.to_string() +
              " and another is sharded on dim " + std::to_string(e) +
              " counted from the end",
          "shard q, k and v on the same heads dim (a column-parallel "
          "QKV projection does), or all_gather the sharded ones first");
  if (auto rejected = attention_masks(op, ts, axis, e, rank)) return *rejected;
  return out(Placement::shard(rank + e), rank);
}

// repeat / tile: repeating along the sharded dim would interleave shards.
Result<AxisOutcome> repeat_tile(const ShapeInput& s, const ShardingArgs& args) {
  long out_rank = std::max(s.rank, static_cast<long>(args.sizes.size()));
  long lead = out_rank - s.rank;
  if (!s.sharded) return s.keep(out_rank, 0);
  long k = s.d + static_cast<long>(args.sizes.size()) - s.rank;
  if (k >= 0 && k < static_cast<long>(args.sizes.size())) {
    if (!args.sizes[k]) return unknown(out_rank);
    if (*args.sizes[k] != 1) return s.on_shard("it repeats along");
  }
  return s.keep(out_rank, s.d + lead);
}

// The shape-op family: picks the rule by op name.
Result<AxisOutcome> shape_op(std::string_view op, const std::string& name,
                             const std::vector<AxisArg>& ts,
                             const ShardingArgs& args, std::string_view axis) {
  // cat / stack take every tensor; the others act on args[0].
  if (name == "cat" || name == "concat" || name == "concatenate" ||
      name == "stack")
    return cat_stack(op, name, ts, args, axis);
  const AxisArg& x = ts.at(0);
  if (x.placement.kind == K::Unknown) return unknown();
  if (!x.shape.rank_known()) return unknown();
  if (!args.known &&
      !(name == "t" || name == "T" || name == "mT" || name == "view_as" ||
        name == "reshape_as" || name == "expand_as"))
    return unknown();
  ShapeInput s(op, axis, x);
  if (name == "transpose" || name == "swapaxes" || name == "swapdims" ||
      name == "movedim" || name == "moveaxis" || name == "t" || name == "mT")
    return transpose_like(s, name, args);
  if (name == "T") return s.keep(s.rank, s.rank - 1 - s.d);
  if (name == "permute") return permute(s, args);
  if (name == "view" || name == "reshape" || name == "view_as" ||
      name == "reshape_as")
    return view_reshape(s, name, ts, args);
  if (name == "flatten" || name == "ravel") return flatten(s, name, args);
  if (name == "unflatten") return unflatten(s, args);
  if (name == "squeeze") return squeeze(s, args);
  if (name == "unsqueeze") return unsqueeze(s, args);
  if (name == "expand" || name == "broadcast_to" || name == "expand_as")
    return expand(s, name, ts, args);
  if (name == "narrow" || name == "slice" || name == "select" ||
      name == "index_select" || name == "chunk" || name == "split" ||
      name == "tensor_split" || name == "unbind")
    return narrow_select_split(s, name, ts, args);
  if (name == "index") return index_subscript(s, args);
  if (name == "flip" || name == "roll") return flip_roll(s, name, args);
  if (name == "triu" || name == "tril") return triangle(s);
  if (name == "repeat_interleave") return repeat_interleave(s, ts, args);
  if (name == "repeat" || name == "tile") return repeat_tile(s, args);
  return unknown();
}

// §12.2: in global mode every typed tensor operand carries a spec for every
// V axis; the error names the op.
Status check_global_operands(std::string_view op,
                             const std::vector<GlobalOperand>& operands,
                             const GlobalContext& ctx) {
  auto is_global = [&](std::string_view a) { return ctx.is_global(a); };
  std::size_t ti = 0;
  for (const auto& o : operands) {
    if (o.kind != Operand::Kind::Tensor) continue;
    if (o.type) {
      auto s = check_global_operand(*o.type, is_global, arg(ti));
      if (!s) {
        TypeError e = s.error();
        e.message = std::string(op) + ": " + e.message;
        return e;
      }
    }
    ++ti;
  }
  return Ok{};
}

// The operands as the local rule (infer) sees them: their local maps.
std::vector<Operand> local_operands(
    const std::vector<GlobalOperand>& operands) {
  std::vector<Operand> local_ops;
  for (const auto& o : operands) {
    Operand lo;
    lo.kind = o.kind;
    lo.position = o.position;
    if (o.type) lo.type = o.type->local;
    local_ops.push_back(std::move(lo));
  }
  return local_ops;
}

// The global axes the operands shard (first-seen order; then those whose
// shard is unknown) and the operands' spec entries restricted to global
// axes (for AxisOrder).
struct InputShards {
  std::vector<std::string> axes;
  std::vector<SpecEntry> entries;
};

InputShards input_shards(const std::vector<GlobalOperand>& operands,
                         const GlobalContext& ctx) {
  InputShards in;
  std::set<std::string> unknown_axes;
  for (const auto& o : operands) {
    if (o.kind != Operand::Kind::Tensor || !o.type) continue;
    for (const auto& a : o.type->unknown_shards)
      if (ctx.is_global(a)) unknown_axes.insert(a);
    if (!o.type->spec) continue;
    for (const auto& entry : o.type->spec->entries()) {
      SpecEntry g;
      for (const auto& a : entry)
        if (ctx.is_global(a)) g.push_back(a);
      for (const auto& a : g)
        if (std::find(in.axes.begin(), in.axes.end(), a) == in.axes.end())
          in.axes.push_back(a);
      in.entries.push_back(std::move(g));
    }
  }
  for (const auto& a : unknown_axes)
    if (std::find(in.axes.begin(), in.axes.end(), a) == in.axes.end())
      in.axes.push_back(a);
  return in;
}

// The tensor operands' placements on `axis`: Shard from the spec, Unknown
// when untyped or unknown, else R or P from the local type.
std::vector<AxisArg> axis_view(const std::vector<GlobalOperand>& operands,
                               const std::string& axis) {
  std::vector<AxisArg> view;
  for (const auto& t : operands) {
    if (t.kind != Operand::Kind::Tensor) continue;
    AxisArg aa;
    aa.shape = t.shape;
    if (!t.type || !t.type->local.has(axis)) {
      aa.placement = Placement::unknown();
    } else if (t.type->unknown_shards.count(axis)) {
      aa.placement = Placement::unknown();
    } else if (auto d =
                   t.type->spec ? t.type->spec->dim_of(axis) : std::nullopt) {
      aa.placement = Placement::shard(*d);
    } else {
      auto k = t.type->local.get(axis)->kind;
      aa.placement = k == TypeKind::Partial ? Placement::partial()
                                            : Placement::replicate();
    }
    view.push_back(std::move(aa));
  }
  return view;
}

// Writes the propagated placements into the result (§12.2): Partial
// promotes V to P, Shard(d) goes into the output spec (axes on one dim
// ordered by `order`), Unknown (or a shard without an output rank) becomes
// an unknown shard.
Status combine_placements(std::string_view op,
                          const std::vector<std::string>& axes,
                          const std::map<std::string, Placement>& placed,
                          const AxisOrder& order, GlobalResult& res) {
  std::map<long, std::vector<std::string>> by_dim;
  for (const auto& a : axes) {
    auto it = placed.find(a);
    if (it == placed.end()) continue;
    Placement p = it->second;
    auto local_t = res.type.local.get(a);
    switch (p.kind) {
      case K::Partial:
        if (local_t && local_t->kind == TypeKind::Varying)
          res.type.local.set(a, spmd::types::P);  // §12.2 promotion
        break;
      case K::Shard:
        if (!res.out_rank) {
          res.type.unknown_shards.insert(a);
        } else {
          by_dim[p.dim].push_back(a);
        }
        break;
      case K::Unknown:
        res.type.unknown_shards.insert(a);
        break;
      case K::Replicate:
        break;
    }
  }
  if (by_dim.empty()) return Ok{};
  PartitionSpec spec = PartitionSpec::none(*res.out_rank);
  for (auto& [dim, list] : by_dim) {
    auto entry = order.order(op, dim, list);
    if (!entry) return entry.error();
    for (const auto& a : *entry) spec = spec.with_innermost(dim, a);
  }
  res.type.spec = spec;
  return Ok{};
}

}  // namespace

// ---- public
// ------------------------------------------------------------------

std::string Placement::to_string() const {
  switch (kind) {
    case Kind::Replicate:
      return "R";
    case Kind::Shard:
      return "S(" + std::to_string(dim) + ")";
    case Kind::Partial:
      return "P";
    case Kind::Unknown:
      return "?";
  }
  return "?";
}

const char* to_string(ShardRule r) {
  switch (r) {
    case ShardRule::Pointwise:
      return "pointwise";
    case ShardRule::Contraction:
      return "contraction";
    case ShardRule::LinearReduction:
      return "linear reduction";
    case ShardRule::NonlinearReduction:
      return "nonlinear reduction";
    case ShardRule::AlongDim:
      return "along-dim";
    case ShardRule::Norm:
      return "normalisation";
    case ShardRule::Shape:
      return "shape";
    case ShardRule::Embedding:
      return "embedding";
    case ShardRule::Loss:
      return "loss";
    case ShardRule::Attention:
      return "attention";
    case ShardRule::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::string canonical_op_name(std::string_view op) {
  std::string s(op);
  if (s.rfind("prop ", 0) == 0) s = s.substr(5);
  if (auto p = s.rfind("::"); p != std::string::npos) s = s.substr(p + 2);
  if (!s.empty() && s[0] == '.') s = s.substr(1);
  if (auto p = s.find('.'); p != std::string::npos) s = s.substr(0, p);
  static const std::map<std::string, std::string, std::less<>> dunders = {
      {"__add__", "add"},
      {"__radd__", "add"},
      {"__iadd__", "add"},
      {"__sub__", "sub"},
      {"__rsub__", "sub"},
      {"__isub__", "sub"},
      {"__mul__", "mul"},
      {"__rmul__", "mul"},
      {"__imul__", "mul"},
      {"__truediv__", "div"},
      {"__rtruediv__", "div"},
      {"__itruediv__", "div"},
      {"__neg__", "neg"},
      {"__pow__", "pow"},
      {"__matmul__", "matmul"},
      {"__rmatmul__", "matmul"},
      {"__getitem__", "index"},
      {"__ge__", "ge"},
      {"__gt__", "gt"},
      {"__le__", "le"},
      {"__lt__", "lt"},
      {"__eq__", "eq"},
      {"__ne__", "ne"},
      {"operator+", "add"},
      {"operator-", "sub"},
      {"operator*", "mul"},
      {"operator/", "div"},
      {"operator[]", "index"},
      {"operator+=", "add"},
      {"operator-=", "sub"},
      {"operator*=", "mul"},
      {"operator/=", "div"},
      // Bitwise and comparison operators are pointwise (the C++ spelling
      // and the spec's dunders).
      {"__and__", "bitwise_and"},
      {"__rand__", "bitwise_and"},
      {"__iand__", "bitwise_and"},
      {"__or__", "bitwise_or"},
      {"__ror__", "bitwise_or"},
      {"__ior__", "bitwise_or"},
      {"__xor__", "bitwise_xor"},
      {"__rxor__", "bitwise_xor"},
      {"__ixor__", "bitwise_xor"},
      {"__invert__", "bitwise_not"},
      {"__mod__", "remainder"},
      {"__rmod__", "remainder"},
      {"operator&", "bitwise_and"},
      {"operator|", "bitwise_or"},
      {"operator^", "bitwise_xor"},
      {"operator~", "bitwise_not"},
      {"operator&=", "bitwise_and"},
      {"operator|=", "bitwise_or"},
      {"operator^=", "bitwise_xor"},
      {"operator%", "remainder"},
      {"operator<", "lt"},
      {"operator<=", "le"},
      {"operator>", "gt"},
      {"operator>=", "ge"},
      {"operator==", "eq"},
      {"operator!=", "ne"}};
  if (auto it = dunders.find(s); it != dunders.end()) return it->second;
  if (s.size() > 1 && s.back() == '_' && s.front() != '_') s.pop_back();
  if (s == "concat" || s == "concatenate") return "cat";
  if (s == "subtract") return "sub";
  if (s == "multiply") return "mul";
  if (s == "divide" || s == "true_divide") return "div";
  return s;
}

ShardRule shard_rule_of(std::string_view op) {
  std::string n = canonical_op_name(op);
  if (kContraction.count(n)) return ShardRule::Contraction;
  if (kLinearReduction.count(n)) return ShardRule::LinearReduction;
  if (kNonlinearReduction.count(n)) return ShardRule::NonlinearReduction;
  if (kAlongDim.count(n)) return ShardRule::AlongDim;
  if (kNorm.count(n)) return ShardRule::Norm;
  if (kShape.count(n) || n == "repeat_interleave") return ShardRule::Shape;
  if (n == "embedding") return ShardRule::Embedding;
  if (n == "cross_entropy" || n == "nll_loss") return ShardRule::Loss;
  if (n == "scaled_dot_product_attention") return ShardRule::Attention;
  if (kPointwise.count(n)) return ShardRule::Pointwise;
  return ShardRule::Unknown;
}

namespace {

// The broadcast size of output dim i of a pointwise op, when every operand
// that has the dim knows its size there.
std::optional<long> broadcast_size(const std::vector<Shape>& tensors, long i,
                                   long out_rank) {
  long size = 1;
  for (const auto& t : tensors) {
    long k = i - (out_rank - t.rank());
    if (k < 0) continue;  // the operand lacks the dim: broadcast
    auto z = t.size(k);
    if (!z) return std::nullopt;
    if (*z == 1) continue;
    if (size != 1 && size != *z) return std::nullopt;  // not broadcastable
    size = *z;
  }
  return size;
}

}  // namespace

Shape result_shape(std::string_view op, const std::vector<Shape>& tensors,
                   const ShardingArgs& args, std::optional<long> out_rank) {
  if (!out_rank || *out_rank < 0) return Shape::unknown();
  Shape s = Shape::of_rank(*out_rank);
  if (tensors.empty()) return s;
  for (const auto& t : tensors)
    if (!t.rank_known()) return s;
  const Shape& x = tensors.front();
  auto& sizes = *s.dims;
  switch (shard_rule_of(op)) {
    case ShardRule::Pointwise:
      for (const auto& t : tensors)
        if (t.rank() > *out_rank) return s;
      for (long i = 0; i < *out_rank; ++i)
        sizes[i] = broadcast_size(tensors, i, *out_rank);
      return s;
    case ShardRule::LinearReduction:
    case ShardRule::NonlinearReduction: {
      if (tensors.size() != 1) return s;  // max(a, b): not a reduction
      auto dims = reduced_dims(args, x.rank());
      if (!dims) return s;
      long want =
          args.keepdim ? x.rank() : x.rank() - static_cast<long>(dims->size());
      if (want != *out_rank) return s;
      long o = 0;
      for (long d = 0; d < x.rank(); ++d) {
        bool reduced = std::count(dims->begin(), dims->end(), d) > 0;
        if (reduced && !args.keepdim) continue;
        sizes[o++] = reduced ? std::optional<long>(1) : x.size(d);
      }
      return s;
    }
    case ShardRule::Shape: {
      if (canonical_op_name(op) != "unsqueeze" || !args.known ||
          args.dims.size() != 1 || *out_rank != x.rank() + 1)
        return s;
      auto at = norm_dim(args.dims[0], *out_rank);
      if (!at) return s;
      for (long i = 0, j = 0; i < *out_rank; ++i)
        sizes[i] = i == *at ? std::optional<long>(1) : x.size(j++);
      return s;
    }
    default:
      return s;
  }
}

std::optional<ReductionArgRoles> reduction_arg_roles(std::string_view op) {
  const std::string name = canonical_op_name(op);
  const ShardRule rule = shard_rule_of(name);
  if (rule != ShardRule::LinearReduction &&
      rule != ShardRule::NonlinearReduction)
    return std::nullopt;
  if (name == "var" || name == "std" || name == "var_mean" ||
      name == "std_mean")
    return ReductionArgRoles{0, 2};  // (dim, unbiased | correction, keepdim)
  if (name == "norm") return ReductionArgRoles{1, 2};  // (p, dim, keepdim)
  if (name == "count_nonzero") return ReductionArgRoles{0, std::nullopt};
  return ReductionArgRoles{};  // (dim, keepdim, ...)
}

Result<AxisOutcome> propagate_axis(std::string_view op,
                                   const std::vector<AxisArg>& tensors,
                                   const ShardingArgs& args,
                                   std::string_view axis) {
  std::string name = canonical_op_name(op);
  if (tensors.empty()) return out(Placement::replicate(), std::nullopt);
  // A shard must name a dim of its operand (a front end may pass a spec and
  // a shape that disagree; report it instead of indexing out of range).
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (t.placement.is_shard() &&
        (t.placement.dim < 0 ||
         (t.shape.rank_known() && t.placement.dim >= t.shape.rank()))) {
      TypeError e;
      e.kind = ErrorKind::InvalidArgument;
      e.axis = std::string(axis);
      e.message = std::string(op) + ": " + arg(i) + " is S(" +
                  std::to_string(t.placement.dim) + ") on axis " +
                  std::string(axis) + " but has local shape " +
                  t.shape.to_string();
      e.fix = "pass a resolved (non-negative) shard dim below the rank";
      return e;
    }
  }
  switch (shard_rule_of(op)) {
    case ShardRule::Pointwise:
      return pointwise(op, tensors, axis);
    case ShardRule::Contraction:
      return contraction(op, name, tensors, args, axis);
    case ShardRule::LinearReduction:
      return reduction(op, name, true, tensors, args, axis);
    case ShardRule::NonlinearReduction:
      return reduction(op, name, false, tensors, args, axis);
    case ShardRule::AlongDim:
      return along_dim(op, name, tensors, args, axis);
    case ShardRule::Norm:
      return norm_layer(op, tensors, args, axis);
    case ShardRule::Shape:
      return shape_op(op, name, tensors, args, axis);
    case ShardRule::Embedding:
      return embedding(op, op.rfind("aten::", 0) == 0 || op == "at::embedding",
                       tensors, axis);
    case ShardRule::Loss:
      return loss(op, tensors, args, axis);
    case ShardRule::Attention:
      return attention(op, tensors, axis);
    case ShardRule::Unknown:
      break;
  }
  return unknown(std::nullopt, std::string(op) +
                                   " has no sharding rule in the core: the "
                                   "shard of its result is unknown");
}

Result<AxisOrder> AxisOrder::of(std::string_view op,
                                const std::vector<SpecEntry>& entries) {
  AxisOrder o;
  for (const auto& g : entries) {
    for (std::size_t k = 0; k + 1 < g.size(); ++k) {
      if (o.outer(g[k + 1], g[k])) {
        TypeError e;
        e.kind = ErrorKind::SpmdTypeError;
        e.axis = g[k];
        e.message = std::string(op) +
                    ": PartitionSpec axis order conflict: one operand "
                    "shards a dim by (" +
                    g[k + 1] + " outer to " + g[k] + ") and another by (" +
                    g[k] + " outer to " + g[k + 1] + ")";
        e.fix = "redistribute one operand so both use the same order";
        return e;
      }
      o.after_[g[k]].insert(g[k + 1]);
    }
  }
  return o;
}

bool AxisOrder::outer(const std::string& a, const std::string& b) const {
  std::vector<std::string> stack = {a};
  std::set<std::string> seen;
  while (!stack.empty()) {
    auto cur = stack.back();
    stack.pop_back();
    auto it = after_.find(cur);
    if (it == after_.end()) continue;
    for (const auto& n : it->second) {
      if (n == b) return true;
      if (seen.insert(n).second) stack.push_back(n);
    }
  }
  return false;
}

Result<SpecEntry> AxisOrder::order(std::string_view op, long dim,
                                   SpecEntry axes) const {
  for (std::size_t k = 0; k + 1 < axes.size(); ++k) {
    if (!outer(axes[k], axes[k + 1]) && !outer(axes[k + 1], axes[k])) {
      TypeError e;
      e.kind = ErrorKind::SpmdTypeError;
      e.axis = axes[k];
      e.message = std::string(op) + ": axes " + axes[k] + " and " +
                  axes[k + 1] + " both shard output dim " +
                  std::to_string(dim) +
                  " but no input PartitionSpec gives their order";
      e.fix = "give the order with an explicit PartitionSpec on an input";
      return e;
    }
  }
  // Outer-to-inner: sort by the order relation (axes that reach others
  // first); ties keep the given order.
  for (std::size_t i = 1; i < axes.size(); ++i)  // insertion sort
    for (std::size_t k = i; k > 0 && outer(axes[k], axes[k - 1]); --k)
      std::swap(axes[k], axes[k - 1]);
  return axes;
}

bool GlobalContext::is_global(std::string_view axis) const {
  if (!global) return false;
  return std::find(local_axes.begin(), local_axes.end(), axis) ==
         local_axes.end();
}

void drop_shards_of_unvarying_axes(GlobalType& g) {
  for (const auto& [axis, t] : g.local.map()) {
    if (t.kind == TypeKind::Varying) continue;
    g.unknown_shards.erase(axis);
    g.unmasked_rows.erase(axis);
    if (g.spec && g.spec->dim_of(axis)) g.spec = g.spec->without(axis);
  }
  if (g.spec && g.spec->all_none()) g.spec.reset();
}

namespace {

// The unmasked-rows rule on the result of `op` (see infer_global): for each
// global axis on which an operand that gives the result its values carries
// unmasked rows, a zero fill of that operand makes the axis P, a V result
// keeps the mark, and a P result (a sum of the rows) is an error.
Status apply_unmasked_rows(std::string_view op,
                           const std::vector<GlobalOperand>& operands,
                           const GlobalContext& ctx, GlobalResult& res) {
  std::vector<MaskOperand> masks;
  bool any = false;
  for (const auto& o : operands) {
    masks.push_back(o.kind == Operand::Kind::Tensor
                        ? MaskOperand::of_tensor(o.mask)
                        : MaskOperand::of_scalar(o.constant));
    any = any || (o.type && !o.type->unmasked_rows.empty());
  }
  if (!any) return Ok{};
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const auto& o = operands[i];
    if (!o.type || o.kind != Operand::Kind::Tensor || !gives_values(op, i))
      continue;
    for (const auto& a : o.type->unmasked_rows) {
      if (!ctx.is_global(a)) continue;
      auto t = res.type.local.get(a);
      if (!t) continue;
      if (zero_fills(op, masks, i)) {
        // The rank's own rows, zeros elsewhere: the lookup's pending sum.
        if (t->kind != TypeKind::Varying) continue;
        res.type.local.set(a, zeroed_rows_type());
        res.type.unmasked_rows.erase(a);
        res.type.unknown_shards.erase(a);
        if (res.type.spec && res.type.spec->dim_of(a))
          res.type.spec = res.type.spec->without(a);
        continue;
      }
      if (t->kind == TypeKind::Partial) {
        TypeError e;
        e.kind = ErrorKind::SpmdTypeError;
        e.axis = a;
        e.message =
            "No valid sharding strategy for " + std::string(op) + " on axis " +
            a + ": " + arg(i) +
            " holds rows looked up in a table sharded by rows on " + a +
            " whose rows of indices outside the rank's shard are not zeroed "
            "(unmasked rows): summed over " +
            a + " every rank adds a row for every index";
        e.fix =
            "zero the rows of indices outside this rank's shard first "
            "(masked_fill(mask, 0) with mask = the indices outside [start, "
            "end)), then reduce";
        e.expected = "P";
        e.actual = "V";
        return e;
      }
      if (t->kind == TypeKind::Varying) {
        res.type.unmasked_rows.insert(a);
        res.type.unknown_shards.insert(a);
        if (res.type.spec && res.type.spec->dim_of(a))
          res.type.spec = res.type.spec->without(a);
      }
    }
  }
  if (res.type.spec && res.type.spec->all_none()) res.type.spec.reset();
  return Ok{};
}

}  // namespace

Result<GlobalResult> infer_global(std::string_view op,
                                  const std::vector<GlobalOperand>& operands,
                                  const ShardingArgs& args,
                                  const GlobalContext& ctx) {
  if (ctx.global)
    if (auto s = check_global_operands(op, operands, ctx); !s) return s.error();
  // Local rule first.
  auto local = infer(op, local_operands(operands), ctx.local);
  if (!local) return local.error();
  GlobalResult res;
  res.type.local = *local;
  if (!ctx.global) return res;

  // Global shard axes, ordered by the input specs' tuples; conflicting
  // orders are an error (AxisOrder).
  InputShards in = input_shards(operands, ctx);
  auto order = AxisOrder::of(op, in.entries);
  if (!order) return order.error();
  std::map<std::string, Placement> placed;
  std::set<std::string> looked_up;  // axes of an unmasked lookup (embedding)
  for (const auto& a : in.axes) {
    if (!res.type.local.has(a)) continue;  // skipped by permissive inference
    auto r = propagate_axis(op, axis_view(operands, a), args, a);
    if (!r) return r.error();
    if (!r->note.empty()) res.notes.push_back(r->note);
    if (r->out_rank) res.out_rank = r->out_rank;
    if (r->unmasked_rows) looked_up.insert(a);
    placed[a] = r->placement;
  }
  if (auto s = combine_placements(op, in.axes, placed, *order, res); !s)
    return s.error();
  for (const auto& a : looked_up) {
    auto t = res.type.local.get(a);
    if (t && t->kind == TypeKind::Varying) {
      res.type.unmasked_rows.insert(a);
      res.type.unknown_shards.insert(a);
    }
  }
  if (auto s = apply_unmasked_rows(op, operands, ctx, res); !s)
    return s.error();
  drop_shards_of_unvarying_axes(res.type);
  return res;
}

}  // namespace spmd::core
