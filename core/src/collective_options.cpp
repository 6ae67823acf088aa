// The options of the collectives (spec §7.1-§7.10), described once.
#include <spmd/core/collective_options.h>

namespace spmd::core {

namespace {

constexpr std::uint32_t bit(Collective c) {
  return 1u << static_cast<unsigned>(c);
}

// The collectives a user calls (LocalSplit is an internal dual).
constexpr std::uint32_t kUserOps =
    bit(Collective::AllReduce) | bit(Collective::AllGather) |
    bit(Collective::ReduceScatter) | bit(Collective::AllToAll) |
    bit(Collective::Convert) | bit(Collective::Reinterpret) |
    bit(Collective::Redistribute) | bit(Collective::Shard) |
    bit(Collective::Unshard) | bit(Collective::InvariantToReplicate);
constexpr std::uint32_t kAllOps = kUserOps | bit(Collective::LocalSplit);

constexpr std::uint32_t unread_bit(CollectiveOption o) {
  return 1u << static_cast<unsigned>(o);
}

TypeError usage(std::string message) {
  TypeError e;
  e.kind = ErrorKind::UsageError;
  e.message = std::move(message);
  return e;
}

}  // namespace

const char* to_string(OptionType t) {
  switch (t) {
    case OptionType::Bool:
      return "bool";
    case OptionType::Dim:
      return "dim";
    case OptionType::Sizes:
      return "sizes";
    case OptionType::Dtype:
      return "dtype";
    case OptionType::BackwardOptions:
      return "backward options";
  }
  return "?";
}

const std::vector<CollectiveOptionInfo>& collective_options() {
  using O = CollectiveOption;
  using T = OptionType;
  using C = Collective;
  static const std::vector<CollectiveOptionInfo> table = {
      {O::OpDtype, "op_dtype", T::Dtype, "std::nullopt", kAllOps,
       "dtype the input is cast to before the operation (communication and "
       "compute dtype, spec §7.10)"},
      {O::OutDtype, "out_dtype", T::Dtype, "std::nullopt", kAllOps,
       "dtype the result is cast to after the operation (spec §7.10)"},
      {O::Backward, "backward", T::BackwardOptions, "{}", kAllOps,
       "op_dtype / out_dtype / backward_options of the dual operation run in "
       "backward; out_dtype defaults to the input's dtype (spec §7.10)"},
      {O::Inplace, "inplace", T::Bool, "false", bit(C::AllReduce),
       "write the sum into the input and return it; no dtype options with "
       "it (spec §7.3)"},
      // Accepted everywhere: only convert and reinterpret have gated pairs,
      // the other collectives ignore it (redistribute sets it internally).
      {O::ExpertMode, "expert_mode", T::Bool, "false", kAllOps,
       "unlock the gated conversions of spec §7.9 (convert, reinterpret); "
       "no effect on collectives without gated pairs"},
      {O::GatherDim, "gather_dim", T::Dim, "std::nullopt",
       bit(C::AllGather) | bit(C::Unshard),
       "src V: the result dim the per-rank tensors are stacked on (default "
       "0); src S(i): must equal i (spec §7.4)"},
      {O::ScatterDim, "scatter_dim", T::Dim, "std::nullopt",
       bit(C::ReduceScatter) | bit(C::Convert),
       "dst V: the input dim that is unbound, one slice per rank (default 0; "
       "reduce_scatter spec §7.5, convert from R/I to V); dst S(i): must "
       "equal i"},
      {O::SplitDim, "split_dim", T::Dim, "std::nullopt", bit(C::AllToAll),
       "the input dim split across ranks (default 0; src S(i) or dst S(j) "
       "imply it, spec §7.6)"},
      {O::ConcatDim, "concat_dim", T::Dim, "std::nullopt", bit(C::AllToAll),
       "the result dim the received pieces are joined on (default 0; spec "
       "§7.6)"},
      {O::SplitSizes, "split_sizes", T::Sizes, "{}",
       bit(C::AllGather) | bit(C::ReduceScatter) | bit(C::Unshard) |
           bit(C::LocalSplit),
       "uneven S(i): each rank's extent along i, one entry per rank (spec "
       "§7.4, §7.5)"},
      {O::InputSplitSizes, "input_split_sizes", T::Sizes, "{}",
       bit(C::AllToAll),
       "uneven all_to_all: rows of dim 0 this rank sends to each rank (spec "
       "§7.6)"},
      {O::OutputSplitSizes, "output_split_sizes", T::Sizes, "{}",
       bit(C::AllToAll),
       "uneven all_to_all: rows of dim 0 this rank receives from each rank "
       "(spec §7.6)"},
  };
  return table;
}

const CollectiveOptionInfo& option_info(CollectiveOption o) {
  return collective_options()[static_cast<std::size_t>(o)];
}

const CollectiveOptionInfo* find_option(std::string_view name) {
  for (const CollectiveOptionInfo& info : collective_options())
    if (name == info.name) return &info;
  return nullptr;
}

bool has_option(const CollectiveCall& call, CollectiveOption o) {
  if (call.unread_options & unread_bit(o)) return true;
  switch (o) {
    case CollectiveOption::OpDtype:
      return call.has_op_dtype;
    case CollectiveOption::OutDtype:
      return call.has_out_dtype;
    case CollectiveOption::Backward:
      return false;  // not part of a CollectiveCall unless marked
    case CollectiveOption::Inplace:
      return call.inplace;
    case CollectiveOption::ExpertMode:
      return call.expert_mode;
    case CollectiveOption::GatherDim:
      return call.gather_dim.has_value();
    case CollectiveOption::ScatterDim:
      return call.scatter_dim.has_value();
    case CollectiveOption::SplitDim:
      return call.split_dim.has_value();
    case CollectiveOption::ConcatDim:
      return call.concat_dim.has_value();
    case CollectiveOption::SplitSizes:
      return !call.split_sizes.empty();
    case CollectiveOption::InputSplitSizes:
      return !call.input_split_sizes.empty();
    case CollectiveOption::OutputSplitSizes:
      return !call.output_split_sizes.empty();
  }
  return false;
}

std::string accepted_options(Collective c) {
  std::string s;
  for (const CollectiveOptionInfo& info : collective_options())
    if (info.accepts(c)) s += (s.empty() ? "" : ", ") + std::string(info.name);
  return s;
}

Status set_option(CollectiveCall& call, CollectiveOption o,
                  const OptionValue& value) {
  const CollectiveOptionInfo& info = option_info(o);
  using K = OptionValue::Kind;
  auto wrong = [&] {
    return usage(std::string("option ") + info.name + " takes a " +
                 to_string(info.type) + " value");
  };
  const bool unread = value.kind == K::Unread;
  switch (info.type) {
    case OptionType::Dtype:
    case OptionType::BackwardOptions:
      if (o == CollectiveOption::OpDtype) call.has_op_dtype = true;
      if (o == CollectiveOption::OutDtype) call.has_out_dtype = true;
      if (o == CollectiveOption::Backward) call.unread_options |= unread_bit(o);
      return Ok{};
    case OptionType::Bool: {
      if (!unread && value.kind != K::Bool) return wrong();
      const bool b = unread || value.flag;
      if (unread) call.unread_options |= unread_bit(o);
      (o == CollectiveOption::Inplace ? call.inplace : call.expert_mode) = b;
      return Ok{};
    }
    case OptionType::Dim: {
      if (!unread && value.kind != K::Int) return wrong();
      std::optional<long>& field =
          o == CollectiveOption::GatherDim    ? call.gather_dim
          : o == CollectiveOption::ScatterDim ? call.scatter_dim
          : o == CollectiveOption::SplitDim   ? call.split_dim
                                              : call.concat_dim;
      if (unread) {
        field.reset();
        call.unread_options |= unread_bit(o);
      } else {
        field = value.number;
      }
      return Ok{};
    }
    case OptionType::Sizes: {
      if (!unread && value.kind != K::Sizes) return wrong();
      std::vector<long>& field =
          o == CollectiveOption::SplitSizes        ? call.split_sizes
          : o == CollectiveOption::InputSplitSizes ? call.input_split_sizes
                                                   : call.output_split_sizes;
      if (unread) {
        field.clear();
        call.unread_options |= unread_bit(o);
      } else {
        field = value.sizes;
      }
      return Ok{};
    }
  }
  return wrong();
}

}  // namespace spmd::core
