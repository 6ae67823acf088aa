// equivalence.cpp - expect_equivalent: the parallel program (simulated)
// against the single-device program, quantity by quantity and step by step,
// with a readable table of the differences.
#include <ATen/ATen.h>
#include <spmd/checker.h>
#include <spmd/testing.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace spmd::testing {
namespace {

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string print_sizes(at::IntArrayRef sizes) {
  std::ostringstream os;
  os << sizes;
  return os.str();
}

double max_abs(const at::Tensor& t) {
  if (t.numel() == 0 || t.is_meta()) return 0;
  return t.abs().max().item<double>();
}

// Compares one quantity at one step and fills `row`.
void compare(const Simulation& sim, const Recorded& single,
             const Tolerance& tol, QuantityDiff& row) {
  Unsharded u = sim.unshard(row.name, row.step);
  const at::Tensor& b0 = single.value;
  row.reference_max = max_abs(b0.to(at::kDouble));
  row.disagreement = u.disagreement;
  if (u.value.sizes() != b0.sizes()) {
    row.max_abs_diff = std::numeric_limits<double>::infinity();
    row.problem = "shape " + print_sizes(u.value.sizes()) +
                  " (parallel, un-sharded) != " + print_sizes(b0.sizes()) +
                  " (single device)";
    row.ok = false;
    return;
  }
  if (u.value.is_meta() || b0.is_meta()) {  // shapes only
    row.max_abs_diff = 0;
    row.ok = true;
    return;
  }
  at::Tensor a = u.value.to(at::kDouble);
  at::Tensor b = b0.to(at::kDouble);
  at::Tensor diff = (a - b).abs();
  row.max_abs_diff = diff.numel() ? diff.max().item<double>() : 0.0;
  bool close = diff.numel() == 0 ||
               (diff <= tol.atol + tol.rtol * b.abs()).all().item<bool>();
  const double agree_bound = tol.atol + tol.rtol * row.reference_max;
  bool agree = u.disagreement <= agree_bound;
  if (!agree) {
    row.disagreement_axis = u.disagreement_axis;
    row.problem = "ranks of axis '" + u.disagreement_axis +
                  "' (R/I: must hold the same value) disagree by " +
                  fmt("%.3e", u.disagreement);
  }
  row.ok = close && agree;
}

}  // namespace

bool EquivalenceReport::ok() const {
  return std::all_of(rows_.begin(), rows_.end(),
                     [](const QuantityDiff& r) { return r.ok; });
}

const QuantityDiff* EquivalenceReport::find(std::string_view name,
                                            int step) const {
  for (const QuantityDiff& r : rows_)
    if (r.name == name && r.step == step) return &r;
  return nullptr;
}

bool EquivalenceReport::ok(std::string_view name, int step) const {
  const QuantityDiff* r = find(name, step);
  if (r == nullptr)
    throw std::out_of_range("equivalence report: '" + std::string(name) +
                            "' was not compared at step " +
                            std::to_string(step));
  return r->ok;
}

std::vector<std::string> EquivalenceReport::mismatches() const {
  std::vector<std::string> out;
  for (const QuantityDiff& r : rows_)
    if (!r.ok && std::find(out.begin(), out.end(), r.name) == out.end())
      out.push_back(r.name);
  return out;
}

namespace {

// One line of the table per quantity: the worst step, the first failing
// step, the largest R/I disagreement and the other problems.
struct Line {
  std::string name, type;
  const QuantityDiff* worst = nullptr;
  const QuantityDiff* first_bad = nullptr;
  double reference_max = 0;
  int steps = 0;
  const QuantityDiff* disagreement = nullptr;
  int disagreeing_steps = 0;
  std::vector<std::string> problems;
};

std::vector<Line> lines_of(const std::vector<QuantityDiff>& rows) {
  std::vector<Line> lines;
  for (const QuantityDiff& r : rows) {
    auto it = std::find_if(lines.begin(), lines.end(),
                           [&](const Line& l) { return l.name == r.name; });
    if (it == lines.end()) {
      Line line;
      line.name = r.name;
      line.type = r.type;
      lines.push_back(std::move(line));
      it = lines.end() - 1;
    }
    Line& l = *it;
    ++l.steps;
    if (l.type.empty()) l.type = r.type;
    if (!l.worst || !(r.max_abs_diff <= l.worst->max_abs_diff)) l.worst = &r;
    if (!r.ok && !l.first_bad) l.first_bad = &r;
    l.reference_max = std::max(l.reference_max, r.reference_max);
    if (!r.disagreement_axis.empty()) {
      // One line for disagreements: the largest, where it was, how often.
      ++l.disagreeing_steps;
      if (!l.disagreement || r.disagreement > l.disagreement->disagreement)
        l.disagreement = &r;
    } else if (!r.problem.empty() &&
               std::find(l.problems.begin(), l.problems.end(), r.problem) ==
                   l.problems.end())
      l.problems.push_back(r.problem);
  }
  return lines;
}

std::string step_text(int s) {
  return s == 0 ? std::string("-") : std::to_string(s);
}

// A quantity's line and, indented below it, its disagreement and problems;
// `wn` and `wt` are the widths of the name and type columns.
void write_line(std::ostringstream& os, const Line& l, size_t wn, size_t wt) {
  char buf[512];
  const bool bad = l.first_bad != nullptr;
  std::snprintf(buf, sizeof buf,
                "  %-*s  %-*s  %-12s  %-7s  %-8s  %-10s  (%.3e)\n", int(wn),
                l.name.c_str(), int(wt), l.type.c_str(),
                fmt("%.3e", l.worst->max_abs_diff).c_str(),
                step_text(l.worst->step).c_str(), bad ? "MISMATCH" : "ok",
                bad ? ("step " + step_text(l.first_bad->step)).c_str() : "",
                l.reference_max);
  os << buf;
  if (l.disagreement) {
    const QuantityDiff& d = *l.disagreement;
    os << "      ranks of axis '" << d.disagreement_axis
       << "' (R/I: must hold the same value) disagree by up to "
       << fmt("%.3e", d.disagreement) << " (step " << step_text(d.step)
       << "; at " << l.disagreeing_steps << " of " << l.steps
       << (l.steps == 1 ? " step)" : " steps)") << "\n";
  }
  for (const std::string& p : l.problems) os << "      " << p << "\n";
}

}  // namespace

