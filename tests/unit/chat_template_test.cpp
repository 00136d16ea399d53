// Chat templates of real models rendered by Ember vs jinja2 (as transformers'
// apply_chat_template runs it), byte for byte. The expected strings are made at
// test time by tests/genai/chat_template_reference.py into the build folder.
#include <cstdlib>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "genai/chat_template.h"

namespace ember::genai {
namespace {

nlohmann::ordered_json reference_cases() {
  const std::string out = std::string(EMBER_BINARY_DIR) + "/chat_template_cases.json";
  const std::string cmd = std::string("python3 ") + EMBER_SOURCE_DIR + "/tests/genai/chat_template_reference.py " +
                          EMBER_TOKENIZERS_DIR + " " + EMBER_SOURCE_DIR + "/tests/genai/templates " + out;
  if (std::system(cmd.c_str()) != 0) return nullptr;
  std::ifstream f(out);
  return nlohmann::ordered_json::parse(f);
}

TEST(ChatTemplate, RealTemplatesMatchJinja2) {
  const nlohmann::ordered_json cases = reference_cases();
  ASSERT_TRUE(cases.is_array()) << "python reference failed";
  ASSERT_GE(cases.size(), 50u);
  std::set<std::string> templates;
  for (const auto& c : cases) {
    templates.insert(c["template"].get<std::string>());
    ChatTemplateInput input;
    input.messages = c["messages"];
    input.tools = c["tools"];
    input.add_generation_prompt = c["add_generation_prompt"];
    auto rendered = render_chat_template(nlohmann::json(c["config"]), input);
    const std::string where = c["template"].get<std::string>() + " / " + c["conversation"].get<std::string>() +
                              (input.add_generation_prompt ? " / generation prompt" : "");
    if (c.contains("error")) {
      EXPECT_FALSE(rendered.is_ok()) << where << ": jinja2 failed with " << c["error"];
    } else {
      ASSERT_TRUE(rendered.is_ok()) << where << ": " << rendered.status().to_string();
      EXPECT_EQ(*rendered, c["expected"].get<std::string>()) << where;
    }
  }
  EXPECT_TRUE(templates.count("qwen3") && templates.count("gemma3") && templates.count("deepseek_v3") &&
              templates.count("llama3") && templates.count("llama3_1"));
}

TEST(ChatTemplate, NamedTemplateListPicksToolUseWithTools) {
  nlohmann::json config = {{"chat_template", {{{"name", "default"}, {"template", "D"}}, {{"name", "tool_use"}, {"template", "T"}}}}};
  ChatTemplateInput input;
  EXPECT_EQ(*render_chat_template(config, input), "D");
  input.tools = nlohmann::json::array();
  EXPECT_EQ(*render_chat_template(config, input), "T");
}

TEST(ChatTemplate, MissingTemplateAndRaiseExceptionAreErrors) {
  auto none = render_chat_template({{"chat_template", nullptr}}, {});
  ASSERT_FALSE(none.is_ok());
  EXPECT_NE(none.status().message().find("no chat_template"), std::string::npos);
  auto raised = render_chat_template({{"chat_template", "ok\n{{ raise_exception('roles must alternate') }}"}}, {});
  ASSERT_FALSE(raised.is_ok());
  EXPECT_NE(raised.status().message().find("line 2"), std::string::npos) << raised.status().to_string();
  EXPECT_NE(raised.status().message().find("roles must alternate"), std::string::npos);
}

}  // namespace
}  // namespace ember::genai
