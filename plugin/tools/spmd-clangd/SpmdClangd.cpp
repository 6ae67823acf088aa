//===- SpmdClangd.cpp - clangd with SPMD diagnostics ----------------------===//
//
// spmd-clangd [--clangd=PATH] [--spmd-<plugin argument>...] [clangd args...]
//
// A language-server proxy: editors start it in place of clangd. It starts the
// real clangd, relays every LSP message between the two unchanged, and, for
// each opened or changed document, runs the SPMD analysis (the library the
// Clang plugin runs) on the editor's unsaved text with the file's compile
// command. Its diagnostics are merged into the textDocument/publishDiagnostics
// notifications clangd sends for that document, with related information
// for notes, a code description linking the rule's documentation, and
// quick-fix code actions for fix-its.
//
// Threads: the main thread reads the editor, one thread reads clangd, one
// worker runs analyses. Neither reader ever waits for an analysis; an edit
// cancels the analysis in flight (only the latest version is analysed); a
// result is shown only if the document still has the version it was
// computed for; a crash in the analysis is caught (CrashRecoveryContext) and
// logged. Messages that would stop clangd are answered here; the editor's
// "exit" never waits for clangd more than a moment.
//
//===----------------------------------------------------------------------===//

#include "../common/Analysis.h"
#include "../common/CompileCommands.h"
#include "../common/Diagnostics.h"
#include "../common/Rules.h"
#include "../common/Uri.h"
#include "Documents.h"
#include "Transport.h"

#include "spmd/plugin/Options.h"

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/thread.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace clang::tooling;
using namespace spmd::tools;
namespace json = llvm::json;

namespace {

std::mutex LogMutex;

/// Logs to stderr, which editors show as the language server's log (clangd
/// writes its own log there too).
void log(const llvm::Twine &Message) {
  std::lock_guard<std::mutex> Lock(LogMutex);
  llvm::errs() << "spmd-clangd: " << Message << "\n";
  llvm::errs().flush();
}

const char Usage[] = R"(spmd-clangd: clangd with SPMD type diagnostics.

USAGE: spmd-clangd [proxy options] [clangd options]

Proxy options (everything else is passed to clangd unchanged):
  --clangd=<path>          The clangd to run (default: clangd-19, then clangd,
                           on PATH).
  --spmd-strict            Plugin argument 'strict': also report unknown
                           types, opaque calls and, in global mode, lost
                           shard dims ('--spmd-strict-shards' is an alias).
  --spmd-no-strict-shards  Plugin argument 'no-strict-shards': with
                           --spmd-strict, do not report lost shard dims.
  --spmd-global            Plugin argument 'global': global mode, which
                           tracks the dim of every shard.
  --spmd-local-axes=<axis,...>
                           Plugin argument 'local-axes=<axis,...>': with
                           --spmd-global, keep these mesh axes local.
  --spmd-system-headers    Plugin argument 'system-headers'.
  --spmd-stats             Plugin argument 'stats': one line of analysis
                           statistics per check, in the log.
  --spmd-warn=<kind|all>   Plugin argument 'warn=<kind>'.
  --spmd-error=<kind|all>  Plugin argument 'error=<kind>'.
  --spmd-ignore=<kind|all> Plugin argument 'ignore=<kind>'.
  --spmd-no-preamble       Parse each document whole on every re-check
                           (default: reuse its precompiled #include block
                           when it holds no SPMD annotation).
  --spmd-help              This text.
clangd's --compile-commands-dir=<dir> is honoured by the analysis too.
)";

struct ProxyOptions {
  std::string ClangdPath;
  std::vector<std::string> ClangdArgs;
  /// Plugin arguments for the analysis (validated).
  std::vector<std::string> PluginArgs;
  std::string CompileCommandsDir;
  /// Reuse each document's precompiled preamble (--spmd-no-preamble: off).
  bool UsePreamble = true;
  /// Testing only: a document containing this text crashes the analysis,
  /// to check that the crash is contained.
  std::string CrashMarker;
};

/// The SPMD part of a document's diagnostics.
struct SpmdResult {
  int64_t Version = -1; ///< the document version analysed; -1: none yet
  bool Crashed = false;
  /// Stopped because the document changed (or closed, or the editor left):
  /// nothing to show.
  bool Cancelled = false;
  json::Array Diagnostics;
  /// Quick fixes: CodeAction objects, each for one of Diagnostics.
  std::vector<json::Object> Actions;
};

/// The unsaved text of open documents: (path, text).
using OverlayList = std::vector<std::pair<std::string, std::string>>;

struct Document {
  std::string Path;
  int64_t Version = 0;
  std::string Text;
  /// The params of clangd's latest publishDiagnostics for the document.
  std::optional<json::Object> ServerParams;
  SpmdResult Spmd;
  /// The version of the latest publishDiagnostics sent to the editor: the
  /// versions it sees never go back.
  std::optional<int64_t> PublishedVersion;
};

/// Whether LSP positions a <= b.
bool lessEq(const json::Object &A, const json::Object &B) {
  int64_t AL = A.getInteger("line").value_or(0);
  int64_t BL = B.getInteger("line").value_or(0);
  return AL < BL || (AL == BL && A.getInteger("character").value_or(0) <=
                                     B.getInteger("character").value_or(0));
}

