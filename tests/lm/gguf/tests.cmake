# GGUF models against llama.cpp (fixtures/ and the script that made them:
# make_fixtures.sh, make_tiny_model.py, llama_logits.cpp).
nuvec_test(gguf_fixture_test DIR lm/gguf DEFINITIONS NUVEC_GGUF_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")

if(NUVEC_COMMAND_TESTS)
  # The commands take .gguf files: run (greedy ids on stdout), profile, inspect.
  set(gguf_fixture ${CMAKE_CURRENT_LIST_DIR}/fixtures/llama-Q4_K_M.gguf)
  add_test(NAME GgufCommands.Run COMMAND $<TARGET_FILE:nuvec_tool> run ${gguf_fixture} --prompt-ids 1,37,201,5 --max-new 4)
  set_tests_properties(GgufCommands.Run PROPERTIES PASS_REGULAR_EXPRESSION "\n[0-9]+,[0-9]+,[0-9]+,[0-9]+")
  add_test(NAME GgufCommands.Profile
           COMMAND $<TARGET_FILE:nuvec_tool> profile ${gguf_fixture} --prompt-len 16 --max-new 4 --threads 1)
  set_tests_properties(GgufCommands.Profile PROPERTIES PASS_REGULAR_EXPRESSION "floor = the weights as held")
  add_test(NAME GgufCommands.Inspect COMMAND $<TARGET_FILE:nuvec_tool> inspect ${gguf_fixture})
  set_tests_properties(GgufCommands.Inspect PROPERTIES PASS_REGULAR_EXPRESSION "runs as a model .*Q4_K x6, Q6_K x3")
endif()
