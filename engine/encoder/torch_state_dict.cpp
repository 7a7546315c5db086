#include "engine/encoder/torch_state_dict.h"

#include <caffe2/serialize/inline_container.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ember::engine {
namespace {

// A pickled value, as far as a state dict of tensors needs.
struct Value;
using ValuePtr = std::shared_ptr<Value>;
struct Value {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kDict, kGlobal, kTensor };
  Kind kind = Kind::kNone;
  std::int64_t number = 0;
  std::string text;             // kString; kGlobal: "module.name"
  std::vector<ValuePtr> items;  // kTuple (and lists); kDict: key, value, key, value, ...
  at::Tensor tensor;            // kTensor, or a storage (1-D, its whole contents)
};

ValuePtr Make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

// The dtype of a typed storage global ("torch.FloatStorage"); nullopt for any other name.
std::optional<at::ScalarType> StorageType(std::string_view name) {
  static const std::pair<const char*, at::ScalarType> kTypes[] = {
      {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble},
      {"torch.HalfStorage", at::kHalf},   {"torch.BFloat16Storage", at::kBFloat16},
      {"torch.LongStorage", at::kLong},   {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar},
      {"torch.ByteStorage", at::kByte},   {"torch.BoolStorage", at::kBool}};
  for (const auto& [n, type] : kTypes) {
    if (name == n) return type;
  }
  return std::nullopt;
}

class StateDictUnpickler {
 public:
  StateDictUnpickler(caffe2::serialize::PyTorchStreamReader& zip, std::string_view pickle)
      : zip_(zip), in_(pickle) {}

