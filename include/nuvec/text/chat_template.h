// Chat templates: the Jinja templates that tokenizer_config.json
// (chat_template) and GGUF files (tokenizer.chat_template) carry, rendered
// by a Jinja subset of nuvec's own, as transformers' apply_chat_template(...,
// tokenize=False) renders them with Jinja2 (trim_blocks and lstrip_blocks on).
//
// The subset: text, {{ }}, {% %} and {# #} with "-" whitespace control; if /
// elif / else, for (with loop.index0, index, first, last, length,
// revindex, revindex0), set (names and namespace attributes); literals,
// lists, dicts, names, attributes, subscripts and slices, calls; the
// operators of arithmetic, comparison, "in", "and", "or", "not", "~", the
// conditional expression; the tests defined, undefined, none, string,
// number, mapping, sequence, iterable, true, false, boolean, integer, odd,
// even; the filters length, count, trim, tojson, upper, lower, first, last,
// join, default, list, string, int, reverse, capitalize, replace, items;
// the string methods strip, lstrip, rstrip, startswith, endswith, split,
// upper, lower, replace, title, capitalize; dict get, items, keys, values;
// namespace(), range() and raise_exception(). Anything else is an
// InvalidArgument naming the construct and where it is.
#pragma once

#include <string>
#include <string_view>

namespace nuvec::text {

struct ChatRenderOptions {
  bool add_generation_prompt = false;
  std::string bos_token, eos_token;
};

// Renders `template_text` for `messages_json`, a JSON list of {"role",
// "content", ...} objects. InvalidArgument for malformed messages, a
// construct outside the subset (named, with its line), or the template's own
// raise_exception().
std::string render_chat_template(std::string_view template_text, std::string_view messages_json,
                                 const ChatRenderOptions& options);

}  // namespace nuvec::text
