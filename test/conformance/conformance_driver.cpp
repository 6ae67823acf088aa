// conformance_driver - runs the random programs of conformance.py through our
// runtime checker and writes the verdicts and result types as JSON.
//
//   conformance_driver <programs.json> <results.json> [runs]
//
// Each program runs on rank 0 of a fake 8-rank world (mesh a=2, b=2, c=2)
// under a spmd::checker::TypecheckGuard whose mesh is the program's axes,
// strict or permissive as the program says. The first run records, for every
// step, the type of its result ("{a:P,b:R}", axes sorted) until the first
// exception, whose class gives the verdict; runs > 1 re-run every program
// and time them in CPU time, with the checker on and off (for the per-step
// cost beside the reference's).
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <spmd/checker.h>
#include <spmd/spmd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
using spmd::PerAxisType;

/// Axis names with static storage (spmd::AxisType keeps a const char*).
const char* axis_name(const std::string& name) {
  static const char* const kNames[] = {"a", "b", "c"};
  for (const char* n : kNames)
    if (name == n) return n;
  throw std::invalid_argument("unknown axis '" + name + "' (expected a, b, c)");
}

PerAxisType parse_type(const std::string& t) {
  if (t == "R") return spmd::R;
  if (t == "I") return spmd::I;
  if (t == "V") return spmd::V;
  if (t == "P") return spmd::P;
  if (t.size() > 1 && t[0] == 'S') return spmd::S(std::stoi(t.substr(1)));
  throw std::invalid_argument("unknown type '" + t + "'");
}

/// "{a:P,b:R}" — the same text as conformance.py's type_str; with
/// `global`, a V axis that shards a dim is "S(d)" (global_conformance.py).
std::string type_str(const at::Tensor& x, bool global = false) {
  std::string s = "{";
  const spmd::core::GlobalType type = spmd::get_global_type(x);
  for (const auto& [axis, t] : type.local.map()) {
    if (s.size() > 1) s += ",";
    s += axis + ":" + spmd::core::to_string(global ? *type.axis_type(axis) : t);
  }
  return s + "}";
}

/// The verdict of an exception, in conformance.py's vocabulary.
std::string kind_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const spmd::SpmdError& err) {
    switch (err.kind()) {
      case spmd::core::ErrorKind::SpmdTypeError:
        return "type";
      case spmd::core::ErrorKind::InvalidArgument:
      case spmd::core::ErrorKind::UsageError:
        return "invalid";
      case spmd::core::ErrorKind::NotImplemented:
        return "notimpl";
      case spmd::core::ErrorKind::ShapeError:
        return "shape";
      default:
        return "spmd-other";
    }
  } catch (const c10::Error&) {
    return "runtime";
  } catch (const std::exception&) {
    return "other";
  }
}

void annotate(const at::Tensor& x, const json& type) {
  std::vector<spmd::AxisType> e;
  for (const auto& [axis, t] : type.items())
    e.push_back({axis_name(axis), parse_type(t.get<std::string>())});
  switch (e.size()) {
    case 1:
      spmd::assert_type(x, {e[0]});
      break;
    case 2:
      spmd::assert_type(x, {e[0], e[1]});
      break;
    case 3:
      spmd::assert_type(x, {e[0], e[1], e[2]});
      break;
    default:
      break;  // {}: nothing to assert
  }
}

/// checker::typed_scalar(value, scalar_type): the reference's Scalar.
at::Tensor typed_scalar(const json& s) {
  std::vector<spmd::AxisType> e;
  for (const auto& [axis, t] : s.at("scalar_type").items())
    e.push_back({axis_name(axis), parse_type(t.get<std::string>())});
  double v = s.at("scalar").get<double>();
  switch (e.size()) {
    case 1:
      return spmd::checker::typed_scalar(v, {e[0]});
    case 2:
      return spmd::checker::typed_scalar(v, {e[0], e[1]});
    default:
      return spmd::checker::typed_scalar(v, {e[0], e[1], e[2]});
  }
}