/// Whether two LSP ranges touch or overlap.
bool intersects(const json::Object &A, const json::Object &B) {
  const json::Object *AS = A.getObject("start"), *AE = A.getObject("end");
  const json::Object *BS = B.getObject("start"), *BE = B.getObject("end");
  if (!AS || !AE || !BS || !BE)
    return false;
  return lessEq(*AS, *BE) && lessEq(*BS, *AE);
}

std::string idKey(const json::Value &Id) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  OS << Id;
  return OS.str();
}

class Proxy {
public:
  Proxy(ProxyOptions Opts, int ToServerFD, int FromServerFD)
      : Opts(std::move(Opts)), ToClient(STDOUT_FILENO), ToServer(ToServerFD),
        FromServer(FromServerFD),
        Commands(this->Opts.CompileCommandsDir,
                 [](const llvm::Twine &Message) { log(Message); }) {}

  /// Relays editor -> clangd until end of input or the exit notification.
  void clientLoop();
  /// Relays clangd -> editor until clangd closes its output.
  void serverLoop();
  /// Runs analyses until stop().
  void workerLoop();
  void stop() {
    std::lock_guard<std::mutex> Lock(Mutex);
    Stopping = true;
    CancelCurrent = true; // abandon the analysis in flight
    Wake.notify_all();
  }
  void closeServerInput() { ToServer.close(); }
  /// Whether the editor sent "exit" or closed its end (set before "exit" is
  /// relayed, so clangd's exit that follows is never taken for a crash).
  bool clientFinished() const { return ClientFinished; }
  /// Whether the editor sent "shutdown" (then "exit" means status 0).
  bool shutdownRequested() const { return ShutdownRequested; }

private:
  void observeClientMessage(json::Object &Message);
  /// Returns the message to send to the editor for a message from clangd
  /// (itself, or with SPMD diagnostics / code actions merged).
  std::optional<json::Object> rewriteServerMessage(json::Object &Message);
  void enqueue(llvm::StringRef Uri);
  json::Object publishMessage(llvm::StringRef Uri, Document &D);
  /// Cancels the analysis in flight if it is of \p Uri (under Mutex).
  void cancelIfCurrent(llvm::StringRef Uri);
  /// Analyses one document as the editor has it: the text in \p Snapshot
  /// and, for the files it includes, the unsaved text in \p Overlays.
  SpmdResult analyse(llvm::StringRef Uri, const Document &Snapshot,
                     PreambleCache *Preamble, const OverlayList &Overlays);
  /// Runs the analysis under crash recovery; false (R marked cancelled or
  /// crashed) when it did not finish.
  bool runSafely(const Document &Snapshot, PreambleCache *Preamble,
                 const OverlayList &Overlays, std::vector<Diag> &Diags,
                 AnalysisTiming &Timing, SpmdResult &R);
  /// One analysis diagnostic as an LSP Diagnostic; its quick fixes are
  /// appended to \p Actions.
  json::Object toLspDiagnostic(const Diag &D, llvm::StringRef Uri,
                               const Document &Snapshot,
                               const OverlayList &Overlays,
                               std::vector<json::Object> &Actions) const;
  /// An LSP Location in \p File (the document or a file it includes).
  json::Object lspLocation(const std::string &File, const Range &At,
                           llvm::StringRef Uri, const Document &Snapshot,
                           const OverlayList &Overlays) const;
  /// A "quickfix" CodeAction applying \p Fixes.
  json::Object quickFix(const std::string &Title,
                        const std::vector<FixIt> &Fixes, bool Preferred,
                        llvm::StringRef Uri, const Document &Snapshot) const;
  /// The LSP range of [Begin, End). A point (\p End invalid or equal to
  /// \p Begin) covers the identifier there, as clangd does for diagnostics,
  /// unless \p Exact: a fix-it's insertion stays an empty range.
  json::Value toLspRange(const Position &Begin, const Position &End,
                         llvm::StringRef Text, bool Exact = false) const;
  void logToClient(int Type, const llvm::Twine &Message);
  /// Answers an invalid message from the editor with "invalid request"
  /// (id null) instead of relaying it.
  void rejectClientMessage(const llvm::Twine &What);
  /// Keeps \p O, a JSON-RPC object of the wrong shape (\p Problem), from
  /// clangd: a message with an id is answered -32600 Invalid Request with
  /// that id (null when the id itself is bad), a notification is dropped.
  void rejectInvalid(const json::Object &O, llvm::StringRef Problem);

  ProxyOptions Opts;
  std::atomic<bool> ClientFinished{false};
  std::atomic<bool> ShutdownRequested{false};
  /// Set to stop the analysis in flight: its document changed or closed, or
  /// the editor is leaving. Reset by the worker when it starts the next one.
  std::atomic<bool> CancelCurrent{false};
  MessageWriter ToClient, ToServer;
  MessageReader FromServer;
  CommandLookup Commands;

  /// Guards everything below. Writes of merged diagnostics happen under it
  /// too, so the editor sees them in the order they were computed.
  std::mutex Mutex;
  std::condition_variable Wake;
  bool Stopping = false;
  OffsetEncoding Encoding = OffsetEncoding::UTF16;
  bool InlineCodeActions = false;
  std::optional<std::string> InitializeId;
  llvm::StringMap<Document> Docs;
  /// The document being analysed, or empty.
  std::string CurrentUri;
  std::deque<std::string> Queue;
  llvm::StringSet<> Queued;
  /// Open textDocument/codeAction requests: id -> params.
  std::map<std::string, json::Object> CodeActionRequests;
};

