# The LM runtime (include/nuvec/lm): tensors, config, model loading, ops,
# attention, sessions, sampling, the built-in model. Kernels: src/lm/kernels.
target_sources(nuvec_lm PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/tensor.cc
  ${CMAKE_CURRENT_LIST_DIR}/config.cc
  ${CMAKE_CURRENT_LIST_DIR}/config_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/model.cc
  ${CMAKE_CURRENT_LIST_DIR}/load_model.cc
  ${CMAKE_CURRENT_LIST_DIR}/safetensors_model_loader.cc
  ${CMAKE_CURRENT_LIST_DIR}/mlx_quantization.cc
  ${CMAKE_CURRENT_LIST_DIR}/gguf_model_config.cc
  ${CMAKE_CURRENT_LIST_DIR}/gguf_model_loader.cc
  ${CMAKE_CURRENT_LIST_DIR}/ops.cc
  ${CMAKE_CURRENT_LIST_DIR}/rope.cc
  ${CMAKE_CURRENT_LIST_DIR}/half_convert.cc
  ${CMAKE_CURRENT_LIST_DIR}/kv_cache.cc
  ${CMAKE_CURRENT_LIST_DIR}/attention.cc
  ${CMAKE_CURRENT_LIST_DIR}/attention_portable.cc
  ${CMAKE_CURRENT_LIST_DIR}/attention_avx2.cc
  ${CMAKE_CURRENT_LIST_DIR}/attention_avx512.cc
  ${CMAKE_CURRENT_LIST_DIR}/attention_amx.cc
  ${CMAKE_CURRENT_LIST_DIR}/session.cc
  ${CMAKE_CURRENT_LIST_DIR}/sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/demo_model.cc
)
