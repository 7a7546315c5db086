#include "engine/encoder/encoder_families.h"

#include <string_view>

#include "engine/bert/bert_family.h"
#include "engine/decoder/decoder_family.h"
#include "engine/encoder/config_json.h"
#include "engine/modernbert/modernbert_family.h"
#include "engine/mpnet/mpnet_family.h"
#include "engine/roberta/roberta_family.h"

namespace ember::engine {
namespace {

struct Family {
  std::string_view model_type;
  EncoderSpec (*parse)(const config_json::Json&, const std::filesystem::path&);
};

constexpr Family kFamilies[] = {
    {"bert", ParseBertFamily},
    {"camembert", ParseRobertaFamily},
    {"modernbert", ParseModernBertFamily},
    {"mistral", ParseDecoderFamily},
    {"mpnet", ParseMpnetFamily},
    {"qwen2", ParseDecoderFamily},
    {"qwen3", ParseDecoderFamily},
    {"roberta", ParseRobertaFamily},
    {"xlm-roberta", ParseRobertaFamily},
};

}  // namespace

std::string ServedModelTypes() {
  std::string out;
  for (const Family& f : kFamilies) {
    if (!out.empty()) out += ", ";
    out += f.model_type;
  }
  return out;
}

EncoderSpec ReadEncoderSpec(const std::filesystem::path& file) {
  const config_json::Json j = config_json::Read(file);
  if (!j.is_object()) config_json::Fail(file.string() + ": not a JSON object");
  std::string type = "bert";
  if (const auto it = j.find("model_type"); it != j.end()) {
    if (!it->is_string()) config_json::Fail(file.string() + ": model_type must be a string");
    type = it->get<std::string>();
  }
  for (const Family& f : kFamilies) {
    if (f.model_type != type) continue;
    try {
      return f.parse(j, file);
    } catch (const config_json::Json::exception& e) {  // a value of the wrong JSON type
      config_json::Fail(file.string() + ": " + e.what());
    }
  }
  std::string architectures;
  if (const auto it = j.find("architectures"); it != j.end()) architectures = " " + it->dump();
  config_json::Fail(file.string() + ": model_type \"" + type + "\"" + architectures +
                    " is not served; ember serves model_type " + ServedModelTypes() +
                    " (docs/models.md)");
}

}  // namespace ember::engine