void Proxy::logToClient(int Type, const llvm::Twine &Message) {
  log(Message);
  json::Object Note{
      {"jsonrpc", "2.0"},
      {"method", "window/logMessage"},
      {"params", json::Object{{"type", Type},
                              {"message", ("spmd-clangd: " + Message).str()}}}};
  ToClient.write(llvm::formatv("{0}", json::Value(std::move(Note))).str());
}

void Proxy::cancelIfCurrent(llvm::StringRef Uri) {
  if (!CurrentUri.empty() && CurrentUri == Uri)
    CancelCurrent = true;
}

void Proxy::enqueue(llvm::StringRef Uri) {
  if (Queued.insert(Uri).second)
    Queue.push_back(Uri.str());
  Wake.notify_one();
}

void Proxy::observeClientMessage(json::Object &Message) {
  std::optional<llvm::StringRef> Method = Message.getString("method");
  if (!Method)
    return;
  json::Object *Params = Message.getObject("params");
  std::lock_guard<std::mutex> Lock(Mutex);
  if (*Method == "shutdown") {
    // No result will be shown any more: stop analysing.
    ShutdownRequested = true;
    Stopping = true;
    CancelCurrent = true;
    Wake.notify_all();
    return;
  }
  if (*Method == "$/cancelRequest") {
    // clangd answers the request (with RequestCancelled or its result); the
    // answer is relayed as is.
    if (const json::Value *Id = Params ? Params->get("id") : nullptr)
      CodeActionRequests.erase(idKey(*Id));
    return;
  }
  if (*Method == "initialize") {
    if (const json::Value *Id = Message.get("id"))
      InitializeId = idKey(*Id);
    if (Params)
      if (const json::Object *Caps = Params->getObject("capabilities"))
        if (const json::Object *TD = Caps->getObject("textDocument"))
          if (const json::Object *PD = TD->getObject("publishDiagnostics"))
            InlineCodeActions =
                PD->getBoolean("codeActionsInline").value_or(false);
    return;
  }
  if (!Params)
    return;
  const json::Object *TD = Params->getObject("textDocument");
  std::optional<llvm::StringRef> Uri = TD ? TD->getString("uri") : std::nullopt;
  if (!Uri)
    return;
  if (*Method == "textDocument/didOpen") {
    std::optional<std::string> Path = uriToPath(*Uri);
    std::optional<llvm::StringRef> Text = TD->getString("text");
    if (!Path || !Text)
      return;
    cancelIfCurrent(*Uri);
    Document &D = Docs[*Uri];
    D = Document();
    D.Path = *Path;
    D.Version = TD->getInteger("version").value_or(0);
    D.Text = Text->str();
    enqueue(*Uri);
  } else if (*Method == "textDocument/didChange") {
    auto It = Docs.find(*Uri);
    const json::Array *Changes = Params->getArray("contentChanges");
    if (It == Docs.end() || !Changes)
      return;
    Document &D = It->second;
    for (const json::Value &C : *Changes) {
      std::string Err = "a content change that is not an object";
      if (!C.getAsObject() ||
          !applyContentChange(D.Text, *C.getAsObject(), Encoding, Err))
        log("ignoring a bad change of " + *Uri + ": " + Err);
    }
    D.Version = TD->getInteger("version").value_or(D.Version + 1);
    // Only the latest version is analysed: stop the one in flight.
    cancelIfCurrent(*Uri);
    enqueue(*Uri);
  } else if (*Method == "textDocument/didClose") {
    cancelIfCurrent(*Uri);
    Docs.erase(*Uri);
  } else if (*Method == "textDocument/codeAction") {
    if (const json::Value *Id = Message.get("id"))
      CodeActionRequests[idKey(*Id)] = *Params;
  }
}

json::Object Proxy::publishMessage(llvm::StringRef Uri, Document &D) {
  json::Object Params =
      D.ServerParams ? *D.ServerParams
                     : json::Object{{"uri", Uri.str()}, {"version", D.Version}};
  json::Array Diags;
  if (const json::Array *Server = Params.getArray("diagnostics"))
    Diags = *Server;
  // Stale SPMD results (for an older version of the text) are never shown.
  std::optional<int64_t> Version = Params.getInteger("version");
  if (D.Spmd.Version == D.Version) {
    for (const json::Value &V : D.Spmd.Diagnostics)
      Diags.push_back(V);
    Version = std::max(Version.value_or(D.Version), D.Version);
  }
  // clangd's diagnostics for version N can come after SPMD ones published
  // for N+1: the version an editor sees never goes back.
  if (Version) {
    if (D.PublishedVersion)
      Version = std::max(*Version, *D.PublishedVersion);
    Params["version"] = *Version;
    D.PublishedVersion = Version;
  }
  Params["diagnostics"] = std::move(Diags);
  return json::Object{{"jsonrpc", "2.0"},
                      {"method", "textDocument/publishDiagnostics"},
                      {"params", std::move(Params)}};
}

