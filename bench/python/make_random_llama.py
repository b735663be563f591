"""A Llama-architecture model folder with random weights (config.json + model.safetensors, bf16), built
by transformers from a config, for python3 -m nuvec.profile on a machine without model downloads.

    python3 bench/python/make_random_llama.py OUT_DIR [--hidden 1024] [--layers 4]"""
import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("out")
parser.add_argument("--hidden", type=int, default=1024)
parser.add_argument("--layers", type=int, default=4)
parser.add_argument("--vocab", type=int, default=32000)
args = parser.parse_args()
torch.manual_seed(0)
config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.hidden * 11 // 4,
                     num_hidden_layers=args.layers, num_attention_heads=args.hidden // 64,
                     num_key_value_heads=max(1, args.hidden // 256), max_position_embeddings=2048)
model = LlamaForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(args.out, safe_serialization=True)
print(f"{args.out}: {sum(p.numel() for p in model.parameters())} parameters")
