// streaming-hub console: the little script the pages use. Everything works
// without it; it adds confirm dialogs and copy buttons.
"use strict";
document.addEventListener("submit", function (e) {
  var form = e.target;
  var msg = form.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) {
    e.preventDefault();
  }
});
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button.copy[data-copy]").forEach(function (b) {
    var input = document.getElementById(b.getAttribute("data-copy"));
    if (!input || !navigator.clipboard) { return; }
    b.hidden = false;
    b.addEventListener("click", function () {
      navigator.clipboard.writeText(input.value).then(function () { b.textContent = "Copied"; });
    });
  });
});
