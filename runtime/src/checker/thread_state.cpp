// thread_state.cpp - the runtime checker's per-thread state: what
// TypecheckGuard / NoTypecheckGuard push and pop, and the inference context
// (strictness and mesh) an op is typed in.
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "internal.h"

namespace spmd::checker {
namespace internal {

thread_local ThreadState* tls_state = nullptr;

std::shared_ptr<const MeshView> make_mesh_view(
    const std::vector<MeshAxisInfo>& axes) {
  auto view = std::make_shared<MeshView>();
  view->all = axes;
  for (const auto& a : axes)
    if (a.size != 1) view->axes.push_back(a.name);
  return view;
}

namespace {

// Whether `c` was made for this strictness and mesh. A runtime mesh is
// compared by address and by its axes, since a destroyed mesh's address may
// be reused by another.
bool ctx_matches(const Ctx& c, const ThreadState& st, const DeviceMesh* dm) {
  if (c.strict != st.strict || c.device_mesh != dm) return false;
  if (c.is_global != (st.global && st.local_region == 0) ||
      c.global.local_axes != st.local_axes)
    return false;
  if (dm == nullptr) return c.mesh == st.explicit_mesh;
  // A mesh built later on the World replaces its axis table (§6.2 lift).
  if (c.inference.axis_table != dm->world()->axis_table()) return false;
  const auto& axes = dm->axes();
  if (!c.mesh || c.mesh->all.size() != axes.size()) return false;
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (c.mesh->all[i].size != axes[i].size ||
        c.mesh->all[i].name != axes[i].name)
      return false;
  return true;
}

}  // namespace

const Ctx& current_ctx(ThreadState& st) {
  const DeviceMesh* dm = st.explicit_mesh ? nullptr : spmd::current_mesh();
  if (st.ctx != nullptr && ctx_matches(*st.ctx, st, dm)) return *st.ctx;
  for (const auto& c : st.contexts) {
    if (ctx_matches(*c, st, dm)) {
      st.ctx = c.get();
      return *c;
    }
  }
  auto c = std::make_unique<Ctx>();
  c->strict = st.strict;
  c->device_mesh = dm;
  if (dm != nullptr) {
    std::vector<MeshAxisInfo> axes;
    for (const auto& a : dm->axes()) axes.push_back({a.name, long(a.size)});
    c->mesh = make_mesh_view(axes);
  } else {
    c->mesh = st.explicit_mesh;
  }
  c->inference.strict = st.strict;
  if (c->mesh) c->inference.mesh_axes = c->mesh->axes;
  if (dm != nullptr) c->inference.axis_table = dm->world()->axis_table();
  c->is_global = st.global && st.local_region == 0;
  c->global.local = c->inference;
  c->global.global = c->is_global;
  c->global.local_axes = st.local_axes;
  if (!st.local_axes.empty() && c->mesh) {
    // §12.5: local axes are an outer prefix of the mesh (singletons count).
    std::vector<std::string> names;
    for (const auto& a : c->mesh->all) names.push_back(a.name);
    core::Status ok = core::check_local_axes(names, st.local_axes);
    if (!ok.ok())
      throw_with_context(ok.error(),
                         "  In TypecheckOptions::local_axes" + mesh_suffix(*c));
  }
  st.ctx = c.get();
  st.contexts.push_back(std::move(c));
  return *st.ctx;
}

}  // namespace internal

using namespace internal;

struct TypecheckGuard::Saved {
  bool created = false;
  bool strict = true;
  bool trace = false;
  bool paused = false;
  bool global = false;
  int local_region = 0;
  std::vector<std::string> local_axes;
  std::shared_ptr<const MeshView> mesh;
  bool included = false;
  bool excluded = false;
  spmd::detail::CollectiveHook* hook = nullptr;
};

namespace {
TypecheckOptions strict_only(bool strict) {
  TypecheckOptions o;
  o.strict = strict;
  return o;
}
}  // namespace

TypecheckGuard::TypecheckGuard(bool strict)
    : TypecheckGuard(strict_only(strict)) {}

TypecheckGuard::TypecheckGuard(TypecheckOptions options) : saved_(new Saved) {
  install_backward_check();
  if (tls_state == nullptr) {
    tls_state = new ThreadState();
    saved_->created = true;
    // "After spmd::..." lines name calls of this session only.
    spmd::detail::reset_last_call_site();
  }
  ThreadState& st = *tls_state;
  saved_->strict = st.strict;
  saved_->trace = st.trace;
  saved_->paused = st.paused;
  saved_->global = st.global;
  saved_->local_region = st.local_region;
  saved_->local_axes = st.local_axes;
  saved_->mesh = st.explicit_mesh;
  ++st.depth;
  if (options.strict) st.strict = *options.strict;
  if (options.trace) st.trace = *options.trace;
  if (options.local) {
    st.global = !*options.local;
    st.local_region = 0;  // an explicit choice ends an enclosing local region
  }
  if (options.local_axes) st.local_axes = *options.local_axes;
  if (options.mesh) st.explicit_mesh = make_mesh_view(*options.mesh);
  st.paused = false;
  saved_->included = c10::impl::tls_is_dispatch_key_included(kModeKey);
  saved_->excluded = c10::impl::tls_is_dispatch_key_excluded(kModeKey);
  c10::impl::tls_set_dispatch_key_included(kModeKey, true);
  c10::impl::tls_set_dispatch_key_excluded(kModeKey, false);
  saved_->hook = spmd::detail::set_collective_hook(&collective_hook());
}

TypecheckGuard::~TypecheckGuard() {
  ThreadState* st = tls_state;
  spmd::detail::set_collective_hook(saved_->hook);
  c10::impl::tls_set_dispatch_key_included(kModeKey, saved_->included);
  c10::impl::tls_set_dispatch_key_excluded(kModeKey, saved_->excluded);
  if (st != nullptr) {
    st->strict = saved_->strict;
    st->trace = saved_->trace;
    st->paused = saved_->paused;
    st->global = saved_->global;
    st->local_region = saved_->local_region;
    st->local_axes = saved_->local_axes;
    st->explicit_mesh = saved_->mesh;
    --st->depth;
    if (saved_->created) {
      delete st;
      tls_state = nullptr;
    }
  }
  delete saved_;
}

NoTypecheckGuard::NoTypecheckGuard()
    : was_paused_(false), was_excluded_(false), active_(tls_state != nullptr) {
  if (!active_) return;
  was_paused_ = tls_state->paused;
  tls_state->paused = true;
  // Excluding the key makes paused ops skip the fallback entirely.
  was_excluded_ = c10::impl::tls_is_dispatch_key_excluded(kModeKey);
  c10::impl::tls_set_dispatch_key_excluded(kModeKey, true);
}

NoTypecheckGuard::~NoTypecheckGuard() {
  if (!active_) return;
  c10::impl::tls_set_dispatch_key_excluded(kModeKey, was_excluded_);
  if (tls_state != nullptr) tls_state->paused = was_paused_;
}

LocalRegionGuard::LocalRegionGuard()
    : active_(tls_state != nullptr && tls_state->global) {
  if (active_) ++tls_state->local_region;
}

LocalRegionGuard::~LocalRegionGuard() {
  if (active_ && tls_state != nullptr && tls_state->local_region > 0)
    --tls_state->local_region;
}

bool is_global_mode() {
  ThreadState* st = active_state();
  return st != nullptr && st->global && st->local_region == 0;
}

bool is_type_checking() { return active_state() != nullptr; }

bool is_strict() { return tls_state == nullptr || tls_state->strict; }

std::optional<std::vector<std::string>> current_mesh_axes() {
  ThreadState* st = tls_state;
  if (st == nullptr) {
    const DeviceMesh* dm = spmd::current_mesh();
    if (dm == nullptr) return std::nullopt;
    std::vector<std::string> axes;
    for (const auto& a : dm->axes())
      if (a.size != 1) axes.push_back(a.name);
    return axes;
  }
  const Ctx& ctx = current_ctx(*st);
  if (!ctx.mesh) return std::nullopt;
  return ctx.mesh->axes;
}

}  // namespace spmd::checker