  ValuePtr Run() {
    for (;;) {
      const std::uint8_t op = U8();
      switch (op) {
        case 0x80:  // PROTO
          Byte();
          break;
        case '.':  // STOP
          return Pop();
        case 'c': {  // GLOBAL
          std::string module = Line(), name = Line();
          auto g = Make(Value::Kind::kGlobal);
          g->text = module + "." + name;
          if (g->text != "collections.OrderedDict" &&
              g->text != "torch._utils._rebuild_tensor_v2" && !StorageType(g->text)) {
            Fail("names " + g->text + ", which a state dict of tensors does not");
          }
          Push(std::move(g));
          break;
        }
        case 'q':  // BINPUT
          memo_[U8()] = Top();
          break;
        case 'r':  // LONG_BINPUT
          memo_[Uint(4)] = Top();
          break;
        case 'h':  // BINGET
          Push(Memo(U8()));
          break;
        case 'j':  // LONG_BINGET
          Push(Memo(Uint(4)));
          break;
        case '(':  // MARK
          marks_.push_back(stack_.size());
          break;
        case ')':  // EMPTY_TUPLE
        case ']':  // EMPTY_LIST
          Push(Make(Value::Kind::kTuple));
          break;
        case '}':  // EMPTY_DICT
          Push(Make(Value::Kind::kDict));
          break;
        case 't': {  // TUPLE
          auto t = Make(Value::Kind::kTuple);
          t->items = PopToMark();
          Push(std::move(t));
          break;
        }
        case 0x85:    // TUPLE1
        case 0x86:    // TUPLE2
        case 0x87: {  // TUPLE3
          auto t = Make(Value::Kind::kTuple);
          t->items.resize(op - 0x84u);
          for (auto it = t->items.rbegin(); it != t->items.rend(); ++it) *it = Pop();
          Push(std::move(t));
          break;
        }
        case 'a': {  // APPEND
          ValuePtr v = Pop();
          Expect(Top(), Value::Kind::kTuple, "APPEND")->items.push_back(std::move(v));
          break;
        }
        case 'e': {  // APPENDS
          std::vector<ValuePtr> items = PopToMark();
          auto& list = Expect(Top(), Value::Kind::kTuple, "APPENDS")->items;
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case 'X':  // BINUNICODE
          PushString(Uint(4));
          break;
        case 0x8c:  // SHORT_BINUNICODE
          PushString(U8());
          break;
        case 'K':  // BININT1
          PushInt(U8());
          break;
        case 'M':  // BININT2
          PushInt(static_cast<std::int64_t>(Uint(2)));
          break;
        case 'J':  // BININT
          PushInt(static_cast<std::int32_t>(Uint(4)));
          break;
        case 0x8a: {  // LONG1: n little-endian two's complement bytes
          const auto n = U8();
          if (n > 8) Fail("holds an integer wider than 64 bits");
          std::uint64_t u = 0;
          for (unsigned i = 0; i < n; ++i) u |= std::uint64_t{U8()} << (8 * i);
          if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~std::uint64_t{0} << (8 * n);
          PushInt(static_cast<std::int64_t>(u));
          break;
        }
        case 'G':  // BINFLOAT (read, unused)
          Take(8);
          Push(Make(Value::Kind::kFloat));
          break;
        case 'N':  // NONE
          Push(Make(Value::Kind::kNone));
          break;
        case 0x88:    // NEWTRUE
        case 0x89: {  // NEWFALSE
          auto b = Make(Value::Kind::kBool);
          b->number = op == 0x88;
          Push(std::move(b));
          break;
        }
        case 'Q':  // BINPERSID
          Push(Storage(Pop()));
          break;
        case 'R': {  // REDUCE
          ValuePtr args = Expect(Pop(), Value::Kind::kTuple, "REDUCE");
          ValuePtr f = Expect(Pop(), Value::Kind::kGlobal, "REDUCE");
          Push(f->text == "collections.OrderedDict" ? Make(Value::Kind::kDict) : Tensor(*args));
          break;
        }
        case 's': {  // SETITEM
          ValuePtr value = Pop(), key = Pop();
          auto& dict = Expect(Top(), Value::Kind::kDict, "SETITEM")->items;
          dict.push_back(std::move(key));
          dict.push_back(std::move(value));
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<ValuePtr> pairs = PopToMark();
          if (pairs.size() % 2 != 0) Fail("has a SETITEMS of an odd count");
          auto& dict = Expect(Top(), Value::Kind::kDict, "SETITEMS")->items;
          dict.insert(dict.end(), pairs.begin(), pairs.end());
          break;
        }
        case 'b':  // BUILD: an OrderedDict's attributes (a state dict's _metadata), unused
          Pop();
          break;
        default:
          Fail("has pickle opcode 0x" + Hex(op) + ", which a state dict of tensors does not");
      }
    }
  }

 private:
  [[noreturn]] static void Fail(const std::string& why) { throw std::invalid_argument(why); }
  static std::string Hex(std::uint8_t b) {
    const char* digits = "0123456789abcdef";
    return {digits[b >> 4], digits[b & 15]};
  }

  std::string_view Take(std::size_t n) {
    if (in_.size() - at_ < n) Fail("ends inside its pickle");
    const std::string_view s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  char Byte() { return Take(1)[0]; }
  std::uint8_t U8() { return static_cast<std::uint8_t>(Byte()); }
  std::uint32_t Uint(unsigned bytes) {
    const std::string_view s = Take(bytes);
    std::uint32_t u = 0;
    for (unsigned i = 0; i < bytes; ++i)
      u |= std::uint32_t{static_cast<std::uint8_t>(s[i])} << (8 * i);
    return u;
  }
  std::string Line() {
    const std::size_t end = in_.find('\n', at_);
    if (end == std::string_view::npos) Fail("ends inside its pickle");
    std::string s(in_.substr(at_, end - at_));
    at_ = end + 1;
    return s;
  }

  void Push(ValuePtr v) { stack_.push_back(std::move(v)); }
  void PushInt(std::int64_t n) {
    auto v = Make(Value::Kind::kInt);
    v->number = n;
    Push(std::move(v));
  }
  void PushString(std::size_t n) {
    auto v = Make(Value::Kind::kString);
    v->text = std::string(Take(n));
    Push(std::move(v));
  }
  ValuePtr Pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) Fail("pops an empty stack");
    ValuePtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  const ValuePtr& Top() const {
    if (stack_.empty()) Fail("reads an empty stack");
    return stack_.back();
  }
  std::vector<ValuePtr> PopToMark() {
    if (marks_.empty()) Fail("has no MARK where one is needed");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> items(
        std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(mark)),
        std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }
  ValuePtr Memo(std::uint32_t i) const {
    const auto it = memo_.find(i);
    if (it == memo_.end()) Fail("reads memo " + std::to_string(i) + " before writing it");
    return it->second;
  }
  static const ValuePtr& Expect(const ValuePtr& v, Value::Kind kind, const char* op) {
    if (v->kind != kind) Fail(std::string("has a ") + op + " on a value of the wrong type");
    return v;
  }
  static std::int64_t Int(const ValuePtr& v) {
    return Expect(v, Value::Kind::kInt, "tensor")->number;
  }

  // ("storage", torch.<T>Storage, key, location, numel): the zip's data/<key>.
  ValuePtr Storage(const ValuePtr& id) {
    const auto& f = Expect(id, Value::Kind::kTuple, "BINPERSID")->items;
    if (f.size() != 5 || f[0]->kind != Value::Kind::kString || f[0]->text != "storage" ||
        f[1]->kind != Value::Kind::kGlobal || f[2]->kind != Value::Kind::kString) {
      Fail("has a persistent id that is not a storage");
    }
    const at::ScalarType type = *StorageType(f[1]->text);  // GLOBAL admitted only these
    const std::int64_t numel = Int(f[4]);
    if (numel < 0) Fail("has a storage of negative size");
    auto v = Make(Value::Kind::kTensor);
    v->tensor = at::empty({numel}, at::TensorOptions().dtype(type));
    const std::size_t bytes = v->tensor.nbytes();
    const std::string record = "data/" + f[2]->text;
    if (!zip_.hasRecord(record)) Fail("has no record " + record);
    const auto [data, size] = zip_.getRecord(record);
    if (size < bytes) Fail("record " + record + " is shorter than its storage");
    std::memcpy(v->tensor.data_ptr(), data.get(), bytes);
    return v;
  }

  // _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]).
  ValuePtr Tensor(const Value& args) {
    const auto& a = args.items;
    if (a.size() < 4) Fail("rebuilds a tensor from too few arguments");
    const at::Tensor& storage = Expect(a[0], Value::Kind::kTensor, "tensor")->tensor;
    const std::int64_t offset = Int(a[1]);
    std::vector<std::int64_t> size, stride;
    for (const ValuePtr& s : Expect(a[2], Value::Kind::kTuple, "tensor")->items)
      size.push_back(Int(s));
    for (const ValuePtr& s : Expect(a[3], Value::Kind::kTuple, "tensor")->items)
      stride.push_back(Int(s));
    if (size.size() != stride.size())
      Fail("rebuilds a tensor whose size and stride differ in rank");
    // Every element must lie inside the storage.
    std::int64_t last = offset;
    bool empty = false;
    for (std::size_t i = 0; i < size.size(); ++i) {
      if (size[i] < 0 || stride[i] < 0) Fail("rebuilds a tensor of negative size or stride");
      empty = empty || size[i] == 0;
      if (size[i] > 0) last += (size[i] - 1) * stride[i];
    }
    if (offset < 0 || (!empty && last >= storage.numel()))
      Fail("rebuilds a tensor past its storage");
    auto v = Make(Value::Kind::kTensor);
    v->tensor = storage.as_strided(size, stride, offset).contiguous();
    return v;
  }

  caffe2::serialize::PyTorchStreamReader& zip_;
  std::string_view in_;
  std::size_t at_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint32_t, ValuePtr> memo_;
};

}  // namespace

