// node query.mjs SITE_DIR TERM...: runs Pagefind's own search code (the
// site's pagefind/pagefind.js and its WebAssembly) on the built site's index,
// as a browser would, and prints one line per term: the term, a tab, and the
// URLs of the first results, best first, separated by spaces.
import { readFile, writeFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

const [dir, ...terms] = process.argv.slice(2);
if (!dir || terms.length === 0) {
  console.error("usage: node query.mjs SITE_DIR TERM...");
  process.exit(2);
}
// pagefind.js fetches its index relative to its own URL: file:// here
globalThis.fetch = async (input) => {
  const url = new URL(typeof input === "string" ? input : input.url);
  try {
    return new Response(await readFile(fileURLToPath(url)));
  } catch {
    return new Response(null, { status: 404 });
  }
};
const base = pathToFileURL(dir.replace(/\/?$/, "/") + "pagefind/").href;
// pagefind.js is an ES module in a .js file outside any package.json: Node 18
// (Debian 12's) loads such a file as CommonJS, so import a copy named .mjs
const tmp = await mkdtemp(join(tmpdir(), "kvsite-pagefind-"));
const copy = join(tmp, "pagefind.mjs");
await writeFile(copy, await readFile(fileURLToPath(base + "pagefind.js")));
const pagefind = await import(pathToFileURL(copy).href);
await rm(tmp, { recursive: true, force: true });
await pagefind.options({ basePath: base, baseUrl: "/" });
await pagefind.init();
for (const term of terms) {
  const found = await pagefind.search(term);
  const urls = [];
  for (const r of found.results.slice(0, 5)) urls.push((await r.data()).url);
  console.log(term + "\t" + urls.join(" "));
}
