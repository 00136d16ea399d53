// Chat templates of real models rendered by Ember vs jinja2 (as transformers'
// apply_chat_template runs it), byte for byte. The expected strings are made at
// test time by tests/genai/chat_template_reference.py into the build folder.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "genai/chat_template.h"

namespace ember::genai {
namespace {

// The expected cases of every template under `dirs`, rendered by jinja2 into OUT_FILE
// (one file per test: ctest runs each test case as its own process, in parallel).
nlohmann::ordered_json reference_cases(const std::string& out_file, const std::vector<std::string>& dirs) {
  const std::string out = std::string(EMBER_BINARY_DIR) + "/" + out_file;
  std::string cmd = std::string("python3 ") + EMBER_SOURCE_DIR + "/tests/genai/chat_template_reference.py " + out;
  for (const auto& dir : dirs) cmd += " " + dir;
  if (std::system(cmd.c_str()) != 0) return nullptr;
  std::ifstream f(out);
  return nlohmann::ordered_json::parse(f);
}

// The reference's strftime_now: 2024-07-26 09:30 (FIXED_NOW in chat_template_reference.py).
std::string fixed_strftime(const std::string& format) {
  std::tm t{};
  t.tm_year = 2024 - 1900;
  t.tm_mon = 6;
  t.tm_mday = 26;
  t.tm_hour = 9;
  t.tm_min = 30;
  t.tm_wday = 5;
  t.tm_yday = 207;
  char buf[256];
  return std::string(buf, std::strftime(buf, sizeof buf, format.c_str(), &t));
}

// Renders every case with Ember and compares with jinja2: the same text, or an error
// where jinja2 raised one (carrying raise_exception's message). Returns the templates seen.
std::set<std::string> expect_cases_match(const nlohmann::ordered_json& cases) {
  jinja::RenderOptions options;
  options.strftime_now = fixed_strftime;
  std::set<std::string> templates;
  for (const auto& c : cases) {
    templates.insert(c["template"].get<std::string>());
    ChatTemplateInput input;
    input.messages = c["messages"];
    input.tools = c["tools"];
    input.add_generation_prompt = c["add_generation_prompt"];
    auto chat_template = ChatTemplate::from_config(nlohmann::json(c["config"]));
    auto rendered = chat_template.is_ok() ? chat_template->render(input, options) : Result<std::string>(chat_template.status());
    const std::string where = c["template"].get<std::string>() + " / " + c["conversation"].get<std::string>() +
                              (input.add_generation_prompt ? " / generation prompt" : "");
    if (c.contains("error")) {
      EXPECT_FALSE(rendered.is_ok()) << where << ": jinja2 failed with " << c["error"];
      if (!rendered.is_ok() && c.contains("raised")) {
        EXPECT_NE(rendered.status().message().find(c["raised"].get<std::string>()), std::string::npos)
            << where << ": " << rendered.status().to_string() << " vs jinja2's " << c["error"];
      }
    } else {
      EXPECT_TRUE(rendered.is_ok()) << where << ": " << rendered.status().to_string();
      if (rendered.is_ok()) {
        EXPECT_EQ(*rendered, c["expected"].get<std::string>()) << where;
      }
    }
  }
  return templates;
}

// tokenizer_config.json templates of the tokenizer folders, and tests/genai/templates.
TEST(ChatTemplate, RealTemplatesMatchJinja2) {
  const nlohmann::ordered_json cases = reference_cases(
      "chat_template_cases.json", {EMBER_TOKENIZERS_DIR, std::string(EMBER_SOURCE_DIR) + "/tests/genai/templates"});
  ASSERT_TRUE(cases.is_array()) << "python reference failed";
  ASSERT_GE(cases.size(), 50u);
  const std::set<std::string> templates = expect_cases_match(cases);
  for (const char* name : {"qwen3", "gemma3", "deepseek_v3", "llama3", "llama3_1", "qwen2_5", "mistral_nemo", "llama3_2"}) {
    EXPECT_TRUE(templates.count(name)) << name;
  }
}

// Every template of llama.cpp's collection (scripts/setup.sh fetches it): Phi-3.5,
// Qwen2.5/3, Mistral, Llama 3.x, DeepSeek, Gemma, Command-R and some 60 more. None is
// skipped: each renders as jinja2 renders it, or fails where jinja2 fails.
TEST(ChatTemplate, LlamaCppTemplatesMatchJinja2) {
  const std::string dir = std::string(EMBER_SOURCE_DIR) + "/third_party/chat_templates/llama.cpp";
  const nlohmann::ordered_json cases = reference_cases("chat_template_llama_cpp_cases.json", {dir});
  ASSERT_TRUE(cases.is_array()) << "python reference failed (did scripts/setup.sh fetch " << dir << "?)";
  const std::set<std::string> templates = expect_cases_match(cases);
  const auto raising = std::count_if(cases.begin(), cases.end(), [](const auto& c) { return c.contains("error"); });
  std::printf("llama.cpp chat templates: %zu templates, %zu cases (%td where jinja2 raises), 0 skipped\n",
              templates.size(), cases.size(), raising);
  EXPECT_GE(templates.size(), 70u);
  for (const char* name : {"microsoft-Phi-3.5-mini-instruct", "Qwen-Qwen2.5-7B-Instruct",
                           "mistralai-Mistral-Nemo-Instruct-2407", "Mistral-Small-3.2-24B-Instruct-2506"}) {
    EXPECT_TRUE(templates.count(name)) << name;
  }
}

TEST(ChatTemplate, NamedTemplateListPicksToolUseWithTools) {
  nlohmann::json config = {{"chat_template", {{{"name", "default"}, {"template", "D"}}, {{"name", "tool_use"}, {"template", "T"}}}}};
  auto t = ChatTemplate::from_config(config);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ChatTemplateInput input;
  EXPECT_EQ(*t->render(input), "D");
  input.tools = nlohmann::json::array();
  EXPECT_EQ(*t->render(input), "T");
}

TEST(ChatTemplate, MissingTemplateAndRaiseExceptionAreErrors) {
  auto none = ChatTemplate::from_config({{"chat_template", nullptr}});
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no chat_template"), std::string::npos);
  auto no_default = ChatTemplate::from_config({{"chat_template", {{{"name", "tool_use"}, {"template", "T"}}}}});
  ASSERT_FALSE(no_default.is_ok());
  EXPECT_NE(no_default.status().message().find("none named 'default'"), std::string::npos);
  auto raised = ChatTemplate::from_config({{"chat_template", "ok\n{{ raise_exception('roles must alternate') }}"}});
  ASSERT_TRUE(raised.is_ok()) << raised.status().to_string();
  auto text = raised->render({});
  ASSERT_FALSE(text.is_ok());
  EXPECT_NE(text.status().message().find("line 2"), std::string::npos) << text.status().to_string();
  EXPECT_NE(text.status().message().find("roles must alternate"), std::string::npos);
}

// Inputs past the template's bounds (jinja::kMaxListItems) are errors, not exceptions:
// a request's message list, a config's additional_special_tokens.
TEST(ChatTemplate, InputsPastTheBoundsAreErrors) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t i = 0; i <= jinja::kMaxListItems; ++i) list.push_back(0);
  auto t = ChatTemplate::from_config({{"chat_template", "{{ messages | length }}"}});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ChatTemplateInput input;
  input.messages = list;
  auto text = t->render(input);
  ASSERT_FALSE(text.is_ok());
  EXPECT_NE(text.status().message().find("more than 1048576 items"), std::string::npos) << text.status().to_string();
  auto config = ChatTemplate::from_config({{"chat_template", "x"}, {"additional_special_tokens", std::vector<std::string>(
                                                                         jinja::kMaxListItems + 1, "<t>")}});
  ASSERT_FALSE(config.is_ok());
  EXPECT_NE(config.status().message().find("more than 1048576 items"), std::string::npos)
      << config.status().to_string();
}

