#include "common/messages.h"

#include <cstring>
#include <msgpack.hpp>
#include <optional>

#include "common/body_limits.h"

namespace ember::protocol {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

msgpack::unpack_limit Limits() {
  return msgpack::unpack_limit(limits::kArray, limits::kMap, limits::kStr, limits::kBin,
                               limits::kExt, limits::kDepth);
}

std::string ToString(const msgpack::sbuffer& buffer) {
  return std::string(buffer.data(), buffer.size());
}

void PackKey(Packer& pk, std::string_view key) {
  pk.pack_str(static_cast<std::uint32_t>(key.size()));
  pk.pack_str_body(key.data(), static_cast<std::uint32_t>(key.size()));
}

template <class T>
void PackField(Packer& pk, std::string_view key, const T& value) {
  PackKey(pk, key);
  pk.pack(value);
}

void PackModels(Packer& pk, const std::vector<ModelInfo>& models) {
  pk.pack_array(static_cast<std::uint32_t>(models.size()));
  for (const auto& m : models) {
    pk.pack_map(m.message.empty() ? 5 : 6);
    PackField(pk, "name", m.name);
    PackField(pk, "version", m.version);
    PackField(pk, "dim", m.dim);
    PackField(pk, "state", ModelStateName(m.state));
    PackField(pk, "memory_bytes", m.memory_bytes);
    if (!m.message.empty()) PackField(pk, "message", m.message);
  }
}

std::optional<ModelState> ParseModelState(std::string_view name) {
  for (auto s :
       {ModelState::kLoading, ModelState::kReady, ModelState::kUnloading, ModelState::kFailed}) {
    if (ModelStateName(s) == name) return s;
  }
  return std::nullopt;
}

void PackStrings(Packer& pk, std::string_view key, const std::vector<std::string>& values) {
  PackKey(pk, key);
  pk.pack_array(static_cast<std::uint32_t>(values.size()));
  for (const auto& v : values) pk.pack(v);
}

void PackResult(Packer& pk, const ControlResult& r) {
  pk.pack_map(7);
  PackField(pk, "worker", r.worker);
  PackField(pk, "ok", r.ok);
  PackField(pk, "code", r.ok ? std::string_view() : ErrorCodeName(r.code));
  PackField(pk, "message", r.message);
  PackField(pk, "version", r.version);
  PackField(pk, "memory_bytes", r.memory_bytes);
  PackField(pk, "millis", r.millis);
}

// Unpacks `bytes` as exactly one msgpack map.
bool UnpackMap(std::string_view bytes, msgpack::object_handle* handle, std::string* error) {
  try {
    std::size_t offset = 0;
    *handle = msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, Limits());
    if (offset != bytes.size()) {
      *error = "body has trailing bytes after the msgpack map";
      return false;
    }
  } catch (const std::exception& e) {
    *error = std::string("body is not valid msgpack: ") + e.what();
    return false;
  }
  if (handle->get().type != msgpack::type::MAP) {
    *error = "body must be a msgpack map";
    return false;
  }
  return true;
}

const msgpack::object* Find(const msgpack::object& map, std::string_view key) {
  for (const auto& kv : std::span(map.via.map.ptr, map.via.map.size)) {
    if (kv.key.type == msgpack::type::STR &&
        std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == key) {
      return &kv.val;
    }
  }
  return nullptr;
}

enum class Need { kRequired, kOptional };

// Reads field `key` of `map` into *out; a missing optional field leaves *out.
template <class T>
bool Read(const msgpack::object& map, std::string_view key, T* out, Need need, std::string* error) {
  const msgpack::object* value = Find(map, key);
  if (value == nullptr) {
    if (need == Need::kOptional) return true;
    *error = "missing field '" + std::string(key) + "'";
    return false;
  }
  try {
    value->convert(*out);
  } catch (const std::exception&) {
    *error = "field '" + std::string(key) + "' has the wrong type";
    return false;
  }
  return true;
}

