// collectives_common.cpp - messages, the c10d wait and dim helpers of the
// collectives (collectives_internal.h).
#include <ATen/ATen.h>
#include <spmd/errors.h>

#include <sstream>

#include "collectives_internal.h"
#include "error_text.h"

namespace spmd::collective_impl {

[[noreturn]] void shape_error(const Plan& p, const std::string& detail) {
  throw ShapeError(p.what() + " on axis '" + p.axis + "' (group of " +
                   std::to_string(p.n) + "): " + detail);
}

std::string where(const Plan& p) {
  std::ostringstream os;
  os << p.what() << " on axis '" << p.axis << "'";
  return os.str();
}

// Starts and waits for a c10d work item. c10d and Gloo errors never escape
// as themselves: a call c10d rejects before communicating and a
// communication failure (timeout, a peer that exited, a broken connection)
// both become CollectiveError naming the collective, the axis and the rank.
void wait(const Plan& p, const char* primitive,
          const std::function<c10::intrusive_ptr<c10d::Work>()>& start) {
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = start();
  } catch (const SpmdError&) {
    throw;
  } catch (const std::exception& e) {
    std::ostringstream os;
    os << where(p) << ": c10d " << primitive
       << " rejected the call before communicating (rank " << p.r << " of "
       << p.n << " on the axis, " << *p.mesh
       << "). c10d said: " << detail::error_text(e);
    throw CollectiveError(os.str());
  }
  try {
    work->wait();
  } catch (const std::exception& e) {
    std::ostringstream os;
    os << where(p) << " failed in c10d " << primitive << " (rank " << p.r
       << " of " << p.n << " on the axis, " << *p.mesh
       << "): a peer did not arrive within the timeout of " << p.timeout.count()
       << " ms, exited, or the connection broke; every rank of the axis must "
          "call the same collectives in the same order. c10d said: "
       << detail::error_text(e);
    throw CollectiveError(os.str());
  }
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const Plan& p, const char* name) {
  if (dim < -ndim || dim >= ndim)
    throw InvalidArgument(p.what() + ": " + name + "=" + std::to_string(dim) +
                          " is out of range for a result with " +
                          std::to_string(ndim) + " dims");
  return dim < 0 ? dim + ndim : dim;
}

int shard_dim(core::PerAxisType t) { return t.dim; }

std::vector<int64_t> to_i64(const std::vector<long>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

}  // namespace spmd::collective_impl
