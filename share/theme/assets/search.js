// Site search (search.enabled in site.yaml): Pagefind's own interface in the
// header's empty, hidden box. Without JavaScript the box stays hidden and the
// page has no search at all; nothing else on the site needs this file.
(function () {
  "use strict";
  var box = document.getElementById("search");
  if (!box) return;
  var base = document.currentScript.src.replace(/assets\/search\.js(\?.*)?$/, "pagefind/");
  var css = document.createElement("link");
  css.rel = "stylesheet";
  css.href = base + "pagefind-ui.css";
  document.head.appendChild(css);
  var ui = document.createElement("script");
  ui.src = base + "pagefind-ui.js";
  ui.onload = function () {
    box.hidden = false;
    new PagefindUI({ element: box, showSubResults: true, showImages: false });
    // Pagefind labels its input by title and placeholder only; give it a name
    // screen readers announce (axe: label-title-only)
    var input = box.querySelector("input");
    if (input) input.setAttribute("aria-label", input.getAttribute("placeholder") || "Search");
  };
  document.head.appendChild(ui);
})();