bool ReadResult(const msgpack::object& map, ControlResult* out, std::string* error) {
  if (map.type != msgpack::type::MAP) {
    *error = "each control result must be a map";
    return false;
  }
  std::string code;
  if (!(Read(map, "worker", &out->worker, Need::kOptional, error) &&
        Read(map, "ok", &out->ok, Need::kRequired, error) &&
        Read(map, "code", &code, Need::kOptional, error) &&
        Read(map, "message", &out->message, Need::kOptional, error) &&
        Read(map, "version", &out->version, Need::kOptional, error) &&
        Read(map, "memory_bytes", &out->memory_bytes, Need::kOptional, error) &&
        Read(map, "millis", &out->millis, Need::kOptional, error))) {
    return false;
  }
  // A code from a newer peer is still a failure; keep its name in the message.
  const auto parsed = ParseErrorCode(code);
  // A success has no code (Encode writes ""): one sent anyway is not kept, as it would not be
  // sent on.
  out->code = out->ok ? ErrorCode::kInternal : parsed.value_or(ErrorCode::kInternal);
  if (!out->ok && !parsed && !code.empty()) out->message = code + ": " + out->message;
  return true;
}

// A ControlOp field: its name on the wire.
bool ReadOp(const msgpack::object& map, ControlOp* out, Need need, std::string* error) {
  std::string name;
  if (!Read(map, "op", &name, need, error)) return false;
  if (name.empty() && need == Need::kOptional) return true;
  const auto op = ParseControlOp(name);
  if (!op) {
    *error = "unknown control op '" + name + "' (status, list, load, unload)";
    return false;
  }
  *out = *op;
  return true;
}

bool ReadModels(const msgpack::object& map, std::vector<ModelInfo>* out, std::string* error) {
  const msgpack::object* value = Find(map, "models");
  if (value == nullptr) return true;
  if (value->type != msgpack::type::ARRAY) {
    *error = "field 'models' must be an array";
    return false;
  }
  for (const auto& item : std::span(value->via.array.ptr, value->via.array.size)) {
    if (item.type != msgpack::type::MAP) {
      *error = "each model must be a map";
      return false;
    }
    ModelInfo info;
    std::string state = "READY";  // peers that predate model states serve what they list
    if (!Read(item, "name", &info.name, Need::kRequired, error) ||
        !Read(item, "version", &info.version, Need::kOptional, error) ||
        !Read(item, "dim", &info.dim, Need::kOptional, error) ||
        !Read(item, "state", &state, Need::kOptional, error) ||
        !Read(item, "memory_bytes", &info.memory_bytes, Need::kOptional, error) ||
        !Read(item, "message", &info.message, Need::kOptional, error)) {
      return false;
    }
    const auto parsed = ParseModelState(state);
    if (!parsed) {
      *error = "unknown model state '" + state + "'";
      return false;
    }
    info.state = *parsed;
    out->push_back(std::move(info));
  }
  return true;
}

}  // namespace

std::string_view ModelStateName(ModelState state) {
  switch (state) {
    case ModelState::kLoading:
      return "LOADING";
    case ModelState::kReady:
      return "READY";
    case ModelState::kUnloading:
      return "UNLOADING";
    case ModelState::kFailed:
      return "FAILED";
  }
  return "UNKNOWN";
}

std::string_view ControlOpName(ControlOp op) {
  switch (op) {
    case ControlOp::kStatus:
      return "status";
    case ControlOp::kList:
      return "list";
    case ControlOp::kLoad:
      return "load";
    case ControlOp::kUnload:
      return "unload";
  }
  return "unknown";
}

std::optional<ControlOp> ParseControlOp(std::string_view name) {
  for (ControlOp op :
       {ControlOp::kStatus, ControlOp::kList, ControlOp::kLoad, ControlOp::kUnload}) {
    if (ControlOpName(op) == name) return op;
  }
  return std::nullopt;
}