at::Tensor collective(const std::string& op, const at::Tensor& x,
                      const json& s) {
  spmd::Axis axis{axis_name(s.at("axis").get<std::string>())};
  PerAxisType src = parse_type(s.at("src").get<std::string>());
  PerAxisType dst = parse_type(s.at("dst").get<std::string>());
  spmd::CollectiveOptions o;
  if (op == "all_reduce") return spmd::all_reduce(x, axis, src, dst);
  if (op == "gather_shard") return spmd::all_gather(x, axis, src, dst);
  if (op == "scatter_shard") return spmd::reduce_scatter(x, axis, src, dst);
  if (op == "all_gather") {
    o.gather_dim = 0;
    return spmd::all_gather(x, axis, src, dst, o);
  }
  if (op == "reduce_scatter") {
    o.scatter_dim = 0;
    return spmd::reduce_scatter(x, axis, src, dst, o);
  }
  if (op == "all_to_all") {
    o.split_dim = 0;
    o.concat_dim = 0;
    return spmd::all_to_all(x, axis, src, dst, o);
  }
  if (op == "convert") return spmd::convert(x, axis, src, dst);
  if (op == "reinterpret") return spmd::reinterpret(x, axis, src, dst);
  if (op == "redistribute") return spmd::redistribute(x, axis, src, dst);
  if (op == "shard") return spmd::shard(x, axis, src, dst);
  if (op == "unshard") return spmd::unshard(x, axis, src, dst);
  if (op == "invariant_to_replicate")
    return spmd::invariant_to_replicate(x, axis);
  throw std::invalid_argument("unknown op '" + op + "'");
}

at::Tensor step(const json& s, const std::vector<at::Tensor>& vals) {
  const std::string op = s.at("op").get<std::string>();
  std::vector<at::Tensor> a;
  if (s.contains("args"))
    for (const auto& i : s.at("args")) a.push_back(vals.at(i.get<size_t>()));
  if (op == "input") {
    std::vector<int64_t> shape = s.at("shape").get<std::vector<int64_t>>();
    at::Tensor x;
    {
      spmd::checker::NoTypecheckGuard paused;
      x = at::randn(shape).requires_grad_(s.at("requires_grad").get<bool>());
    }
    if (!s.at("type").is_null()) annotate(x, s.at("type"));
    return x;
  }
  if (op == "add") return at::add(a[0], a[1]);
  if (op == "sub") return at::sub(a[0], a[1]);
  if (op == "mul") return at::mul(a[0], a[1]);
  if (op == "div") return at::div(a[0], a[1]);
  if (op == "maximum") return at::maximum(a[0], a[1]);
  if (op == "matmul") return at::matmul(a[0], a[1]);
  if (op == "mm") return at::mm(a[0], a[1]);
  if (op == "addmm") return at::addmm(a[0], a[1], a[2]);
  if (op == "neg") return at::neg(a[0]);
  if (op == "clone") return at::clone(a[0]);
  if (op == "relu") return at::relu(a[0]);
  if (op == "exp") return at::exp(a[0]);
  if (op == "tanh") return at::tanh(a[0]);
  if (op == "sigmoid") return at::sigmoid(a[0]);
  if (op == "abs") return at::abs(a[0]);
  if (op == "t") return at::t(a[0]);
  if (op == "sum") return at::sum(a[0]);
  if (op == "mean") return at::mean(a[0]);
  if (op == "transpose") return at::transpose(a[0], 0, 1);
  if (op == "cumsum") return at::cumsum(a[0], 0);
  if (op == "softmax") return at::softmax(a[0], -1);
  if (op == "flip") return at::flip(a[0], {0});
  if (op == "add_scalar") return at::add(a[0], s.at("scalar").get<double>());
  if (op == "sub_scalar") return at::sub(a[0], s.at("scalar").get<double>());
  if (op == "mul_scalar") return at::mul(a[0], s.at("scalar").get<double>());
  if (op == "div_scalar") return at::div(a[0], s.at("scalar").get<double>());
  if (op == "add_typed") return at::add(a[0], typed_scalar(s));
  if (op == "mul_typed") return at::mul(a[0], typed_scalar(s));
  if (op == "div_typed") return at::div(a[0], typed_scalar(s));
  if (op == "add_") return a[0].add_(a[1]);
  if (op == "mul_") return a[0].mul_(a[1]);
  if (op == "cat") return at::cat({a[0], a[1]});
  if (op == "stack") return at::stack({a[0], a[1]});
  // Global-mode programs (global_conformance.py).
  if (op == "bmm") return at::bmm(a[0], a[1]);
  if (op == "linear")
    return a.size() > 2 ? at::linear(a[0], a[1], a[2]) : at::linear(a[0], a[1]);
  if (op == "gelu") return at::gelu(a[0]);
  if (op == "sum_dim") return at::sum(a[0], {s.at("dim").get<int64_t>()});
  if (op == "mean_dim") return at::mean(a[0], {s.at("dim").get<int64_t>()});
  if (op == "amax_dim") return at::amax(a[0], {s.at("dim").get<int64_t>()});
  if (op == "softmax_dim") return at::softmax(a[0], s.at("dim").get<int64_t>());
  if (op == "transpose01") return at::transpose(a[0], 0, 1);
  if (op == "unsqueeze") return at::unsqueeze(a[0], s.at("dim").get<int64_t>());
  if (op == "reshape")
    return at::reshape(a[0], s.at("size").get<std::vector<int64_t>>());
  if (op == "cat_dim") return at::cat({a[0], a[1]}, s.at("dim").get<int64_t>());
  if (op == "stack_dim")
    return at::stack({a[0], a[1]}, s.at("dim").get<int64_t>());
  if (op == "layer_norm") return at::layer_norm(a[0], {a[0].size(-1)});
  if (op == "narrow")
    return at::narrow(a[0], s.at("dim").get<int64_t>(), 0,
                      s.at("length").get<int64_t>());
  if (op == "zeros") return at::zeros({2, 2});
  if (op == "ones") return at::ones({2, 2});
  if (op == "randn") return at::randn({2, 2});
  return collective(op, a.at(0), s);
}

