// Hugging Face `tokenizers` (its Rust core through the official Node
// binding) timed as nuvec_tokenize_bench times nuvec: the corpus encoded
// whole without special tokens, `repeats` times after one warm-up encode,
// the median. The corpus bytes are read as UTF-8 with WHATWG's replacement
// of invalid bytes, which is the text nuvec encodes for the same bytes.
// Usage: node hf_encode.mjs NODE_MODULES TOKENIZER.json CORPUS repeats IDS_OUT.json
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [modules, tokenizerPath, corpusPath, repeatsArg, idsOut] = process.argv.slice(2);
const require = createRequire(path.resolve(modules) + "/");
const { Tokenizer } = require("tokenizers");
const version = require("tokenizers/package.json").version;
const tok = Tokenizer.fromFile(tokenizerPath);
const corpus = fs.readFileSync(corpusPath).toString("utf8");
const repeats = Number(repeatsArg);
let ids = (await tok.encode(corpus, null, { addSpecialTokens: false })).getIds();  // warm-up: fills its cache
const seconds = [];
for (let r = 0; r < repeats; ++r) {
  const t = process.hrtime.bigint();
  const encoding = await tok.encode(corpus, null, { addSpecialTokens: false });
  seconds.push(Number(process.hrtime.bigint() - t) / 1e9);
  ids = encoding.getIds();
}
seconds.sort((a, b) => a - b);
fs.writeFileSync(idsOut, JSON.stringify(ids));
console.log(JSON.stringify({ median_s: seconds[Math.floor(seconds.length / 2)], tokens: ids.length, version }));