std::string EquivalenceReport::table() const {
  std::vector<Line> lines = lines_of(rows_);
  size_t wn = 8, wt = 4;
  for (const Line& l : lines) {
    wn = std::max(wn, l.name.size());
    wt = std::max(wt, l.type.size());
  }
  std::ostringstream os;
  os << "equivalence with the single-device program: " << mesh_ << ", "
     << steps_ << (steps_ == 1 ? " step" : " steps") << "\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-*s  %-*s  %-12s  %-7s  %-8s  %-10s  %s\n",
                int(wn), "quantity", int(wt), "type", "max abs diff", "at step",
                "status", "first bad", "(single max |value|)");
  os << buf;
  for (const Line& l : lines) write_line(os, l, wn, wt);
  auto bad = mismatches();
  if (bad.empty()) {
    double worst = 0;
    for (const QuantityDiff& r : rows_) worst = std::max(worst, r.max_abs_diff);
    os << "verdict: PASS - " << rows_.size() << " comparisons, max abs diff "
       << fmt("%.1e", worst) << "\n";
  } else {
    os << "verdict: FAIL - differs from the single-device program in: ";
    for (size_t i = 0; i < bad.size(); ++i) os << (i ? ", " : "") << bad[i];
    os << "\n";
  }
  return os.str();
}

EquivalenceReport expect_equivalent(const RankProgram& parallel,
                                    const SingleProgram& single,
                                    const EquivalenceOptions& options) {
  if (options.mesh.empty())
    throw std::invalid_argument(
        "expect_equivalent: EquivalenceOptions::mesh is empty; give the "
        "parallel program's mesh, e.g. {{dp, 2}, {tp, 2}}");
  if (options.steps < 1)
    throw std::invalid_argument("expect_equivalent: steps must be >= 1");
  if (!parallel || !single)
    throw std::invalid_argument("expect_equivalent: a program is empty");
  SimulateOptions so = options.simulate;
  so.steps = options.steps;

  // The single-device program first: its errors are the user's, plainly.
  Single reference(options.steps);
  single(reference);
  Simulation sim = simulate(options.mesh, parallel, so);

  std::vector<QuantityDiff> rows;
  const RankRecords& first = sim.ranks().front();
  for (const Recorded& rec : first.records) {
    QuantityDiff row;
    row.name = rec.name;
    row.step = rec.step;
    row.type = to_string(rec.type);
    auto s = std::find_if(reference.records().begin(),
                          reference.records().end(), [&](const Recorded& r) {
                            return r.name == rec.name && r.step == rec.step;
                          });
    if (s == reference.records().end()) {
      row.max_abs_diff = std::numeric_limits<double>::infinity();
      row.problem = "recorded by the parallel program only (step " +
                    std::to_string(rec.step) + ")";
    } else {
      auto t = options.tolerances.find(rec.name);
      compare(sim, *s,
              t == options.tolerances.end() ? options.tolerance : t->second,
              row);
    }
    rows.push_back(std::move(row));
  }
  for (const Recorded& rec : reference.records()) {
    bool seen =
        std::any_of(rows.begin(), rows.end(), [&](const QuantityDiff& r) {
          return r.name == rec.name && r.step == rec.step;
        });
    if (seen) continue;
    QuantityDiff row;
    row.name = rec.name;
    row.step = rec.step;
    row.max_abs_diff = std::numeric_limits<double>::infinity();
    row.reference_max = max_abs(rec.value.to(at::kDouble));
    row.problem = "recorded by the single-device program only (step " +
                  std::to_string(rec.step) + ")";
    rows.push_back(std::move(row));
  }
  return EquivalenceReport(sim.mesh(), options.steps, std::move(rows));
}

}  // namespace spmd::testing