namespace {

// "task": a Task's name.
bool ReadTask(const msgpack::object& map, Task* out, std::string* error) {
  std::string name;
  if (!Read(map, "task", &name, Need::kOptional, error)) return false;
  if (name.empty() && Find(map, "task") == nullptr) return true;
  const auto task = ParseTask(name);
  if (!task) {
    *error = TaskError(name);
    return false;
  }
  *out = *task;
  return true;
}

}  // namespace

std::string_view TaskName(Task task) {
  switch (task) {
    case Task::kScore:
      return "score";
    case Task::kTokenize:
      return "tokenize";
    case Task::kDecode:
      return "decode";
    case Task::kSparse:
      return "sparse";
    case Task::kMultiVector:
      return "multi_vector";
    case Task::kEmbed:
      break;
  }
  return "embed";
}

std::optional<Task> ParseTask(std::string_view name) {
  if (name == "embed") return Task::kEmbed;
  if (name == "score") return Task::kScore;
  if (name == "tokenize") return Task::kTokenize;
  if (name == "decode") return Task::kDecode;
  if (name == "sparse") return Task::kSparse;
  if (name == "multi_vector") return Task::kMultiVector;
  return std::nullopt;
}

std::string TaskError(std::string_view name) {
  return "field 'task' is '" + std::string(name) +
         "'; expected 'embed', 'score', 'tokenize', 'decode', 'sparse' or 'multi_vector'";
}

bool CheckPairs(Task task, std::size_t inputs, bool has_pairs, std::size_t pairs,
                std::string* error) {
  if (!has_pairs) return true;
  if (task != Task::kScore) {
    *error = "field 'text_pairs' is for task 'score' (a cross-encoder's pairs)";
    return false;
  }
  if (pairs != inputs) {
    *error = "field 'text_pairs' has " + std::to_string(pairs) + " texts for " +
             std::to_string(inputs) + " inputs";
    return false;
  }
  return true;
}

std::string Encode(const EmbedRequest& body) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  // Only what differs from the defaults (a decoder takes any field on any task).
  const bool score = body.task != Task::kEmbed;
  pk.pack_map(5u + (body.dimensions == 0 ? 0u : 1u) + (body.prompt_name.empty() ? 0u : 1u) +
              (score ? 1u : 0u) + (body.raw_scores ? 1u : 0u) +
              (body.text_pairs.empty() ? 0u : 1u) + (body.skip_special_tokens ? 0u : 1u));
  PackField(pk, "model", body.model);
  PackField(pk, "version", body.version);
  PackField(pk, "inputs", body.inputs);
  PackField(pk, "timeout_ms", body.timeout_ms);
  PackField(pk, "truncate", body.truncate);
  if (body.dimensions != 0) PackField(pk, "dimensions", body.dimensions);
  if (!body.prompt_name.empty()) PackField(pk, "prompt_name", body.prompt_name);
  if (score) PackField(pk, "task", TaskName(body.task));
  if (body.raw_scores) PackField(pk, "raw_scores", body.raw_scores);
  if (!body.text_pairs.empty()) PackField(pk, "text_pairs", body.text_pairs);
  if (!body.skip_special_tokens) PackField(pk, "skip_special_tokens", false);
  return ToString(buffer);
}

