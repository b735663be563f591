# Tokenizer tests (include/nuvec/text). The fixture test reads the real
# tokenizers that scripts/fetch_tokenizers.sh puts into NUVEC_TOKENIZER_CACHE.
nuvec_test(tokenizer_fixture_test DIR text TIMEOUT 120 LIBRARIES nuvec_text
           DEFINITIONS NUVEC_TEXT_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
nuvec_test(tokenizer_unit_test DIR text TIMEOUT 60 LIBRARIES nuvec_text)
nuvec_test(tokenizer_gguf_test DIR text TIMEOUT 120 LIBRARIES nuvec_text INCLUDES ${PROJECT_SOURCE_DIR}/tests
           DEFINITIONS NUVEC_TEXT_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
# The command-level tests: chat templates against Debian's python3-jinja2
# (in /usr/bin/python3's dist-packages), tokenize and run --prompt. The chat
# test starts nuvec once per render (144), each reading only
# tokenizer_config.json (`--render` does not parse the megabytes of
# tokenizer.json), so it stays cheap under ASan too.
if(NUVEC_COMMAND_TESTS)
  if(EXISTS /usr/bin/python3)
    set(NUVEC_TEXT_PYTHON /usr/bin/python3)
  else()
    set(NUVEC_TEXT_PYTHON python3)
  endif()
  if(DEFINED ENV{NUVEC_TOKENIZER_CACHE})
    set(NUVEC_TEXT_CACHE $ENV{NUVEC_TOKENIZER_CACHE})
  else()
    set(NUVEC_TEXT_CACHE $ENV{HOME}/.cache/nuvec/tokenizers)
  endif()
  add_test(NAME text_chat_template_test
           COMMAND ${NUVEC_TEXT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/chat_template_test.py $<TARGET_FILE:nuvec_tool> ${NUVEC_TEXT_CACHE})
  add_test(NAME text_commands_test
           COMMAND ${NUVEC_TEXT_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/text_commands_test.py $<TARGET_FILE:nuvec_tool> ${NUVEC_TEXT_CACHE})
  set_tests_properties(text_chat_template_test text_commands_test PROPERTIES TIMEOUT 300)
endif()
