// Chat templates: how a dialog becomes the token ids a chat model was trained on.
//
// Each built-in template follows its published definition:
//   llama2  Meta's llama/generation.py chat_completion (what Llama-2-chat was trained on)
//   llama3  Llama-3-Instruct's chat_template: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
//   llama3.1 Llama-3.1-Instruct's (3.3's is the same): llama3's turns after a system turn that
//           always comes first: "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
//           and the system message
//   llama3.2 Llama-3.2-Instruct's: llama3.1's with today's date (its Jinja's strftime_now("%d %b %Y"))
//   mistral Mistral-7B-Instruct's chat_template: [INST] user [/INST]reply</s>
//   qwen3   Qwen3's chat_template with thinking off: ChatML, and an empty <think></think>
//           block where the assistant's reply begins
//   zephyr  TinyLlama-1.1B-Chat-v1.0's chat_template: <|user|>\n...</s>\n<|assistant|>\n
//   chatml  <|im_start|>role\n...<|im_end|>\n
//   vicuna  FastChat's vicuna_v1.1: "{system} USER: {msg} ASSISTANT: {reply}</s>"
//   raw     no template: the messages' texts one after another
// A template's markers that are single tokens of the model's vocabulary (</s>,
// <|im_end|>, ...) become those ids, never text; BOS and EOS are always ids. The text
// between markers is encoded one piece at a time, as Meta's code and Hugging Face's
// tokenizers (which split the text at special tokens) do; a user's text never becomes a
// control token's id (model/../tokenizer/bpe.h).
#pragma once
#include <string>
#include <vector>

namespace hearth {

class Tokenizer;
struct ModelConfig;

struct ChatMessage {
    std::string role;     // "system", "user" or "assistant"
    std::string content;  // the text
    // Only for a reply the model generated: its token ids. When set they are used as they
    // are instead of encoding `content`, so a reply already in the KV cache is never
    // re-tokenized (which can split it differently and force evaluating it again).
    std::vector<int> ids;
};

// The built-in templates' names, in the order --help lists them.
const std::vector<std::string>& chat_template_names();
bool is_chat_template(const std::string& name);

// The built-in template that a Hugging Face `chat_template` (a Jinja string, or one of
// our names) is, recognised by its markers as llama.cpp does; "" when none is.
std::string detect_chat_template(const std::string& jinja);
// The chat template (Jinja) of a tokenizer_config.json, whose chat_template is a string or a
// list of {name, template} (then the one named "default"). "" when absent or unreadable.
std::string chat_template_jinja(const std::string& tokenizer_config_json);

// The system message a ChatML Jinja template puts first when the dialog has none: Qwen2's "You are
// a helpful assistant.", Qwen2.5's "You are Qwen, created by Alibaba Cloud. You are a helpful
// assistant." It is the text of a string literal in the template that holds a whole system turn,
// '<|im_start|>system\n' TEXT '<|im_end|>' (either quote; Jinja's escapes \n \t \\ \' \"). "" when
// the template has none.
std::string chatml_default_system(const std::string& jinja);

// The system message a chat with this model starts with when it is given none: the model's
// Jinja template's (chatml_default_system) when `template_name`, the template the chat uses, is
// chatml and the Jinja template is ChatML; else "".
std::string default_system_message(const ModelConfig& c, const std::string& template_name);

// The template a chat with this model uses, and in *why the reason, for the user: `asked`
// (--template, a request) when given; else the name the checkpoint stores, when built in; else
// the built-in template its Jinja text is (detect_chat_template); else chatml when the
// vocabulary has ChatML's markers; else "raw". The result may be a name that is not built in
// only when `asked` is one: check is_chat_template.
std::string resolve_chat_template(const ModelConfig& c, const Tokenizer& tok, const std::string& asked, std::string* why);

// Formats `dialog` into token ids: an optional system message, then user and assistant
// alternating; for the templates that render each message as a turn of its role (llama3,
// chatml, qwen3, zephyr, raw), system messages anywhere, as their Jinja renders them where they
// stand (llama2, mistral and vicuna refuse them there: the first two's Jinja raises an error, or
// drops the message). With add_generation_prompt, the ids end where the assistant's reply
// begins: the dialog ends with a user message (or a system message, in those templates), or
// with an assistant message that is the start of the reply (a prefill, as llama-server
// continues it): the dialog before it with the generation prompt, then that message's text, not
// closed; the dialog before it may be the system message alone, except in llama2 and mistral,
// which write the system message into the first user message. Without continue_last, a last
// assistant message is a finished turn instead, and the generation prompt opens a new one after
// it (continue_final_message false, as vLLM renders it), in the templates of turns only (llama2,
// mistral and vicuna have no assistant turn after the assistant's). "" on success, else why not.
std::string format_chat(const std::string& name, const Tokenizer& tok, const std::vector<ChatMessage>& dialog,
                        bool add_generation_prompt, std::vector<int>* ids, bool continue_last = true);

// The ids that end an assistant's turn: those that end any generation (end_of_generation_ids:
// EOS, the model's `eos_id`, and the end markers llama.cpp knows), and the template's end marker
// when it is a single token (<|im_end|> for chatml and qwen3, <|eot_id|> for llama3).
std::vector<int> chat_end_of_turn_ids(const std::string& name, const Tokenizer& tok, int eos_id);

// The id of the vocabulary piece spelled exactly `marker`, or -1.
int marker_token(const Tokenizer& tok, const std::string& marker);

// FastChat's vicuna_v1.1 system message, used when the dialog has none.
extern const char* const kVicunaDefaultSystem;

}  // namespace hearth
