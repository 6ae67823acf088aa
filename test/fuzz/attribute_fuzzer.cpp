//===- attribute_fuzzer.cpp - libFuzzer harness for [[spmd::...]] ---------===//
//
// The fuzzer's bytes are the argument text of the SPMD attributes: each input
// becomes one translation unit in which the text fills the argument list of
// [[spmd::type]], [[spmd::op]] and [[spmd::mesh]] in the places they apply to
// (function result, parameter, local, data member) and a few they do not.
// The unit runs through Clang with the analysis library (attribute parsing,
// then the checker), in process. Any crash, or a failure of LLVM's own
// checks, is a finding; diagnostics are the expected outcome.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <string>

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/FileManager.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "spmd/plugin/Checker.h"

#ifndef SPMD_ANNOTATIONS_INCLUDE
#error "SPMD_ANNOTATIONS_INCLUDE must name annotations/include"
#endif

namespace {

class Action : public clang::ASTFrontendAction {
  std::unique_ptr<clang::ASTConsumer> CreateASTConsumer(
      clang::CompilerInstance &, llvm::StringRef) override {
    spmd::plugin::Options Opts;
    Opts.Strict = true;
    return spmd::plugin::createSPMDCheckConsumer(Opts);
  }
};

/// Formats every diagnostic (the plugin's message arguments included) and
/// drops it: the output would drown libFuzzer's.
class FormatAndDrop : public clang::DiagnosticConsumer {
  void HandleDiagnostic(clang::DiagnosticsEngine::Level Level,
                        const clang::Diagnostic &Info) override {
    clang::DiagnosticConsumer::HandleDiagnostic(Level, Info);
    llvm::SmallString<256> Text;
    Info.FormatDiagnostic(Text);
  }
};

const char Prelude[] = R"(#include <spmd/annotations.h>
namespace at { class Tensor {
public:
  Tensor operator+(const Tensor&) const;
  Tensor relu() const;
}; }
using at::Tensor;
using namespace spmd::types;
SPMD_AXIS(dp);
SPMD_AXIS(tp);
Tensor opaque(const Tensor&);
)";

/// The sites, "@" standing for the fuzzed argument text.
const char *const Sites[] = {
    "[[spmd::type(@)]] Tensor result_site(const Tensor& x) { return x; }",
    "Tensor param_site([[spmd::type(@)]] const Tensor& x) { return x.relu(); }",
    "void local_site() { [[spmd::type(@)]] Tensor y = opaque(Tensor()); "
    "(void)(y + y); }",
    "struct MemberSite { [[spmd::type(@)]] Tensor m; };",
    "[[spmd::op(@)]] Tensor op_site(const Tensor& x);",
    "[[spmd::mesh(@)]] Tensor mesh_site(const Tensor& x) { return x + x; }",
    "[[spmd::type(@)]] int global_site;",
};

/// Text the preprocessor would act on, not the attribute parser: a new line
/// could start a directive (#include of any file), and _Pragma reaches
/// `clang __debug crash`, which crashes on purpose.
bool rejected(llvm::StringRef Text) {
  return Text.contains("_Pragma") || Text.contains("__debug") ||
         Text.contains('\0');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size > 4096) return -1;
  std::string Arg(reinterpret_cast<const char *>(Data), Size);
  if (rejected(Arg)) return -1;
  for (char &C : Arg)
    if (C == '\n' || C == '\r' || C == '\\') C = ' ';
  std::string Code = Prelude;
  for (llvm::StringRef Site : Sites) {
    auto [Before, After] = Site.split('@');
    Code += Before.str() + Arg + After.str() + "\n";
  }
  auto Memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  Memory->addFile("/fuzz/input.cpp", 0,
                  llvm::MemoryBuffer::getMemBufferCopy(Code));
  auto FS = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
      llvm::vfs::getRealFileSystem());
  FS->pushOverlay(Memory);
  llvm::IntrusiveRefCntPtr<clang::FileManager> Files(
      new clang::FileManager(clang::FileSystemOptions(), FS));
  // -ferror-limit=0: a broken site must not hide the sites after it.
  clang::tooling::ToolInvocation Invocation(
      {"clang++", "-std=c++20", "-fsyntax-only", "-ferror-limit=0",
       "-fno-caret-diagnostics", "-I" SPMD_ANNOTATIONS_INCLUDE,
       "/fuzz/input.cpp"},
      std::make_unique<Action>(), Files.get());
  FormatAndDrop Diagnostics;
  Invocation.setDiagnosticConsumer(&Diagnostics);
  Invocation.run();
  return 0;
}