bool Decode(std::string_view bytes, EmbedRequest* out, std::string* error) {
  *out = EmbedRequest{};  // optional fields absent from `bytes` are their defaults, not leftovers
  msgpack::object_handle handle;
  if (!UnpackMap(bytes, &handle, error)) return false;
  const msgpack::object& map = handle.get();
  return Read(map, "model", &out->model, Need::kRequired, error) &&
         Read(map, "version", &out->version, Need::kOptional, error) &&
         Read(map, "inputs", &out->inputs, Need::kRequired, error) &&
         Read(map, "timeout_ms", &out->timeout_ms, Need::kOptional, error) &&
         Read(map, "truncate", &out->truncate, Need::kOptional, error) &&
         Read(map, "dimensions", &out->dimensions, Need::kOptional, error) &&
         Read(map, "prompt_name", &out->prompt_name, Need::kOptional, error) &&
         ReadTask(map, &out->task, error) &&
         Read(map, "text_pairs", &out->text_pairs, Need::kOptional, error) &&
         Read(map, "raw_scores", &out->raw_scores, Need::kOptional, error) &&
         Read(map, "skip_special_tokens", &out->skip_special_tokens, Need::kOptional, error) &&
         CheckPairs(out->task, out->inputs.size(), Find(map, "text_pairs") != nullptr,
                    out->text_pairs.size(), error);
}

std::string Encode(const EmbedReply& body) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  const bool tokenized = !body.token_ids.empty();
  pk.pack_map(7u + (body.tokens.empty() ? 0u : 1u) + (body.labels.empty() ? 0u : 1u) +
              (tokenized ? 3u : 0u) + (body.texts.empty() ? 0u : 1u) +
              (body.rows.empty() ? 0u : 1u) + (body.indices.empty() ? 0u : 1u));
  PackField(pk, "model", body.model);
  PackField(pk, "version", body.version);
  PackField(pk, "worker", body.worker);
  PackField(pk, "dim", body.dim);
  PackField(pk, "count", body.count);
  PackField(pk, "batch_size", body.batch_size);
  if (!body.tokens.empty()) PackField(pk, "tokens", body.tokens);
  if (!body.labels.empty()) PackField(pk, "labels", body.labels);
  if (tokenized) {
    PackField(pk, "token_ids", body.token_ids);
    PackField(pk, "token_pieces", body.token_pieces);
    PackField(pk, "token_spans", body.token_spans);
  }
  if (!body.texts.empty()) PackField(pk, "texts", body.texts);
  if (!body.rows.empty()) PackField(pk, "rows", body.rows);
  if (!body.indices.empty()) PackField(pk, "indices", body.indices);
  // The vectors go as one bin of raw little-endian float32: packing them as a
  // msgpack float array costs ~100x more CPU on both ends.
  const auto bytes = static_cast<std::uint32_t>(body.data.size() * sizeof(float));
  PackKey(pk, "data");
  pk.pack_bin(bytes);
  pk.pack_bin_body(reinterpret_cast<const char*>(body.data.data()), bytes);
  return ToString(buffer);
}