std::map<std::string, at::Tensor> ReadTorchStateDict(const std::filesystem::path& file) {
  const auto fail = [&](const std::string& why) -> std::map<std::string, at::Tensor> {
    throw std::runtime_error(file.string() + ": " + why);
  };
  try {
    caffe2::serialize::PyTorchStreamReader zip(file.string());
    if (!zip.hasRecord("data.pkl")) return fail("not a torch.save'd file (no data.pkl)");
    const auto [pickle, size] = zip.getRecord("data.pkl");
    StateDictUnpickler unpickler(zip,
                                 std::string_view(static_cast<const char*>(pickle.get()), size));
    const ValuePtr root = unpickler.Run();
    if (root->kind != Value::Kind::kDict) return fail("not a state dict (its pickle is no dict)");
    std::map<std::string, at::Tensor> tensors;
    for (std::size_t i = 0; i + 1 < root->items.size(); i += 2) {
      if (root->items[i]->kind == Value::Kind::kString &&
          root->items[i + 1]->kind == Value::Kind::kTensor) {
        tensors[root->items[i]->text] = root->items[i + 1]->tensor;
      }
    }
    return tensors;
  } catch (const c10::Error& e) {
    return fail(std::string("not a torch.save'd zip: ") + e.what_without_backtrace());
  } catch (const std::invalid_argument& e) {
    return fail(std::string("its pickle ") + e.what());
  }
}

}  // namespace ember::engine