std::optional<json::Object> Proxy::rewriteServerMessage(json::Object &Message) {
  std::optional<llvm::StringRef> Method = Message.getString("method");
  const json::Value *Id = Message.get("id");
  std::lock_guard<std::mutex> Lock(Mutex);
  if (!Method && Id) { // a response to the editor's request
    std::string Key = idKey(*Id);
    if (InitializeId && Key == *InitializeId) {
      InitializeId.reset();
      if (const json::Object *Result = Message.getObject("result")) {
        std::optional<llvm::StringRef> Enc =
            Result->getString("offsetEncoding");
        if (const json::Object *Caps = Result->getObject("capabilities"))
          if (auto PE = Caps->getString("positionEncoding"))
            Enc = PE;
        if (Enc)
          if (auto E = parseOffsetEncoding(*Enc))
            Encoding = *E;
      }
      return std::nullopt;
    }
    auto Req = CodeActionRequests.find(Key);
    if (Req == CodeActionRequests.end())
      return std::nullopt;
    json::Object Params = std::move(Req->second);
    CodeActionRequests.erase(Req);
    const json::Object *TD = Params.getObject("textDocument");
    const json::Object *Range = Params.getObject("range");
    auto Uri = TD ? TD->getString("uri") : std::nullopt;
    auto Doc = Uri ? Docs.find(*Uri) : Docs.end();
    if (!Range || Doc == Docs.end() ||
        Doc->second.Spmd.Version != Doc->second.Version ||
        Doc->second.Spmd.Actions.empty())
      return std::nullopt;
    if (const json::Object *Ctx = Params.getObject("context"))
      if (const json::Array *Only = Ctx->getArray("only")) {
        bool Quickfix = false;
        for (const json::Value &K : *Only)
          if (auto S = K.getAsString())
            Quickfix |= *S == "quickfix";
        if (!Quickfix)
          return std::nullopt;
      }
    json::Value *Result = Message.get("result");
    if (!Result ||
        (!Result->getAsArray() && Result->kind() != json::Value::Null))
      return std::nullopt;
    json::Array Actions;
    if (json::Array *A = Result->getAsArray())
      Actions = std::move(*A);
    for (const json::Object &Action : Doc->second.Spmd.Actions) {
      const json::Array *ForDiags = Action.getArray("diagnostics");
      const json::Object *DiagRange =
          ForDiags && !ForDiags->empty() && (*ForDiags)[0].getAsObject()
              ? (*ForDiags)[0].getAsObject()->getObject("range")
              : nullptr;
      if (DiagRange && intersects(*DiagRange, *Range))
        Actions.push_back(json::Object(Action));
    }
    *Result = std::move(Actions);
    return std::move(Message);
  }
  if (Method && *Method == "textDocument/publishDiagnostics") {
    json::Object *Params = Message.getObject("params");
    auto Uri = Params ? Params->getString("uri") : std::nullopt;
    auto Doc = Uri ? Docs.find(*Uri) : Docs.end();
    if (Doc == Docs.end())
      return std::nullopt;
    Doc->second.ServerParams = *Params;
    return publishMessage(*Uri, Doc->second);
  }
  return std::nullopt;
}

/// Messages nested deeper than this are relayed without being parsed (LSP
/// messages nest a dozen levels; llvm::json::parse recurses per level).
constexpr unsigned MaxJsonDepth = 1000;

void Proxy::rejectClientMessage(const llvm::Twine &What) {
  logToClient(2, "dropped " + What + " from the editor");
  // JSON-RPC's answer to an invalid request whose id cannot be known.
  json::Object Error{{"code", -32600},
                     {"message", ("invalid request: " + What).str()}};
  ToClient.write(llvm::formatv("{0}", json::Value(json::Object{
                                          {"jsonrpc", "2.0"},
                                          {"id", nullptr},
                                          {"error", std::move(Error)}}))
                     .str());
}

/// What makes \p O, a JSON-RPC 2.0 object from the editor, no valid request,
/// notification or response (clangd stops on some of these, e.g. a numeric
/// "method"), or nullopt.
static std::optional<std::string> invalidMessage(const json::Object &O) {
  const json::Value *Id = O.get("id");
  if (Id && !Id->getAsString() && !Id->getAsNumber() &&
      Id->kind() != json::Value::Null)
    return std::string("\"id\" is not a string, a number or null");
  if (const json::Value *Method = O.get("method")) {
    if (!Method->getAsString())
      return std::string("\"method\" is not a string");
    const json::Value *Params = O.get("params");
    // null is taken too: editors send it for shutdown and exit.
    if (Params && !Params->getAsObject() && !Params->getAsArray() &&
        Params->kind() != json::Value::Null)
      return std::string("\"params\" is neither an object nor an array");
    return std::nullopt;
  }
  // A response to a request of clangd's.
  bool Result = O.get("result"), Error = O.get("error");
  if (!Result && !Error)
    return std::string("neither a \"method\" nor a \"result\" or \"error\"");
  if (Result && Error)
    return std::string("both a \"result\" and an \"error\"");
  if (!Id)
    return std::string("a response without an \"id\"");
  return std::nullopt;
}

void Proxy::rejectInvalid(const json::Object &O, llvm::StringRef Problem) {
  const json::Value *Id = O.get("id");
  bool UsableId = Id && (Id->getAsString() || Id->getAsNumber());
  if (!Id) {
    // A notification: nobody waits for an answer.
    logToClient(2, "dropped an invalid message from the editor: " + Problem);
    return;
  }
  logToClient(2, "answered an invalid request from the editor: " + Problem);
  json::Object Error{{"code", -32600},
                     {"message", ("invalid request: " + Problem).str()}};
  ToClient.write(
      llvm::formatv("{0}", json::Value(json::Object{
                               {"jsonrpc", "2.0"},
                               {"id", UsableId ? *Id : json::Value(nullptr)},
                               {"error", std::move(Error)}}))
          .str());
}