bool Decode(std::string_view bytes, EmbedReply* out, std::string* error) {
  *out = EmbedReply{};  // optional fields absent from `bytes` are their defaults, not leftovers
  msgpack::object_handle handle;
  if (!UnpackMap(bytes, &handle, error)) return false;
  const msgpack::object& map = handle.get();
  if (!Read(map, "model", &out->model, Need::kRequired, error) ||
      !Read(map, "version", &out->version, Need::kOptional, error) ||
      !Read(map, "worker", &out->worker, Need::kOptional, error) ||
      !Read(map, "dim", &out->dim, Need::kRequired, error) ||
      !Read(map, "count", &out->count, Need::kRequired, error) ||
      !Read(map, "batch_size", &out->batch_size, Need::kOptional, error) ||
      !Read(map, "tokens", &out->tokens, Need::kOptional, error) ||
      !Read(map, "labels", &out->labels, Need::kOptional, error) ||
      !Read(map, "token_ids", &out->token_ids, Need::kOptional, error) ||
      !Read(map, "token_pieces", &out->token_pieces, Need::kOptional, error) ||
      !Read(map, "token_spans", &out->token_spans, Need::kOptional, error) ||
      !Read(map, "texts", &out->texts, Need::kOptional, error) ||
      !Read(map, "rows", &out->rows, Need::kOptional, error) ||
      !Read(map, "indices", &out->indices, Need::kOptional, error)) {
    return false;
  }
  // Rows per input: `data` holds their sum x dim floats (else count x dim).
  std::uint64_t rows = out->count;
  if (!out->rows.empty() || !out->indices.empty()) {
    rows = 0;
    for (const std::uint32_t r : out->rows) rows += r;
    if (out->rows.size() != out->count || (!out->indices.empty() && out->indices.size() != rows)) {
      *error = "field 'rows' must count each input's rows (" + std::to_string(out->count) +
               " inputs), and 'indices' name each row (" + std::to_string(rows) + ")";
      return false;
    }
  }
  if (!out->texts.empty() && out->texts.size() != out->count) {
    *error = "field 'texts' has " + std::to_string(out->texts.size()) + " texts for " +
             std::to_string(out->count) + " inputs";
    return false;
  }
  if (!out->token_ids.empty() || !out->token_pieces.empty() || !out->token_spans.empty()) {
    std::uint64_t total = 0;
    for (const std::uint32_t t : out->tokens) total += t;
    const std::size_t n = out->token_ids.size();
    if (out->tokens.size() != out->count || total != n || out->token_pieces.size() != n ||
        out->token_spans.size() != 2 * n) {
      *error =
          "fields 'token_ids', 'token_pieces' and 'token_spans' must hold every counted "
          "token (" +
          std::to_string(total) + "), once, twice for spans";
      return false;
    }
  }
  if (!out->labels.empty() && out->labels.size() != out->dim) {
    *error = "field 'labels' names " + std::to_string(out->labels.size()) + " scores of " +
             std::to_string(out->dim);
    return false;
  }
  if (!out->tokens.empty() && out->tokens.size() != out->count) {
    *error = "field 'tokens' has " + std::to_string(out->tokens.size()) + " counts for " +
             std::to_string(out->count) + " texts";
    return false;
  }
  const msgpack::object* data = Find(map, "data");
  if (data == nullptr || data->type != msgpack::type::BIN) {
    *error = "field 'data' must be a bin of float32";
    return false;
  }
  const std::uint64_t expected = std::uint64_t{out->dim} * rows * sizeof(float);
  if (data->via.bin.size != expected) {
    *error = "field 'data' has " + std::to_string(data->via.bin.size) + " bytes, expected " +
             std::to_string(expected) + " for " + (out->rows.empty() ? "count" : "rows") +
             " x dim float32";
    return false;
  }
  out->data.resize(std::size_t{out->dim} * rows);
  std::memcpy(out->data.data(), data->via.bin.ptr, data->via.bin.size);
  return true;
}

std::string Encode(const ErrorBody& body) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  pk.pack_map(2);
  PackField(pk, "code", ErrorCodeName(body.code));
  PackField(pk, "message", body.message);
  return ToString(buffer);
}

bool Decode(std::string_view bytes, ErrorBody* out, std::string* error) {
  msgpack::object_handle handle;
  if (!UnpackMap(bytes, &handle, error)) return false;
  std::string code;
  if (!Read(handle.get(), "code", &code, Need::kRequired, error) ||
      !Read(handle.get(), "message", &out->message, Need::kOptional, error)) {
    return false;
  }
  // A code from a newer peer is still an error; keep its name in the message.
  const auto parsed = ParseErrorCode(code);
  out->code = parsed.value_or(ErrorCode::kInternal);
  if (!parsed) out->message = code + ": " + out->message;
  return true;
}

std::string Encode(const ReadyBody& body) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  pk.pack_map(body.holding ? 8 : 7);
  PackField(pk, "device", body.device);
  PackField(pk, "capacity", body.capacity);
  PackField(pk, "weight", body.weight);
  PackField(pk, "session", body.session);
  PackField(pk, "rss_bytes", body.rss_bytes);
  PackKey(pk, "models");
  PackModels(pk, body.models);
  PackStrings(pk, "routers", body.routers);
  if (body.holding) PackField(pk, "holding", *body.holding);
  return ToString(buffer);
}

