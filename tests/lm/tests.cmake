# The LM runtime (include/nuvec/lm): unit tests of each op against plain
# reference loops, config and model loading (hostile input included),
# sessions, and the forward pass against a plain-PyTorch reference
# (torch_reference_test.py; skipped, exit 77, where python3 lacks torch:
# scripts/install-deps.sh installs Debian's python3-torch). Models are tiny.
# bench/lm/prepare_amx_carry.sh carries these three to the AMX machine by name.
foreach(name lm_ops_test lm_attention_test lm_session_test)
  nuvec_test(${name} DIR lm STANDALONE)
endforeach()
foreach(name lm_tensor_test lm_config_test lm_model_test lm_sampler_test)
  nuvec_test(${name} DIR lm)
endforeach()

if(NUVEC_COMMAND_TESTS)
  # Debian's python3-torch lives in /usr/bin/python3's dist-packages, which
  # another python3 earlier on the PATH (pyenv, a venv) does not see.
  if(EXISTS /usr/bin/python3)
    set(NUVEC_LM_PYTHON /usr/bin/python3)
  else()
    set(NUVEC_LM_PYTHON python3)
  endif()
  add_test(NAME LmTorchReference
           COMMAND ${NUVEC_LM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/torch_reference_test.py $<TARGET_FILE:nuvec_tool>)
  set_tests_properties(LmTorchReference PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)

  # The commands end to end (demo-model, run, profile) on a tiny model.
  add_test(NAME LmCommands
           COMMAND ${NUVEC_LM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/lm_commands_test.py $<TARGET_FILE:nuvec_tool>)
  set_tests_properties(LmCommands PROPERTIES TIMEOUT 300)
  # Hostile input to the commands (non-regular files, plot, numbers, inspect).
  add_test(NAME HostileCommands
           COMMAND ${NUVEC_LM_PYTHON} ${PROJECT_SOURCE_DIR}/tests/tools/hostile_commands_test.py
                   $<TARGET_FILE:nuvec_tool>)
  set_tests_properties(HostileCommands PROPERTIES TIMEOUT 120)
endif()