void Proxy::clientLoop() {
  MessageReader FromClient(STDIN_FILENO);
  std::string Body, Err;
  while (true) {
    MessageReader::Result Got = FromClient.read(Body, Err);
    if (Got == MessageReader::Result::End)
      break;
    if (Got == MessageReader::Result::Malformed) {
      // Nothing to relay: the message's extent is unknown. Go on with the
      // next one, as clangd does.
      logToClient(2, "skipped a malformed message from the editor: " + Err);
      continue;
    }
    bool Exit = false;
    if (jsonNestsDeeperThan(Body, MaxJsonDepth)) {
      // No LSP message nests so deep; parsing it would exhaust the stack
      // (ours, and clangd's at a few tens of thousands of levels).
      rejectClientMessage("a message nested more than " +
                          llvm::Twine(MaxJsonDepth) + " levels deep");
      continue;
    } else if (llvm::Expected<json::Value> V = json::parse(Body); !V) {
      log("editor sent a message that is not JSON (relayed as is): " +
          llvm::toString(V.takeError()));
    } else if (json::Object *O = V->getAsObject();
               !O || O->getString("jsonrpc") != llvm::StringRef("2.0")) {
      // clangd stops on such a message (a batch array, a number, an object
      // without "jsonrpc": "2.0").
      rejectClientMessage("a message that is not a JSON-RPC 2.0 object");
      continue;
    } else if (std::optional<std::string> Problem = invalidMessage(*O)) {
      rejectInvalid(*O, *Problem);
      continue;
    } else {
      // Observe before relaying, so that a quick answer from clangd (e.g.
      // to codeAction) finds its request recorded.
      observeClientMessage(*O);
      Exit = O->getString("method") == llvm::StringRef("exit");
    }
    if (Exit)
      ClientFinished = true;
    if (!ToServer.write(Body))
      log("cannot write to clangd (has it exited?)");
    if (Exit)
      return;
  }
  ClientFinished = true;
}

void Proxy::serverLoop() {
  std::string Body, Err;
  while (true) {
    MessageReader::Result Got = FromServer.read(Body, Err);
    if (Got == MessageReader::Result::End)
      break;
    if (Got == MessageReader::Result::Malformed) {
      log("skipped a malformed message from clangd: " + Err);
      continue;
    }
    std::optional<json::Object> Rewritten;
    if (!jsonNestsDeeperThan(Body, MaxJsonDepth)) {
      llvm::Expected<json::Value> V = json::parse(Body);
      if (!V)
        llvm::consumeError(V.takeError());
      else if (json::Object *O = V->getAsObject())
        Rewritten = rewriteServerMessage(*O);
    }
    if (!Rewritten) {
      ToClient.write(Body);
      continue;
    }
    // Merged publishDiagnostics are written under the lock, in order with
    // the worker's.
    std::lock_guard<std::mutex> Lock(Mutex);
    ToClient.write(
        llvm::formatv("{0}", json::Value(std::move(*Rewritten))).str());
  }
}

json::Value Proxy::toLspRange(const Position &Begin, const Position &End,
                              llvm::StringRef Text, bool Exact) const {
  auto Pos = [&](const Position &P, int64_t Extra) {
    return json::Object{{"line", static_cast<int64_t>(P.Line) - 1},
                        {"character", characterOf(P, Encoding) + Extra}};
  };
  if (End.isValid() && (End.Line != Begin.Line || End.Column != Begin.Column))
    return json::Object{{"start", Pos(Begin, 0)}, {"end", Pos(End, 0)}};
  if (Exact)
    return json::Object{{"start", Pos(Begin, 0)}, {"end", Pos(Begin, 0)}};
  // A point: cover the identifier (or character) there, as clangd does.
  size_t Off =
      offsetOf(Text, Begin.Line - 1, Begin.Column - 1, OffsetEncoding::UTF8);
  int64_t Len = 0;
  while (Off + Len < Text.size() &&
         (llvm::isAlnum(Text[Off + Len]) || Text[Off + Len] == '_'))
    ++Len;
  if (Len == 0 && Off < Text.size() && Text[Off] != '\n' &&
      static_cast<unsigned char>(Text[Off]) < 0x80)
    Len = 1;
  return json::Object{{"start", Pos(Begin, 0)}, {"end", Pos(Begin, Len)}};
}

/// The disk, with the editor's unsaved text (of every open document) over it.
static llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>
overlayFileSystem(const OverlayList &Overlays) {
  auto Memory = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  for (const auto &[Path, Text] : Overlays)
    Memory->addFile(Path, 0, llvm::MemoryBuffer::getMemBufferCopy(Text, Path));
  auto FS = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
      llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(
          llvm::vfs::createPhysicalFileSystem().release()));
  FS->pushOverlay(Memory);
  return FS;
}

/// The range a diagnostic points at: its range on its line, else its point.
static Range rangeAt(const Diag &D) {
  for (const Range &Rg : D.Ranges)
    if (Rg.Begin.Line == D.Loc.Line && Rg.Begin.Column <= D.Loc.Column)
      return Rg;
  return Range{D.Loc, D.Loc};
}