bool Decode(std::string_view bytes, ReadyBody* out, std::string* error) {
  msgpack::object_handle handle;
  if (!UnpackMap(bytes, &handle, error)) return false;
  const msgpack::object& map = handle.get();
  return Read(map, "device", &out->device, Need::kOptional, error) &&
         Read(map, "capacity", &out->capacity, Need::kOptional, error) &&
         Read(map, "weight", &out->weight, Need::kOptional, error) &&
         Read(map, "session", &out->session, Need::kOptional, error) &&
         Read(map, "rss_bytes", &out->rss_bytes, Need::kOptional, error) &&
         Read(map, "routers", &out->routers, Need::kOptional, error) &&
         Read(map, "holding", &out->holding, Need::kOptional, error) &&
         ReadModels(map, &out->models, error);
}

std::string Encode(const ControlRequest& body) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  pk.pack_map(5);
  PackField(pk, "op", ControlOpName(body.op));
  PackField(pk, "model", body.model);
  PackField(pk, "version", body.version);
  PackStrings(pk, "workers", body.workers);
  PackField(pk, "timeout_ms", body.timeout_ms);
  return ToString(buffer);
}

bool Decode(std::string_view bytes, ControlRequest* out, std::string* error) {
  msgpack::object_handle handle;
  if (!UnpackMap(bytes, &handle, error)) return false;
  const msgpack::object& map = handle.get();
  return ReadOp(map, &out->op, Need::kRequired, error) &&
         Read(map, "model", &out->model, Need::kOptional, error) &&
         Read(map, "version", &out->version, Need::kOptional, error) &&
         Read(map, "workers", &out->workers, Need::kOptional, error) &&
         Read(map, "timeout_ms", &out->timeout_ms, Need::kOptional, error);
}

std::string Encode(const ControlResult& body) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  PackResult(pk, body);
  return ToString(buffer);
}

bool Decode(std::string_view bytes, ControlResult* out, std::string* error) {
  msgpack::object_handle handle;
  if (!UnpackMap(bytes, &handle, error)) return false;
  return ReadResult(handle.get(), out, error);
}

std::string Encode(const ControlReply& body) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  pk.pack_map(3);
  PackField(pk, "op", ControlOpName(body.op));
  PackField(pk, "model", body.model);
  PackKey(pk, "results");
  pk.pack_array(static_cast<std::uint32_t>(body.results.size()));
  for (const auto& r : body.results) PackResult(pk, r);
  return ToString(buffer);
}

bool Decode(std::string_view bytes, ControlReply* out, std::string* error) {
  msgpack::object_handle handle;
  if (!UnpackMap(bytes, &handle, error)) return false;
  const msgpack::object& map = handle.get();
  if (!ReadOp(map, &out->op, Need::kOptional, error) ||
      !Read(map, "model", &out->model, Need::kOptional, error)) {
    return false;
  }
  const msgpack::object* results = Find(map, "results");
  if (results == nullptr || results->type != msgpack::type::ARRAY) {
    *error = "field 'results' must be an array";
    return false;
  }
  for (const auto& item : std::span(results->via.array.ptr, results->via.array.size)) {
    ControlResult r;
    if (!ReadResult(item, &r, error)) return false;
    out->results.push_back(std::move(r));
  }
  return true;
}

