// type_store.cpp - the runtime checker's type store: interned type maps and
// the side table that keeps them beside tensors (keyed by TensorImpl, swept
// when tensors die).
#include <c10/util/flat_hash_map.h>

#include <array>
#include <deque>
#include <mutex>

#include "internal.h"

namespace spmd::checker::internal {
namespace {

// Interned type maps. The lattice of maps a program uses is small, so each
// distinct map is stored once and referred to by pointer (nullptr = untyped);
// the side table and the inference memo then hold pointers, not maps.

class TypeInterner {
 public:
  TypeRef intern(const TensorType& t) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = types_.find(t);
    if (it != types_.end()) return it->second.get();
    auto owned = std::make_unique<TensorType>(t);
    TypeRef ref = owned.get();
    types_.emplace(t, std::move(owned));
    return ref;
  }

 private:
  std::mutex mu_;
  std::unordered_map<TensorType, std::unique_ptr<TensorType>> types_;
};

// Shard information, interned by its printed form (specs are small).
class ShardInterner {
 public:
  ShardRef intern(const core::GlobalType& g) {
    if (!g.spec && g.unknown_shards.empty() && g.unmasked_rows.empty())
      return nullptr;
    std::string key = g.spec ? g.spec->to_string() : "-";
    for (const std::string& a : g.unknown_shards) key += "|" + a;
    for (const std::string& a : g.unmasked_rows) key += "#" + a;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = infos_.find(key);
    if (it != infos_.end()) return it->second.get();
    auto owned = std::make_unique<ShardInfo>(
        ShardInfo{g.spec, g.unknown_shards, g.unmasked_rows});
    ShardRef ref = owned.get();
    infos_.emplace(std::move(key), std::move(owned));
    return ref;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<ShardInfo>> infos_;
};

ShardInterner& shard_interner() {
  static auto* i = new ShardInterner();  // never destroyed: outlives tensors
  return *i;
}

TypeInterner& interner() {
  static auto* i = new TypeInterner();  // never destroyed: outlives tensors
  return *i;
}

// ---------------------------------------------------------------------------
// The side table: TensorImpl* -> type. Each entry holds a weak reference to
// its TensorImpl; a weak reference keeps the impl's memory (not its storage)
// allocated, so an address cannot be reused by another tensor while its entry
// exists. Dead entries are reclaimed incrementally: every insertion also
// re-examines the two oldest entries of its shard (a round-robin queue) and
// drops them if their tensor died, so the table holds at most about twice the
// live typed tensors and dead impls are freed soon after their tensors (no
// leak over long runs, and little heap fragmentation from kept shells).
// Sharded to keep rank threads apart.

class SideTable {
 public:
  static constexpr std::size_t kShards = 16;
  static constexpr int kReclaimPerInsert = 2;

  // nullptr when untyped.
  TypeRef lookup(const c10::TensorImpl* impl) {
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(impl);
    return it == s.map.end() ? nullptr : it->second.type;
  }

  // nullptr when the tensor has no shard information.
  ShardRef lookup_shards(const c10::TensorImpl* impl) {
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(impl);
    return it == s.map.end() ? nullptr : it->second.shards;
  }

  void set(const at::Tensor& t, TypeRef type, ShardRef shards) {
    const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(impl);
    if (it != s.map.end()) {
      it->second.type = type;
      it->second.shards = shards;
      return;
    }
    s.map.emplace(
        impl,
        Entry{c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()),
              type, shards});
    s.queue.push_back(impl);
    for (int k = 0; k < kReclaimPerInsert && !s.queue.empty(); ++k) {
      const c10::TensorImpl* old = s.queue.front();
      s.queue.pop_front();
      auto e = s.map.find(old);
      if (e == s.map.end()) continue;  // cleared explicitly
      if (e->second.owner.expired()) {
        s.map.erase(e);
      } else {
        s.queue.push_back(old);
      }
    }
  }

  void erase(const c10::TensorImpl* impl) {
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    s.map.erase(impl);
  }

  std::size_t size() {
    std::size_t n = 0;
    for (Shard& s : shards_) {
      std::lock_guard<std::mutex> lock(s.mu);
      n += s.map.size();
    }
    return n;
  }

  // Drops every dead entry now.
  std::size_t sweep() {
    std::size_t n = 0;
    for (Shard& s : shards_) {
      std::lock_guard<std::mutex> lock(s.mu);
      std::deque<const c10::TensorImpl*> live;
      for (const c10::TensorImpl* impl : s.queue) {
        auto e = s.map.find(impl);
        if (e == s.map.end()) continue;
        if (e->second.owner.expired()) {
          s.map.erase(e);
        } else {
          live.push_back(impl);
        }
      }
      s.queue.swap(live);
      n += s.map.size();
    }
    return n;
  }

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::TensorImpl> owner;
    TypeRef type;
    ShardRef shards = nullptr;  // global SPMD only
  };
  struct Shard {
    std::mutex mu;
    ska::flat_hash_map<const c10::TensorImpl*, Entry> map;
    // Every key of `map` at least once, oldest first (may hold duplicates
    // and keys already erased; both are skipped).
    std::deque<const c10::TensorImpl*> queue;
  };

  Shard& shard(const c10::TensorImpl* impl) {
    auto bits = reinterpret_cast<std::uintptr_t>(impl);
    return shards_[(bits >> 6) % kShards];
  }

  std::array<Shard, kShards> shards_;
};

SideTable& table() {
  static auto* t =
      new SideTable();  // never destroyed: tensors may outlive main
  return *t;
}

}  // namespace

TypeRef intern(const TensorType& t) { return interner().intern(t); }

TypeRef type_of(const at::Tensor& t) {
  return t.defined() ? table().lookup(t.unsafeGetTensorImpl()) : nullptr;
}

void stamp(const at::Tensor& t, TypeRef type) {
  if (t.defined()) table().set(t, type, nullptr);
}

void stamp(const at::Tensor& t, TypeRef type, ShardRef shards) {
  if (t.defined()) table().set(t, type, shards);
}

ShardRef intern_shards(const core::GlobalType& g) {
  return shard_interner().intern(g);
}

void stamp_global(const at::Tensor& t, const core::GlobalType& g) {
  stamp(t, intern(g.local), intern_shards(g));
}

ShardRef shards_of(const at::Tensor& t) {
  return t.defined() ? table().lookup_shards(t.unsafeGetTensorImpl()) : nullptr;
}

std::optional<core::GlobalType> global_of(const at::Tensor& t) {
  TypeRef ty = type_of(t);
  if (ty == nullptr) return std::nullopt;
  core::GlobalType g;
  g.local = *ty;
  if (ShardRef s = shards_of(t)) {
    g.spec = s->spec;
    g.unknown_shards = s->unknown;
    g.unmasked_rows = s->unmasked;
  }
  return g;
}

void erase_type(const c10::TensorImpl* impl) { table().erase(impl); }
std::size_t store_size() { return table().size(); }
std::size_t sweep_store() { return table().sweep(); }

}  // namespace spmd::checker::internal
