# Tokenizers (include/nuvec/text): tokenizer.json and GGUF vocabularies, BPE,
# streaming decode. PCRE2 for the pre-tokenizer regexes, utf8proc for the
# Unicode normal forms, libsentencepiece for tokenizer.model files.
find_package(PkgConfig REQUIRED)
pkg_check_modules(NUVEC_PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(NUVEC_UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
# A build that must not depend on libsentencepiece (tools/lm/build_static.sh:
# Debian ships no static libsentencepiece) turns it off; tokenizer.model files
# are then refused with a FormatError that says so.
option(NUVEC_WITH_SENTENCEPIECE "Read SentencePiece tokenizer.model files through libsentencepiece" ON)
if(NUVEC_WITH_SENTENCEPIECE)
  pkg_check_modules(NUVEC_SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
endif()
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
  ${CMAKE_CURRENT_LIST_DIR}/sentencepiece_model.cc
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer_sentencepiece.cc
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer.cc
  ${CMAKE_CURRENT_LIST_DIR}/stream_decoder.cc
  ${CMAKE_CURRENT_LIST_DIR}/chat_template.cc
)
target_link_libraries(nuvec_text PRIVATE PkgConfig::NUVEC_PCRE2 PkgConfig::NUVEC_UTF8PROC)
if(NUVEC_WITH_SENTENCEPIECE)
  target_compile_definitions(nuvec_text PRIVATE NUVEC_WITH_SENTENCEPIECE=1)
  # --as-needed: only programs that really read a tokenizer.model need the
  # shared library where they run (the device machine's carried test binaries
  # never do).
  target_link_libraries(nuvec_text PRIVATE "-Wl,--push-state,--as-needed" PkgConfig::NUVEC_SENTENCEPIECE "-Wl,--pop-state")
endif()
