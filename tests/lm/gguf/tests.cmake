# GGUF models against llama.cpp (fixtures/ and the script that made them:
# make_fixtures.sh, make_tiny_model.py, llama_logits.cpp).
nuvec_test(gguf_fixture_test DIR lm/gguf DEFINITIONS NUVEC_GGUF_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
