// classify.cpp - ATen schema -> the spec's op naming (spec §6.5) for the
// runtime checker: spec name (core::classify_schema_op), pass-through ops,
// argument roles (input, in-place self, out=), positions where plain numbers
// are weak scalars.
#include <ATen/core/dispatch/Dispatcher.h>
#include <spmd/core/annotation_rules.h>
#include <spmd/core/propagation.h>

#include <unordered_set>

#include "internal.h"

namespace spmd::checker::internal {
namespace {

// Metadata and autograd bookkeeping: pass through untyped (spec §5.2 step 3,
// plus the C++-only bookkeeping ops libtorch routes through the dispatcher).
bool is_passthrough(std::string_view base) {
  static const std::unordered_set<std::string_view> kNames = {
      "requires_grad_",
      "retain_grad",
      "retains_grad",
      "dim",
      "element_size",
      "get_device",
      "is_complex",
      "is_contiguous",
      "is_floating_point",
      "nelement",
      "numel",
      "size",
      "stride",
      "untyped_storage",
      "storage_offset",
      "_version",
      "output_nr",
      "is_leaf",
      "set_data",
      "_fw_primal",
      "is_same_size",
      "_has_compatible_shallow_copy_type",
      "record_stream",
      "is_signed",
      "is_inference",
      "_backward",
      "is_conj",
      "is_neg",
      "sym_size",
      "sym_stride",
      "sym_numel"};
  return kNames.count(base) != 0;
}

std::unique_ptr<OpEntry> classify(const c10::FunctionSchema& schema) {
  auto e = std::make_unique<OpEntry>();
  const std::string& full = schema.name();
  e->qualified = full;
  if (!schema.overload_name().empty())
    e->qualified += "." + schema.overload_name();
  std::string_view base = full;
  if (auto pos = base.rfind("::"); pos != std::string_view::npos)
    base = base.substr(pos + 2);
  e->passthrough = is_passthrough(base);
  e->c10d = full.rfind("c10d::", 0) == 0;
  // The spec name (ATen renames, in-place variants as methods, method-only
  // registrations) is the core's decision.
  e->info = core::classify_schema_op(full);
  const auto& args = schema.arguments();
  e->num_args = args.size();
  e->num_returns = schema.returns().size();
  e->roles.resize(args.size(), ArgRole::Input);
  e->tensor_position.resize(args.size(), false);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const c10::AliasInfo* alias = args[i].alias_info();
    if (alias != nullptr && alias->isWrite())
      e->roles[i] = args[i].kwarg_only() ? ArgRole::Out : ArgRole::InputWrite;
  }
  for (int p : e->info.tensor_positions)
    if (p >= 0 && std::size_t(p) < args.size()) e->tensor_position[p] = true;
  return e;
}

}  // namespace

const OpEntry& op_entry(const c10::OperatorHandle& op) {
  thread_local std::unordered_map<const c10::FunctionSchema*,
                                  std::unique_ptr<OpEntry>>
      cache;
  const c10::FunctionSchema* key = &op.schema();
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  return *cache.emplace(key, classify(*key)).first->second;
}

}  // namespace spmd::checker::internal
