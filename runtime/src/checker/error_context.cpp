// error_context.cpp - the operator context of the runtime checker's errors
// (spec §9.3): the call, each argument's dtype, shape and type, the mesh.
#include <ATen/ATen.h>
#include <spmd/errors.h>

#include <algorithm>
#include <sstream>

#include "internal.h"

namespace spmd::checker::internal {

[[noreturn]] void throw_with_context(core::TypeError error,
                                     const std::string& context) {
  if (!context.empty()) {
    error.message = error.full_message() + "\n\n" + context;
    error.fix.clear();
    error.notes.clear();
  }
  spmd::throw_error(error);
}

namespace {

const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "f32";
    case at::kDouble:
      return "f64";
    case at::kHalf:
      return "f16";
    case at::kBFloat16:
      return "bf16";
    case at::kLong:
      return "i64";
    case at::kInt:
      return "i32";
    case at::kShort:
      return "i16";
    case at::kChar:
      return "i8";
    case at::kByte:
      return "u8";
    case at::kBool:
      return "bool";
    case at::kComplexFloat:
      return "c64";
    case at::kComplexDouble:
      return "c128";
    default:
      return c10::toString(t);
  }
}

}  // namespace

std::string describe_tensor(const at::Tensor& t) {
  if (!t.defined()) return "None";
  std::ostringstream os;
  os << dtype_name(t.scalar_type()) << "[";
  for (int64_t d = 0; d < t.dim(); ++d) os << (d ? ", " : "") << t.size(d);
  os << "] ";
  os << type_string(t);  // with shard dims in global mode
  return os.str();
}

namespace {

std::string describe_value(const c10::IValue& v) {
  if (v.isTensor()) return describe_tensor(v.toTensor());
  if (v.isTensorList()) {
    std::vector<std::string> items;
    for (const at::Tensor& t : v.toTensorList().vec())
      items.push_back(describe_tensor(t));
    if (items.size() > 1 &&
        std::all_of(items.begin(), items.end(),
                    [&](const std::string& s) { return s == items[0]; }))
      return "[" + items[0] + "] * " + std::to_string(items.size());
    std::string s = "[";
    for (std::size_t i = 0; i < items.size(); ++i)
      s += (i ? ", " : "") + items[i];
    return s + "]";
  }
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::string mesh_suffix(const Ctx& ctx) {
  if (!ctx.mesh) return "";
  std::string s = " under mesh {";
  for (std::size_t i = 0; i < ctx.mesh->axes.size(); ++i)
    s += (i ? ", " : "") + ctx.mesh->axes[i];
  return s + "}";
}

std::string op_context(const c10::FunctionSchema& schema,
                       const std::vector<c10::IValue>& args, const Ctx& ctx) {
  std::string s = "  In " + schema.name();
  if (!schema.overload_name().empty()) s += "." + schema.overload_name();
  s += "(\n";
  const auto& params = schema.arguments();
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string label = i < params.size() ? params[i].name()
                                          : "args[" + std::to_string(i) + "]";
    s += "    " + label + ": " + describe_value(args[i]) + ",\n";
  }
  return s + "  )" + mesh_suffix(ctx);
}

}  // namespace spmd::checker::internal
