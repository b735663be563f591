# Tokenizer tests (include/nuvec/text). The fixture test reads the real
# tokenizers that scripts/fetch_tokenizers.sh puts into NUVEC_TOKENIZER_CACHE.
nuvec_test(tokenizer_fixture_test DIR text TIMEOUT 120
           DEFINITIONS NUVEC_TEXT_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
nuvec_test(tokenizer_unit_test DIR text TIMEOUT 60 INCLUDES ${PROJECT_SOURCE_DIR}/src)
nuvec_test(tokenizer_gguf_test DIR text TIMEOUT 120 INCLUDES ${PROJECT_SOURCE_DIR}/tests
           DEFINITIONS NUVEC_TEXT_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
