// type_store.cpp - the runtime checker's type store: interned type maps and
// the side table that keeps them beside tensors (keyed by TensorImpl, swept
// when tensors die), and the storage index that finds a tensor's aliases.
#include <c10/util/SmallVector.h>
#include <c10/util/flat_hash_map.h>

#include <algorithm>
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
// The storage index: StorageImpl* -> the typed tensors viewing it (spec
// §6.11.1). It holds bare TensorImpl pointers and is kept in step with the
// side table (an entry leaves both together), so a pointer found here is
// only used through the side table's weak reference. Lock order: a side
// table shard, then this index.

class StorageIndex {
 public:
  void add(const c10::StorageImpl* st, const c10::TensorImpl* impl) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& v = map_[st];
    if (std::find(v.begin(), v.end(), impl) == v.end()) v.push_back(impl);
  }
  void remove(const c10::StorageImpl* st, const c10::TensorImpl* impl) {
    if (st == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(st);
    if (it == map_.end()) return;
    auto& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), impl), v.end());
    if (v.empty()) map_.erase(it);
  }
  c10::SmallVector<const c10::TensorImpl*, 4> get(const c10::StorageImpl* st) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(st);
    if (it == map_.end()) return {};
    return it->second;
  }

 private:
  std::mutex mu_;
  ska::flat_hash_map<const c10::StorageImpl*,
                     c10::SmallVector<const c10::TensorImpl*, 4>>
      map_;
};

StorageIndex& storage_index() {
  static auto* i = new StorageIndex();  // never destroyed: outlives tensors
  return *i;
}

// The storage a strided tensor views, or nullptr (no storage, sparse, ...).
const c10::StorageImpl* storage_of(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage() || t.layout() != c10::kStrided)
    return nullptr;
  return t.storage().unsafeGetStorageImpl();
}

// The bytes of its storage that `t` can reach: [first, last), empty when t
// has no elements.
std::pair<std::int64_t, std::int64_t> byte_span(const at::Tensor& t) {
  if (t.numel() == 0) return {0, 0};
  std::int64_t last = 1;
  for (std::int64_t d = 0; d < t.dim(); ++d)
    last += (t.size(d) - 1) * std::abs(t.stride(d));
  const std::int64_t item = static_cast<std::int64_t>(t.element_size());
  return {t.storage_offset() * item, (t.storage_offset() + last) * item};
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
    const c10::StorageImpl* st = storage_of(t);
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(impl);
    if (it != s.map.end()) {
      it->second.type = type;
      it->second.shards = shards;
      if (it->second.storage != st) {  // set_() moved it to another storage
        storage_index().remove(it->second.storage, impl);
        if (st != nullptr) storage_index().add(st, impl);
        it->second.storage = st;
      }
      return;
    }
    s.map.emplace(
        impl,
        Entry{c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()),
              type, shards, st});
    if (st != nullptr) storage_index().add(st, impl);
    s.queue.push_back(impl);
    for (int k = 0; k < kReclaimPerInsert && !s.queue.empty(); ++k) {
      const c10::TensorImpl* old = s.queue.front();
      s.queue.pop_front();
      auto e = s.map.find(old);
      if (e == s.map.end()) continue;  // cleared explicitly
      if (e->second.owner.expired()) {
        storage_index().remove(e->second.storage, old);
        s.map.erase(e);
      } else {
        s.queue.push_back(old);
      }
    }
  }

  void erase(const c10::TensorImpl* impl) {
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(impl);
    if (it == s.map.end()) return;
    storage_index().remove(it->second.storage, impl);
    s.map.erase(it);
  }

  // The live tensor whose entry is `impl`, or an undefined tensor.
  at::Tensor live(const c10::TensorImpl* impl) {
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(impl);
    if (it == s.map.end()) return at::Tensor();
    auto strong = it->second.owner.lock();
    if (!strong) return at::Tensor();
    return at::Tensor(std::move(strong));
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
          storage_index().remove(e->second.storage, impl);
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
    ShardRef shards = nullptr;                  // global SPMD only
    const c10::StorageImpl* storage = nullptr;  // key in the storage index
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

c10::SmallVector<at::Tensor, 4> typed_aliases(const at::Tensor& t) {
  c10::SmallVector<at::Tensor, 4> out;
  const c10::StorageImpl* st = storage_of(t);
  if (st == nullptr) return out;
  const auto [lo, hi] = byte_span(t);
  if (lo == hi) return out;
  for (const c10::TensorImpl* impl : storage_index().get(st)) {
    if (impl == t.unsafeGetTensorImpl()) continue;
    at::Tensor a = table().live(impl);
    if (!a.defined() || storage_of(a) != st) continue;
    const auto [alo, ahi] = byte_span(a);
    if (alo < hi && lo < ahi) out.push_back(std::move(a));
  }
  return out;
}
std::size_t store_size() { return table().size(); }
std::size_t sweep_store() { return table().sweep(); }

}  // namespace spmd::checker::internal