bool Proxy::runSafely(const Document &Snapshot, PreambleCache *Preamble,
                      const OverlayList &Overlays, std::vector<Diag> &Diags,
                      AnalysisTiming &Timing, SpmdResult &R) {
  CompileCommand Command = Commands.get(Snapshot.Path);
  auto FS = overlayFileSystem(Overlays);
  DiagnosticCollector Collector(Diags);
  llvm::CrashRecoveryContext CRC;
  bool Finished = CRC.RunSafely([&] {
    if (!Opts.CrashMarker.empty() &&
        llvm::StringRef(Snapshot.Text).contains(Opts.CrashMarker))
      LLVM_BUILTIN_TRAP;
    runAnalysis(Command, Opts.PluginArgs, FS, Collector, &Timing,
                /*FilesRead=*/nullptr, Preamble, &CancelCurrent);
  });
  if (Finished && Timing.Cancelled) {
    log(llvm::formatv("cancelled {0} (version {1}) after {2:f1} ms: "
                      "superseded",
                      Snapshot.Path, Snapshot.Version, Timing.TotalMs)
            .str());
    R.Cancelled = true;
    return false;
  }
  if (!Finished) {
    logToClient(1, llvm::formatv("the SPMD analysis crashed on {0} (version "
                                 "{1}); clangd's diagnostics are unaffected",
                                 Snapshot.Path, Snapshot.Version)
                       .str());
    R.Crashed = true;
    return false;
  }
  return true;
}

json::Object Proxy::lspLocation(const std::string &File, const Range &At,
                                llvm::StringRef Uri, const Document &Snapshot,
                                const OverlayList &Overlays) const {
  bool Main = File == Snapshot.Path;
  std::string FileText;
  if (!Main)
    for (const auto &[Path, Text] : Overlays)
      if (Path == File)
        FileText = Text;
  return json::Object{
      {"uri", Main ? Uri.str() : fileUri(File)},
      {"range", toLspRange(At.Begin, At.End, Main ? Snapshot.Text : FileText)}};
}

json::Object Proxy::quickFix(const std::string &Title,
                             const std::vector<FixIt> &Fixes, bool Preferred,
                             llvm::StringRef Uri,
                             const Document &Snapshot) const {
  std::map<std::string, json::Array> Edits;
  for (const FixIt &F : Fixes) {
    bool Main = F.File == Snapshot.Path;
    Edits[Main ? Uri.str() : fileUri(F.File)].push_back(json::Object{
        {"range", toLspRange(F.Where.Begin, F.Where.End, Snapshot.Text,
                             /*Exact=*/true)},
        {"newText", F.Replacement}});
  }
  json::Object Changes;
  for (auto &[U, E] : Edits)
    Changes[U] = std::move(E);
  return json::Object{{"title", Title},
                      {"kind", "quickfix"},
                      {"isPreferred", Preferred},
                      {"edit", json::Object{{"changes", std::move(Changes)}}}};
}

json::Object Proxy::toLspDiagnostic(const Diag &D, llvm::StringRef Uri,
                                    const Document &Snapshot,
                                    const OverlayList &Overlays,
                                    std::vector<json::Object> &Actions) const {
  // LSP severities of Note, Remark, Warning, Error, Fatal.
  static const int Severity[] = {3, 3, 2, 1, 1};
  bool InMain = D.InMainFile;
  Range At = InMain ? rangeAt(D) : Range{D.MainFileLoc, D.MainFileLoc};
  json::Object L{
      {"range", toLspRange(At.Begin, At.End, Snapshot.Text)},
      {"severity", Severity[static_cast<int>(D.Severity)]},
      {"source", "spmd-check"},
      {"message", InMain ? D.Message : "In included file: " + D.Message}};
  llvm::StringRef Kind = D.Rule;
  Kind.consume_front("spmd:");
  L["code"] = Kind.str();
  L["codeDescription"] = json::Object{{"href", ruleHelpUri(D.Rule)}};
  json::Array Related;
  if (!InMain)
    Related.push_back(json::Object{
        {"location", lspLocation(D.File, rangeAt(D), Uri, Snapshot, Overlays)},
        {"message", D.Message}});
  for (const Diag &N : D.Notes)
    if (!N.File.empty())
      Related.push_back(
          json::Object{{"location", lspLocation(N.File, rangeAt(N), Uri,
                                                Snapshot, Overlays)},
                       {"message", N.Message}});
  if (!Related.empty())
    L["relatedInformation"] = std::move(Related);

  // One quick fix per diagnostic or note carrying fix-its.
  std::vector<json::Object> Own;
  if (!D.FixIts.empty())
    Own.push_back(quickFix("Fix: " + D.Message, D.FixIts, true, Uri, Snapshot));
  for (const Diag &N : D.Notes)
    if (!N.FixIts.empty())
      Own.push_back(
          quickFix(N.Message, N.FixIts, D.FixIts.empty(), Uri, Snapshot));
  json::Array Inline;
  for (json::Object &A : Own) {
    A["diagnostics"] = json::Array{json::Object(L)};
    if (InlineCodeActions)
      Inline.push_back(json::Object(A));
    Actions.push_back(std::move(A));
  }
  if (InlineCodeActions && !Inline.empty())
    L["codeActions"] = std::move(Inline);
  return L;
}

SpmdResult Proxy::analyse(llvm::StringRef Uri, const Document &Snapshot,
                          PreambleCache *Preamble,
                          const OverlayList &Overlays) {
  SpmdResult R;
  R.Version = Snapshot.Version;
  std::vector<Diag> Diags;
  AnalysisTiming Timing;
  if (!runSafely(Snapshot, Preamble, Overlays, Diags, Timing, R))
    return R;
  for (const Diag &D : Diags) {
    // clangd reports the compiler's own errors already.
    if (D.Rule == "clang-diagnostic-error" || D.File.empty())
      continue;
    if (!D.InMainFile && !D.MainFileLoc.isValid())
      continue;
    R.Diagnostics.push_back(
        toLspDiagnostic(D, Uri, Snapshot, Overlays, R.Actions));
  }
  const char *PreambleUse[] = {"none", "built", "reused"};
  log(llvm::formatv("checked {0} (version {1}): {2} SPMD diagnostic(s); "
                    "analysis {3:f1} ms, frontend total {4:f1} ms "
                    "(cpu {5:f1} ms); preamble {6}",
                    Snapshot.Path, Snapshot.Version, R.Diagnostics.size(),
                    Timing.AnalysisMs, Timing.TotalMs, Timing.TotalCpuMs,
                    PreambleUse[static_cast<int>(Timing.Preamble)])
          .str());
  return R;
}

