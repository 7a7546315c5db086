#include <string>
#include <vector>

#include "fuzz/seeds.h"

namespace ember::fuzz {

std::vector<std::string> GatewaySeeds() {
  const std::vector<std::string> openai = {
      R"({"model":"minilm","input":"hello world"})",
      R"({"model":"minilm:2","input":["a","b"],"encoding_format":"base64","dimensions":128})",
      R"({"model":"e5","input":["q"],"prompt_name":"query","truncate":false,"user":"u"})",
      R"({"model":"m","input":[],"dimensions":0})",
      R"({"model":"m","input":[1,2,3],"encoding_format":"hex"})",
      R"({"model":"","input":"x","dimensions":-1,"prompt_name":""})",
      R"({"model":"m:latest","input":"\u00e9\ud83d\ude00","dimensions":4294967296})",
      R"([1,2])",
      R"({"model":"m","input":"x")",
  };
  const std::vector<std::string> tei = {
      R"({"inputs":"hello"})",
      R"({"inputs":["a","b"],"normalize":false,"truncate":true,"model":"m:3"})",
      R"({"inputs":["a"],"dimensions":64,"prompt_name":"passage"})",
      R"({"inputs":[],"normalize":"yes"})",
      R"({"inputs":[null],"prompt_name":5})",
      R"({"model":7,"inputs":"x"})",
      R"("just a string")",
  };
  const std::vector<std::string> rerank = {
      R"({"query":"q","texts":["a","b"],"raw_scores":true,"return_text":true,"top_n":1})",
      R"({"query":"q","texts":[],"truncation_direction":"Left","model":"r:2"})",
      R"({"query":5,"texts":["a",["b"]],"top_n":0})",
  };
  const std::vector<std::string> predict = {
      R"({"inputs":"I like you."})",
      R"({"inputs":["a","b"],"raw_scores":true})",
      R"({"inputs":[["a","b"],["c","d"]],"model":"c"})",
      R"({"inputs":["a",["b","c"]],"truncate":false})",
      R"({"inputs":[["a","b","c"]]})",
  };
  const std::vector<std::string> tokenize = {
      R"({"inputs":"Hello, world!"})",
      R"({"inputs":["a","b"],"add_special_tokens":false,"truncate":false,"model":"m:1"})",
      R"({"inputs":"a","prompt_name":"query"})",
  };
  const std::vector<std::string> decode = {
      R"({"ids":[101,7592,102]})",
      R"({"ids":[[101,7592,102],[]],"skip_special_tokens":false,"model":"m:2"})",
      R"({"ids":[1,[2]],"skip_special_tokens":"no"})",
      R"({"ids":[-1,4294967296]})",
  };
  const std::vector<std::string> token_outputs = {
      R"({"inputs":["a","b"],"model":"m3","truncate":false})",
      R"({"inputs":"a","prompt_name":"query"})",
      R"({"inputs":[]})",
  };
  std::vector<std::string> seeds;
  for (const auto& body : openai) seeds.push_back('\x00' + body);
  for (const auto& body : tei) {
    seeds.push_back('\x01' + body);
    seeds.push_back('\x02' + body);
  }
  for (const auto& body : rerank) seeds.push_back('\x03' + body);
  for (const auto& body : predict) seeds.push_back('\x04' + body);
  for (const auto& body : tokenize) seeds.push_back('\x05' + body);
  for (const auto& body : decode) seeds.push_back('\x06' + body);
  for (const auto& body : token_outputs) seeds.push_back('\x07' + body);
  return seeds;
}

}  // namespace ember::fuzz
