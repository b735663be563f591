# Tokenizers (include/nuvec/text): tokenizer.json and GGUF vocabularies, BPE,
# streaming decode. PCRE2 for the pre-tokenizer regexes, utf8proc for the
# Unicode normal forms.
find_package(PkgConfig REQUIRED)
pkg_check_modules(NUVEC_PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(NUVEC_UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
target_sources(nuvec_text PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/utf8.cc
  ${CMAKE_CURRENT_LIST_DIR}/byte_level.cc
  ${CMAKE_CURRENT_LIST_DIR}/regex.cc
  ${CMAKE_CURRENT_LIST_DIR}/bpe_model.cc
  ${CMAKE_CURRENT_LIST_DIR}/normalizer.cc
  ${CMAKE_CURRENT_LIST_DIR}/pre_tokenizer.cc
  ${CMAKE_CURRENT_LIST_DIR}/encode.cc
  ${CMAKE_CURRENT_LIST_DIR}/decode.cc
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_gguf.cc
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer.cc
  ${CMAKE_CURRENT_LIST_DIR}/stream_decoder.cc
  ${CMAKE_CURRENT_LIST_DIR}/chat_template.cc
)
target_link_libraries(nuvec_text PRIVATE PkgConfig::NUVEC_PCRE2 PkgConfig::NUVEC_UTF8PROC)