std::string Encode(const StatusReply& body) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  pk.pack_map(4);
  PackField(pk, "router_version", body.router_version);
  PackField(pk, "requests", body.requests);
  PackKey(pk, "workers");
  pk.pack_array(static_cast<std::uint32_t>(body.workers.size()));
  for (const auto& w : body.workers) {
    pk.pack_map(15);
    PackField(pk, "id", w.id);
    PackField(pk, "device", w.device);
    PackKey(pk, "models");
    PackModels(pk, w.models);
    PackField(pk, "capacity", w.capacity);
    PackField(pk, "in_flight", w.in_flight);
    PackField(pk, "completed", w.completed);
    PackField(pk, "failed", w.failed);
    PackField(pk, "last_seen_ms", w.last_seen_ms);
    PackField(pk, "weight", w.weight);
    PackField(pk, "ewma_ms", w.ewma_ms);
    PackField(pk, "p50_ms", w.p50_ms);
    PackField(pk, "p99_ms", w.p99_ms);
    PackField(pk, "rss_bytes", w.rss_bytes);
    PackField(pk, "health", w.health);
    PackStrings(pk, "routers", w.routers);
  }
  PackKey(pk, "models");
  pk.pack_array(static_cast<std::uint32_t>(body.models.size()));
  for (const auto& m : body.models) {
    pk.pack_map(4);
    PackField(pk, "name", m.name);
    PackField(pk, "policy", m.policy);
    PackField(pk, "queued", m.queued);
    PackField(pk, "workers", m.workers);
  }
  return ToString(buffer);
}

bool Decode(std::string_view bytes, StatusReply* out, std::string* error) {
  msgpack::object_handle handle;
  if (!UnpackMap(bytes, &handle, error)) return false;
  const msgpack::object& map = handle.get();
  if (!Read(map, "router_version", &out->router_version, Need::kOptional, error) ||
      !Read(map, "requests", &out->requests, Need::kOptional, error)) {
    return false;
  }
  const msgpack::object* workers = Find(map, "workers");
  if (workers == nullptr || workers->type != msgpack::type::ARRAY) {
    *error = "field 'workers' must be an array";
    return false;
  }
  for (const auto& item : std::span(workers->via.array.ptr, workers->via.array.size)) {
    if (item.type != msgpack::type::MAP) {
      *error = "each worker must be a map";
      return false;
    }
    WorkerStatus w;
    if (!Read(item, "id", &w.id, Need::kRequired, error) ||
        !Read(item, "device", &w.device, Need::kOptional, error) ||
        !ReadModels(item, &w.models, error) ||
        !Read(item, "capacity", &w.capacity, Need::kOptional, error) ||
        !Read(item, "in_flight", &w.in_flight, Need::kOptional, error) ||
        !Read(item, "completed", &w.completed, Need::kOptional, error) ||
        !Read(item, "failed", &w.failed, Need::kOptional, error) ||
        !Read(item, "last_seen_ms", &w.last_seen_ms, Need::kOptional, error) ||
        !Read(item, "weight", &w.weight, Need::kOptional, error) ||
        !Read(item, "ewma_ms", &w.ewma_ms, Need::kOptional, error) ||
        !Read(item, "p50_ms", &w.p50_ms, Need::kOptional, error) ||
        !Read(item, "p99_ms", &w.p99_ms, Need::kOptional, error) ||
        !Read(item, "rss_bytes", &w.rss_bytes, Need::kOptional, error) ||
        !Read(item, "health", &w.health, Need::kOptional, error) ||
        !Read(item, "routers", &w.routers, Need::kOptional, error)) {
      return false;
    }
    out->workers.push_back(std::move(w));
  }
  const msgpack::object* models = Find(map, "models");
  if (models == nullptr) return true;
  if (models->type != msgpack::type::ARRAY) {
    *error = "field 'models' must be an array";
    return false;
  }
  for (const auto& item : std::span(models->via.array.ptr, models->via.array.size)) {
    ModelStatus m;
    if (item.type != msgpack::type::MAP || !Read(item, "name", &m.name, Need::kRequired, error) ||
        !Read(item, "policy", &m.policy, Need::kOptional, error) ||
        !Read(item, "queued", &m.queued, Need::kOptional, error) ||
        !Read(item, "workers", &m.workers, Need::kOptional, error)) {
      if (error->empty()) *error = "each model status must be a map";
      return false;
    }
    out->models.push_back(std::move(m));
  }
  return true;
}

}  // namespace ember::protocol
