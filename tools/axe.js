// axe-core on every page of a built site, in headless Chromium, at 1280 and 390 px wide,
// light and dark: prints each violation of impact serious or critical and exits 1 if any.
// Usage: node tools/axe.js SITE_DIR [CHROMIUM]   (run by tools/check-html.sh)
'use strict';
const fs = require('fs');
const path = require('path');
const http = require('http');
const npm = path.join(__dirname, 'npm', 'node_modules');
const puppeteer = require(path.join(npm, 'puppeteer-core'));
const axeSource = fs.readFileSync(path.join(npm, 'axe-core', 'axe.min.js'), 'utf8');

const root = path.resolve(process.argv[2] || 'site');
const chrome = process.argv[3] || process.env.CHROMIUM || '/usr/bin/chromium';

function pages(dir, rel = '') {
  let out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name < b.name ? -1 : 1)) {
    const r = rel + '/' + e.name;
    if (e.isDirectory()) out = out.concat(pages(path.join(dir, e.name), r));
    else if (e.name.endsWith('.html')) out.push(r);
  }
  return out;
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.js': 'text/javascript',
  '.svg': 'image/svg+xml', '.xml': 'application/xml', '.json': 'application/json', '.png': 'image/png',
  '.ico': 'image/x-icon', '.woff2': 'font/woff2' };

// A static server on the loopback: the site's root-relative links and styles resolve as published.
function serve() {
  const srv = http.createServer((req, res) => {
    let p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let f = path.join(root, p);
    if (!f.startsWith(root)) { res.writeHead(403); return res.end(); }
    if (fs.existsSync(f) && fs.statSync(f).isDirectory()) f = path.join(f, 'index.html');
    if (!fs.existsSync(f)) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(f)] || 'application/octet-stream' });
    fs.createReadStream(f).pipe(res);
  });
  return new Promise(ok => srv.listen(0, '127.0.0.1', () => ok(srv)));
}

(async () => {
  const srv = await serve();
  const base = `http://127.0.0.1:${srv.address().port}`;
  const browser = await puppeteer.launch({ executablePath: chrome, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  let bad = 0, runs = 0;
  try {
    const page = await browser.newPage();
    for (const rel of pages(root)) {
      let loaded = false;
      for (const width of [1280, 390]) {
        await page.setViewport({ width, height: 900 });
        if (!loaded) {
          await page.goto(base + rel, { waitUntil: 'load' });
          await page.evaluate(axeSource);
          loaded = true;
        }
        for (const scheme of ['light', 'dark']) {
          await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
          // the dark scheme changes colours only (the themes' dark media query sets colour
          // variables): there, the rules that read colours; every rule in the light scheme
          const only = scheme === 'dark' ? ['color-contrast', 'link-in-text-block'] : null;
          const r = await page.evaluate(o => axe.run(document, o ? { runOnly: { type: 'rule', values: o },
            resultTypes: ['violations'] } : { resultTypes: ['violations'] }), only);
          runs++;
          for (const v of r.violations) {
            if (v.impact !== 'serious' && v.impact !== 'critical') continue;
            bad++;
            const where = v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ');
            console.log(`${rel} @${width}px ${scheme}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.length}x: ${where})`);
          }
        }
      }
    }
  } finally {
    await browser.close();
    srv.close();
  }
  console.log(`axe-core: ${runs} page views, ${bad} serious or critical violations`);
  process.exit(bad ? 1 : 0);
})().catch(e => { console.error(e); process.exit(2); });