void Proxy::workerLoop() {
  // Only this thread touches the preambles, keyed by path.
  std::map<std::string, std::unique_ptr<PreambleCache>> Preambles;
  while (true) {
    std::string Uri;
    Document Snapshot;
    OverlayList Overlays;
    {
      std::unique_lock<std::mutex> Lock(Mutex);
      Wake.wait(Lock, [&] { return Stopping || !Queue.empty(); });
      if (Stopping)
        return;
      Uri = std::move(Queue.front());
      Queue.pop_front();
      Queued.erase(Uri);
      auto It = Docs.find(Uri);
      if (It == Docs.end())
        continue;
      // Edits from here on cancel this run (they also queue the next).
      CurrentUri = Uri;
      CancelCurrent = false;
      Snapshot.Path = It->second.Path;
      Snapshot.Version = It->second.Version;
      Snapshot.Text = It->second.Text;
      for (const auto &E : Docs)
        Overlays.push_back({E.second.Path, E.second.Text});
    }
    // Said before the work starts, so a client (or a test) knows which
    // version an edit arriving now will cancel.
    log(llvm::formatv("analysing {0}, version {1}", Snapshot.Path,
                      Snapshot.Version)
            .str());
    // Forget the preambles of closed documents.
    for (auto P = Preambles.begin(); P != Preambles.end();)
      P = llvm::any_of(Overlays,
                       [&](const auto &O) { return O.first == P->first; })
              ? std::next(P)
              : Preambles.erase(P);
    PreambleCache *Preamble = nullptr;
    if (Opts.UsePreamble) {
      std::unique_ptr<PreambleCache> &C = Preambles[Snapshot.Path];
      if (!C)
        C = std::make_unique<PreambleCache>();
      Preamble = C.get();
    }
    SpmdResult Result = analyse(Uri, Snapshot, Preamble, Overlays);
    if (Result.Crashed)
      Preambles.erase(Snapshot.Path); // its state is unknown after a crash
    std::lock_guard<std::mutex> Lock(Mutex);
    CurrentUri.clear();
    auto It = Docs.find(Uri);
    if (Result.Cancelled || It == Docs.end() ||
        It->second.Version != Result.Version)
      continue; // edited (or closed) meanwhile: a newer run is queued
    It->second.Spmd = std::move(Result);
    ToClient.write(
        llvm::formatv("{0}", json::Value(publishMessage(Uri, It->second)))
            .str());
  }
}

std::optional<std::string> findClangd(llvm::StringRef Self) {
  for (llvm::StringRef Name : {"clangd-19", "clangd"}) {
    llvm::ErrorOr<std::string> P = llvm::sys::findProgramByName(Name);
    if (!P)
      continue;
    // Do not start ourselves when spmd-clangd is installed as "clangd".
    llvm::SmallString<256> Real, SelfReal;
    if (!llvm::sys::fs::real_path(*P, Real) &&
        !llvm::sys::fs::real_path(Self, SelfReal) && Real == SelfReal)
      continue;
    return *P;
  }
  return std::nullopt;
}

