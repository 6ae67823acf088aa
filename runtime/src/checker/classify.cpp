// classify.cpp - ATen schema -> the spec's op naming (spec §6.5) for the
// runtime checker: spec name (core::classify_schema_op), pass-through ops,
// argument roles (input, in-place self, out=), positions where plain numbers
// are weak scalars.
#include <ATen/core/dispatch/Dispatcher.h>
#include <spmd/core/annotation_rules.h>
#include <spmd/core/op_table.h>
#include <spmd/core/propagation.h>

#include "internal.h"

namespace spmd::checker::internal {
namespace {

std::unique_ptr<OpEntry> classify(const c10::FunctionSchema& schema) {
  auto e = std::make_unique<OpEntry>();
  const std::string& full = schema.name();
  e->qualified = full;
  if (!schema.overload_name().empty())
    e->qualified += "." + schema.overload_name();
  std::string_view base = full;
  if (auto pos = base.rfind("::"); pos != std::string_view::npos)
    base = base.substr(pos + 2);
  // Metadata and autograd bookkeeping pass through untyped (spec §5.2
  // step 3): the core's op table lists them.
  e->passthrough = core::is_metadata_op(base);
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
    else if (core::gives_attributes_only(full, int(i)))
      e->roles[i] = ArgRole::Attributes;
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
