# MLX-quantized checkpoints (fixtures/ and make_fixtures.py, which made them
# with numpy): nuvec's logits against the same model dequantized by numpy.
nuvec_test(mlx_fixture_test DIR lm/mlx DEFINITIONS NUVEC_MLX_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
nuvec_test_program_of(mlx_program mlx_fixture_test)
if(mlx_program)
  # The same with f32 activations (the integer path off), at its tighter bounds.
  add_test(NAME MlxFixture.F32Activations COMMAND ${mlx_program} --gtest_filter=*MlxFixture*)
  set_tests_properties(MlxFixture.F32Activations PROPERTIES ENVIRONMENT NUVEC_QUANT_DOT=off)
endif()

if(NUVEC_COMMAND_TESTS)
  # The commands take MLX directories: run (greedy ids on stdout), profile.
  set(mlx_fixture ${CMAKE_CURRENT_LIST_DIR}/fixtures/mlx-q4-g64)
  add_test(NAME MlxCommands.Run COMMAND $<TARGET_FILE:nuvec_tool> run ${mlx_fixture} --prompt-ids 1,37,201,5 --max-new 4)
  set_tests_properties(MlxCommands.Run PROPERTIES PASS_REGULAR_EXPRESSION "\n[0-9]+,[0-9]+,[0-9]+,[0-9]+")
  add_test(NAME MlxCommands.Profile
           COMMAND $<TARGET_FILE:nuvec_tool> profile ${mlx_fixture} --prompt-len 16 --max-new 4 --threads 1)
  set_tests_properties(MlxCommands.Profile PROPERTIES PASS_REGULAR_EXPRESSION "floor = the weights as held")
endif()
