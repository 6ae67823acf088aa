// torch_compat.h - the libtorch APIs whose shape changed between releases,
// behind small named adapters. The rest of the runtime calls these and never
// tests a torch version itself; a libtorch that moves one of them again
// changes torch_compat.cpp only.
//
// Supported: libtorch 2.x (built and tested with 2.13; the GPU check uses
// the accelerator machine's 2.11, the CUDA compile check 2.14). libtorch 1.13
// (Debian) was dropped: docs/runtime.md gives the reasons.
#ifndef SPMD_RUNTIME_TORCH_COMPAT_H
#define SPMD_RUNTIME_TORCH_COMPAT_H

#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKey.h>

#include <functional>
#include <optional>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace spmd::compat {

// --- dispatcher ------------------------------------------------------------

/// The dispatch key of the runtime checker's boxed fallback: a mode key above
/// Autograd (so composites such as aten::linear are seen before they
/// decompose) that no libtorch kernel uses. The one place it is named.
inline constexpr c10::DispatchKey kCheckerModeKey =
    c10::DispatchKey::TESTING_ONLY_GenericMode;

// --- c10d --------------------------------------------------------------------

/// What a collective implementation derives from: since torch 2.0 a
/// c10d::Backend, wrapped in the c10d::ProcessGroup that callers use (in 1.x
/// implementations were ProcessGroups themselves).
using CollectiveBackend = c10d::Backend;

/// The c10d::ProcessGroup that routes CPU and CUDA tensors to `backend`
/// (NCCL: CUDA only). `name` is the c10d backend name ("gloo", "nccl");
/// any other name (the fake backend) is registered as a custom backend.
c10::intrusive_ptr<c10d::ProcessGroup> wrap_backend(
    c10::intrusive_ptr<c10d::Backend> backend,
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const std::string& name);

/// Whether the runtime reduce-scatters a list of equally shaped pieces with
/// `pg`'s own reduce_scatter (NCCL, the fake backend); otherwise (Gloo,
/// whose reduce_scatter sends more messages) with an all-to-all and a local
/// sum.
bool has_native_reduce_scatter(const c10d::ProcessGroup& pg);

/// pg.all_to_all_single (torch >= 2.12) or pg.alltoall_base (its older name,
/// deprecated since): block k of `input` (dim 0, `input_splits` rows each,
/// equal blocks when empty) goes to rank k, `output` receives the blocks in
/// rank order.
c10::intrusive_ptr<c10d::Work> all_to_all_single(
    c10d::ProcessGroup& pg, at::Tensor& output, at::Tensor& input,
    std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits);

/// A c10d::Work that is complete and successful when constructed.
c10::intrusive_ptr<c10d::Work> completed_work();

// --- autograd ----------------------------------------------------------------

/// Stands in for Tensor::backward: receives the loss, the explicit gradient
/// if one was passed, and the backward pass itself, which it must run (or
/// throw instead).
using BackwardInterceptor = void (*)(const at::Tensor& loss,
                                     const std::optional<at::Tensor>& gradient,
                                     const std::function<void()>& run_pass);

/// Routes every Tensor::backward of the process through `interceptor` (the
/// first call installs it; later calls are ignored). Tensor::backward reaches
/// autograd through at::impl::VariableHooksInterface, not the dispatcher, so
/// this wraps the installed hooks and forwards everything else unchanged.
void intercept_backward(BackwardInterceptor interceptor);

/// Whether the calling thread is running an autograd backward pass (the
/// engine's graph task is set; worker threads included).
bool in_backward_pass();

}  // namespace spmd::compat

#endif  // SPMD_RUNTIME_TORCH_COMPAT_H