// A scratch model folder under the build tree, emptied first.
class ChatTemplateFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(EMBER_BINARY_DIR) / "chat_template_folder" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void write(const std::string& name, const std::string& text) {
    std::filesystem::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::filesystem::path dir_;
};

// transformers >= 4.43 saves the template as chat_template.jinja (the builder copies
// it); it and additional_chat_templates/ replace tokenizer_config.json's entry.
TEST_F(ChatTemplateFolder, JinjaFilesReplaceTheConfigEntry) {
  write("tokenizer_config.json", R"({"chat_template": "config", "eos_token": "<e>"})");
  write("chat_template.jinja", "file {{ eos_token }}");
  auto t = ChatTemplate::load(dir_.string());
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ChatTemplateInput input;
  EXPECT_EQ(*t->render(input), "file <e>");
  write("additional_chat_templates/tool_use.jinja", "tools {{ tools | length }}");
  t = ChatTemplate::load(dir_.string());
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(*t->render(input), "file <e>");
  input.tools = nlohmann::json::array({1, 2});
  EXPECT_EQ(*t->render(input), "tools 2");
}

TEST_F(ChatTemplateFolder, ConfigEntryWithoutFiles) {
  write("tokenizer_config.json", R"({"chat_template": "config {{ bos_token }}", "bos_token": {"content": "<b>"}})");
  auto t = ChatTemplate::load(dir_.string());
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(*t->render({}), "config <b>");
}

TEST_F(ChatTemplateFolder, TemplateWithoutTokenizerConfig) {
  write("chat_template.jinja", "{{ messages[0].content }}");
  auto t = ChatTemplate::load(dir_.string());
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  ChatTemplateInput input;
  input.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(*t->render(input), "hi");
}

TEST_F(ChatTemplateFolder, ErrorsNameTheFile) {
  auto none = ChatTemplate::load(dir_.string());
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("chat_template.jinja"), std::string::npos) << none.status().to_string();
  write("tokenizer_config.json", "{not json");
  auto bad_json = ChatTemplate::load(dir_.string());
  ASSERT_FALSE(bad_json.is_ok());
  EXPECT_NE(bad_json.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad_json.status().message().find("tokenizer_config.json is not valid JSON"), std::string::npos)
      << bad_json.status().to_string();
  write("tokenizer_config.json", "{}");
  write("chat_template.jinja", "{% if %}");
  auto bad_template = ChatTemplate::load(dir_.string());
  ASSERT_FALSE(bad_template.is_ok());
  EXPECT_NE(bad_template.status().message().find("chat_template.jinja: template line 1"), std::string::npos)
      << bad_template.status().to_string();
}

}  // namespace
}  // namespace ember::genai