/// Runs one program; with `out`, records its verdict and types. Returns the
/// number of steps that completed. `checking` false runs it with no guard
/// (the baseline of the timing).
size_t run_program(const json& prog, json* out, bool checking = true) {
  spmd::checker::TypecheckOptions options;
  options.strict = prog.at("strict").get<bool>();
  std::vector<spmd::checker::MeshAxisInfo> mesh;
  for (const auto& a : prog.at("axes"))
    mesh.push_back({a.get<std::string>(), 2});
  options.mesh = mesh;
  const bool global = prog.value("global", false);
  if (global) options.local = false;

  std::vector<at::Tensor> vals;
  std::vector<std::string> types;
  std::string verdict = "ok";
  std::string message;  // the first line of the error
  long at_step = -1;
  {
    std::optional<spmd::checker::TypecheckGuard> guard;
    if (checking) guard.emplace(options);
    const json& steps = prog.at("steps");
    for (size_t i = 0; i < steps.size(); ++i) {
      try {
        vals.push_back(step(steps[i], vals));
      } catch (const std::exception& e) {
        verdict = kind_of(std::current_exception());
        at_step = static_cast<long>(i);
        message = e.what();
        message = message.substr(0, message.find('\n'));
        if (out && std::getenv("SPMD_CONFORMANCE_VERBOSE"))
          std::cerr << "program " << prog.at("id") << " step " << i << ": "
                    << verdict << ": " << e.what() << "\n";
        break;
      }
      if (out) types.push_back(type_str(vals.back(), global));
    }
  }
  if (out)
    *out = {{"id", prog.at("id")},
            {"verdict", verdict},
            {"step", at_step},
            {"types", types},
            {"message", message}};
  return vals.size();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: conformance_driver <programs.json> <results.json> "
                 "[runs]\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "conformance_driver: cannot read " << argv[1] << "\n";
    return 2;
  }
  json doc = json::parse(in);
  int runs = argc > 3 ? std::stoi(argv[3]) : 1;

  at::manual_seed(0);
  auto world = spmd::World::fake(0, 8);
  static constexpr spmd::Axis a{"a"}, b{"b"}, c{"c"};
  spmd::DeviceMesh mesh(world, {{a, 2}, {b, 2}, {c, 2}});
  spmd::MeshGuard on_mesh(mesh);

  json results = json::array();
  size_t ops = 0;
  for (const auto& prog : doc.at("programs")) {
    json r;
    ops += run_program(prog, &r);
    results.push_back(std::move(r));
  }
  // Timing: every program again with the checker on, then with it off.
  double secs[2] = {0, 0};
  for (int on = 1; on >= 0; --on) {
    // CPU time, as the reference side measures: robust on a loaded machine.
    std::clock_t t0 = std::clock();
    for (int k = 1; k < runs; ++k)
      for (const auto& prog : doc.at("programs"))
        run_program(prog, nullptr, on == 1);
    secs[on] = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
  }

  json out = {{"results", results},
              {"timing",
               {{"repeat", runs - 1},
                {"seconds", secs[1]},
                {"seconds_off", secs[0]},
                {"ops", ops}}}};
  std::ofstream(argv[2]) << out.dump();
  return 0;
}