/// Starts clangd with pipes for stdin and stdout (stderr is shared).
bool spawnClangd(const ProxyOptions &Opts, pid_t &Pid, int &ToFD, int &FromFD) {
  int In[2], Out[2];
  if (pipe2(In, O_CLOEXEC) || pipe2(Out, O_CLOEXEC))
    return false;
  posix_spawn_file_actions_t Actions;
  posix_spawn_file_actions_init(&Actions);
  posix_spawn_file_actions_adddup2(&Actions, In[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&Actions, Out[1], STDOUT_FILENO);
  posix_spawnattr_t Attr;
  posix_spawnattr_init(&Attr);
  sigset_t Empty;
  sigemptyset(&Empty);
  posix_spawnattr_setsigmask(&Attr, &Empty);
  posix_spawnattr_setflags(&Attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char *> Argv;
  Argv.push_back(const_cast<char *>(Opts.ClangdPath.c_str()));
  for (const std::string &A : Opts.ClangdArgs)
    Argv.push_back(const_cast<char *>(A.c_str()));
  Argv.push_back(nullptr);
  int Err = posix_spawn(&Pid, Opts.ClangdPath.c_str(), &Actions, &Attr,
                        Argv.data(), environ);
  posix_spawn_file_actions_destroy(&Actions);
  posix_spawnattr_destroy(&Attr);
  close(In[0]);
  close(Out[1]);
  if (Err) {
    close(In[1]);
    close(Out[0]);
    errno = Err;
    return false;
  }
  ToFD = In[1];
  FromFD = Out[0];
  return true;
}

/// Reads the proxy's own options; everything else is for clangd. Returns an
/// exit status when the program should stop here (--spmd-help, an error).
std::optional<int> parseProxyOptions(int argc, char **argv,
                                     ProxyOptions &Opts) {
  std::vector<std::string> PluginArgs;
  for (int I = 1; I < argc; ++I) {
    llvm::StringRef A = argv[I];
    if (A.consume_front("--clangd=")) {
      Opts.ClangdPath = A.str();
    } else if (A == "--spmd-help") {
      llvm::outs() << Usage;
      return 0;
    } else if (A == "--spmd-no-preamble") {
      Opts.UsePreamble = false;
    } else if (A.consume_front("--spmd-test-crash-marker=")) {
      Opts.CrashMarker = A.str();
    } else if (A.consume_front("--spmd-")) {
      PluginArgs.push_back(A.str());
    } else {
      if (A.consume_front("--compile-commands-dir="))
        Opts.CompileCommandsDir = A.str();
      Opts.ClangdArgs.push_back(argv[I]);
    }
  }
  std::string Err;
  spmd::plugin::Options Check;
  if (!Check.parseArgs(PluginArgs, Err)) {
    llvm::errs() << "spmd-clangd: error: " << Err
                 << " (proxy options are --spmd-<plugin argument>; see "
                    "--spmd-help)\n";
    return 1;
  }
  Opts.PluginArgs = std::move(PluginArgs);
  if (Opts.ClangdPath.empty()) {
    std::string Self = llvm::sys::fs::getMainExecutable(
        argv[0], reinterpret_cast<void *>(&parseProxyOptions));
    std::optional<std::string> Found = findClangd(Self);
    if (!Found) {
      llvm::errs() << "spmd-clangd: error: no clangd-19 or clangd on PATH; "
                      "install clangd-19 or pass --clangd=<path>\n";
      return 1;
    }
    Opts.ClangdPath = *Found;
  }
  return std::nullopt;
}

/// Waits for clangd to exit, at most \p Grace, then kills it. Returns its
/// exit status, or -1 when it had to be killed.
int reapClangd(pid_t Pid, std::chrono::milliseconds Grace) {
  auto Deadline = std::chrono::steady_clock::now() + Grace;
  int Status = 0;
  while (true) {
    pid_t Got = waitpid(Pid, &Status, WNOHANG);
    if (Got == Pid)
      return WIFEXITED(Status) ? WEXITSTATUS(Status) : 1;
    if (Got < 0 && errno != EINTR)
      return 1;
    if (std::chrono::steady_clock::now() >= Deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // clangd finishes the work in flight (a libtorch preamble: tens of
  // seconds) before it honours "exit"; the editor must not wait for that.
  kill(Pid, SIGKILL);
  while (waitpid(Pid, &Status, 0) < 0 && errno == EINTR)
    ;
  return -1;
}

/// How long clangd gets to exit after the editor's "exit" (or end of input)
/// before it is killed.
constexpr std::chrono::milliseconds ClangdExitGrace(1500);

/// Relays between the editor and clangd until the editor leaves; returns
/// the exit status (LSP: 0 after shutdown + exit, 1 after exit alone).
int runProxy(ProxyOptions Opts, pid_t Pid, int ToFD, int FromFD) {
  Proxy P(std::move(Opts), ToFD, FromFD);
  std::thread ServerThread([&P, Pid] {
    P.serverLoop();
    if (P.clientFinished())
      return;
    // clangd went away while the editor still talks to us: leave with its
    // status, so that the editor notices and restarts the server.
    int Status = 0;
    while (waitpid(Pid, &Status, 0) < 0 && errno == EINTR)
      ;
    log("clangd exited unexpectedly; exiting");
    std::_Exit(WIFEXITED(Status) ? WEXITSTATUS(Status) : 1);
  });
  ServerThread.detach();
  // Clang's parser recurses deeply: give the analysis clangd's stack size.
  llvm::thread Worker(std::optional<unsigned>(8u << 20),
                      [&P] { P.workerLoop(); });
  Worker.detach();

  P.clientLoop();
  // An analysis still running is abandoned (cancelled; its result would be
  // stale), and clangd gets a moment to exit on its own.
  P.stop();
  P.closeServerInput();
  int Code = reapClangd(Pid, ClangdExitGrace);
  if (Code < 0) {
    log("clangd did not exit within " + llvm::Twine(ClangdExitGrace.count()) +
        " ms; killed it");
    Code = P.shutdownRequested() ? 0 : 1;
  }
  return Code;
}

} // namespace

int main(int argc, char **argv) {
  llvm::sys::PrintStackTraceOnErrorSignal(argv[0]);
  // Writing to a clangd that has gone must fail with EPIPE, not kill us.
  sigset_t Pipe;
  sigemptyset(&Pipe);
  sigaddset(&Pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &Pipe, nullptr);

  ProxyOptions Opts;
  if (std::optional<int> Done = parseProxyOptions(argc, argv, Opts))
    return *Done;

  pid_t Pid;
  int ToFD, FromFD;
  if (!spawnClangd(Opts, Pid, ToFD, FromFD)) {
    llvm::errs() << "spmd-clangd: error: cannot start '" << Opts.ClangdPath
                 << "': " << strerror(errno)
                 << " (pass the path of clangd with --clangd=<path>)\n";
    return 1;
  }
  log("started " + Opts.ClangdPath);
  llvm::CrashRecoveryContext::Enable();
  initializeAnalysis();
  int Code = runProxy(std::move(Opts), Pid, ToFD, FromFD);
  // Threads still running (an abandoned analysis, the clangd reader) must
  // not hold the exit: no static destructors.
  llvm::errs().flush();
  std::_Exit(Code);
}
