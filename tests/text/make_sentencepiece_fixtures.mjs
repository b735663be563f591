// Writes tests/text/fixtures/sentencepiece-<name>.json, the expected ids and
// texts of nuvec's tokenizer.model reader, in the schema of
// make_fixtures.mjs. The reference is SentencePiece itself (Google's C++
// library compiled to WebAssembly, npm package @sctg/sentencepiece-js, the
// version the fixtures name) used as transformers' LlamaTokenizer (legacy)
// uses it: the model's control and unknown pieces are matched in the text
// first (leftmost, longest) and never split, each stretch between them is
// EncodeAsIds'd, BOS goes in front where the model has one; decoding runs
// DecodeIds over each stretch of ordinary ids, with the special pieces as
// their text between (or left out, without cutting the stretch).
// Cases given as hex are read as make_fixtures.mjs reads them (Buffer's
// UTF-8 decoder replaces maximal invalid subparts, as Python does).
//
//   scripts/text_fixtures.sh
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, tokenizerDir, outDir] = process.argv.slice(2);
const pkg = path.join(path.resolve(modules), "@sctg", "sentencepiece-js");
const { SentencePieceProcessor } = await import(pathToFileURL(path.join(pkg, "dist", "index.js")).href);
const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
const here = path.dirname(new URL(import.meta.url).pathname);
const corpus = JSON.parse(fs.readFileSync(path.join(here, "corpus.json"), "utf8"));

// Each model's control and unknown pieces (SentencePieceProcessor's
// IsControl/IsUnknown; the binding does not expose them), and its BOS.
const models = {
  llama2: { special: { "<unk>": 0, "<s>": 1, "</s>": 2 }, bos: 1 },
  albert: { special: { "<pad>": 0, "<unk>": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4 }, bos: null },
};

for (const [name, model] of Object.entries(models)) {
  const sp = new SentencePieceProcessor();
  await sp.load(path.join(tokenizerDir, "sentencepiece-" + name, "tokenizer.model"));
  const specials = Object.keys(model.special).sort((a, b) => b.length - a.length);
  const specialIds = new Map(Object.entries(model.special).map(([t, id]) => [id, t]));
  const encode = (text, addSpecial) => {
    const ids = addSpecial && model.bos !== null ? [model.bos] : [];
    let start = 0;
    for (let pos = 0; pos < text.length; ++pos) {
      const hit = specials.find((s) => text.startsWith(s, pos));
      if (hit === undefined) continue;
      if (pos > start) ids.push(...sp.encodeIds(text.slice(start, pos)));
      ids.push(model.special[hit]);
      start = pos + hit.length;
      pos = start - 1;
    }
    if (text.length > start) ids.push(...sp.encodeIds(text.slice(start)));
    return ids;
  };
  const decode = (ids, skipSpecial) => {
    let out = "";
    let run = [];
    for (const id of ids) {
      if (!specialIds.has(id)) run.push(id);
      else if (!skipSpecial) {
        out += (run.length ? sp.decodeIds(run) : "") + specialIds.get(id);
        run = [];
      }
    }
    return out + (run.length ? sp.decodeIds(run) : "");
  };
  const cases = [];
  for (const c of corpus) {
    const bytes = c.hex !== undefined ? Buffer.from(c.hex, "hex") : Buffer.from(c.text, "utf8");
    const text = bytes.toString("utf8");
    const ids = encode(text, true);
    cases.push({
      name: c.name,
      text_hex: bytes.toString("hex"),
      ids,
      ids_no_special: encode(text, false),
      decoded: decode(ids, false),
      decoded_skip_special: decode(ids, true),
    });
  }
  // Byte pieces that do not form UTF-8, and a sample of the vocabulary.
  const decodeCases = [];
  if (name === "llama2") {
    // Llama 2's byte pieces are ids 3..258 (<0x00>..<0xFF>).
    for (const [caseName, hex] of [["char_in_bytes", "e697a5"], ["truncated_char", "e697"], ["stray_bytes", "ff4180"],
                                   ["emoji_bytes", "f09f9880"], ["surrogate_bytes", "eda080"]]) {
      decodeCases.push({ name: caseName, ids: [...Buffer.from(hex, "hex")].map((b) => 3 + b) });
    }
  }
  const size = name === "llama2" ? 32000 : 30000;
  decodeCases.push({ name: "vocab_sample", ids: Array.from({ length: 199 }, (_, i) => ((i + 1) * 7919) % size) });
  for (const d of decodeCases) {
    d.decoded = decode(d.ids, false);
    d.decoded_skip_special = decode(d.ids, true);
  }
  const fixture = {
    tokenizer: "sentencepiece-" + name,
    reference: `sentencepiece (@sctg/sentencepiece-js ${version}, the C++ library as WebAssembly)`,
    command: "scripts/text_fixtures.sh",
    cases,
    decode_cases: decodeCases,
  };
  fs.writeFileSync(path.join(outDir, "sentencepiece-" + name + ".json"), JSON.stringify(fixture, null, 1) + "\n");
  console.log("sentencepiece-" + name, cases.length, "cases");
}
