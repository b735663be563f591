// Writes tests/text/fixtures/<name>.json: for each case of corpus.json, the
// ids Hugging Face `tokenizers` gives with and without the post-processor's
// special tokens, and the text it decodes them to (with and without special
// tokens); and for a few id lists (byte tokens that do not form UTF-8, a
// character split across tokens, a sample of the vocabulary) the decoded
// text alone. The reference is `tokenizers`' own Rust core through its
// official Node binding (npm package `tokenizers`, the version the fixtures
// name). Cases given as hex are not UTF-8: they are read as
// bytes.decode("utf-8", "replace") reads them (WHATWG's decoder, which
// Node's Buffer uses, replaces the same maximal subparts).
//
//   scripts/text_fixtures.sh   (installs the binding into a cache, fetches the tokenizers, runs this)
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [modules, tokenizerDir, outDir] = process.argv.slice(2);
const require = createRequire(path.resolve(modules) + "/");
const { Tokenizer } = require("tokenizers");
const version = require("tokenizers/package.json").version;
const here = path.dirname(new URL(import.meta.url).pathname);
const corpus = JSON.parse(fs.readFileSync(path.join(here, "corpus.json"), "utf8"));

// GPT-2's byte-level alphabet, to find the id of each single byte.
function byteAlphabet() {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; ++b) bs.push(b);
  for (let b = 0xa1; b <= 0xac; ++b) bs.push(b);
  for (let b = 0xae; b <= 0xff; ++b) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; ++b) {
    if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); ++n; }
  }
  const map = {};
  bs.forEach((b, i) => { map[b] = String.fromCodePoint(cs[i]); });
  return map;
}

function byteIds(tok, bytes) {
  const vocab = tok.getVocab(true);
  if ("<0x41>" in vocab) return [...bytes].map((b) => vocab["<0x" + b.toString(16).toUpperCase().padStart(2, "0") + ">"]);
  const alphabet = byteAlphabet();
  return [...bytes].map((b) => vocab[alphabet[b]]);
}

fs.mkdirSync(outDir, { recursive: true });
for (const name of ["llama2", "llama3", "qwen3", "gpt2"]) {
  const tok = Tokenizer.fromFile(path.join(tokenizerDir, name, "tokenizer.json"));
  const cases = [];
  for (const c of corpus) {
    const bytes = c.hex !== undefined ? Buffer.from(c.hex, "hex") : Buffer.from(c.text, "utf8");
    const text = bytes.toString("utf8");
    const ids = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    const idsNoSpecial = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    cases.push({
      name: c.name,
      text_hex: bytes.toString("hex"),
      ids,
      ids_no_special: idsNoSpecial,
      decoded: await tok.decode(ids, false),
      decoded_skip_special: await tok.decode(ids, true),
    });
  }
  const decodeCases = [];
  for (const [caseName, hex] of [["char_in_bytes", "e697a5"], ["truncated_char", "e697"], ["stray_bytes", "ff4180"],
                                 ["emoji_bytes", "f09f9880"], ["surrogate_bytes", "eda080"]]) {
    decodeCases.push({ name: caseName, ids: byteIds(tok, Buffer.from(hex, "hex")) });
  }
  const size = tok.getVocabSize(true);
  decodeCases.push({ name: "vocab_sample", ids: Array.from({ length: 199 }, (_, i) => ((i + 1) * 7919) % size) });
  for (const d of decodeCases) {
    d.decoded = await tok.decode(d.ids, false);
    d.decoded_skip_special = await tok.decode(d.ids, true);
  }
  const fixture = {
    tokenizer: name,
    reference: `tokenizers ${version} (Hugging Face's Rust core, Node binding)`,
    command: "scripts/text_fixtures.sh",
    cases,
    decode_cases: decodeCases,
  };
  fs.writeFileSync(path.join(outDir, name + ".json"), JSON.stringify(fixture, null, 1) + "\n");
  console.log(name, cases.length, "cases");
}
